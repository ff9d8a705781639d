//! Servers with the quirks real ones have, each against its known timings: a chunk that
//! carries no token (a role-only chunk before the first token, an empty-delta chunk with
//! `finish_reason` after the last, a usage-only event) is no token, as in current vLLM;
//! per-chunk token counts come from the server's continuous usage stats when sent, else
//! from the whole text tokenized once (never chunk by chunk); the server's prompt count is
//! reported beside the dataset's; the random dataset always sends `ignore_eos`.
//!
//! Tolerances as in exact_timing.rs: one event's lateness on TTFT and E2EL, 2 % on
//! differences spread over many gaps.

mod common;

use bench::{RunOptions, run_benchmark};
use bench_types::{Backend, ChunkTokenSource, Dataset};
use common::{Script, jsonl, request_log, spec, start};
use std::time::Duration;

fn within(v: f64, lo: f64, hi: f64, what: &str) {
    assert!(v >= lo && v <= hi, "{what} = {v:.3}, expected in [{lo:.3}, {hi:.3}]");
}

/// Role chunk at 40 ms, first token at 80 ms, 30 tokens 10 ms apart, an empty finish chunk
/// 10 ms after the last token and the usage event 30 ms after it. Truth: TTFT 80, TPOT and
/// ITL 10, E2EL 80 + 29 * 10 = 370.
async fn chunks_without_tokens_case(backend: Backend, continuous_usage: bool) {
    let srv = start(Script {
        role_chunk_at: Some(Duration::from_millis(40)),
        ttft: Duration::from_millis(80),
        gap: Duration::from_millis(10),
        finish_chunk_after: Some(Duration::from_millis(10)),
        usage_after: Duration::from_millis(30),
        per_chunk_usage: continuous_usage,
        ..Script::default()
    })
    .await;
    let data = jsonl(
        &format!("quirks-{}-{continuous_usage}.jsonl", backend.as_str()),
        &[("ok a", 30), ("ok b", 30), ("ok c", 30)],
    );
    let mut s = spec(&srv.base_url, data, 3, Some(1));
    s.backend = backend;
    let r = run_benchmark(&s, &srv.base_url, RunOptions::default()).await.unwrap();
    let m = &r.summary;
    let what = format!("{} continuous_usage={continuous_usage}", backend.as_str());
    assert_eq!((m.completed, m.total_output_tokens), (3, 90), "{what}");
    assert!(
        r.requests.iter().all(|q| q.chunk_offsets_s.len() == 30),
        "{what}: only the 30 token chunks are events"
    );
    within(m.ttft.mean_ms, 80.0, 95.0, &format!("{what}: TTFT (role chunk at 40 ms)"));
    within(m.tpot.mean_ms, 9.8, 10.2, &format!("{what}: TPOT"));
    within(m.itl.mean_ms, 9.8, 10.2, &format!("{what}: mean ITL"));
    within(
        m.itl.percentile(99.0).unwrap(),
        9.0,
        20.0,
        &format!("{what}: p99 ITL (the 40 ms role-to-token gap is not an ITL)"),
    );
    within(
        m.e2el.mean_ms,
        370.0,
        385.0,
        &format!("{what}: E2EL (finish chunk at +10 ms and usage at +30 ms are not tokens)"),
    );
    assert!(
        r.requests.iter().all(|q| q.chunk_tokens.as_deref().is_some_and(|t| t.iter().all(|&k| k == 1))),
        "{what}"
    );
    let want = if continuous_usage { ChunkTokenSource::ServerUsage } else { ChunkTokenSource::Tokenization };
    assert_eq!(m.token_itl_source, Some(want), "{what}");
    within(m.token_itl.as_ref().unwrap().mean_ms, 9.8, 10.2, &format!("{what}: token ITL"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_role_and_finish_chunks_are_not_tokens() {
    chunks_without_tokens_case(Backend::OpenaiChat, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_empty_text_chunks_are_not_tokens() {
    chunks_without_tokens_case(Backend::Openai, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuous_usage_on_role_and_finish_chunks_changes_nothing() {
    chunks_without_tokens_case(Backend::OpenaiChat, true).await;
}

/// Chunks of 3 tokens 12 ms apart: chunk ITL 12 ms, TPOT and token ITL 4 ms. With
/// continuous usage stats the server's own counts give the split; one request also has a
/// role chunk whose usage says 0 tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuous_usage_stats_split_multi_token_chunks_exactly() {
    let srv = start(Script {
        gap: Duration::from_millis(12),
        tokens_per_event: 3,
        per_chunk_usage: true,
        role_chunk_at: Some(Duration::from_millis(5)),
        finish_chunk_after: Some(Duration::from_millis(2)),
        ..Script::default()
    })
    .await;
    let data = jsonl("continuous.jsonl", &[("ok a", 91), ("ok b", 91)]);
    let r = run_benchmark(&spec(&srv.base_url, data, 2, Some(2)), &srv.base_url, RunOptions::default())
        .await
        .unwrap();
    let m = &r.summary;
    let want: Vec<u32> = std::iter::once(1).chain(std::iter::repeat_n(3, 30)).collect();
    assert!(
        r.requests.iter().all(|q| q.chunk_tokens.as_deref() == Some(&want[..])),
        "{:?}",
        r.requests[0].chunk_tokens
    );
    assert_eq!(m.token_itl_source, Some(ChunkTokenSource::ServerUsage));
    // 3 % here: two streams of 12 ms gaps share a loaded 2-core machine.
    within(m.itl.mean_ms, 11.64, 12.36, "chunk ITL");
    within(m.tpot.mean_ms, 3.88, 4.12, "TPOT");
    within(m.token_itl.as_ref().unwrap().mean_ms, 3.88, 4.12, "token ITL");
    assert!(
        r.notes.iter().any(|n| n.contains("token-level ITL") && n.contains("continuous_usage_stats")),
        "{:?}",
        r.notes
    );
}

/// Without usage per chunk, counts come from tokenizing the whole text once. Each chunk
/// here ends inside a contraction ("it'" + "s it'" + ... + "s it"), so in context every
/// chunk after the first carries 2 tokens ("'s", " it"), while each chunk tokenized apart
/// would count 3 ("s", " it", "'") and give a token ITL of 8 ms instead of 12.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_usage_chunks_are_counted_in_context_not_apart() {
    let srv = start(Script {
        gap: Duration::from_millis(24),
        tokens_per_event: 2,
        texts: Some(("it'", "s it'", "s it")),
        ..Script::default()
    })
    .await;
    let data = jsonl("in-context.jsonl", &[("ok a", 21)]);
    let r = run_benchmark(&spec(&srv.base_url, data, 1, Some(1)), &srv.base_url, RunOptions::default())
        .await
        .unwrap();
    let m = &r.summary;
    assert_eq!(r.requests[0].chunk_tokens.as_deref(), Some(&[1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2][..]));
    assert_eq!(m.token_itl_source, Some(ChunkTokenSource::Tokenization));
    assert_eq!(m.total_output_tokens, 21, "the server's usage");
    within(m.token_itl.as_ref().unwrap().mean_ms, 11.76, 12.24, "token ITL");
    within(m.tpot.mean_ms, 11.76, 12.24, "TPOT: (E2EL - TTFT) / 20 tokens");
}

/// The server counts the prompt its own way (here: one token per byte, as a chat template
/// and another tokenizer would differ); both totals are kept, each labelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_prompt_count_is_reported_beside_the_datasets() {
    let srv =
        start(Script { ttft: Duration::from_millis(5), gap: Duration::from_millis(2), ..Script::default() })
            .await;
    let rows = [("ok the the the", 4), ("ok the", 4)];
    let r = run_benchmark(
        &spec(&srv.base_url, jsonl("prompt-count.jsonl", &rows), 2, Some(2)),
        &srv.base_url,
        RunOptions::default(),
    )
    .await
    .unwrap();
    let m = &r.summary;
    assert_eq!(m.server_input_tokens, Some(14 + 6));
    assert_eq!(m.total_input_tokens, r.requests.iter().map(|q| u64::from(q.input_tokens)).sum::<u64>());
    assert_ne!(m.total_input_tokens, 20, "the dataset's count is the run's tokenizer's");
    let note = r.notes.iter().find(|n| n.starts_with("Total input tokens")).unwrap();
    assert!(
        note.contains("dataset's prompt lengths")
            && note.contains("vLLM v0.11")
            && note.contains("the server counted 20"),
        "{note}"
    );
    // A stream without a usage event: the server's count is unknown, not a partial sum.
    let r = run_benchmark(
        &spec(&srv.base_url, jsonl("prompt-count-2.jsonl", &[("ok a", 3), ("nousage b", 3)]), 2, Some(1)),
        &srv.base_url,
        RunOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(r.summary.server_input_tokens, None);
}

/// vLLM forces `ignore_eos` for the random dataset; a model that stops after 3 tokens
/// without it must still produce every drawn output length.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_random_dataset_always_sends_ignore_eos() {
    let log = request_log();
    let srv = start(Script {
        ttft: Duration::from_millis(2),
        gap: Duration::from_millis(1),
        eos_after: Some(3),
        request_log: Some(log.clone()),
        ..Script::default()
    })
    .await;
    let mut s = spec(&srv.base_url, String::new(), 4, Some(4));
    s.dataset = Dataset::Random { input_len: 16, output_len: 12, range_ratio: 0.0, prefix_len: 0 };
    assert!(!s.sampling.ignore_eos);
    let r = run_benchmark(&s, &srv.base_url, RunOptions::default()).await.unwrap();
    assert_eq!(r.summary.total_output_tokens, 4 * 12);
    assert!(log.lock().unwrap().iter().all(|q| q.body["ignore_eos"] == true));
    assert!(
        r.notes.iter().any(|n| n.contains("ignore_eos=true") && n.contains("random dataset")),
        "{:?}",
        r.notes
    );
    // Other datasets send it only when asked: the model stops early.
    let r = run_benchmark(
        &spec(&srv.base_url, jsonl("eos.jsonl", &[("ok a", 12)]), 1, Some(1)),
        &srv.base_url,
        RunOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(r.summary.total_output_tokens, 3);
}

/// `--random-prefix-len`: every prompt starts with the same prefix, and the rest of each
/// prompt is what it was without one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_prefix_is_shared_by_every_prompt() {
    let log = request_log();
    let srv = start(Script {
        ttft: Duration::from_millis(2),
        gap: Duration::from_millis(1),
        request_log: Some(log.clone()),
        ..Script::default()
    })
    .await;
    let mut s = spec(&srv.base_url, String::new(), 3, Some(1));
    s.dataset = Dataset::Random { input_len: 40, output_len: 2, range_ratio: 0.0, prefix_len: 64 };
    let r = run_benchmark(&s, &srv.base_url, RunOptions::default()).await.unwrap();
    let prompts: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .map(|q| q.body["messages"][0]["content"].as_str().unwrap().to_string())
        .collect();
    let common = prompts[0]
        .chars()
        .zip(prompts[1].chars())
        .zip(prompts[2].chars())
        .take_while(|((a, b), c)| a == b && b == c)
        .count();
    assert!(common >= 100, "a 64-token prefix shares well over 100 characters, got {common}: {prompts:?}");
    assert!(
        r.requests.iter().all(|q| (100..=108).contains(&q.input_tokens)),
        "64 + 40 tokens: {:?}",
        r.requests.iter().map(|q| q.input_tokens).collect::<Vec<_>>()
    );
}
