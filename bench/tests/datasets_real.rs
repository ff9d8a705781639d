//! Random and JSONL datasets with the real Qwen3 tokenizer.

use bench::dataset::{SampleOptions, sample, sample_with};
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
    let ds = Dataset::Random { input_len: 200, output_len: 64, range_ratio: 0.25, prefix_len: 0 };
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
    let err = sample(
        &Dataset::Jsonl { path: bad.to_string_lossy().into() },
        5,
        0,
        &tok(),
        &bench::CancellationToken::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("line 3") && err.contains("output_len"), "{err}");

    let short = dir.join("short.jsonl");
    std::fs::write(&short, "{\"prompt\": \"hello world\", \"output_len\": 5}\n{\"prompt\": \"the the the\", \"output_len\": 7}\n").unwrap();
    let s = sample(
        &Dataset::Jsonl { path: short.to_string_lossy().into() },
        5,
        0,
        &tok(),
        &bench::CancellationToken::new(),
    )
    .unwrap();
    assert_eq!(s.requests.len(), 5);
    assert_eq!(s.requests[1].input_tokens, 3);
    assert!(s.notes.iter().any(|n| n.contains("3 were repeated")), "{:?}", s.notes);

    // --no-oversample: the two prompts run as they are.
    let opts = SampleOptions { oversample: false, ..SampleOptions::default() };
    let s = sample_with(
        &Dataset::Jsonl { path: short.to_string_lossy().into() },
        5,
        0,
        opts,
        &tok(),
        &bench::CancellationToken::new(),
    )
    .unwrap();
    assert_eq!(s.requests.len(), 2);
    assert!(s.notes.iter().any(|n| n.contains("--no-oversample")), "{:?}", s.notes);
}

#[test]
fn sharegpt_in_file_order_with_disable_shuffle() {
    let dir = std::env::temp_dir().join(format!("latlab-bench-ds-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("order.json");
    let turn = |i: usize| {
        format!(
            r#"{{"conversations": [{{"value": "question number {i} about the the the"}}, {{"value": "answer {i} the the the the"}}]}}"#
        )
    };
    std::fs::write(&path, format!("[{}]", (0..20).map(turn).collect::<Vec<_>>().join(","))).unwrap();
    let ds = Dataset::Sharegpt { path: Some(path.to_string_lossy().into()), output_len: None };
    let cancel = bench::CancellationToken::new();
    let in_order =
        sample_with(&ds, 5, 0, SampleOptions { shuffle: false, ..SampleOptions::default() }, &tok(), &cancel)
            .unwrap();
    let firsts: Vec<&str> = in_order.requests.iter().map(|r| r.prompt.as_str()).collect();
    assert_eq!(firsts, (0..5).map(|i| format!("question number {i} about the the the")).collect::<Vec<_>>());
    let shuffled = sample(&ds, 5, 0, &tok(), &cancel).unwrap();
    assert_ne!(shuffled.requests, in_order.requests, "shuffled by the seed by default");
}

#[test]
fn a_random_prefix_comes_first_and_leaves_the_rest_of_the_prompt() {
    let t = tok();
    let cancel = bench::CancellationToken::new();
    let plain = sample(
        &Dataset::Random { input_len: 64, output_len: 8, range_ratio: 0.0, prefix_len: 0 },
        4,
        3,
        &t,
        &cancel,
    )
    .unwrap();
    let with = sample(
        &Dataset::Random { input_len: 64, output_len: 8, range_ratio: 0.0, prefix_len: 32 },
        4,
        3,
        &t,
        &cancel,
    )
    .unwrap();
    for (p, w) in plain.requests.iter().zip(&with.requests) {
        assert_eq!(p.output_len, w.output_len);
        assert!(
            (94..=98).contains(&w.input_tokens),
            "32 + 64 tokens, give or take a merge at the seam: {}",
            w.input_tokens
        );
        // The random part is the same run of ids; only its ends may change, where tokens merge
        // at the seam and the fit to length trims or tops up.
        let chars: Vec<char> = p.prompt.chars().collect();
        let middle: String = chars[8..chars.len() * 2 / 3].iter().collect();
        assert!(w.prompt.contains(&middle), "{:?} / {:?}", p.prompt, w.prompt);
    }
    let prefix: String = with.requests[0].prompt.chars().take(40).collect();
    assert!(with.requests.iter().all(|r| r.prompt.starts_with(&prefix)));
}
