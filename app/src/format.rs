//! Number and time formatting shared by pages (the same output on server and browser).

use chrono::{DateTime, Utc};

/// `12.34` with two decimals, as vLLM prints its result block.
pub fn f2(v: f64) -> String {
    format!("{v:.2}")
}

pub fn when(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// Seconds between two instants, for "ran for" columns.
pub fn elapsed(from: &DateTime<Utc>, to: &DateTime<Utc>) -> String {
    let s = (*to - *from).num_milliseconds() as f64 / 1000.0;
    if s < 120.0 { format!("{s:.1} s") } else { format!("{:.1} min", s / 60.0) }
}

/// `text` without terminal colour codes (ANSI CSI sequences `ESC [ ... final byte`, and lone
/// escapes): the worker drops them from engine logs as it keeps them, and the run page from
/// logs stored before it did.
pub fn strip_ansi(text: &str) -> String {
    if !text.contains('\x1b') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte in '@'..='~'.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// Mean request latency of a closed-loop run (every request released at once under a
/// concurrency cap), derived as duration x concurrency / requests: how the seed study
/// states its latency headline when the source printed no E2EL. `None` for open-loop runs.
pub fn derived_mean_latency_s(summary: &bench_types::Summary, spec: &bench_types::RunSpec) -> Option<f64> {
    let c = *spec.load.max_concurrency.first()?;
    let n = summary.completed;
    (spec.load.request_rate.is_none() && n > 0 && summary.duration_s > 0.0)
        .then(|| summary.duration_s * c.min(n) as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_codes_are_dropped() {
        assert_eq!(strip_ansi("\x1b[32mINFO\x1b[0m ready"), "INFO ready");
        assert_eq!(strip_ansi("plain"), "plain");
        // A lone escape goes; a CSI cut off at the end of the line takes the rest with it.
        assert_eq!(strip_ansi("a\x1bb"), "ab");
        assert_eq!(strip_ansi("done \x1b[1"), "done ");
    }
}
