//! Turns wire outcomes into `RequestRecord`s once the run is over, so tokenization never
//! runs on the timed path: output tokens come from the final usage event, else (vLLM's
//! fallback) from re-tokenizing the generated text; per-chunk token counts come from
//! cumulative per-chunk usage when the server sends it, else from re-tokenizing each
//! chunk's text (approximate at chunk seams, exact for single-token chunks).

use crate::client::StreamOutcome;
use crate::tokenizer::TokenCounter;
use bench_types::{RequestRecord, RunSpec};
use std::time::Instant;

pub fn record(index: u32, o: &StreamOutcome, bench_start: Instant, input_tokens: u32, tok: &TokenCounter) -> RequestRecord {
    let dispatch_offset_s = o.start.saturating_duration_since(bench_start).as_secs_f64();
    let chunk_tokens = chunk_tokens(o, tok);
    let output_tokens = if !o.success {
        0
    } else {
        match o.final_usage {
            // vLLM: `if not output_len` -> re-tokenize, so a usage of 0 falls back too.
            Some(n) if n > 0 => n.min(u64::from(u32::MAX)) as u32,
            _ => tok.count_generated(&o.chunk_texts.concat()),
        }
    };
    RequestRecord {
        index,
        dispatch_offset_s,
        success: o.success,
        error: o.error.clone(),
        input_tokens,
        output_tokens,
        ttft_s: if o.success { o.chunk_offsets_s.first().copied() } else { None },
        e2el_s: if o.success { o.chunk_offsets_s.last().copied() } else { None },
        chunk_offsets_s: o.chunk_offsets_s.clone(),
        chunk_tokens: Some(chunk_tokens),
    }
}

fn chunk_tokens(o: &StreamOutcome, tok: &TokenCounter) -> Vec<u32> {
    let usage: Option<Vec<u64>> = o.chunk_usage.iter().copied().collect();
    if let Some(u) = usage
        && u.windows(2).all(|w| w[1] >= w[0])
    {
        let mut prev = 0;
        return u
            .into_iter()
            .map(|c| {
                let d = c - prev;
                prev = c;
                d as u32
            })
            .collect();
    }
    o.chunk_texts.iter().map(|t| tok.count_generated(t)).collect()
}

/// Facts about the run for the report's notes.
pub fn run_notes(spec: &RunSpec, records: &[RequestRecord]) -> Vec<String> {
    let mut notes = vec![
        format!(
            "output length {} (ignore_eos={})",
            if spec.sampling.ignore_eos { "pinned" } else { "not pinned: the model may stop early" },
            spec.sampling.ignore_eos
        ),
        "peak concurrent requests: exact sweep over [start, end) intervals (vLLM v0.11 counted 1-s buckets and over-counts)".into(),
        "ITL is per SSE chunk as in vLLM; token-level ITL splits each chunk's gap over its tokens".into(),
    ];
    let failed: Vec<&RequestRecord> = records.iter().filter(|r| !r.success).collect();
    if let Some(first) = failed.first() {
        notes.push(format!(
            "{} of {} requests failed; first error (request {}): {}",
            failed.len(),
            records.len(),
            first.index,
            first.error.as_deref().unwrap_or("unknown")
        ));
    }
    notes
}
