//! Seeded random weights, deterministic across platforms and crate versions (own
//! splitmix64 generator, no dependency on rand's unstable StdRng). Values are rounded to
//! bf16 so that `random:<preset>` in memory equals the checkpoint `make-model` writes.

use crate::tensor_names::{Kind, TensorSpec};
use half::bf16;

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    fn uniform(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// FNV-1a, so each tensor's stream depends on its name, not on generation order.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The bf16 values of one tensor for a given model seed.
pub fn random_tensor_bf16(spec: &TensorSpec, seed: u64) -> Vec<bf16> {
    let mut rng = SplitMix64(seed ^ name_hash(&spec.name));
    // Uniform(-a, a) has std a/sqrt(3). Matrices get std 1/sqrt(fan_in) so activations stay
    // O(1) and the random model's attention and logits are far from uniform (a degenerate
    // model would make golden comparisons weak). Norm scales are 1 +- 0.2 so that a wrong
    // norm weight shows in the logits.
    let (center, a) = match spec.kind {
        Kind::Norm => (1.0, 0.2),
        Kind::Matrix => (
            0.0,
            3f32.sqrt() / (*spec.shape.last().unwrap() as f32).sqrt(),
        ),
    };
    (0..spec.numel())
        .map(|_| bf16::from_f32(center + a * rng.uniform()))
        .collect()
}

pub fn random_tensor_f32(spec: &TensorSpec, seed: u64) -> Vec<f32> {
    random_tensor_bf16(spec, seed)
        .into_iter()
        .map(f32::from)
        .collect()
}
