//! One request's generation as seen by a handler: engine token events turned into text
//! pieces (UTF-8-safe, stop strings applied), usage counted, latency metrics recorded.
//! Shared by chat and completions, streaming or not.

use crate::api_error::ApiError;
use crate::state::AppState;
use engine::detokenize::TextStream;
use engine::request::{GenerateRequest, TokenEvent};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;
use tokio::sync::mpsc::Receiver;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
}

#[derive(Debug)]
pub enum Piece {
    /// Text of one engine step's tokens (may be empty while a character is partial);
    /// `first` on the first, which must produce an event even when its text is empty;
    /// `finish` on the last.
    Delta {
        text: String,
        first: bool,
        finish: Option<&'static str>,
    },
    /// After the last Delta: the request's token counts.
    Finished {
        usage: Usage,
    },
    Failed(String),
}

pub struct Generation {
    state: AppState,
    rx: Receiver<TokenEvent>,
    text: TextStream,
    pending: VecDeque<Piece>,
    prompt_tokens: usize,
    completion_tokens: usize,
    started: Instant,
    first_at: Option<Instant>,
    done: bool,
}

impl Generation {
    pub fn start(state: &AppState, req: GenerateRequest, stops: Vec<String>) -> Result<Self, ApiError> {
        let prompt_tokens = req.prompt.len();
        let rx = state.engine.submit(req).inspect_err(|_| {
            state.metrics.requests_error.fetch_add(1, Relaxed);
        })?;
        Ok(Generation {
            state: state.clone(),
            rx,
            text: TextStream::new(stops),
            pending: VecDeque::new(),
            prompt_tokens,
            completion_tokens: 0,
            started: Instant::now(),
            first_at: None,
            done: false,
        })
    }

    /// The next piece; None after Finished or Failed. Dropping the Generation cancels it.
    pub async fn next(&mut self) -> Option<Piece> {
        if let Some(p) = self.pending.pop_front() {
            return Some(p);
        }
        if self.done {
            return None;
        }
        let tok = &self.state.engine.shared().tokenizer;
        let ev = self.rx.recv().await;
        match ev {
            Some(TokenEvent::Tokens { ids, finished }) => {
                let first = self.first_at.is_none();
                if first {
                    self.first_at = Some(Instant::now());
                }
                // A step's tokens (several with speculative decoding) make one piece, so
                // a stream sends them as one chunk, as SGLang does.
                let mut text = String::new();
                for id in ids {
                    self.completion_tokens += 1;
                    let (piece, stopped) = match self.text.push(tok, id) {
                        Ok(x) => x,
                        Err(e) => return Some(self.fail(e.to_string())),
                    };
                    text.push_str(&piece);
                    if stopped {
                        // A stop string ends the request here (the step's later tokens are
                        // dropped); dropping rx then cancels it.
                        self.finish();
                        return Some(Piece::Delta { text, first, finish: Some("stop") });
                    }
                }
                let Some(f) = finished else {
                    return Some(Piece::Delta { text, first, finish: None });
                };
                match self.text.finish(tok) {
                    Ok(tail) => text.push_str(&tail),
                    Err(e) => return Some(self.fail(e.to_string())),
                }
                self.finish();
                Some(Piece::Delta { text, first, finish: Some(f.reason.as_str()) })
            }
            Some(TokenEvent::Error(e)) => Some(self.fail(e)),
            None => Some(self.fail("engine dropped the request".into())),
        }
    }

    fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            total_tokens: self.prompt_tokens + self.completion_tokens,
        }
    }

    fn finish(&mut self) {
        self.done = true;
        let m = &self.state.metrics;
        m.requests_ok.fetch_add(1, Relaxed);
        m.prompt_tokens.fetch_add(self.prompt_tokens as u64, Relaxed);
        m.completion_tokens.fetch_add(self.completion_tokens as u64, Relaxed);
        let e2e = self.started.elapsed().as_secs_f64();
        m.e2e.observe(e2e);
        if let Some(first) = self.first_at {
            let ttft = (first - self.started).as_secs_f64();
            m.ttft.observe(ttft);
            if self.completion_tokens > 1 {
                m.tpot.observe((e2e - ttft) / (self.completion_tokens - 1) as f64);
            }
        }
        self.pending.push_back(Piece::Finished { usage: self.usage() });
    }

    fn fail(&mut self, msg: String) -> Piece {
        self.done = true;
        self.state.metrics.requests_error.fetch_add(1, Relaxed);
        Piece::Failed(msg)
    }
}
