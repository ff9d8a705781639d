//! Random token prompts, after vLLM's RandomDataset: lengths uniform in
//! [floor(len*(1-r)), ceil(len*(1+r))], token ids a run `(offset + i + j) % vocab` from a
//! random offset, after a prefix of `prefix_len` random ids drawn once and shared by every
//! prompt (`--random-prefix-len`), decoded to text; decoding then re-encoding merges
//! tokens, so the ids are adjusted (truncated, or extended with more of the run) until the
//! text re-encodes to prefix + drawn length, as vLLM's `gen_prompt_decode_to_target_len`
//! does. Drawn with latlab's own seeded RNG (not numpy's PCG64), so the ids differ from
//! vLLM's; the input count reported is that of the decoded text re-encoded, which is what
//! the server will see. The prefix comes from a stream of its own, so adding one leaves
//! the rest of every prompt as it was.

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
fn fit_to_length(
    tok: &TokenCounter,
    mut ids: Vec<u32>,
    target: u32,
    more: &mut impl FnMut(u32) -> Vec<u32>,
) -> String {
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

/// The dataset's lengths in tokens.
#[derive(Debug, Clone, Copy)]
pub struct Lengths {
    pub input: u32,
    pub output: u32,
    pub ratio: f64,
    pub prefix: u32,
}

/// Seeds the prefix's own stream, apart from the one the lengths and runs come from.
const PREFIX_STREAM: u64 = 0x7072_6566_6978; // "prefix"

pub fn sample(n: usize, len: Lengths, seed: u64, tok: &TokenCounter) -> Sample {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (in_lo, in_hi) = bounds(len.input, len.ratio);
    let (out_lo, out_hi) = bounds(len.output, len.ratio);
    let vocab = tok.vocab_size().max(1);
    let mut prefix_rng = rand::rngs::StdRng::seed_from_u64(seed ^ PREFIX_STREAM);
    let prefix: Vec<u32> = (0..len.prefix).map(|_| prefix_rng.random_range(0..vocab)).collect();
    let requests = (0..n)
        .map(|i| {
            let drawn = rng.random_range(in_lo..=in_hi);
            let out = rng.random_range(out_lo..=out_hi);
            let offset = rng.random_range(0..vocab);
            let mut next = offset + i as u32;
            let mut run = |k: u32| -> Vec<u32> {
                let ids = (0..k).map(|j| (next + j) % vocab).collect();
                next += k;
                ids
            };
            let ids: Vec<u32> = prefix.iter().copied().chain(run(drawn)).collect();
            let prompt = fit_to_length(tok, ids, len.prefix + drawn, &mut run);
            SampleRequest { input_tokens: tok.count(&prompt), prompt, output_len: out }
        })
        .collect();
    let prefix_note = if len.prefix > 0 {
        format!(" after a {}-token prefix shared by every prompt", len.prefix)
    } else {
        String::new()
    };
    Sample {
        requests,
        notes: vec![format!(
            "random dataset: input {in_lo}..={in_hi}{prefix_note}, output {out_lo}..={out_hi} tokens, seed {seed} (latlab's RNG: same shape as vLLM's, not the same ids)"
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
