//! One streaming request, timed the way current vLLM's `endpoint_request_func` times it:
//! the clock starts just before the POST (inside the concurrency limiter), every SSE event
//! is stamped as soon as its line is complete, TTFT is the first event that streams output
//! (text, reasoning or completion text; a role-only or empty finish chunk is not a token),
//! ITL the gaps between such events, E2EL the last of them. The body is serialised before
//! the clock starts. Token counting happens after the run, off the timed path (see
//! `finalize`).

use crate::sse::{LineSplitter, SseLine, classify, parse_chunk};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::time::{Duration, Instant};

/// Everything one request produced on the wire, before token counting.
#[derive(Debug, Clone)]
pub struct StreamOutcome {
    pub start: Instant,
    pub success: bool,
    pub error: Option<String>,
    /// Offsets from `start` of every event that streamed output.
    pub chunk_offsets_s: Vec<f64>,
    /// Text each of those events carried.
    pub chunk_texts: Vec<String>,
    /// Cumulative `usage.completion_tokens` carried by each of those events (servers with
    /// continuous usage stats), else `None`.
    pub chunk_usage: Vec<Option<u64>>,
    /// `completion_tokens` of the last usage event without choices (vLLM's source).
    pub final_usage: Option<u64>,
    /// `prompt_tokens` of that event: what the server counted as the prompt.
    pub final_prompt_tokens: Option<u64>,
}

impl StreamOutcome {
    fn new(start: Instant) -> Self {
        StreamOutcome {
            start,
            success: false,
            error: None,
            chunk_offsets_s: Vec::new(),
            chunk_texts: Vec::new(),
            chunk_usage: Vec::new(),
            final_usage: None,
            final_prompt_tokens: None,
        }
    }

    /// A request that never produced an outcome of its own.
    pub fn failed_at(start: Instant, msg: &str) -> Self {
        let mut o = Self::new(start);
        o.fail(msg.to_string());
        o
    }

    fn fail(&mut self, msg: String) {
        self.success = false;
        self.error.get_or_insert(msg);
    }
}

/// Sends `body` to `url` and reads the SSE stream to its end, `[DONE]`, or `timeout`.
pub async fn stream_request(
    client: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    body: Vec<u8>,
    timeout: Duration,
) -> StreamOutcome {
    stream_request_with(client, url, request_headers(api_key, &[], None), body, timeout).await
}

/// The headers of one request, in vLLM's precedence: content type and the bearer key,
/// then `--header` values (which may replace either), then `x-request-id`.
pub fn request_headers(
    api_key: Option<&str>,
    extra: &[(HeaderName, HeaderValue)],
    request_id: Option<&str>,
) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(reqwest::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(v) = api_key.and_then(|k| HeaderValue::from_str(&format!("Bearer {k}")).ok()) {
        h.insert(reqwest::header::AUTHORIZATION, v);
    }
    for (k, v) in extra {
        h.insert(k.clone(), v.clone());
    }
    if let Some(v) = request_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        h.insert(HeaderName::from_static("x-request-id"), v);
    }
    h
}

/// `stream_request` with the headers given whole (see `request_headers`).
pub async fn stream_request_with(
    client: &reqwest::Client,
    url: &str,
    headers: HeaderMap,
    body: Vec<u8>,
    timeout: Duration,
) -> StreamOutcome {
    let req = client.post(url).headers(headers).body(body);
    let start = Instant::now();
    let mut out = StreamOutcome::new(start);
    if tokio::time::timeout(timeout, read_stream(req, &mut out)).await.is_err() {
        out.fail(format!("timed out after {:.1} s", timeout.as_secs_f64()));
    }
    out
}

async fn read_stream(req: reqwest::RequestBuilder, out: &mut StreamOutcome) {
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => return out.fail(format!("request failed: {}", error_chain(&e))),
    };
    let status = resp.status();
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        let body: String = body.chars().take(300).collect();
        return out.fail(format!("HTTP {status}: {}", body.trim()));
    }
    let mut stream = resp.bytes_stream();
    let mut lines = LineSplitter::default();
    let mut done = false;
    let mut problem: Option<String> = None;
    while let Some(item) = stream.next().await {
        let bytes = match item {
            Ok(b) => b,
            Err(e) => return out.fail(format!("stream broken: {}", error_chain(&e))),
        };
        lines.push(&bytes, |line| match handle_line(line, out) {
            Ok(LineResult::Continue) => true,
            Ok(LineResult::Done) => {
                done = true;
                false
            }
            Err(e) => {
                problem = Some(e);
                false
            }
        });
        if let Some(p) = problem.take() {
            return out.fail(p);
        }
        if done {
            break;
        }
    }
    // A last line without a trailing newline still counts (some servers omit it).
    if !done && !lines.remainder().is_empty() {
        let last = lines.remainder().to_vec();
        if let Err(e) = handle_line(&last, out) {
            return out.fail(e);
        }
    }
    if out.chunk_offsets_s.is_empty() {
        // vLLM: "Never received a valid chunk to calculate TTFT."
        return out.fail("stream ended without any event carrying generated text".into());
    }
    // vLLM accepts a stream that ends without `[DONE]`; so do we, to measure alike.
    out.success = true;
}

enum LineResult {
    Continue,
    Done,
}

fn handle_line(line: &[u8], out: &mut StreamOutcome) -> Result<LineResult, String> {
    let payload = match classify(line)? {
        SseLine::Skip => return Ok(LineResult::Continue),
        SseLine::Done => return Ok(LineResult::Done),
        SseLine::Data(p) => p,
    };
    // Stamp before parsing, as vLLM does (perf_counter before json.loads).
    let at = out.start.elapsed().as_secs_f64();
    let ev = parse_chunk(payload)?;
    if ev.carries_output {
        out.chunk_offsets_s.push(at);
        out.chunk_texts.push(ev.text);
        out.chunk_usage.push(ev.completion_tokens);
    } else if !ev.has_choices {
        // A usage event (vLLM reads usage only from events without choices).
        if let Some(n) = ev.completion_tokens {
            out.final_usage = Some(n);
        }
        if let Some(n) = ev.prompt_tokens {
            out.final_prompt_tokens = Some(n);
        }
    }
    Ok(LineResult::Continue)
}

/// reqwest's Display hides the cause ("error sending request"); the chain names it.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}
