//! Which skinny GEMM kernel a launch runs and in what shape. Every launch runs the
//! persistent bulk-copy pipeline (skinny_bulk.cu) with the ring depth `Tuning` gives its
//! weights, grid and rows, a grid of the blocks that fit at once, and the shared memory
//! that goes with it. The kernel's form follows from the launch: FP8 x staged in shared
//! memory at one row (`_xs`), the folded norm's epilogue (`_norm`), x as f16 (`_xh`). The
//! ops in skinny.rs launch through `start`.

use super::skinny::{THREADS, TILE_N};
use super::weight_layout::WeightLayout;
use crate::error::{Result, check};
use crate::gpu::{Gpu, Tuning, WIDE_ROWS};
use crate::launch::Launch;
use cudarc::driver::{CudaView, LaunchConfig};

/// A bulk block: the 8 multiplying warps plus one producer warp, and `stages` x 16 rows x
/// TM_ROW_STRIDE bytes of ring (skinny_bulk.cu, bulk_ring.cuh).
const BULK_THREADS: u32 = THREADS + 32;
const BULK_STAGE_BYTES: u32 = 16 * (1024 + 16);

/// Dynamic shared memory a bulk block may take: Hopper's 227 KiB per block less the bulk
/// kernels' static 4.2 KiB (the warps' reduction tile and the ring's barriers), rounded down.
const MAX_DYNAMIC_SMEM: u32 = 222 * 1024;

/// The rows an FP8 GEMM stages x in shared memory for (`_xs`): one. Staging converts bf16
/// x to f16 once per block instead of at every ring stage; at two rows or more the FP8 GEMMs
/// read f16 x written by the kernel before them (the engine's step/half_x.rs), which needs
/// no conversion, and staging it measured slower (engine/PERF-LOG.md step 54).
pub const STAGED_X_ROWS: usize = 1;

/// The most shared memory staged x may take: 25 KiB covers one row of every Qwen3-8B
/// shape (down's k = 12288: 24.1 KiB); more would cost the rings their residency
/// (engine/PERF-LOG.md step 24). Longer rows load x through L1 at every stage.
const STAGED_X_MAX_BYTES: u32 = 25 * 1024;

/// How a launch runs: its ring depth, its grid (persistent blocks), and the bytes of
/// shared memory it keeps beside the ring: the norm epilogue's (`NormEpi`) and staged x.
#[derive(Clone, Copy)]
pub(super) struct Pipe {
    stages: u32,
    blocks: u32,
    extra_bytes: u32,
}

pub(super) fn launch_cfg(pipe: Pipe) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (pipe.blocks, 1, 1),
        block_dim: (BULK_THREADS, 1, 1),
        shared_mem_bytes: pipe.stages * BULK_STAGE_BYTES + pipe.extra_bytes,
    }
}

/// The ring depth of a launch over `m` rows: FP8 or bf16, the deeper one for grids with
/// fewer tiles than two per SM (`small`), and for bf16 the wide rows' own
/// (`Tuning::bulk_stages_wide`).
pub(super) fn ring_stages(t: &Tuning, fp8: bool, small: bool, m: usize) -> u32 {
    match (fp8, small) {
        (false, false) if m >= WIDE_ROWS => t.bulk_stages_wide,
        (false, false) => t.bulk_stages,
        (false, true) => t.bulk_stages_small,
        (true, false) => t.fp8_bulk_stages,
        (true, true) => t.fp8_bulk_stages_small,
    }
}

/// Shared memory a `*_xs` kernel stages x in: m rows of xs_row_units(k) 16-byte units
/// (skinny_tiles.cuh: 16 units per 128-k chunk, plus XS_PAD).
fn staged_x_bytes(m: usize, k: usize) -> u32 {
    ((k / 16).div_ceil(8) * 16 + 4) as u32 * 16 * m as u32
}

/// The form of a skinny launch beside its op: the folded norm's epilogue, x as f16.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SkinnyForm {
    pub norm: bool,
    pub f16_x: bool,
}

/// The kernel a skinny op (`skinny_gemm_bf16`, `_bf16_swiglu`, `_fp8`, `_fp8_swiglu`) runs
/// over x [m, k] with a ring of `stages`, in `form`: for FP8 with bf16 x, x staged in
/// shared memory at `STAGED_X_ROWS` rows where it fits beside the ring. Tests check with it
/// which kernel a shape reaches.
pub fn skinny_kernel(
    op: &'static str,
    (m, k): (usize, usize),
    stages: u32,
    form: SkinnyForm,
) -> &'static str {
    let x = staged_x_bytes(m, k);
    let staged = !form.f16_x
        && m <= STAGED_X_ROWS
        && x <= STAGED_X_MAX_BYTES
        && stages * BULK_STAGE_BYTES + x <= MAX_DYNAMIC_SMEM;
    match (op, staged, form.norm, form.f16_x) {
        ("skinny_gemm_bf16", ..) => "skinny_gemm_bf16_bulk_persistent",
        ("skinny_gemm_bf16_swiglu", ..) => "skinny_gemm_bf16_swiglu_bulk_persistent",
        ("skinny_gemm_fp8", _, _, true) => "skinny_gemm_fp8_bulk_persistent_xh",
        ("skinny_gemm_fp8", false, false, _) => "skinny_gemm_fp8_bulk_persistent",
        ("skinny_gemm_fp8", false, true, _) => "skinny_gemm_fp8_bulk_persistent_norm",
        ("skinny_gemm_fp8", true, false, _) => "skinny_gemm_fp8_bulk_persistent_xs",
        ("skinny_gemm_fp8", true, true, _) => "skinny_gemm_fp8_bulk_persistent_xs_norm",
        ("skinny_gemm_fp8_swiglu", _, _, true) => "skinny_gemm_fp8_swiglu_bulk_persistent_xh",
        ("skinny_gemm_fp8_swiglu", false, false, _) => "skinny_gemm_fp8_swiglu_bulk_persistent",
        ("skinny_gemm_fp8_swiglu", false, true, _) => "skinny_gemm_fp8_swiglu_bulk_persistent_norm",
        ("skinny_gemm_fp8_swiglu", true, false, _) => "skinny_gemm_fp8_swiglu_bulk_persistent_xs",
        ("skinny_gemm_fp8_swiglu", true, true, _) => "skinny_gemm_fp8_swiglu_bulk_persistent_xs_norm",
        _ => unreachable!("{op} is not a skinny GEMM"),
    }
}

/// The kernel and launch shape for `op` over x [m, k] and n output rows: the ring depth
/// (`ring_stages`, the deeper one when the grid has fewer tiles than two per SM) and the
/// blocks that fit at once. `epi_bytes`: the norm epilogue's shared memory
/// (`NormEpi::check`); above 0 the `_norm` form runs. `f16_x`: x is f16 (and a SwiGLU act
/// too), the `_xh` form.
pub(super) fn start<'g>(
    gpu: &'g Gpu,
    op: &'static str,
    (m, n, k): (usize, usize, usize),
    epi_bytes: u32,
    f16_x: bool,
) -> Result<(Launch<'g>, Pipe)> {
    let fp8 = op.starts_with("skinny_gemm_fp8");
    check(fp8 || (epi_bytes == 0 && !f16_x), op, || {
        "bf16 weights have no folded-norm or f16-x form".to_string()
    })?;
    check(!f16_x || epi_bytes == 0, op, || "x as f16 has no folded-norm form".to_string())?;
    let tiles = n.div_ceil(TILE_N);
    let stages = ring_stages(&gpu.tuning(), fp8, tiles < 2 * gpu.sms(), m);
    let form = SkinnyForm { norm: epi_bytes > 0, f16_x };
    let name = skinny_kernel(op, (m, k), stages, form);
    // The norm epilogue's words lie between the ring and staged x (skinny_bulk.cu).
    let extra_bytes = epi_bytes + if name.contains("_xs") { staged_x_bytes(m, k) } else { 0 };
    let smem = stages * BULK_STAGE_BYTES + extra_bytes;
    check(smem <= MAX_DYNAMIC_SMEM, op, || {
        format!(
            "{stages} ring stages and {extra_bytes} bytes beside them exceed {MAX_DYNAMIC_SMEM} bytes of shared memory"
        )
    })?;
    let per_sm = gpu.resident_blocks(name, BULK_THREADS, smem)?;
    let pipe = Pipe { stages, blocks: (tiles as u32).min(per_sm * gpu.sms() as u32), extra_bytes };
    Ok((Launch::new(gpu, name)?, pipe))
}

/// The kernels' trailing arguments: their ring depth and the weights' layout.
pub(super) fn bulk_args(b: &mut Launch<'_>, pipe: Pipe, layout: WeightLayout) {
    b.i32(pipe.stages as i32).i32(layout.arg());
}

/// Weight argument: the bulk copies need 16-byte alignment.
pub(super) fn weights<T>(b: &mut Launch<'_>, w: &CudaView<'_, T>) -> Result<()> {
    b.input_aligned16(w, "weights").map(drop)
}

#[cfg(test)]
mod tests {
    use super::{SkinnyForm, ring_stages, skinny_kernel};
    use crate::gpu::Tuning;

    #[test]
    fn wide_bf16_launches_take_their_own_ring() {
        let t = Tuning {
            bulk_stages: 3,
            bulk_stages_small: 6,
            bulk_stages_wide: 7,
            fp8_bulk_stages: 2,
            fp8_bulk_stages_small: 5,
            ..Tuning::default()
        };
        // (fp8, small, rows) -> stages: only bf16 grids of two tiles per SM or more, from
        // WIDE_ROWS (3) rows on.
        for (fp8, small, m, want) in [
            (false, false, 1, 3),
            (false, false, 2, 3),
            (false, false, 3, 7),
            (false, false, 8, 7),
            (false, true, 8, 6),
            (false, true, 1, 6),
            (true, false, 8, 2),
            (true, true, 8, 5),
        ] {
            assert_eq!(ring_stages(&t, fp8, small, m), want, "fp8 {fp8} small {small} m {m}");
        }
    }

    /// Each shape reaches the kernel its form asks for, and every kernel the module ships
    /// is reached by some shape.
    #[test]
    fn each_launch_picks_its_kernel() {
        let plain = SkinnyForm::default();
        let norm = SkinnyForm { norm: true, ..plain };
        let f16 = SkinnyForm { f16_x: true, ..plain };
        let pick = |op, m, k, form| skinny_kernel(op, (m, k), 2, form);
        let (fp8, sw) = ("skinny_gemm_fp8", "skinny_gemm_fp8_swiglu");
        // bf16: one kernel per op at every row count.
        for m in 1..=8 {
            assert_eq!(pick("skinny_gemm_bf16", m, 4096, plain), "skinny_gemm_bf16_bulk_persistent");
        }
        // FP8 stages x at one row, where it takes at most 25 KiB: 12288 (24.1 KiB), not
        // 16384, and never two rows or f16 x.
        assert_eq!(pick(fp8, 1, 12288, plain), "skinny_gemm_fp8_bulk_persistent_xs");
        assert_eq!(pick(fp8, 1, 16384, plain), "skinny_gemm_fp8_bulk_persistent");
        assert_eq!(pick(fp8, 2, 4096, plain), "skinny_gemm_fp8_bulk_persistent");
        assert_eq!(pick(sw, 1, 4096, norm), "skinny_gemm_fp8_swiglu_bulk_persistent_xs_norm");
        assert_eq!(pick(fp8, 1, 16384, norm), "skinny_gemm_fp8_bulk_persistent_norm");
        assert_eq!(pick(sw, 1, 4096, f16), "skinny_gemm_fp8_swiglu_bulk_persistent_xh");
        assert_eq!(pick(fp8, 8, 4096, f16), "skinny_gemm_fp8_bulk_persistent_xh");
        let skinny = crate::sources::ALL.iter().find(|s| s.file == "skinny_bulk.cu").unwrap();
        let mut reached = vec![];
        for op in ["skinny_gemm_bf16", "skinny_gemm_bf16_swiglu", fp8, sw] {
            let forms: &[SkinnyForm] = if op.contains("fp8") { &[plain, norm, f16] } else { &[plain] };
            for &form in forms {
                for m in 1..=8 {
                    for k in [16, 4096, 16384] {
                        let name = pick(op, m, k, form);
                        assert!(skinny.kernels.contains(&name), "{name}");
                        reached.push(name);
                    }
                }
            }
        }
        for k in skinny.kernels {
            assert!(reached.contains(k), "{k} is reached by no launch");
        }
    }
}
