//! The last part of an engine's output, kept in memory while it runs and saved with the
//! run: enough to see why an engine failed without storing gigabytes of logs.

use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct LogRing {
    inner: Arc<Mutex<String>>,
}

/// Bytes kept; older output is dropped line by line.
pub const LOG_CAPACITY: usize = 64 * 1024;

impl LogRing {
    pub fn push_line(&self, line: &str) {
        let mut s = self.inner.lock().expect("log lock poisoned");
        s.push_str(line);
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
