//! vLLM's ShareGPT sampler: keep conversations with >= 2 turns, `random.seed(seed);
//! random.shuffle(...)` (CPython's exact algorithm; skipped with `--disable-shuffle`), then
//! walk the list taking pairs whose token counts pass `is_valid_sequence` until `n` are
//! taken.

use super::sharegpt_reader::read_sharegpt;
use super::{Sample, SampleOptions, SampleRequest, oversample};
use crate::error::BenchError;
use crate::mt19937::Mt19937;
use crate::tokenizer::TokenCounter;
use std::path::Path;
use tokio_util::sync::CancellationToken;

const MIN_LEN: u32 = 4;
const MAX_PROMPT_LEN: u32 = 1024;
const MAX_TOTAL_LEN: u32 = 2048;

/// vLLM's `is_valid_sequence` with its defaults; the output minimum is skipped when the
/// output length is fixed by `--sharegpt-output-len`.
pub fn is_valid_sequence(prompt_len: u32, output_len: u32, fixed_output: bool) -> bool {
    let prompt_too_short = prompt_len < MIN_LEN;
    let output_too_short = !fixed_output && output_len < MIN_LEN;
    let prompt_too_long = prompt_len > MAX_PROMPT_LEN;
    let combined_too_long = prompt_len + output_len > MAX_TOTAL_LEN;
    !(prompt_too_short || output_too_short || prompt_too_long || combined_too_long)
}

pub fn sample(
    path: &Path,
    n: usize,
    seed: u64,
    output_len: Option<u32>,
    opts: SampleOptions,
    tok: &TokenCounter,
    cancel: &CancellationToken,
) -> Result<Sample, BenchError> {
    let file = read_sharegpt(path, cancel)?;
    let mut notes = vec![format!(
        "ShareGPT {}: kept {} complete entries ({} with at least two turns){}",
        path.display(),
        file.entries,
        file.pairs.len(),
        if file.truncated {
            "; the file is cut off and its broken tail was skipped, so picks differ from vLLM's on the full file"
        } else {
            ""
        }
    )];
    if file.pairs.is_empty() {
        return Err(BenchError::dataset(path, "no conversation with at least two turns"));
    }
    let mut pairs = file.pairs;
    if opts.shuffle {
        crate::pyrandom::shuffle(&mut Mt19937::python_seeded(seed), &mut pairs);
    } else {
        notes.push("conversations taken in file order (--disable-shuffle)".into());
    }
    let mut requests = Vec::with_capacity(n);
    for pair in pairs {
        if requests.len() >= n {
            break;
        }
        let prompt_len = tok.count(&pair.prompt);
        let out_len = match output_len {
            Some(fixed) => fixed,
            None => tok.count(&pair.completion),
        };
        if !is_valid_sequence(prompt_len, out_len, output_len.is_some()) {
            continue;
        }
        requests.push(SampleRequest { prompt: pair.prompt, input_tokens: prompt_len, output_len: out_len });
    }
    oversample(&mut requests, n, seed, opts, &mut notes);
    Ok(Sample { requests, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_rules_match_vllm() {
        assert!(is_valid_sequence(4, 4, false));
        assert!(!is_valid_sequence(3, 100, false));
        assert!(!is_valid_sequence(10, 3, false));
        assert!(is_valid_sequence(10, 3, true));
        assert!(!is_valid_sequence(1025, 10, false));
        assert!(is_valid_sequence(1024, 1024, false));
        assert!(!is_valid_sequence(1024, 1025, false));
    }
}
