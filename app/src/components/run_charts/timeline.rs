//! The data of a run's request timeline, from its records: the bars in dispatch order,
//! output tokens per time bin and requests in flight, all cut to the window `from..to`
//! (seconds since the first dispatch). Pure, so binning is tested without drawing.

use bench_types::RequestRecord;
use charts::{RateBin, Timeline, TimelineBar, fmt_num};

/// When the request ended: its last token, else its last chunk (a failure mid-stream),
/// else its dispatch (a failure before any token).
pub fn request_end(r: &RequestRecord) -> f64 {
    let last = r.e2el_s.or_else(|| r.chunk_offsets_s.last().copied()).unwrap_or(0.0);
    r.dispatch_offset_s + last.max(0.0)
}

/// The run's length on the timeline: from the first dispatch to the last end.
pub fn span(records: &[RequestRecord]) -> f64 {
    records.iter().map(request_end).fold(0.0, f64::max)
}

/// Throughput bin width for a window of `span` seconds: 1 s for ordinary runs, finer for
/// a short window (about 20 bins), coarser past 300 s (about 300 bins); a 1-2-5 value.
pub fn bin_s(span: f64) -> f64 {
    if span < 20.0 {
        charts::ticks::step_up(span / 20.0)
    } else if span <= 300.0 {
        1.0
    } else {
        charts::ticks::step_up(span / 300.0)
    }
}

/// Output tokens per second in bins of `bin` from `from` to `to` (the last bin may be
/// shorter, and is closed so a token exactly at `to` counts). Successful requests only,
/// as the summary's output throughput; a chunk counts the tokens it carried when known,
/// else the request's tokens spread evenly over its chunks.
pub fn throughput(records: &[RequestRecord], from: f64, to: f64, bin: f64) -> Vec<RateBin> {
    if to <= from || bin <= 0.0 {
        return vec![];
    }
    let n = ((to - from) / bin - 1e-9).ceil().max(1.0) as usize;
    let mut tokens = vec![0.0f64; n];
    for r in records.iter().filter(|r| r.success) {
        let chunks = r.chunk_offsets_s.len();
        for (j, off) in r.chunk_offsets_s.iter().enumerate() {
            let t = r.dispatch_offset_s + off;
            if t < from || t > to {
                continue;
            }
            let k = (((t - from) / bin + 1e-9).floor() as usize).min(n - 1);
            tokens[k] += match &r.chunk_tokens {
                Some(ct) => ct.get(j).copied().unwrap_or(0) as f64,
                None => r.output_tokens as f64 / chunks as f64,
            };
        }
    }
    tokens
        .into_iter()
        .enumerate()
        .map(|(k, tok)| {
            let lo = from + k as f64 * bin;
            let hi = (lo + bin).min(to);
            RateBin { lo, hi, tokens_per_s: tok / (hi - lo) }
        })
        .collect()
}

/// Requests in flight over `from..=to` as steps `(time, count from then on)`, starting at
/// `from`. A request is in flight over `[dispatch, end)`: an end and a start at the same
/// instant do not overlap (as the summary's peak concurrency).
pub fn in_flight(records: &[RequestRecord], from: f64, to: f64) -> Vec<(f64, u32)> {
    let mut events: Vec<(f64, i32)> =
        records.iter().flat_map(|r| [(r.dispatch_offset_s, 1), (request_end(r), -1)]).collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut count: i32 = 0;
    let mut out: Vec<(f64, u32)> = Vec::new();
    for (t, d) in events {
        if t > to {
            break;
        }
        count += d;
        let at = t.max(from);
        match out.last_mut() {
            Some(last) if last.0 == at => last.1 = count.max(0) as u32,
            _ => out.push((at, count.max(0) as u32)),
        }
    }
    if out.first().is_none_or(|f| f.0 > from) {
        out.insert(0, (from, 0));
    }
    out
}

fn tooltip(r: &RequestRecord) -> String {
    let at = |s: f64| format!("{} s", fmt_num(s));
    let mut t = format!("request #{}: dispatched at {}", r.index, at(r.dispatch_offset_s));
    if let Some(f) = r.ttft_s {
        t.push_str(&format!(
            ", first token at {} (TTFT {} ms)",
            at(r.dispatch_offset_s + f),
            fmt_num(f * 1e3)
        ));
    }
    match (r.success, r.e2el_s) {
        (true, Some(e)) => t.push_str(&format!(
            ", last token at {} (E2EL {} ms)",
            at(r.dispatch_offset_s + e),
            fmt_num(e * 1e3)
        )),
        _ => t.push_str(&format!(", failed: {}", r.error.as_deref().unwrap_or("no reason given"))),
    }
    t.push_str(&format!("; {} in / {} out tokens", r.input_tokens, r.output_tokens));
    t
}

/// The timeline of `records` over `from..to` (`None`: the run's edges).
pub fn timeline(records: &[RequestRecord], from: Option<f64>, to: Option<f64>) -> Timeline {
    let whole = span(records);
    let from = from.unwrap_or(0.0);
    let to = to.unwrap_or(whole.max(from));
    let mut sorted: Vec<&RequestRecord> = records.iter().collect();
    sorted.sort_by(|a, b| a.dispatch_offset_s.total_cmp(&b.dispatch_offset_s).then(a.index.cmp(&b.index)));
    let bars = sorted
        .into_iter()
        .filter(|r| r.dispatch_offset_s <= to && request_end(r) >= from)
        .map(|r| TimelineBar {
            start: r.dispatch_offset_s,
            first_token: r.ttft_s.map(|f| r.dispatch_offset_s + f),
            end: request_end(r),
            failed: !r.success,
            tooltip: tooltip(r),
            index: r.index,
        })
        .collect();
    let bin = bin_s(to - from);
    let title = format!(
        "Request timeline, {}-{} s (throughput in {} s bins)",
        fmt_num(from),
        fmt_num(to),
        fmt_num(bin)
    );
    Timeline {
        title,
        from,
        to,
        bars,
        throughput: throughput(records, from, to, bin),
        in_flight: in_flight(records, from, to),
        empty: format!(
            "No request between {} s and {} s: the run spans 0-{} s.",
            fmt_num(from),
            fmt_num(to),
            fmt_num(whole)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(index: u32, start: f64, chunks: &[f64], tokens: Option<&[u32]>, out: u32) -> RequestRecord {
        RequestRecord {
            index,
            dispatch_offset_s: start,
            success: true,
            error: None,
            input_tokens: 4,
            output_tokens: out,
            ttft_s: chunks.first().copied(),
            e2el_s: chunks.last().copied(),
            chunk_offsets_s: chunks.to_vec(),
            chunk_tokens: tokens.map(<[u32]>::to_vec),
        }
    }

    #[test]
    fn bins_follow_the_window() {
        assert_eq!(bin_s(60.0), 1.0);
        assert_eq!(bin_s(4.0), 0.2);
        assert_eq!(bin_s(1000.0), 5.0);
    }

    /// By hand: request 0 sends 2 tokens at 0.5 s and 3 at 1.5 s; request 1 (counts
    /// unknown) 4 tokens over chunks at 1.2 s and 2.0 s, 2 each; 1 s bins over 0..2.
    #[test]
    fn throughput_counts_the_tokens_each_chunk_carried() {
        let r = vec![rec(0, 0.0, &[0.5, 1.5], Some(&[2, 3]), 5), rec(1, 1.0, &[0.2, 1.0], None, 4)];
        let b = throughput(&r, 0.0, 2.0, 1.0);
        let got: Vec<(f64, f64, f64)> = b.iter().map(|b| (b.lo, b.hi, b.tokens_per_s)).collect();
        assert_eq!(got, [(0.0, 1.0, 2.0), (1.0, 2.0, 7.0)], "the token at exactly 2.0 s counts");
        // A half-second window: one bin, 3 + 2 tokens over 0.5 s.
        let b = throughput(&r, 1.2, 1.7, 1.0);
        assert_eq!(b.len(), 1);
        assert!((b[0].tokens_per_s - 10.0).abs() < 1e-9, "{b:?}");
    }

    #[test]
    fn in_flight_steps_over_half_open_intervals() {
        // [0, 1.5), [1, 2), [1.5, 2.5): at 1.5 one ends as one starts.
        let r = vec![
            rec(0, 0.0, &[0.5, 1.5], None, 2),
            rec(1, 1.0, &[1.0], None, 1),
            rec(2, 1.5, &[1.0], None, 1),
        ];
        assert_eq!(in_flight(&r, 0.0, 3.0), [(0.0, 1), (1.0, 2), (1.5, 2), (2.0, 1), (2.5, 0)]);
        // Zoomed in: the count at the window's start, then its steps.
        assert_eq!(in_flight(&r, 1.2, 2.2), [(1.2, 2), (1.5, 2), (2.0, 1)]);
    }

    #[test]
    fn the_window_keeps_the_requests_it_touches_in_dispatch_order() {
        let r = vec![
            rec(5, 1.0, &[0.2, 1.0], None, 2),
            rec(3, 0.0, &[0.5, 0.8], None, 2),
            rec(9, 3.0, &[0.1], None, 1),
        ];
        let t = timeline(&r, None, None);
        assert_eq!(t.bars.iter().map(|b| b.index).collect::<Vec<_>>(), [3, 5, 9]);
        assert_eq!((t.from, t.to), (0.0, 3.1));
        assert_eq!(t.bars[1].first_token, Some(1.2));
        let t = timeline(&r, Some(1.5), Some(2.5));
        assert_eq!(t.bars.iter().map(|b| b.index).collect::<Vec<_>>(), [5]);
        let t = timeline(&r, Some(10.0), Some(20.0));
        assert!(t.bars.is_empty() && t.empty.contains("the run spans 0-3.1 s"), "{}", t.empty);
    }
}
