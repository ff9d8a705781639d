//! Random token prompts, after vLLM's RandomDataset: lengths uniform in
//! [floor(len*(1-r)), ceil(len*(1+r))], token ids a run `(offset + i + j) % vocab` from a
//! random offset, decoded to text. Drawn with latlab's own seeded RNG (not numpy's
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
            let ids: Vec<u32> = (0..len).map(|j| (offset + i as u32 + j) % vocab).collect();
            let prompt = tok.decode(&ids);
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
