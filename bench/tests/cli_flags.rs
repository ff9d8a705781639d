//! vLLM's `vllm bench serve` flags on `latlab-bench`: each accepted one reaches the
//! requests or the saved JSON with vLLM's meaning, each refused one fails before any
//! request with a line naming it and the reason, and the saved JSON keeps vLLM's keys
//! whatever the flags.

mod common;

use common::{RequestLog, Script, jsonl, request_log, start, tokenizer_path};
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

fn bench(args: Vec<String>) -> Output {
    Command::new(env!("CARGO_BIN_EXE_latlab-bench")).args(args).output().unwrap()
}

async fn bench_async(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || bench(args)).await.unwrap()
}

fn dir(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("latlab-bench-flags-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d.to_string_lossy().into_owned()
}

fn quick(log: &RequestLog) -> Script {
    Script {
        ttft: Duration::from_millis(3),
        gap: Duration::from_millis(1),
        request_log: Some(log.clone()),
        ..Script::default()
    }
}

fn header<'a>(q: &'a common::Seen, name: &str) -> Option<&'a str> {
    q.headers.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_flags_reach_the_requests_and_the_saved_json() {
    let log = request_log();
    let srv = start(Script { refuse_first: Some(Arc::new(AtomicU32::new(1))), ..quick(&log) }).await;
    let (d, tok) = (dir("all"), tokenizer_path());
    #[rustfmt::skip]
    let out = bench_async(&[
        "--base-url", &srv.base_url, "--backend", "vllm", "--model", "org/the-model", "--served-model-name", "served",
        "--tokenizer", &tok, "--dataset-name", "random", "--input-len", "16", "--output-len", "4", "--random-prefix-len", "8",
        "--num-prompts", "4", "--max-concurrency", "2", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "50",
        "--ramp-up-end-rps", "200", "--top-p", "0.9", "--top-k", "5", "--min-p", "0.1", "--frequency-penalty", "0.5",
        "--presence-penalty", "-0.5", "--repetition-penalty", "1.1", "--header", "x-route=a", "x-team = bench",
        "--request-id-prefix", "run7-", "--num-warmups", "2", "--ready-check-timeout-sec", "30", "--metadata", "version=0.3.3",
        "tp=1", "--save-result", "--save-detailed", "--result-dir", &d, "--result-filename", "r.json", "--disable-tqdm",
        "--no-stream", "--skip-chat-template", "--no-oversample", "--disable-shuffle",
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("note: --no-stream changes nothing")
            && stderr.contains("note: --skip-chat-template changes nothing"),
        "{stderr}"
    );

    let seen = log.lock().unwrap().clone();
    // The refused probe, the ready check's retry 5 s later, 2 warm-ups, 4 measured.
    assert_eq!(seen.len(), 1 + 1 + 2 + 4, "{seen:?}");
    for q in &seen {
        let b = &q.body;
        assert_eq!((b["model"].as_str(), b["max_tokens"].as_u64()), (Some("served"), Some(4)), "{b}");
        assert!(
            b.get("prompt").is_some() && b.get("messages").is_none(),
            "--backend vllm is the completions API: {b}"
        );
        for (k, v) in [
            ("top_p", 0.9),
            ("min_p", 0.1),
            ("frequency_penalty", 0.5),
            ("presence_penalty", -0.5),
            ("repetition_penalty", 1.1),
        ] {
            assert_eq!(b[k].as_f64(), Some(v), "{k} in {b}");
        }
        assert_eq!((b["top_k"].as_i64(), b["ignore_eos"].as_bool()), (Some(5), Some(true)), "{b}");
        assert_eq!((header(q, "x-route"), header(q, "x-team")), (Some("a"), Some("bench")));
    }
    let first_prompt = &seen[0].body["prompt"];
    assert!(
        seen[..4].iter().all(|q| &q.body["prompt"] == first_prompt && header(q, "x-request-id").is_none()),
        "ready check and warm-ups: the first prompt, no id"
    );
    let ids: BTreeSet<&str> = seen[4..].iter().filter_map(|q| header(q, "x-request-id")).collect();
    assert_eq!(ids, BTreeSet::from(["run7-0", "run7-1", "run7-2", "run7-3"]));

    let v: Value = serde_json::from_str(&std::fs::read_to_string(format!("{d}/r.json")).unwrap()).unwrap();
    assert_eq!(
        (v["version"].as_str(), v["tp"].as_str()),
        (Some("0.3.3"), Some("1")),
        "--metadata lands in the result"
    );
    assert_eq!((v["backend"].as_str(), v["endpoint_type"].as_str()), (Some("vllm"), Some("vllm")));
    assert_eq!(
        v["model_id"], "org/the-model",
        "--model is the model id; --served-model-name is what requests say"
    );
    assert_eq!(
        (v["ramp_up_strategy"].as_str(), v["ramp_up_start_rps"].as_u64(), v["ramp_up_end_rps"].as_u64()),
        (Some("linear"), Some(50), Some(200))
    );
    assert_eq!(v["request_rate"], "inf");
    let rps: Vec<u64> =
        v["rps_change_events"].as_array().unwrap().iter().map(|e| e["rps"].as_u64().unwrap()).collect();
    assert_eq!(rps, (50..=200).collect::<Vec<u64>>(), "every whole rate the ramp passes, as vLLM logs them");
    assert_eq!((v["completed"].as_u64(), v["ttfts"].as_array().map(Vec::len)), (Some(4), Some(4)));
    assert!(
        v["input_lens"].as_array().unwrap().iter().all(|n| (22..=26).contains(&n.as_u64().unwrap())),
        "8 + 16 tokens: {}",
        v["input_lens"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_result_adds_one_line_per_run() {
    let log = request_log();
    let srv = start(quick(&log)).await;
    let (d, tok, data) =
        (dir("append"), tokenizer_path(), jsonl("append.jsonl", &[("ok a", 3), ("ok b", 3)]));
    let run = |conc: &'static str| {
        let (base, d, tok, data) = (srv.base_url.clone(), d.clone(), tok.clone(), data.clone());
        async move {
            #[rustfmt::skip]
            let out = bench_async(&[
                "--base-url", &base, "--model", "m", "--tokenizer", &tok, "--dataset-name", "jsonl", "--dataset-path", &data,
                "--num-prompts", "2", "--max-concurrency", conc, "--append-result", "--result-dir", &d, "--result-filename", "all.jsonl",
                "--metadata", &format!("run=c{conc}"), "--quiet",
            ])
            .await;
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
    };
    run("1").await;
    run("1,2").await;
    let text = std::fs::read_to_string(format!("{d}/all.jsonl")).unwrap();
    let runs: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(runs.len(), 3, "one line per run, a sweep's runs in the same file: {text}");
    assert_eq!(runs.iter().map(|r| r["run"].as_str().unwrap()).collect::<Vec<_>>(), ["c1", "c1,2", "c1,2"]);
    assert_eq!(runs.iter().map(|r| r["max_concurrency"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 1, 2]);
}

/// vLLM's keys (v0.11's, plus current vLLM's `backend`) are all there whatever the flags;
/// anything else is latlab's own (`latlab_` in the name), `--metadata`, ramp-up or `--save-detailed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllms_keys_are_unchanged_for_every_flag_combination() {
    let log = request_log();
    let srv = start(quick(&log)).await;
    let (d, tok, data) = (dir("keys"), tokenizer_path(), jsonl("keys.jsonl", &[("ok a", 3), ("ok b", 3)]));
    let mut vllm: BTreeSet<String> = [
        "date",
        "endpoint_type",
        "backend",
        "label",
        "model_id",
        "tokenizer_id",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "duration",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    for m in ["ttft", "tpot", "itl"] {
        vllm.extend(["mean", "median", "std", "p99"].map(|s| format!("{s}_{m}_ms")));
    }
    let detailed = ["input_lens", "output_lens", "ttfts", "itls", "errors"];
    let ramp = ["ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps", "rps_change_events"];
    let combos: [&[&str]; 4] = [
        &[],
        &["--save-detailed", "--metadata", "owner=lab", "--header", "x-a=1", "--request-id-prefix", "p-"],
        &[
            "--ramp-up-strategy",
            "exponential",
            "--ramp-up-start-rps",
            "1",
            "--ramp-up-end-rps",
            "4",
            "--top-k",
            "3",
            "--num-warmups",
            "1",
        ],
        &[
            "--backend",
            "openai",
            "--endpoint",
            "/v1/completions",
            "--served-model-name",
            "s",
            "--no-oversample",
            "--append-result",
        ],
    ];
    for (i, extra) in combos.iter().enumerate() {
        let name = format!("k{i}.json");
        #[rustfmt::skip]
        let mut args = vec![
            "--base-url", &srv.base_url, "--model", "m", "--tokenizer", &tok, "--dataset-name", "jsonl", "--dataset-path", &data,
            "--num-prompts", "2", "--max-concurrency", "1", "--save-result", "--result-dir", &d, "--result-filename", &name, "--quiet",
        ];
        args.extend_from_slice(extra);
        let out = bench_async(&args).await;
        assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(format!("{d}/{name}")).unwrap();
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| serde_json::from_str(text.lines().next().unwrap()).unwrap());
        let keys: BTreeSet<String> = v.as_object().unwrap().keys().cloned().collect();
        let missing: Vec<&String> = vllm.difference(&keys).collect();
        assert!(missing.is_empty(), "{extra:?}: vLLM keys missing: {missing:?}");
        for k in keys.difference(&vllm) {
            let ok = k.contains("latlab_")
                || k == "owner"
                || (detailed.contains(&k.as_str()) && extra.contains(&"--save-detailed"))
                || (ramp.contains(&k.as_str()) && extra.contains(&"--ramp-up-strategy"));
            assert!(ok, "{extra:?}: unexpected key {k}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_flags_fail_before_any_request_naming_the_flag_and_why() {
    let log = request_log();
    let srv = start(quick(&log)).await;
    let (tok, data) = (tokenizer_path(), jsonl("refused.jsonl", &[("ok a", 3)]));
    let cases: [(&[&str], &str, &str); 11] = [
        (
            &["--dataset-name", "custom", "--dataset-path", "x.jsonl"],
            "--dataset-name custom",
            "chat template",
        ),
        (
            &["--dataset-name", "custom", "--dataset-path", "x.jsonl", "--skip-chat-template"],
            "--dataset-name custom",
            "jsonl",
        ),
        (&["--custom-output-len", "9"], "--dataset-name custom", "not supported"),
        (&["--dataset-name", "prefix_repetition"], "--dataset-name prefix_repetition", "--random-prefix-len"),
        (&["--prefix-repetition-prefix-len", "64"], "prefix_repetition", "not supported"),
        (&["--chat-template-kwargs", "{\"thinking\": true}"], "--chat-template-kwargs", "--extra-body"),
        (&["--ramp-up-strategy", "linear"], "--ramp-up-strategy linear", "--ramp-up-start-rps"),
        (
            &[
                "--ramp-up-strategy",
                "linear",
                "--ramp-up-start-rps",
                "1",
                "--ramp-up-end-rps",
                "2",
                "--request-rate",
                "5",
            ],
            "--request-rate 5",
            "ramp",
        ),
        (
            &["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "4", "--ramp-up-end-rps", "2"],
            "ramp_up.end_rps",
            "start_rps",
        ),
        (&["--header", "no-equals-sign"], "--header", "KEY=VALUE"),
        (&["--metadata", "novalue"], "--metadata", "KEY=VALUE"),
    ];
    for (extra, flag, why) in cases {
        #[rustfmt::skip]
        let mut args = vec!["--base-url", &srv.base_url, "--model", "m", "--tokenizer", &tok, "--dataset-name", "jsonl", "--dataset-path", &data, "--num-prompts", "1"];
        args.extend_from_slice(extra);
        let out = bench_async(&args).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(flag) && err.contains(why), "{extra:?}: {err}");
    }
    let out = bench_async(&["--model", "m", "--dataset-name", "random", "--dataset-path", "x.json"]).await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dataset-path x.json"));
    assert!(log.lock().unwrap().is_empty(), "refusals come before any request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_never_gets_ready_fails_the_run_before_measuring() {
    let log = request_log();
    let srv = start(Script { refuse_first: Some(Arc::new(AtomicU32::new(u32::MAX))), ..quick(&log) }).await;
    let (tok, data) = (tokenizer_path(), jsonl("never.jsonl", &[("ok a", 3), ("ok b", 3)]));
    #[rustfmt::skip]
    let out = bench_async(&[
        "--base-url", &srv.base_url, "--model", "m", "--tokenizer", &tok, "--dataset-name", "jsonl", "--dataset-path", &data,
        "--num-prompts", "2", "--ready-check-timeout-sec", "1", "--quiet",
    ])
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ready check") && err.contains("503"), "{err}");
    assert_eq!(log.lock().unwrap().len(), 1, "one probe in 1 s (vLLM retries every 5 s); nothing measured");
}
