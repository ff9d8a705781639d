//! Lenient parsing of OpenAI-style server-sent events, kept separate from any server
//! code so latlab measures vLLM, SGLang and its own engine with the same rules:
//! blank lines, `:` comments and non-`data` fields (`event:`, `id:`, `retry:`) are skipped;
//! `data: [DONE]` ends the stream; any other `data` payload must be JSON, and a payload
//! that is not counts the request as failed (as vLLM's `json.loads` would).

use serde::Deserialize;

/// Splits a byte stream into lines across network-chunk boundaries.
#[derive(Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
}

impl LineSplitter {
    /// Feeds bytes and calls `on_line` for every complete line (without `\n` / `\r\n`).
    /// Stops early and returns `false` when `on_line` does.
    pub fn push(&mut self, bytes: &[u8], mut on_line: impl FnMut(&[u8]) -> bool) -> bool {
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            let keep_going = if self.buf.is_empty() {
                on_line(trim_cr(&rest[..pos]))
            } else {
                self.buf.extend_from_slice(&rest[..pos]);
                let line = std::mem::take(&mut self.buf);
                let r = on_line(trim_cr(&line));
                self.buf = line;
                self.buf.clear();
                r
            };
            rest = &rest[pos + 1..];
            if !keep_going {
                return false;
            }
        }
        self.buf.extend_from_slice(rest);
        true
    }

    /// Bytes of an unterminated last line, if any.
    pub fn remainder(&self) -> &[u8] {
        &self.buf
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// What one SSE line means to the client.
#[derive(Debug, PartialEq)]
pub enum SseLine<'a> {
    /// A `data:` payload other than `[DONE]`.
    Data(&'a str),
    Done,
    Skip,
}

pub fn classify(line: &[u8]) -> Result<SseLine<'_>, String> {
    let line = std::str::from_utf8(line).map_err(|_| "SSE line is not UTF-8".to_string())?;
    let line = line.trim();
    if line.is_empty() || line.starts_with(':') {
        return Ok(SseLine::Skip);
    }
    let Some(payload) = line.strip_prefix("data:") else {
        // Other SSE fields carry no data; a bare non-field line is garbage.
        return if ["event:", "id:", "retry:"].iter().any(|f| line.starts_with(f)) {
            Ok(SseLine::Skip)
        } else {
            Err(format!("not an SSE line: {}", clip(line)))
        };
    };
    let payload = payload.trim_start();
    Ok(if payload == "[DONE]" { SseLine::Done } else { SseLine::Data(payload) })
}

/// The parts of one streamed chunk that the metrics need.
#[derive(Debug, Default, PartialEq)]
pub struct ChunkEvent {
    /// `choices` was present and non-empty.
    pub has_choices: bool,
    /// The first choice streamed output (non-empty content, reasoning or completion
    /// text): only such events count for TTFT, ITL and E2EL, as in current vLLM. A
    /// role-only chunk before the first token or an empty-delta chunk carrying
    /// `finish_reason` after the last one has choices but no output.
    pub carries_output: bool,
    /// Generated text of the first choice (reasoning + content, or completion text).
    pub text: String,
    /// `usage.completion_tokens`, when the chunk carries usage.
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens`, when the chunk carries usage.
    pub prompt_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct RawChunk {
    #[serde(default)]
    choices: Option<Vec<RawChoice>>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawChoice {
    #[serde(default)]
    delta: Option<RawDelta>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct RawDelta {
    #[serde(default)]
    content: Option<String>,
    // Reasoning models stream thinking here (vLLM: `reasoning_content`, newer: `reasoning`).
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

/// Parses one `data:` payload. An `{"error": ...}` object or invalid JSON is an error.
pub fn parse_chunk(payload: &str) -> Result<ChunkEvent, String> {
    let raw: RawChunk = serde_json::from_str(payload)
        .map_err(|e| format!("invalid JSON in SSE data ({e}): {}", clip(payload)))?;
    let choices = raw.choices.unwrap_or_default();
    if choices.is_empty()
        && let Some(err) = raw.error
    {
        return Err(format!("server sent an error event: {}", clip(&err.to_string())));
    }
    let mut text = String::new();
    if let Some(c) = choices.first() {
        if let Some(d) = &c.delta {
            for part in [&d.reasoning_content, &d.reasoning, &d.content].into_iter().flatten() {
                text.push_str(part);
            }
        }
        if let Some(t) = &c.text {
            text.push_str(t);
        }
    }
    let usage = raw.usage.as_ref();
    Ok(ChunkEvent {
        has_choices: !choices.is_empty(),
        carries_output: !text.is_empty(),
        text,
        completion_tokens: usage.and_then(|u| u.completion_tokens),
        prompt_tokens: usage.and_then(|u| u.prompt_tokens),
    })
}

fn clip(s: &str) -> String {
    const MAX: usize = 120;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_reassembled_across_chunks() {
        let mut sp = LineSplitter::default();
        let mut lines = Vec::new();
        for part in [&b"data: {\"a\""[..], b":1}\r\n\r\ndata: [DO", b"NE]\n", b"tail"] {
            sp.push(part, |l| {
                lines.push(String::from_utf8(l.to_vec()).unwrap());
                true
            });
        }
        assert_eq!(lines, ["data: {\"a\":1}", "", "data: [DONE]"]);
        assert_eq!(sp.remainder(), b"tail");
    }

    #[test]
    fn classification_is_lenient_but_not_blind() {
        assert_eq!(classify(b"data: [DONE]"), Ok(SseLine::Done));
        assert_eq!(classify(b"data:{}"), Ok(SseLine::Data("{}")));
        assert_eq!(classify(b": ping"), Ok(SseLine::Skip));
        assert_eq!(classify(b"event: message"), Ok(SseLine::Skip));
        assert_eq!(classify(b"   "), Ok(SseLine::Skip));
        assert!(classify(b"garbage here").is_err());
        assert!(classify(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn chunks_yield_choices_text_and_usage() {
        let c =
            parse_chunk(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#).unwrap();
        assert!(c.has_choices && !c.carries_output, "a role-only chunk carries no token");
        let c = parse_chunk(
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"completion_tokens":9}}"#,
        )
        .unwrap();
        assert!(c.has_choices && !c.carries_output, "nor does an empty finish chunk");
        let c = parse_chunk(r#"{"choices":[{"delta":{"reasoning_content":"hm","content":null}}],"usage":{"completion_tokens":3}}"#).unwrap();
        assert_eq!((c.text.as_str(), c.completion_tokens, c.carries_output), ("hm", Some(3), true));
        let c = parse_chunk(r#"{"choices":[{"delta":{"reasoning":"r"}}]}"#).unwrap();
        assert!(c.carries_output, "reasoning text is output too");
        let c = parse_chunk(r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#).unwrap();
        assert_eq!((c.has_choices, c.completion_tokens, c.prompt_tokens), (false, Some(7), Some(5)));
        let c = parse_chunk(r#"{"choices":[{"text":"abc","index":0}]}"#).unwrap();
        assert_eq!((c.text.as_str(), c.carries_output), ("abc", true));
        assert!(
            !parse_chunk(r#"{"choices":[{"text":"","index":0,"finish_reason":"length"}]}"#)
                .unwrap()
                .carries_output
        );
        assert!(parse_chunk("{not json").is_err());
        assert!(parse_chunk(r#"{"error":{"message":"overloaded"}}"#).unwrap_err().contains("overloaded"));
    }
}
