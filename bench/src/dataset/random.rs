//! Random token prompts, after vLLM's RandomDataset: lengths uniform in
//! [floor(len*(1-r)), ceil(len*(1+r))], token ids a run `(offset + i + j) % vocab` from a
//! random offset, decoded to text; decoding then re-encoding merges tokens, so the ids are
//! adjusted (truncated, or extended with more of the run) until the text re-encodes to
//! the target length, as vLLM's `gen_prompt_decode_to_target_len` does. Drawn with latlab's own seeded RNG (not numpy's
//! PCG64), so the ids differ from vLLM's; the input count reported is that of the
//! decoded text re-encoded, which is what the server will see.

use super::{Sample, SampleRequest};
use crate::tokenizer::TokenCounter;
use rand::{Rng, SeedableRng};

fn bounds(len: u32, ratio: f64) -> (u32, u32) {
    let lo = (len as f64 * (1.0 - ratio)).floor().max(1.0) as u32;
    let hi = (len as f64 * (1.0 + ratio)).ceil() as u32;
    (lo, hi.max(lo))
}

/// Decodes `ids`, and while the text does not re-encode to `target` tokens (at most 10
/// rounds), truncates the re-encoded ids or tops them up from `more`.
fn fit_to_length(tok: &TokenCounter, mut ids: Vec<u32>, target: u32, more: &mut impl FnMut(u32) -> Vec<u32>) -> String {
    let target = target as usize;
    let mut prompt = tok.decode(&ids);
    for _ in 0..10 {
        let enc = tok.encode_ids(&prompt);
        if enc.len() == target {
            break;
        }
        ids = enc;
        if ids.len() > target {
            ids.truncate(target);
        } else {
            let missing = (target - ids.len()) as u32;
            ids.extend(more(missing));
        }
        prompt = tok.decode(&ids);
    }
    prompt
}

pub fn sample(n: usize, input_len: u32, output_len: u32, ratio: f64, seed: u64, tok: &TokenCounter) -> Sample {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (in_lo, in_hi) = bounds(input_len, ratio);
    let (out_lo, out_hi) = bounds(output_len, ratio);
    let vocab = tok.vocab_size().max(1);
    let requests = (0..n)
        .map(|i| {
            let len = rng.random_range(in_lo..=in_hi);
            let out = rng.random_range(out_lo..=out_hi);
            let offset = rng.random_range(0..vocab);
            let mut next = offset + i as u32;
            let mut run = |k: u32| -> Vec<u32> {
                let ids = (0..k).map(|j| (next + j) % vocab).collect();
                next += k;
                ids
            };
            let prompt = fit_to_length(tok, run(len), len, &mut run);
            SampleRequest { input_tokens: tok.count(&prompt), prompt, output_len: out }
        })
        .collect();
    Sample {
        requests,
        notes: vec![format!(
            "random dataset: input {in_lo}..={in_hi}, output {out_lo}..={out_hi} tokens, seed {seed} (latlab's RNG: same shape as vLLM's, not the same ids)"
        )],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bounds_follow_the_range_ratio() {
        assert_eq!(super::bounds(100, 0.0), (100, 100));
        assert_eq!(super::bounds(100, 0.25), (75, 125));
        assert_eq!(super::bounds(1, 0.9), (1, 2));
    }
}
