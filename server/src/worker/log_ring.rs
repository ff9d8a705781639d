//! The last part of an engine's output, kept in memory while it runs and saved with the
//! run: enough to see why an engine failed without storing gigabytes of logs. Logs are as
//! public as the run, so any secret the worker knows is masked before a line is kept, and
//! terminal colour codes are dropped (the page shows text, not a terminal).

use app::format::strip_ansi;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct LogRing {
    inner: Arc<Mutex<String>>,
    /// Values replaced by `[redacted]` wherever they appear.
    redact: Arc<Vec<String>>,
}

/// Bytes kept; older output is dropped line by line.
pub const LOG_CAPACITY: usize = 64 * 1024;

impl LogRing {
    /// A ring that masks each of `secrets` (values shorter than 8 bytes are ignored: they
    /// would mask ordinary words).
    pub fn redacting(secrets: impl IntoIterator<Item = String>) -> Self {
        let redact: Vec<String> = secrets.into_iter().filter(|s| s.len() >= 8).collect();
        LogRing { inner: Arc::default(), redact: Arc::new(redact) }
    }

    pub fn push_line(&self, line: &str) {
        let mut line = strip_ansi(line);
        for secret in self.redact.iter() {
            if line.contains(secret.as_str()) {
                line = line.replace(secret.as_str(), "[redacted]");
            }
        }
        let mut s = self.inner.lock().expect("log lock poisoned");
        s.push_str(&line);
        s.push('\n');
        if s.len() > LOG_CAPACITY {
            let mut cut = s.len() - LOG_CAPACITY;
            while !s.is_char_boundary(cut) {
                cut += 1;
            }
            let cut = s[cut..].find('\n').map(|i| cut + i + 1).unwrap_or(cut);
            s.drain(..cut);
        }
    }

    pub fn snapshot(&self) -> String {
        self.inner.lock().expect("log lock poisoned").clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_and_colours_dropped() {
        let r = LogRing::redacting(["secret-token-0123".to_string(), "short".to_string()]);
        r.push_line("auth: Bearer secret-token-0123 and secret-token-0123!");
        r.push_line("\x1b[32mINFO\x1b[0m \x1b[1;31mready\x1b[0m short");
        assert_eq!(r.snapshot(), "auth: Bearer [redacted] and [redacted]!\nINFO ready short\n");
    }

    #[test]
    fn keeps_the_tail_on_line_boundaries() {
        let r = LogRing::default();
        for i in 0..20_000 {
            r.push_line(&format!("line {i}"));
        }
        let s = r.snapshot();
        assert!(s.len() <= LOG_CAPACITY);
        assert!(s.starts_with("line "), "starts mid-line: {:?}", &s[..20]);
        assert!(s.ends_with("line 19999\n"));
    }
}
