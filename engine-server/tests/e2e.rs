//! End to end through real HTTP: the `latlab-engine` binary on CPU with `random:tiny`,
//! streamed and plain chat/completions, usage, limits, errors, cancellation.

mod common;

use common::{chat_body, sse, start};
use serde_json::{Value, json};

#[tokio::test]
async fn streams_chat_like_an_openai_server() {
    let s = start(&[]);
    let events = sse(&s, "/v1/chat/completions", chat_body("Tell me a story", 24, true)).await;
    assert_eq!(events.last().unwrap(), "[DONE]");
    let json: Vec<Value> =
        events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    let (usage, choices) = json.split_last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 24, "max_completion_tokens honoured with ignore_eos");
    let prompt_tokens = usage["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(prompt_tokens > 5);
    assert_eq!(choices[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(choices.len() <= 24 && !choices.is_empty());
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["object"], "chat.completion.chunk");
        let finish = &c["choices"][0]["finish_reason"];
        if i + 1 == choices.len() { assert_eq!(finish, "length") } else { assert!(finish.is_null()) }
    }
    let streamed: String =
        choices.iter().map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap()).collect();
    assert!(!streamed.contains('\u{FFFD}'), "no split characters: {streamed:?}");

    // Greedy is deterministic: a second stream and a plain response give the same text.
    let again = sse(&s, "/v1/chat/completions", chat_body("Tell me a story", 24, true)).await;
    assert_eq!(again.len(), events.len());
    let plain: Value = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", s.base))
        .json(&chat_body("Tell me a story", 24, false))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(plain["choices"][0]["message"]["content"].as_str().unwrap(), streamed);
    assert_eq!(plain["usage"]["total_tokens"].as_u64().unwrap(), prompt_tokens + 24);

    // Without include_usage there is no usage event.
    let mut body = chat_body("Hi", 3, true);
    body["stream_options"] = json!({"include_usage": false});
    let events = sse(&s, "/v1/chat/completions", body).await;
    assert!(events.iter().all(|e| !e.contains("\"usage\"")));
    assert_eq!(events.last().unwrap(), "[DONE]");
}

#[tokio::test]
async fn completions_stop_strings_errors_and_metrics() {
    let s = start(&["--max-model-len", "128"]);
    let c = reqwest::Client::new();
    let body =
        json!({"prompt": "The capital of France is", "max_tokens": 12, "temperature": 0, "ignore_eos": true});
    let full: Value =
        c.post(format!("{}/v1/completions", s.base)).json(&body).send().await.unwrap().json().await.unwrap();
    let text = full["choices"][0]["text"].as_str().unwrap().to_string();
    assert_eq!(full["usage"]["completion_tokens"], 12);
    // Stop at a piece from the middle of the greedy text: output is the text before it.
    let cut = text.char_indices().map(|(i, _)| i).find(|&i| i >= text.len() / 2).unwrap();
    let stop: String = text[cut..].chars().take(3).collect();
    let expect = &text[..text.find(&stop).unwrap()];
    let mut stream_body = body.clone();
    stream_body["stop"] = json!([stop]);
    stream_body["stream"] = json!(true);
    let events = sse(&s, "/v1/completions", stream_body).await;
    let choices: Vec<Value> =
        events.iter().filter(|e| *e != "[DONE]").map(|e| serde_json::from_str(e).unwrap()).collect();
    let streamed: String = choices.iter().map(|c| c["choices"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(streamed, expect);
    assert_eq!(choices.last().unwrap()["choices"][0]["finish_reason"], "stop");

    // Bad requests get OpenAI error JSON and 4xx; the server keeps serving.
    for (path, body, status, needle) in [
        (
            "/v1/completions",
            json!({"prompt": "x".repeat(2000), "max_tokens": 4}),
            400,
            "maximum context length",
        ),
        ("/v1/completions", json!({"prompt": "hi", "temperature": -1}), 400, "temperature"),
        (
            "/v1/chat/completions",
            json!({"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}),
            404,
            "gpt-9",
        ),
        ("/v1/chat/completions", json!({"messages": "nope"}), 400, "messages"),
    ] {
        let r = c.post(format!("{}{path}", s.base)).json(&body).send().await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{body}");
        let v: Value = r.json().await.unwrap();
        assert!(v["error"]["message"].as_str().unwrap().contains(needle), "{v}");
    }
    let r = c.post(format!("{}/v1/completions", s.base)).body("{not json").send().await.unwrap();
    assert_eq!(r.status(), 400);

    let models: Value = c.get(format!("{}/v1/models", s.base)).send().await.unwrap().json().await.unwrap();
    assert_eq!(models["data"][0]["id"], "tiny");
    assert_eq!(models["data"][0]["weights"], "random");
    let info: Value = c.get(format!("{}/v1/engine/info", s.base)).send().await.unwrap().json().await.unwrap();
    assert_eq!(info["weights"], "random");
    assert_eq!(info["quantization"], "none");
    assert_eq!(info["plan"]["max_model_len"], 128);
    // Kernel settings belong to the CUDA backend only.
    assert!(info["plan"]["cuda"].is_null(), "{}", info["plan"]);
    assert_eq!(info["plan"]["backend"], "cpu");
    assert_eq!(info["config"]["hidden_size"], 64);
    assert_eq!(c.get(format!("{}/health", s.base)).send().await.unwrap().status(), 200);
    let metrics = c.get(format!("{}/metrics", s.base)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("latlab_requests_total{status=\"ok\"} 2\n"), "{metrics}");
    assert!(metrics.contains("latlab_time_to_first_token_seconds_count 2\n"));
    // A stop string ends its request by dropping the stream; the engine thread frees the
    // pages on its next step, so on a loaded machine the gauge reaches 0 a moment later.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let m = c.get(format!("{}/metrics", s.base)).send().await.unwrap().text().await.unwrap();
        if m.contains("latlab_kv_pages_used 0\n") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "KV pages never freed:\n{m}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn client_disconnect_cancels_the_request() {
    let s = start(&[]);
    let c = reqwest::Client::new();
    let mut resp = c
        .post(format!("{}/v1/chat/completions", s.base))
        .json(&chat_body("Go on", 3000, true))
        .send()
        .await
        .unwrap();
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(first.starts_with(b"data: "));
    drop(resp);
    // The engine notices the closed stream within a few steps and frees the pages.
    let mut cancelled = false;
    for _ in 0..100 {
        let m = c.get(format!("{}/metrics", s.base)).send().await.unwrap().text().await.unwrap();
        if m.contains("latlab_engine_cancelled_total 1\n") && m.contains("latlab_kv_pages_used 0\n") {
            cancelled = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(cancelled, "request was not cancelled");
}

/// Ctrl-C stops the server gracefully after it has served: it leaves the runtime, joins
/// the engine thread (EngineHandle::shutdown: a process that returned from main beside a
/// live engine thread could crash as the CUDA driver went down) and exits 0.
#[tokio::test]
async fn ctrl_c_exits_cleanly_after_serving() {
    let mut s = start(&[]);
    let r = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", s.base))
        .json(&chat_body("Hello", 4, false))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let status = s.interrupt(30);
    assert!(status.success(), "exit after SIGINT: {status:?}");
}

/// Concurrent streams are batched by the engine and still give each request exactly the
/// text it gets alone (greedy, so any cross-talk between sequences would show).
#[tokio::test]
async fn concurrent_streams_match_sequential_results() {
    let s = start(&["--max-batch", "4", "--max-batched-tokens", "16"]);
    let prompts = ["Tell me a story", "What is 2+2?", "Bonjour", "Write a haiku about Rust"];
    let text = |events: Vec<String>| -> String {
        events
            .iter()
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str::<Value>(e).unwrap())
            .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(String::from))
            .collect()
    };
    let mut alone = vec![];
    for p in prompts {
        alone.push(text(sse(&s, "/v1/chat/completions", chat_body(p, 16, true)).await));
    }
    let together = futures_util::future::join_all(
        prompts.iter().map(|p| sse(&s, "/v1/chat/completions", chat_body(p, 16, true))),
    )
    .await;
    let together: Vec<String> = together.into_iter().map(text).collect();
    assert_eq!(together, alone);
    let m = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
    assert!(m.contains("latlab_requests_total{status=\"ok\"} 8\n"), "{m}");
}
