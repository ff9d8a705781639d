//! The fat-block form of the bf16 skinny GEMM at one token row (skinny_fat.cu,
//! `Tuning::bf16_fat`): which persistent bulk launches it replaces, with how many rings per
//! CTA and how much shared memory. skinny_plan.rs's `start` asks `fat_shape`.

use super::skinny::TILE_N;
use super::skinny_plan::{BULK_STAGE_BYTES, MAX_DYNAMIC_SMEM, ring_stages, skinny_kernel};
use crate::gpu::{FatBlocks, Tuning};

/// The fat-block kernel (skinny_fat.cu, `Tuning::bf16_fat`) that replaces bulk kernel
/// `name` over x [m, k] and `tiles` 16-row tiles on `sms` SMs, with its rings, their depth
/// and its dynamic shared memory; None where it does not apply: other than one row, other
/// than the persistent bf16 kernels, x too long to fit beside the rings, or (`Reuse`)
/// fewer than two tiles a ring.
pub(super) fn fat_shape(
    t: &Tuning,
    name: &'static str,
    m: usize,
    k: usize,
    (tiles, sms): (usize, usize),
) -> Option<(&'static str, u32, u32, u32)> {
    let small = tiles < 2 * sms;
    let fat = match name {
        "skinny_gemm_bf16_bulk_persistent" => "skinny_gemm_bf16_fat",
        "skinny_gemm_bf16_swiglu_bulk_persistent" => "skinny_gemm_bf16_swiglu_fat",
        _ => return None,
    };
    if !t.bf16_fat.takes(small) || m != 1 {
        return None;
    }
    let (groups, stages) = if small {
        (t.fat_groups_small, t.bulk_stages_small)
    } else {
        (t.fat_groups, t.bulk_stages)
    };
    // A ring that runs one tile reads each x element once either way: staging x buys it
    // nothing, and the fat CTA still costs its neighbours (engine/PERF.md step 61).
    if t.bf16_fat == FatBlocks::Reuse && tiles < 2 * groups as usize * sms {
        return None;
    }
    // The rings, x (k bf16), each group's 8 x 16 f32 warp sums.
    let smem = groups * stages * BULK_STAGE_BYTES + 2 * k as u32 + groups * 8 * 16 * 4;
    (smem <= MAX_DYNAMIC_SMEM).then_some((fat, groups, stages, smem))
}

/// Whether a bf16 skinny op (`skinny_gemm_bf16`, `_bf16_swiglu`) over x [m, k] with n
/// output rows runs as fat blocks on a GPU of `sms` SMs under `t`: tests check with it that
/// an A/B compares two kernels.
pub fn runs_fat(
    t: &Tuning,
    op: &'static str,
    (m, n, k): (usize, usize, usize),
    sms: usize,
) -> bool {
    let tiles = n.div_ceil(TILE_N);
    let stages = ring_stages(t, false, tiles < 2 * sms, m);
    fat_shape(t, skinny_kernel(t, op, (m, k), stages), m, k, (tiles, sms)).is_some()
}

#[cfg(test)]
mod tests {
    use super::runs_fat;
    use crate::gpu::Tuning;

    /// Fat blocks only where asked for, at one row, on the persistent bf16 kernels, and
    /// only while x fits beside the rings.
    #[test]
    fn fat_blocks_take_one_bf16_row_where_x_fits() {
        let on = Tuning {
            bf16_fat: crate::FatBlocks::All,
            ..Tuning::default()
        };
        let gate_up = (1, 24576, 4096);
        assert!(!runs_fat(
            &Tuning::default(),
            "skinny_gemm_bf16_swiglu",
            gate_up,
            132
        ));
        assert!(runs_fat(&on, "skinny_gemm_bf16_swiglu", gate_up, 132));
        assert!(
            runs_fat(&on, "skinny_gemm_bf16", (1, 4096, 12288), 132),
            "down, 2 rings"
        );
        assert!(
            !runs_fat(&on, "skinny_gemm_bf16", (2, 4096, 4096), 132),
            "two rows"
        );
        assert!(
            !runs_fat(&on, "skinny_gemm_fp8", (1, 4096, 4096), 132),
            "FP8"
        );
        assert!(
            !runs_fat(&on, "skinny_gemm_bf16", (1, 4096, 40960), 132),
            "x too long"
        );
        let reuse = Tuning {
            bf16_fat: crate::FatBlocks::Reuse,
            ..Tuning::default()
        };
        assert!(runs_fat(&reuse, "skinny_gemm_bf16_swiglu", gate_up, 132));
        assert!(
            runs_fat(&reuse, "skinny_gemm_bf16", (1, 151_936, 4096), 132),
            "lm_head"
        );
        assert!(
            !runs_fat(&reuse, "skinny_gemm_bf16", (1, 6144, 4096), 132),
            "qkv: 384 tiles on 396 rings"
        );
        assert!(
            !runs_fat(&reuse, "skinny_gemm_bf16", (1, 4096, 12288), 132),
            "down: a small grid"
        );
        let one_tile = Tuning {
            bulk_persistent: false,
            ..on
        };
        assert!(!runs_fat(
            &one_tile,
            "skinny_gemm_bf16",
            (1, 4096, 4096),
            132
        ));
    }
}
