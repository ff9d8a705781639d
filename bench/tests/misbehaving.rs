//! Servers that misbehave give counted failures with their errors kept, never panics and
//! never silently dropped requests; cancellation and progress work while requests hang.

mod common;

use bench::{BenchError, Phase, Progress, RunOptions, run_benchmark};
use common::{Script, jsonl, spec, start};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_misbehaviour_is_a_counted_failure() {
    let srv =
        start(Script { ttft: Duration::from_millis(5), gap: Duration::from_millis(5), ..Script::default() })
            .await;
    let rows = [
        ("ok fine", 6),
        ("garbage", 6),
        ("badjson", 6),
        ("drop", 6),
        ("fail500", 6),
        ("nousage", 7),
        ("hang", 6),
    ];
    let mut s = spec(&srv.base_url, jsonl("misbehave.jsonl", &rows), 7, Some(7));
    s.request_timeout_s = 1.0;
    let r = run_benchmark(&s, &srv.base_url, RunOptions::default()).await.unwrap();
    assert_eq!(r.requests.len(), 7, "no request is dropped");
    assert_eq!((r.summary.completed, r.summary.failed), (2, 5));
    let err = |i: usize| r.requests[i].error.clone().unwrap_or_default();
    assert!(r.requests[0].success && r.requests[0].error.is_none());
    assert!(err(1).contains("not an SSE line"), "{}", err(1));
    assert!(err(2).contains("invalid JSON"), "{}", err(2));
    assert!(err(3).contains("stream broken"), "{}", err(3));
    assert!(err(4).contains("HTTP 500") && err(4).contains("boom"), "{}", err(4));
    assert!(err(6).contains("timed out"), "{}", err(6));
    // No usage event: output tokens come from re-tokenizing the text (7 x " the").
    assert!(r.requests[5].success);
    assert_eq!(r.requests[5].output_tokens, 7);
    assert_eq!(r.summary.total_output_tokens, 6 + 7);
    // Failed requests contribute nothing to the token totals (vLLM counts them as 0).
    assert!(r.requests.iter().filter(|q| !q.success).all(|q| q.output_tokens == 0));
    assert!(r.notes.iter().any(|n| n.contains("5 of 7 requests failed")), "{:?}", r.notes);
    let text = bench::render_text(&r.summary, &bench::report_text::metrics_from_names("ttft").unwrap());
    assert!(text.contains("Failed requests:                         5"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_fails_every_request_but_the_run_reports() {
    // Bind then drop a listener: the port is (almost certainly) closed now.
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let base = format!("http://{addr}");
    let r = run_benchmark(
        &spec(&base, jsonl("refused.jsonl", &[("ok a", 3), ("ok b", 3)]), 2, Some(1)),
        &base,
        RunOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!((r.summary.completed, r.summary.failed), (0, 2));
    assert!(r.requests[0].error.as_deref().unwrap().contains("request failed"));
    assert!(r.target_info.models.is_none());
    assert_eq!(r.summary.ttft.mean_ms, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_run_with_requests_in_flight() {
    let srv = start(Script::default()).await;
    let rows = [("hang a", 5), ("hang b", 5), ("hang c", 5)];
    let opts = RunOptions::default();
    let cancel = opts.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let t = Instant::now();
    let res =
        run_benchmark(&spec(&srv.base_url, jsonl("cancel.jsonl", &rows), 3, Some(2)), &srv.base_url, opts)
            .await;
    assert!(matches!(res, Err(BenchError::Cancelled)), "{res:?}");
    assert!(t.elapsed() < Duration::from_secs(10), "cancel must not wait for the 30 s hang");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_finished_with_every_request_counted() {
    let srv =
        start(Script { ttft: Duration::from_millis(5), gap: Duration::from_millis(5), ..Script::default() })
            .await;
    let rows = [("ok a", 4), ("fail500", 4), ("ok c", 4)];
    let (tx, mut rx) = tokio::sync::watch::channel(Progress::default());
    let seen = tokio::spawn(async move {
        let mut phases = vec![];
        while rx.changed().await.is_ok() {
            let p = rx.borrow_and_update().clone();
            if phases.last() != Some(&p.phase) {
                phases.push(p.phase);
            }
            if p.phase == Phase::Finished {
                return (phases, p);
            }
        }
        panic!("progress channel closed before Finished");
    });
    let opts = RunOptions { progress: Some(tx), ..Default::default() };
    let r =
        run_benchmark(&spec(&srv.base_url, jsonl("progress.jsonl", &rows), 3, Some(1)), &srv.base_url, opts)
            .await
            .unwrap();
    let (phases, last) = seen.await.unwrap();
    assert_eq!(*phases.last().unwrap(), Phase::Finished);
    assert_eq!((last.completed, last.failed, last.total), (2, 1, 3));
    assert_eq!(r.summary.failed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_before_measuring_hook_runs_after_the_warm_up_and_before_any_measured_request() {
    let log = common::request_log();
    let srv = start(Script {
        ttft: Duration::from_millis(1),
        gap: Duration::from_millis(1),
        request_log: Some(log.clone()),
        ..Script::default()
    })
    .await;
    let mut s =
        spec(&srv.base_url, jsonl("hook.jsonl", &[("ok a", 2), ("ok b", 2), ("ok c", 2)]), 3, Some(1));
    s.warmup_requests = 2;
    let seen_at_hook = std::sync::Arc::new(std::sync::Mutex::new(Vec::<usize>::new()));
    let hook: bench::BeforeMeasuring = {
        let (log, seen) = (log.clone(), seen_at_hook.clone());
        std::sync::Arc::new(move || {
            let (log, seen) = (log.clone(), seen.clone());
            Box::pin(async move {
                // A slow hook (a scrape) holds the measured requests back until it is done.
                tokio::time::sleep(Duration::from_millis(50)).await;
                seen.lock().unwrap().push(log.lock().unwrap().len());
            })
        })
    };
    let opts = RunOptions { before_measuring: Some(hook), ..Default::default() };
    let r = run_benchmark(&s, &srv.base_url, opts).await.unwrap();
    assert_eq!(r.summary.completed, 3);
    assert_eq!(*seen_at_hook.lock().unwrap(), [2], "once, with only the two warm-up requests sent");
    assert_eq!(log.lock().unwrap().len(), 5);
}
