//! Turns wire outcomes into `RequestRecord`s once the run is over, so tokenization never
//! runs on the timed path: output tokens come from the final usage event, else (vLLM's
//! fallback) from re-tokenizing the generated text. Per-chunk token counts come from the
//! server's cumulative per-chunk usage (`continuous_usage_stats`) when every chunk carries
//! it; otherwise the whole streamed text is tokenized once and each chunk is credited with
//! the tokens that end inside it: the difference of the prefix counts at its end and at
//! the previous chunk's end. Never from chunks tokenized apart, which miscounts tokens
//! that only exist in context (a contraction split over two chunks, a space run).

use crate::client::StreamOutcome;
use crate::tokenizer::TokenCounter;
use bench_types::{ChunkTokenSource, RequestRecord, RunSpec};
use std::time::Instant;

/// One request's record, with what the record itself has no field for.
pub struct Finalized {
    pub record: RequestRecord,
    /// Whose count `record.chunk_tokens` is.
    pub chunk_token_source: ChunkTokenSource,
    /// `usage.prompt_tokens` from the server, when it sent one.
    pub server_prompt_tokens: Option<u64>,
}

pub fn finalize(
    index: u32,
    o: &StreamOutcome,
    bench_start: Instant,
    input_tokens: u32,
    tok: &TokenCounter,
) -> Finalized {
    let dispatch_offset_s = o.start.saturating_duration_since(bench_start).as_secs_f64();
    let (chunk_tokens, chunk_token_source) = chunk_tokens(o, tok);
    let output_tokens = if !o.success {
        0
    } else {
        match o.final_usage {
            // vLLM: `if not output_len` -> re-tokenize, so a usage of 0 falls back too.
            Some(n) if n > 0 => n.min(u64::from(u32::MAX)) as u32,
            _ => tok.count_generated(&o.chunk_texts.concat()),
        }
    };
    let record = RequestRecord {
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
    };
    Finalized { record, chunk_token_source, server_prompt_tokens: o.final_prompt_tokens }
}

/// `finalize` without the extras.
pub fn record(
    index: u32,
    o: &StreamOutcome,
    bench_start: Instant,
    input_tokens: u32,
    tok: &TokenCounter,
) -> RequestRecord {
    finalize(index, o, bench_start, input_tokens, tok).record
}

fn chunk_tokens(o: &StreamOutcome, tok: &TokenCounter) -> (Vec<u32>, ChunkTokenSource) {
    let usage: Option<Vec<u64>> = o.chunk_usage.iter().copied().collect();
    if let Some(u) = usage
        && !u.is_empty()
        && u.windows(2).all(|w| w[1] >= w[0])
    {
        let mut prev = 0;
        let counts = u
            .into_iter()
            .map(|c| {
                let d = c.saturating_sub(prev);
                prev = c;
                d.min(u64::from(u32::MAX)) as u32
            })
            .collect();
        return (counts, ChunkTokenSource::ServerUsage);
    }
    (cumulative_counts(&o.chunk_texts, tok), ChunkTokenSource::Tokenization)
}

/// Tokens of `texts` joined, credited to the text each token ends in.
pub fn cumulative_counts(texts: &[String], tok: &TokenCounter) -> Vec<u32> {
    let ends = tok.token_ends(&texts.concat());
    let (mut boundary, mut next) = (0usize, 0usize);
    texts
        .iter()
        .map(|t| {
            boundary += t.len();
            let first = next;
            while next < ends.len() && ends[next] <= boundary {
                next += 1;
            }
            (next - first) as u32
        })
        .collect()
}

/// What a whole run's chunk counts rest on, over the successful requests.
pub fn run_source(sources: impl IntoIterator<Item = ChunkTokenSource>) -> Option<ChunkTokenSource> {
    sources.into_iter().reduce(|a, b| if a == b { a } else { ChunkTokenSource::Mixed })
}

/// Facts about the run for the report's notes.
pub fn run_notes(spec: &RunSpec, records: &[RequestRecord]) -> Vec<String> {
    let forced = spec.sends_ignore_eos() && !spec.sampling.ignore_eos;
    let mut notes = vec![
        format!(
            "output length {} (ignore_eos={}{})",
            if spec.sends_ignore_eos() { "pinned" } else { "not pinned: the model may stop early" },
            spec.sends_ignore_eos(),
            if forced { ", always sent with the random dataset, as vLLM does" } else { "" }
        ),
        "peak concurrent requests: exact sweep over [start, end) intervals (vLLM v0.11 counted 1-s buckets and over-counts)".into(),
        "TTFT, ITL and E2EL count only chunks that stream text, as current vLLM does: a role-only first chunk or an empty finish chunk is not a token".into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_combine_to_mixed_only_when_they_differ() {
        use ChunkTokenSource::*;
        assert_eq!(run_source([]), None);
        assert_eq!(run_source([ServerUsage, ServerUsage]), Some(ServerUsage));
        assert_eq!(run_source([Tokenization, ServerUsage, Tokenization]), Some(Mixed));
    }
}
