//! A scripted OpenAI-compatible test server: streams tokens at exact, known times so the
//! client's TTFT / TPOT / ITL / E2EL can be checked against the truth, and misbehaves on
//! request (chosen by the prompt's first word) to check that failures are counted.
//!
//! Timing: every event is sent at an absolute deadline `t0 + ttft + i * gap` (t0 = the
//! handler's start), so tokio's 1 ms timer granularity and scheduling jitter make each
//! event late by a small amount but never accumulate along a stream.
//!
//! Quirks real servers have, each on request: a role-only chunk before the first token, an
//! empty-delta chunk carrying `finish_reason` after the last, a late usage-only event,
//! cumulative usage on every chunk (vLLM's `continuous_usage_stats`), several tokens per
//! chunk, text whose tokens only exist in context, an early EOS unless `ignore_eos`.

#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bench_types::{Backend, Dataset, Goodput, LoadProfile, RunSpec, Sampling, Target};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How the well-behaved streams look.
#[derive(Clone, Debug)]
pub struct Script {
    pub ttft: Duration,
    pub gap: Duration,
    /// Tokens carried by every event after the first (the first carries one).
    pub tokens_per_event: u32,
    /// Send a role-only chunk (`{"role":"assistant","content":""}`) this long after the
    /// request arrives, before the first token (the pitfall).
    pub role_chunk_at: Option<Duration>,
    /// Send an empty-delta chunk with `finish_reason` this long after the last token.
    pub finish_chunk_after: Option<Duration>,
    /// Every choices chunk (role and finish chunks too) carries cumulative `usage`
    /// (vLLM's `continuous_usage_stats`).
    pub per_chunk_usage: bool,
    /// Send the final usage event, this long after the last token.
    pub final_usage: bool,
    pub usage_after: Duration,
    /// Each event's text instead of `WORD`s: (first event, middle events, last event),
    /// each standing for the event's scripted token count.
    pub texts: Option<(&'static str, &'static str, &'static str)>,
    /// Without `ignore_eos` in the request, stop after this many tokens (a model's EOS).
    pub eos_after: Option<u32>,
    /// Refuse this many requests with 503 before answering (a server still loading).
    pub refuse_first: Option<Arc<std::sync::atomic::AtomicU32>>,
    /// When set, the send instant of every choices event is logged under the prompt.
    pub send_log: Option<SendLog>,
    /// When set, every request's headers and body are logged in arrival order.
    pub request_log: Option<RequestLog>,
}

pub type SendLog = Arc<std::sync::Mutex<std::collections::HashMap<String, Vec<std::time::Instant>>>>;

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub headers: HeaderMap,
    pub body: Value,
}

pub type RequestLog = Arc<std::sync::Mutex<Vec<Seen>>>;

pub fn request_log() -> RequestLog {
    Arc::new(std::sync::Mutex::new(Vec::new()))
}

impl Default for Script {
    fn default() -> Self {
        Script {
            ttft: Duration::from_millis(50),
            gap: Duration::from_millis(20),
            tokens_per_event: 1,
            role_chunk_at: None,
            finish_chunk_after: None,
            per_chunk_usage: false,
            final_usage: true,
            usage_after: Duration::ZERO,
            texts: None,
            eos_after: None,
            refuse_first: None,
            send_log: None,
            request_log: None,
        }
    }
}

/// One word that the Qwen3 tokenizer counts as exactly one token, however many repeat.
pub const WORD: &str = " the";

pub struct TestServer {
    pub base_url: String,
    _task: tokio::task::JoinHandle<()>,
}

pub async fn start(script: Script) -> TestServer {
    let (base_url, task) = serve(script).await;
    TestServer { base_url, _task: task }
}

/// The server on its own OS thread and single-threaded runtime, so it does not share a
/// core's scheduler with the client being measured.
pub fn start_on_own_thread(script: Script) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let (url, task) = serve(script).await;
            tx.send(url).unwrap();
            let _ = task.await;
        });
    });
    rx.recv().unwrap()
}

async fn serve(script: Script) -> (String, tokio::task::JoinHandle<()>) {
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(chat))
        .route(
            "/v1/models",
            get(|| async { axum::Json(json!({"object": "list", "data": [{"id": "test-model"}]})) }),
        )
        .with_state(Arc::new(script));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Without TCP_NODELAY, Nagle + the client's delayed ACK hold the first small event
    // after the headers for ~40 ms: real servers (uvicorn, latlab's engine) disable Nagle.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), task)
}

fn event(v: Value) -> Result<Bytes, std::io::Error> {
    Ok(Bytes::from(format!("data: {v}\n\n")))
}

fn choice(text: &str, chat: bool) -> Value {
    if chat { json!([{"index": 0, "delta": {"content": text}}]) } else { json!([{"index": 0, "text": text}]) }
}

async fn chat(State(script): State<Arc<Script>>, headers: HeaderMap, body: Bytes) -> Response {
    let t0 = Instant::now();
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    if let Some(log) = &script.request_log {
        log.lock().unwrap().push(Seen { headers: headers.clone(), body: req.clone() });
    }
    if let Some(left) = &script.refuse_first
        && left
            .fetch_update(std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst, |n| {
                n.checked_sub(1)
            })
            .is_ok()
    {
        return (StatusCode::SERVICE_UNAVAILABLE, "loading").into_response();
    }
    let chat = req.get("messages").is_some();
    let prompt = if chat { req["messages"][0]["content"].as_str() } else { req["prompt"].as_str() }
        .unwrap_or("")
        .to_string();
    let mut max =
        req.get("max_completion_tokens").or(req.get("max_tokens")).and_then(Value::as_u64).unwrap_or(16)
            as u32;
    if let (Some(eos), false) = (script.eos_after, req["ignore_eos"].as_bool() == Some(true)) {
        max = max.min(eos);
    }
    let mode = prompt.split_whitespace().next().unwrap_or("ok").to_string();
    if mode == "fail500" {
        return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response();
    }
    let script = (*script).clone();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    tokio::spawn(async move {
        let mut sends = Vec::new();
        let usage = |n: u32| json!({"prompt_tokens": prompt.len(), "completion_tokens": n, "total_tokens": prompt.len() as u32 + n});
        if let Some(at) = script.role_chunk_at {
            tokio::time::sleep_until(t0 + at).await;
            let mut ev = json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]});
            if script.per_chunk_usage {
                ev["usage"] = usage(0);
            }
            let _ = tx.send(event(ev)).await;
        }
        let mut sent = 0u32;
        let mut i = 0u32;
        let mut last_at = t0;
        while sent < max {
            last_at = t0 + script.ttft + script.gap * i;
            tokio::time::sleep_until(last_at).await;
            let k = if i == 0 { 1 } else { script.tokens_per_event.min(max - sent) };
            sent += k;
            let text = match script.texts {
                Some((first, _, _)) if i == 0 => first.to_string(),
                Some((_, _, last)) if sent == max => last.to_string(),
                Some((_, middle, _)) => middle.to_string(),
                None => WORD.repeat(k as usize),
            };
            let mut ev = json!({"choices": choice(&text, chat)});
            if script.per_chunk_usage {
                ev["usage"] = usage(sent);
            }
            if tx.send(event(ev)).await.is_err() {
                return;
            }
            if script.send_log.is_some() {
                sends.push(std::time::Instant::now());
            }
            if i == 1 && mode == "garbage" {
                let _ = tx.send(Ok(Bytes::from_static(b"this is not SSE\n\n"))).await;
            }
            if i == 1 && mode == "badjson" {
                let _ = tx.send(Ok(Bytes::from_static(b"data: {\"choices\": [\n\n"))).await;
            }
            if i == 1 && mode == "drop" {
                let _ = tx.send(Err(std::io::Error::other("connection dropped on purpose"))).await;
                return;
            }
            if i == 1 && mode == "hang" {
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            i += 1;
        }
        if let Some(after) = script.finish_chunk_after {
            tokio::time::sleep_until(last_at + after).await;
            let delta = if chat {
                json!({"index": 0, "delta": {}, "finish_reason": "stop"})
            } else {
                json!({"index": 0, "text": "", "finish_reason": "stop"})
            };
            let mut ev = json!({"choices": [delta]});
            if script.per_chunk_usage {
                ev["usage"] = usage(sent);
            }
            let _ = tx.send(event(ev)).await;
        }
        if script.final_usage && mode != "nousage" {
            tokio::time::sleep_until(last_at + script.usage_after).await;
            let _ = tx.send(event(json!({"choices": [], "usage": usage(sent)}))).await;
        }
        let _ = tx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
        if let Some(log) = &script.send_log {
            log.lock().unwrap().insert(prompt, sends);
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    Response::builder().header("content-type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
}

/// The fetched Qwen3 tokenizer: under `$LATLAB_ASSETS_DIR` when set (a test binary run
/// from another checkout), else this checkout's `assets/cache`.
pub fn tokenizer_path() -> String {
    match std::env::var("LATLAB_ASSETS_DIR") {
        Ok(dir) => format!("{dir}/qwen3/tokenizer.json"),
        // Resolved: a RunSpec names files without `..`.
        Err(_) => std::fs::canonicalize(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../assets/cache/qwen3/tokenizer.json"
        ))
        .expect("the Qwen3 tokenizer (scripts/fetch-assets.sh)")
        .to_string_lossy()
        .into_owned(),
    }
}

/// Writes a JSONL dataset of `(prompt, output_len)` to a fresh temp file.
pub fn jsonl(name: &str, rows: &[(&str, u32)]) -> String {
    let dir = std::env::temp_dir().join(format!("latlab-bench-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let text: String =
        rows.iter().map(|(p, n)| format!("{}\n", json!({"prompt": p, "output_len": n}))).collect();
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

pub fn spec(base_url: &str, dataset_path: String, num_prompts: u32, concurrency: Option<u32>) -> RunSpec {
    RunSpec {
        label: "test".into(),
        target: Target::External { base_url: base_url.into(), api_key_env: None },
        model: "test-model".into(),
        tokenizer: Some(tokenizer_path()),
        backend: Backend::OpenaiChat,
        dataset: Dataset::Jsonl { path: dataset_path },
        num_prompts,
        load: LoadProfile {
            max_concurrency: concurrency.into_iter().collect(),
            request_rate: None,
            request_rates: vec![],
            burstiness: 1.0,
        },
        sampling: Sampling::default(),
        seed: 0,
        warmup_requests: 0,
        request_timeout_s: 60.0,
        percentiles: vec![50.0, 99.0],
        goodput: Goodput::default(),
        time_limit_s: None,
        ramp_up: None,
        disable_shuffle: false,
        no_oversample: false,
    }
}
