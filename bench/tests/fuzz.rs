//! Property tests ("fuzzing" on stable) for what a target or a dataset file can feed
//! latlab-bench: server-sent events (`sse::LineSplitter`, `classify`, `parse_chunk`, as
//! `client` drives them; the client exposes nothing else to parse), ShareGPT files
//! (`read_sharegpt`, and `dataset::sample` on top: tokenizing, shuffling, oversampling)
//! and JSONL files (`dataset::sample`). Inputs: random bytes, arbitrary JSON, and valid
//! streams and files after byte edits or structural edits. Property: no panic; lines come
//! out the same however the stream is cut into network chunks; samples hold `n` requests
//! with the asked output length.
//!
//! CI runs 2000 cases per property. Long run (`--show-output` prints how far inputs got):
//! `LATLAB_FUZZ_CASES=1000000 cargo test --profile fuzz -p bench --test fuzz -- --test-threads=1 --show-output`

use bench::CancellationToken;
use bench::dataset::{sample, sharegpt_reader::read_sharegpt};
use bench::sse::{LineSplitter, SseLine, classify, parse_chunk};
use bench::tokenizer::TokenCounter;
use bench_types::Dataset;
use fuzz_kit::*;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const KEYS: &str = "choices delta content reasoning_content reasoning text usage completion_tokens
    prompt_tokens error message index role finish_reason id object conversations from value
    human gpt prompt output_len data: event: id: retry: [DONE]";

const TEXTS: &str = "data: [DONE] : \u{202e} 🚀 é \u{0} <|im_end|> <think>";

/// Chunks as vLLM, SGLang and latlab's engine stream them, plus usage and error events.
fn chunks() -> Vec<Value> {
    vec![
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "hm", "reasoning": "x", "content": "Hi"}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "text": " world", "finish_reason": "length"}], "usage": {"completion_tokens": 7}}),
        json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}}),
        json!({"error": {"message": "overloaded", "code": 503}}),
    ]
}

/// A stream: a mix of events and the other lines SSE allows, then `[DONE]`.
fn stream_samples() -> Vec<Vec<u8>> {
    let data: Vec<String> = chunks().iter().map(|c| format!("data: {c}\n\n")).collect();
    let extra = [": ping\n", "event: message\r\nid: 4\r\nretry: 10\r\n\r\n", "data:{}\n", "data: [DONE]\n\n"];
    let mut out: Vec<Vec<u8>> = data.iter().map(|d| format!("{d}data: [DONE]\n").into_bytes()).collect();
    out.push(data.concat().into_bytes());
    out.push(format!("{}{}{}", extra[0], data.concat(), extra[1..].concat()).into_bytes());
    out
}

fn stream_docs() -> impl Strategy<Value = Vec<u8>> {
    let dict = tokens(&format!("{KEYS} \n\n \r\n\r\n data:{{\"choices\":[{{\"text\":\"x\"}}]}}\n"));
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..256),
        4 => (select(stream_samples()), edits(dict)).prop_map(|(t, e)| apply(t, &e)),
        2 => proptest::collection::vec(json_docs(chunks(), KEYS, TEXTS), 1..5)
            .prop_map(|c| c.iter().map(|c| format!("data: {}\n", c.replace('\n', " "))).collect::<String>().into_bytes()),
    ]
}

/// Reads the lines as `client` does: to a bad line (0), to `[DONE]` (1), or to the end (2).
fn read_events(lines: &[Vec<u8>]) -> usize {
    for line in lines {
        let payload = match classify(line) {
            Ok(SseLine::Skip) => continue,
            Ok(SseLine::Done) => return 1,
            Ok(SseLine::Data(p)) => p,
            Err(_) => return 0,
        };
        if parse_chunk(payload).is_err() {
            return 0;
        }
    }
    2
}

#[test]
fn sse_streams_never_panic_and_lines_do_not_depend_on_chunking() {
    let cuts = proptest::collection::vec(any::<Index>(), 0..8);
    fuzz("SSE", ["bad line", "[DONE]", "read to the end"], (stream_docs(), cuts), |(stream, cuts)| {
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
        at.extend([0, stream.len()]);
        at.sort();
        let (mut split, mut got) = (LineSplitter::default(), Vec::new());
        for w in at.windows(2) {
            split.push(&stream[w[0]..w[1]], |l| {
                got.push(l.to_vec());
                true
            });
        }
        let mut want: Vec<Vec<u8>> = stream.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let rest = want.pop().unwrap();
        for l in want.iter_mut().filter(|l| l.ends_with(b"\r")) {
            l.pop();
        }
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(split.remainder(), &rest[..]);
        // Stopping at the first line, as the client does at `[DONE]`, keeps nothing back.
        let stopped = !LineSplitter::default().push(&stream, |_| false);
        prop_assert_eq!(stopped, stream.contains(&b'\n'));
        got.push(rest);
        Ok(read_events(&got))
    });
}

#[test]
fn sse_chunks_never_panic() {
    fuzz("SSE chunk JSON", ["-", "refused", "accepted"], json_docs(chunks(), KEYS, TEXTS), |doc| {
        let Ok(ev) = parse_chunk(&doc) else {
            return Ok(1);
        };
        // serde skips unknown fields without range checks, so `{"index": 1e309}` is a chunk
        // but not a `Value`; and serde reads a struct from an array too, so `[[[]]]` is a chunk
        // with one choice (lenient, but vLLM's `json.loads(...)["choices"]` would fail it).
        if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&doc) {
            prop_assert_eq!(ev.has_choices, v["choices"].as_array().is_some_and(|c| !c.is_empty()));
        }
        Ok(2)
    });
}

/// The Qwen3 tokenizer that setup fetched, loaded once.
fn tok() -> &'static TokenCounter {
    static TOK: OnceLock<TokenCounter> = OnceLock::new();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3/tokenizer.json");
    TOK.get_or_init(|| TokenCounter::load(Path::new(path)).expect("run scripts/setup.sh"))
}

/// A temporary folder in memory where there is one: a million cases on disk spend most of
/// their time in writeback.
fn tmp_dir() -> tempfile::TempDir {
    let shm = tempfile::Builder::new().tempdir_in("/dev/shm");
    shm.or_else(|_| tempfile::tempdir()).unwrap()
}

/// One file per test, rewritten for every case (a new temporary file per case would only
/// add work).
fn file(name: &str, bytes: &[u8]) -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let path = DIR.get_or_init(tmp_dir).path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Draws `n` requests from `dataset` and checks what the run relies on.
fn check_sample(dataset: &Dataset, n: usize, seed: u64, cancelled: bool) -> Checked {
    let cancel = CancellationToken::new();
    if cancelled {
        cancel.cancel();
    }
    let Ok(s) = sample(dataset, n, seed, tok(), &cancel) else {
        return Ok(0);
    };
    prop_assert!(!cancelled, "a cancelled read went on");
    prop_assert!(s.requests.len() == n || s.requests.is_empty(), "{} of {}", s.requests.len(), n);
    let fixed = match dataset {
        Dataset::Sharegpt { output_len, .. } => *output_len,
        _ => None,
    };
    for r in &s.requests {
        prop_assert!(r.output_len >= 1 && fixed.is_none_or(|f| f == r.output_len));
    }
    Ok(if s.requests.is_empty() { 1 } else { 2 })
}

fn sharegpt_samples() -> Vec<Value> {
    let conv = |p: &str, c: &str| json!({"id": p, "conversations": [{"from": "human", "value": p}, {"from": "gpt", "value": c}]});
    let long = "word ".repeat(300);
    vec![
        json!([
            conv("What is the capital of France?", "Paris is the capital of France."),
            conv("hi", "hello there, how are you today?")
        ]),
        json!([{"id": "x", "conversations": [{"from": "human", "value": "only one turn"}]}, conv(&long, &long), {"conversations": null}, {}]),
    ]
}

#[test]
fn sharegpt_files_never_panic() {
    let input = (
        json_docs(sharegpt_samples(), KEYS, TEXTS),
        1usize..40,
        any::<u64>(),
        prop::option::of(1u32..=1_000_000),
        prop::bool::weighted(0.02),
    );
    fuzz(
        "ShareGPT",
        ["refused", "no usable prompt", "sampled"],
        input,
        |(doc, n, seed, output_len, cancelled)| {
            let path = file("sharegpt.json", doc.as_bytes());
            // The reader alone, then (on what it reads) the whole sampler on top.
            let Ok(f) = read_sharegpt(&path, &CancellationToken::new()) else {
                return Ok(0);
            };
            prop_assert!(f.pairs.len() <= f.entries);
            let dataset = Dataset::Sharegpt { path: Some(path.to_string_lossy().into()), output_len };
            check_sample(&dataset, n, seed, cancelled)
        },
    );
}

#[test]
fn jsonl_files_never_panic() {
    let lines = vec![
        json!({"prompt": "Tell me a story about a cat.", "output_len": 128}),
        json!({"prompt": "", "output_len": 1}),
    ];
    let valid = lines.iter().map(|l| l.to_string()).chain(["".into(), " \r".into()]).collect::<Vec<_>>();
    let line = prop_oneof![3 => select(valid), 1 => json_docs(lines, KEYS, TEXTS)];
    let file_text = proptest::collection::vec(line, 1..6).prop_map(|l| l.join("\n"));
    let input = (file_text, 1usize..40, any::<u64>(), prop::bool::weighted(0.02));
    fuzz("JSONL", ["refused", "no usable prompt", "sampled"], input, |(text, n, seed, cancelled)| {
        let path = file("prompts.jsonl", text.as_bytes()).to_string_lossy().into_owned();
        check_sample(&Dataset::Jsonl { path }, n, seed, cancelled)
    });
}
