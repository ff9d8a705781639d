//! Seeded random weights, deterministic across platforms and crate versions (own
//! splitmix64 generator, no dependency on rand's unstable StdRng). Values are rounded to
//! bf16 so that `random:<preset>` in memory equals the checkpoint `make-model` writes.

use crate::bf16_round::round_bf16;
use crate::tensor_names::{Kind, TensorSpec};
use half::bf16;
use rayon::prelude::*;

/// splitmix64's increment: its state after j draws is the seed + j * GAMMA, so draw i can
/// be made on its own. Tensors are generated in parallel that way, element by element,
/// with the values one sequential stream gives (Qwen3-8B's embedding and lm_head, 622 M
/// values each, took seconds on one core each).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Draw `i` (0-based) of the splitmix64 stream seeded with `seed`, uniform in [-1, 1).
fn draw(seed: u64, i: u64) -> f32 {
    let mut z = seed.wrapping_add(GAMMA.wrapping_mul(i + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

/// FNV-1a, so each tensor's stream depends on its name, not on generation order.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// One tensor's values for a model seed, each through `out_of`, generated in parallel.
fn fill<T: Send>(spec: &TensorSpec, seed: u64, out_of: impl Fn(bf16) -> T + Sync) -> Vec<T> {
    let start = seed ^ name_hash(&spec.name);
    // Uniform(-a, a) has std a/sqrt(3). Matrices get std 1/sqrt(fan_in) so activations stay
    // O(1) and the random model's attention and logits are far from uniform (a degenerate
    // model would make golden comparisons weak). Norm scales are 1 +- 0.2 so that a wrong
    // norm weight shows in the logits.
    let (center, a) = match spec.kind {
        Kind::Norm => (1.0, 0.2),
        Kind::Matrix => (0.0, 3f32.sqrt() / (*spec.shape.last().unwrap() as f32).sqrt()),
    };
    // A usize range is an indexed iterator: collect writes each value in place.
    (0..spec.numel())
        .into_par_iter()
        .map(|i| out_of(round_bf16(center + a * draw(start, i as u64))))
        .collect()
}

/// The bf16 values of one tensor for a given model seed.
pub fn random_tensor_bf16(spec: &TensorSpec, seed: u64) -> Vec<bf16> {
    fill(spec, seed, |v| v)
}

/// `random_tensor_bf16` widened to f32 (exactly).
pub fn random_tensor_f32(spec: &TensorSpec, seed: u64) -> Vec<f32> {
    fill(spec, seed, f32::from)
}

#[cfg(test)]
mod tests {
    use super::{name_hash, random_tensor_bf16, random_tensor_f32};
    use crate::tensor_names::{Kind, TensorSpec};
    use half::bf16;

    fn spec(name: &str, kind: Kind, shape: Vec<usize>) -> TensorSpec {
        TensorSpec { name: name.into(), kind, shape }
    }

    /// splitmix64 as one sequential stream (the generator before it ran in parallel).
    struct Stream(u64);
    impl Stream {
        fn uniform(&mut self) -> f32 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        }
    }

    /// Parallel generation gives the sequential stream's values, and f32 is bf16 widened.
    #[test]
    fn parallel_draws_continue_one_stream() {
        let s = spec("model.layers.0.mlp.up_proj.weight", Kind::Matrix, vec![3, 70_001]);
        let mut rng = Stream(9 ^ name_hash(&s.name));
        let a = 3f32.sqrt() / 70_001f32.sqrt();
        let sequential: Vec<bf16> = (0..s.numel()).map(|_| bf16::from_f32(a * rng.uniform())).collect();
        let parallel = random_tensor_bf16(&s, 9);
        assert!(parallel == sequential, "parallel values differ from the stream");
        let wide = random_tensor_f32(&s, 9);
        assert!(wide.iter().zip(&parallel).all(|(w, b)| *w == f32::from(*b)));
    }

    /// The values themselves are pinned: `random:<preset>` must keep equalling checkpoints
    /// `make-model` wrote, and the goldens taken from them.
    #[test]
    fn values_are_pinned() {
        let m = spec("model.embed_tokens.weight", Kind::Matrix, vec![2, 4]);
        let n = spec("model.norm.weight", Kind::Norm, vec![4]);
        let bits = |v: Vec<bf16>| v.iter().map(|b| b.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(random_tensor_bf16(&m, 0)), PINNED_MATRIX);
        assert_eq!(bits(random_tensor_bf16(&n, 7)), PINNED_NORM);
    }

    /// bf16 bits from the sequential generator before chunking (tree cac14fe).
    const PINNED_MATRIX: [u16; 8] = [48740, 48800, 15549, 48863, 15989, 16192, 16036, 15811];
    const PINNED_NORM: [u16; 4] = [16259, 16225, 16223, 16235];
}
