//! The `latlab-bench` binary end to end: vLLM's flags in, vLLM's text block and
//! `--save-result` keys out; bad flags and files give one clear line and exit 2.

mod common;

use common::{Script, jsonl, start, tokenizer_path};
use std::process::{Command, Output};
use std::time::Duration;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_latlab-bench")).args(args).output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_prints_vllm_blocks_and_saves_vllm_json() {
    let srv =
        start(Script { ttft: Duration::from_millis(10), gap: Duration::from_millis(5), ..Script::default() })
            .await;
    let data = jsonl("cli.jsonl", &[("ok a", 8), ("ok b", 8), ("ok c", 8), ("ok d", 8)]);
    // A folder that does not exist yet: created before the run, as vLLM does.
    let dir =
        std::env::temp_dir().join(format!("latlab-bench-cli-{}", std::process::id())).join("new/results");
    let _ = std::fs::remove_dir_all(&dir);
    let (base, dir_s, tok) = (srv.base_url.clone(), dir.to_string_lossy().into_owned(), tokenizer_path());
    let out = tokio::task::spawn_blocking(move || {
        bench(&[
            "--base-url",
            &base,
            "--model",
            "test-model",
            "--tokenizer",
            &tok,
            "--dataset-name",
            "jsonl",
            "--dataset-path",
            &data,
            "--num-prompts",
            "4",
            "--max-concurrency",
            "1,2",
            "--metric-percentiles",
            "50,99",
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
            "--goodput",
            "ttft:1000",
            "tpot:1000",
            "--save-result",
            "--result-dir",
            &dir_s,
            "--result-filename",
            "res.json",
            "--save-detailed",
            "--quiet",
        ])
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "--quiet prints nothing");
    for c in [1, 2] {
        let text = std::fs::read_to_string(dir.join(format!("res-concurrency{c}.json"))).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in [
            "duration",
            "completed",
            "total_input_tokens",
            "total_output_tokens",
            "request_throughput",
            "request_goodput",
            "output_throughput",
            "total_token_throughput",
            "mean_ttft_ms",
            "median_tpot_ms",
            "std_itl_ms",
            "p99_e2el_ms",
            "p50_ttft_ms",
            "max_output_tokens_per_s",
            "max_concurrent_requests",
            "ttfts",
            "itls",
            "input_lens",
            "output_lens",
            "errors",
        ] {
            assert!(v.get(key).is_some(), "missing {key} in {text}");
        }
        assert_eq!(v["max_concurrency"], c);
        assert_eq!(v["completed"], 4);
        // Every request meets 1 s SLOs: goodput x duration = 4 requests (to rounding).
        assert!(
            (v["request_goodput"].as_f64().unwrap() * v["duration"].as_f64().unwrap() - 4.0).abs() < 1e-9
        );
    }
    let base = srv.base_url.clone();
    let data = jsonl("cli2.jsonl", &[("ok a", 4)]);
    let tok = tokenizer_path();
    let dir_s = dir.to_string_lossy().into_owned();
    let out = tokio::task::spawn_blocking(move || {
        bench(&[
            "--base-url",
            &base,
            "--model",
            "m",
            "--tokenizer",
            &tok,
            "--dataset-name",
            "jsonl",
            "--dataset-path",
            &data,
            "--num-prompts",
            "1",
            "--max-concurrency",
            "1",
            "--save-result",
            "--result-dir",
            &dir_s,
            "--result-filename",
            "plain.json",
        ])
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "============ Serving Benchmark Result ============\nSuccessful requests:                     1\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("Maximum request concurrency:             1\n"));
    assert!(stdout.contains("P99 ITL (ms):"));
    // Without --save-detailed the per-request arrays stay out, as in vLLM's file.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plain.json")).unwrap()).unwrap();
    assert!(v.get("completed").is_some());
    for key in ["ttfts", "itls", "input_lens", "output_lens", "errors"] {
        assert!(v.get(key).is_none(), "{key} saved without --save-detailed");
    }
}

#[test]
fn bad_input_gives_one_line_and_exit_2() {
    for (args, needle) in [
        (vec!["--model", "m", "--num-prompts", "many"], "invalid value"),
        (vec!["--model", "m", "--no-such-flag"], "--no-such-flag"),
        (vec!["--num-prompts", "3"], "--model is required"),
        (vec!["--model", "m", "--request-rate", "fast"], "--request-rate fast"),
        (vec!["--model", "m", "--goodput", "ttft=5"], "KEY:VALUE"),
        (vec!["--model", "m", "--max-concurrency", "0"], "load.max_concurrency"),
        (vec!["--model", "m", "--percentile-metrics", "ttft,speed"], "speed"),
    ] {
        let out = bench(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked") && !err.contains("stack backtrace"), "{err}");
    }
}

#[test]
fn a_missing_dataset_file_is_one_line_exit_1() {
    let tok = tokenizer_path();
    let out = bench(&[
        "--model",
        "m",
        "--tokenizer",
        &tok,
        "--dataset-name",
        "jsonl",
        "--dataset-path",
        "/nonexistent/x.jsonl",
        "--num-prompts",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/x.jsonl"), "{err}");
}
