//! One JSON object per line: `{"prompt": "...", "output_len": N}`. Blank lines are
//! skipped; any other bad line stops the run with its line number. The first `n` lines
//! are used in file order (oversampled like vLLM when the file is shorter).

use super::{Sample, SampleOptions, SampleRequest, oversample};
use crate::error::BenchError;
use crate::tokenizer::TokenCounter;
use serde::Deserialize;
use std::path::Path;
use tokio_util::sync::CancellationToken;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    prompt: String,
    output_len: u32,
}

pub fn sample(
    path: &Path,
    n: usize,
    seed: u64,
    opts: SampleOptions,
    tok: &TokenCounter,
    cancel: &CancellationToken,
) -> Result<Sample, BenchError> {
    let file = crate::input_file::open_regular(path, crate::input_file::MAX_DATASET_BYTES)?;
    let mut reader = std::io::BufReader::new(file);
    let mut requests = Vec::new();
    for i in 0.. {
        let Some(line) = crate::input_file::next_line(&mut reader, i + 1, path)? else { break };
        if cancel.is_cancelled() {
            return Err(BenchError::Cancelled);
        }
        if line.trim().is_empty() {
            continue;
        }
        if requests.len() >= n {
            break;
        }
        let l: Line = serde_json::from_str(&line)
            .map_err(|e| BenchError::dataset(path, format!("line {}: {e}", i + 1)))?;
        if l.output_len == 0 {
            return Err(BenchError::dataset(path, format!("line {}: output_len must be at least 1", i + 1)));
        }
        requests.push(SampleRequest {
            input_tokens: tok.count(&l.prompt),
            prompt: l.prompt,
            output_len: l.output_len,
        });
    }
    if requests.is_empty() {
        return Err(BenchError::dataset(path, "no prompts in the file"));
    }
    let mut notes = vec![format!("JSONL {}: {} prompts", path.display(), requests.len())];
    oversample(&mut requests, n, seed, opts, &mut notes);
    Ok(Sample { requests, notes })
}
