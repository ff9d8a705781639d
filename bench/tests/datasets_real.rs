//! Random and JSONL datasets with the real Qwen3 tokenizer.

use bench::dataset::sample;
use bench::tokenizer::TokenCounter;
use bench_types::Dataset;
use std::path::Path;

const TOKENIZER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3/tokenizer.json");

fn tok() -> TokenCounter {
    TokenCounter::load(Path::new(TOKENIZER)).unwrap()
}

#[test]
fn random_prompts_are_seeded_and_near_the_asked_length() {
    let t = tok();
    let ds = Dataset::Random { input_len: 200, output_len: 64, range_ratio: 0.25 };
    let a = sample(&ds, 20, 7, &t, &bench::CancellationToken::new()).unwrap();
    let b = sample(&ds, 20, 7, &t, &bench::CancellationToken::new()).unwrap();
    let c = sample(&ds, 20, 8, &t, &bench::CancellationToken::new()).unwrap();
    assert_eq!(a.requests, b.requests, "same seed, same prompts");
    assert_ne!(a.requests, c.requests);
    for r in &a.requests {
        assert!((48..=80).contains(&r.output_len), "{}", r.output_len);
        // Re-encoding the decoded text lands in the asked range (lengths are adjusted).
        assert!((150..=250).contains(&r.input_tokens), "{}", r.input_tokens);
    }
}

#[test]
fn jsonl_errors_name_the_line_and_short_files_are_oversampled() {
    let dir = std::env::temp_dir().join(format!("latlab-bench-ds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"prompt\": \"hi there\", \"output_len\": 5}\n\n{\"prompt\": \"x\"}\n").unwrap();
    let err = sample(&Dataset::Jsonl { path: bad.to_string_lossy().into() }, 5, 0, &tok(), &bench::CancellationToken::new()).unwrap_err().to_string();
    assert!(err.contains("line 3") && err.contains("output_len"), "{err}");

    let short = dir.join("short.jsonl");
    std::fs::write(&short, "{\"prompt\": \"hello world\", \"output_len\": 5}\n{\"prompt\": \"the the the\", \"output_len\": 7}\n").unwrap();
    let s = sample(&Dataset::Jsonl { path: short.to_string_lossy().into() }, 5, 0, &tok(), &bench::CancellationToken::new()).unwrap();
    assert_eq!(s.requests.len(), 5);
    assert_eq!(s.requests[1].input_tokens, 3);
    assert!(s.notes.iter().any(|n| n.contains("3 were repeated")), "{:?}", s.notes);
}
