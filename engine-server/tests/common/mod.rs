//! What the end-to-end tests share: a `latlab-engine serve` child on a free port, and
//! HTTP helpers. Each test binary uses part of it.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub struct Server {
    child: Child,
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// SIGINT (Ctrl-C) to the server, then its exit status, waited for up to `secs` seconds.
    pub fn interrupt(&mut self, secs: u64) -> std::process::ExitStatus {
        let sent =
            Command::new("kill").args(["-INT", &self.child.id().to_string()]).status().expect("kill runs");
        assert!(sent.success(), "kill -INT failed: {sent:?}");
        let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(std::time::Instant::now() < end, "the server did not exit within {secs} s of SIGINT");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

pub fn start(extra: &[&str]) -> Server {
    start_model("random:tiny", extra)
}

pub fn start_model(model: &str, extra: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_latlab-engine"))
        .args([
            "serve",
            "--model",
            model,
            "--served-model-name",
            "tiny",
            "--port",
            "0",
            "--host",
            "127.0.0.1",
        ])
        .args(extra)
        .env("LATLAB_ASSETS_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("latlab-engine starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    Server { child, base }
}

/// POST and split the SSE body into its `data:` payloads, checking the framing.
pub async fn sse(s: &Server, path: &str, body: Value) -> Vec<String> {
    let resp = reqwest::Client::new().post(format!("{}{path}", s.base)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let text = resp.text().await.unwrap();
    assert!(text.ends_with("\n\n"), "events end with a blank line");
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").unwrap_or_else(|| panic!("bad frame {e:?}")).to_string())
        .collect()
}

pub fn chat_body(content: &str, max: usize, stream: bool) -> Value {
    json!({
        "model": "tiny", "messages": [{"role": "user", "content": content}],
        "max_completion_tokens": max, "temperature": 0, "ignore_eos": true,
        "stream": stream, "stream_options": {"include_usage": true},
    })
}

/// `latlab-engine make-model` with `args`, into `dir`; panics with its stderr on failure.
pub fn make_model(args: &[&str], dir: &std::path::Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_latlab-engine"))
        .arg("make-model")
        .args(args)
        .arg("--out")
        .arg(dir)
        .env("LATLAB_ASSETS_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Serve `model` with `extra`, complete a fixed prompt greedily, and return the text with
/// the server's /v1/engine/info.
pub async fn greedy_text_and_info(model: &str, extra: &[&str]) -> (String, Value) {
    let s = start_model(model, extra);
    let body = json!({"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0, "ignore_eos": true});
    let text = completion_text(&s.base, &body).await;
    let info: Value = reqwest::get(format!("{}/v1/engine/info", s.base)).await.unwrap().json().await.unwrap();
    (text, info)
}

/// The text of a non-streaming /v1/completions answer to `body`.
pub async fn completion_text(base: &str, body: &Value) -> String {
    let v: Value = reqwest::Client::new()
        .post(format!("{base}/v1/completions"))
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["choices"][0]["text"].as_str().unwrap().to_string()
}
