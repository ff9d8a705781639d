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
