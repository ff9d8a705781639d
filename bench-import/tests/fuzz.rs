//! Property tests ("fuzzing" on stable) for every importer an outsider can feed
//! (`POST /api/imports`): the `ImportRequest` body through serde and `into_runs`, vLLM
//! `--save-result` JSON (`vllm_json::parse`, `parse_str`), and printed "Serving Benchmark
//! Result" blocks (`text_block::parse_blocks`). Inputs: random bytes, arbitrary JSON, and
//! valid documents after byte edits or structural edits. Property: no panic; an accepted
//! import yields valid specs and finite numbers, and a parsed block printed again parses.
//!
//! CI runs 2000 cases per property. Long run (`--show-output` prints how far inputs got):
//! `LATLAB_FUZZ_CASES=1000000 cargo test --profile fuzz -p bench-import --test fuzz -- --test-threads=1 --show-output`

use bench_import::{ImportRequest, Parsed, text_block, vllm_json};
use bench_types::MetricKind::{self, E2el, Itl, TokenItl, Tpot, Ttft};
use bench_types::result_block::serving_result;
use fuzz_kit::*;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};

/// Keys of vLLM's result file and of `ImportRequest`.
const KEYS: &str = "completed failed max_concurrency request_rate duration total_input_tokens
    total_output_tokens request_throughput request_goodput output_throughput
    total_token_throughput max_output_tokens_per_s max_concurrent_requests mean_ttft_ms
    median_ttft_ms std_ttft_ms p99_ttft_ms p99.9_ttft_ms p0_ttft_ms p100_ttft_ms pNaN_ttft_ms
    mean_tpot_ms p50_tpot_ms mean_itl_ms mean_e2el_ms median_e2el_ms p90_e2el_ms input_lens
    output_lens ttfts itls errors model_id num_prompts format content config comparison_title
    engine model label source command engine_version hardware optimization variant dataset
    sampling vllm_json text kind sharegpt random jsonl";

const ALL: [MetricKind; 5] = [Ttft, Tpot, Itl, E2el, TokenItl];

const TEXTS: &str = "vLLM SGLang Qwen/Qwen3-8B v0.11.0 inf upload x\u{202e}y";

/// Words of printed blocks, for byte edits of text.
const BLOCK_WORDS: &str = "Serving Benchmark Result ============ ---------- Successful requests:
    Failed requests: Maximum request concurrency: Request rate configured (RPS): Benchmark
    duration (s): Total input tokens: Total generated tokens: Request throughput (req/s):
    Request goodput (req/s): Output token throughput (tok/s): Peak concurrent requests: Mean
    Median P99 P99.9 P0 P100 P-1 P1e3 TTFT TPOT ITL E2EL token ITL (ms): 12.50 1e400 -3";

fn vllm_sample() -> Value {
    json!({
        "backend": "openai-chat", "model_id": "Qwen/Qwen3-8B", "num_prompts": 2, "request_rate": "inf",
        "max_concurrency": 2, "duration": 1.5, "completed": 2, "failed": 1, "total_input_tokens": 20,
        "total_output_tokens": 6, "request_throughput": 1.33, "request_goodput": 0.5,
        "output_throughput": 4.0, "total_token_throughput": 17.33, "max_output_tokens_per_s": 5.0,
        "max_concurrent_requests": 2.0, "mean_ttft_ms": 10.0, "median_ttft_ms": 10.0, "std_ttft_ms": 1.0,
        "p99_ttft_ms": 11.0, "p99.9_ttft_ms": 12.0, "mean_tpot_ms": 5.0, "median_tpot_ms": 5.0,
        "std_tpot_ms": 0.0, "p99_tpot_ms": 5.0, "mean_itl_ms": 5.0, "median_itl_ms": 5.0,
        "std_itl_ms": 0.0, "p99_itl_ms": 5.0, "mean_e2el_ms": 20.0, "median_e2el_ms": 20.0,
        "std_e2el_ms": 1.0, "p50_e2el_ms": 20.0, "input_lens": [10, 10, 4], "output_lens": [3, 3, 0],
        "ttfts": [0.01, 0.011, 0.0], "itls": [[0.005, 0.005], [0.005, 0.005], []], "errors": ["", "", "boom"]
    })
}

/// The fixture block, the same numbers with every optional line and section, and the blocks
/// of the seed study document when shared/ is beside the checkout.
fn block_samples() -> Vec<String> {
    let fixture = include_str!("../../data/fixtures/vllm_serving_result.txt");
    let (_, p) = text_block::parse_blocks(fixture).unwrap().remove(0);
    let mut full = p.summary;
    (full.failed, full.request_rate, full.goodput) = (3, Some(2.0), Some(1.5));
    (full.e2el, full.token_itl) = (full.ttft.clone(), Some(full.ttft.clone()));
    let mut out = vec![fixture.to_string(), serving_result(&full, &ALL)];
    let dir = env!("CARGO_MANIFEST_DIR");
    let doc = std::fs::read_to_string(format!("{dir}/../../shared/seed/qwen3-8b-h100-latency.txt"));
    let doc = doc.unwrap_or_default();
    let lines: Vec<&str> = doc.lines().collect();
    for i in (0..lines.len()).filter(|&i| text_block::is_block_start(lines[i])) {
        if let Some(end) = (i + 1..lines.len()).find(|&j| lines[j].starts_with("=====")) {
            out.push(lines[i..=end].join("\n"));
        }
    }
    out
}

fn import_samples() -> Vec<Value> {
    let config = json!({"engine": "vLLM", "label": "bs2", "source": "f.json", "command": "vllm serve x",
        "engine_version": "v0.11.0", "hardware": "1x H100", "optimization": "1. x", "variant": "# a",
        "dataset": {"kind": "random", "input_len": 8, "output_len": 8}, "num_prompts": 2,
        "sampling": {"ignore_eos": true, "temperature": 0.0}});
    let vllm =
        json!({"format": "vllm_json", "content": vllm_sample(), "config": config, "comparison_title": "t"});
    let mut out = vec![vllm];
    for b in block_samples().iter().take(4) {
        out.push(json!({"format": "text", "content": format!("junk\n{b}\nmore junk\n{b}"),
            "config": {"engine": "SGLang", "model": "Qwen/Qwen3-8B"}}));
    }
    out
}

/// Labels a block may carry (and some it may not), for line edits.
const LABELS: &str = "Successful_requests Failed_requests Maximum_request_concurrency
    Request_rate_configured_(RPS) Benchmark_duration_(s) Total_input_tokens Peak_concurrent_requests
    Request_goodput_(req/s) Peak_output_token_throughput_(tok/s) Mean_TTFT_(ms) Median_E2EL_(ms)
    P99.9_ITL_(ms) P100_TPOT_(ms) P0_TTFT_(ms) P1e2_TTFT_(ms) Pinf_ITL_(ms) Mean_token_ITL_(ms)
    P50_token_ITL_(ms) Mean_TTFT Total_bananas ---x--- =====";

/// A line-level edit of a printed block: drop a line, copy one elsewhere, give a line
/// another value, or another label.
#[derive(Debug, Clone)]
enum LineEdit {
    Drop,
    Copy(Index),
    Value(String),
    Label(String),
}

fn line_edits() -> impl Strategy<Value = Vec<(Index, LineEdit)>> {
    let values = words(&format!("{NUMS} 1e400 NaN inf 7. .5 +3 0x10 1_000 12,5 - ."));
    let labels: Vec<String> = words(LABELS).iter().map(|l| l.replace('_', " ")).collect();
    let edit = prop_oneof![
        Just(LineEdit::Drop),
        any::<Index>().prop_map(LineEdit::Copy),
        select(values).prop_map(LineEdit::Value),
        select(labels).prop_map(LineEdit::Label),
    ];
    proptest::collection::vec((any::<Index>(), edit), 1..4)
}

fn apply_lines(text: &str, edits: &[(Index, LineEdit)]) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for (i, e) in edits {
        if lines.is_empty() {
            break;
        }
        let k = i.index(lines.len());
        let line = lines[k].clone();
        let (label, value) = line.split_once(':').unwrap_or((&line, ""));
        match e {
            LineEdit::Drop => drop(lines.remove(k)),
            LineEdit::Copy(j) => lines.insert(j.index(lines.len() + 1), line),
            LineEdit::Value(v) => lines[k] = format!("{label}:   {v}"),
            LineEdit::Label(l) => lines[k] = format!("{l}:{value}"),
        }
    }
    lines.join("\n").into_bytes()
}

/// Printed blocks after line edits (then byte edits one time in five) or byte edits,
/// several joined, or random text.
fn block_docs() -> impl Strategy<Value = String> {
    let samples = select(block_samples());
    let mut dict = tokens(BLOCK_WORDS);
    dict.extend(BLOCK_WORDS.lines().map(|l| format!("\n{}", l.trim())));
    let bytes = edits(dict);
    let edited = || (samples.clone(), bytes.clone()).prop_map(|(t, e)| apply(t.into_bytes(), &e));
    let maybe_bytes = prop::option::weighted(0.2, bytes.clone());
    let lined = (samples.clone(), line_edits(), maybe_bytes)
        .prop_map(|(t, l, e)| apply(apply_lines(&t, &l), &e.unwrap_or_default()));
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..256),
        1 => any::<String>().prop_map(String::into_bytes),
        3 => edited(),
        6 => lined,
        1 => proptest::collection::vec(edited(), 2..4).prop_map(|v| v.join(&b"\n"[..])),
    ]
    .prop_map(text)
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// What an accepted result must hold: numbers that are finite and not negative.
fn check_parsed(p: &Parsed) -> Result<(), TestCaseError> {
    let s = &p.summary;
    let mut v = vec![s.duration_s, s.request_throughput, s.output_throughput];
    v.extend([s.total_token_throughput, s.peak_output_throughput]);
    v.extend(s.request_rate.into_iter().chain(s.goodput));
    for t in [&s.ttft, &s.tpot, &s.itl, &s.e2el].into_iter().chain(&s.token_itl) {
        v.extend([t.mean_ms, t.median_ms, t.std_ms]);
        v.extend(t.percentiles.iter().flat_map(|&(p, x)| [p, x]));
    }
    prop_assert!(v.iter().all(|x| x.is_finite() && *x >= 0.0), "{:?}", s);
    Ok(())
}

#[test]
fn import_requests_never_panic_and_accepted_runs_are_valid() {
    let depths = ["refused by serde", "refused by into_runs", "accepted"];
    let docs = json_docs(import_samples(), KEYS, TEXTS);
    fuzz("ImportRequest", depths, docs, |doc| {
        let req = serde_json::from_str::<ImportRequest>(&doc).map_err(|_| 0);
        let runs = match req.and_then(|r| r.into_runs().map_err(|_| 1)) {
            Ok(runs) => runs,
            Err(depth) => return Ok(depth),
        };
        for run in &runs {
            run.spec.validate().map_err(fail)?;
            let text = serde_json::to_string(run).map_err(fail)?;
            serde_json::from_str::<bench_import::ImportedRun>(&text).map_err(fail)?;
        }
        Ok(2)
    });
}

#[test]
fn vllm_result_json_never_panics() {
    let depths = ["not JSON", "refused", "accepted"];
    let minimal = json!({"completed": 0, "duration": 0, "total_input_tokens": 0, "total_output_tokens": 0,
        "request_throughput": 0, "output_throughput": 0, "total_token_throughput": 0});
    let docs = json_docs(vec![vllm_sample(), minimal], KEYS, TEXTS);
    fuzz("vLLM JSON", depths, docs, |doc| {
        let from_text = vllm_json::parse_str(&doc);
        let Ok(v) = serde_json::from_str::<Value>(&doc) else {
            return Ok(0);
        };
        let parsed = vllm_json::parse(&v);
        // Compared as text: NaN is not equal to itself.
        prop_assert_eq!(format!("{parsed:?}"), format!("{from_text:?}"));
        let Ok(p) = parsed else {
            return Ok(1);
        };
        check_parsed(&p)?;
        Ok(2)
    });
}

#[test]
fn printed_blocks_never_panic_and_parsed_blocks_print_back() {
    fuzz("text blocks", ["-", "refused", "accepted"], block_docs(), |doc| {
        let Ok(blocks) = text_block::parse_blocks(&doc) else {
            return Ok(1);
        };
        for (_, p) in &blocks {
            check_parsed(p)?;
            let again = serving_result(&p.summary, &ALL);
            let back = text_block::parse_blocks(&again).map_err(|e| fail(format!("{e}:\n{again}")))?;
            prop_assert_eq!(back.len(), 1);
            prop_assert_eq!(back[0].1.summary.completed, p.summary.completed);
        }
        Ok(2)
    });
}
