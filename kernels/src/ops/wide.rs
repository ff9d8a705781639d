//! The FP8 decode GEMM for 9-32 token rows (wide_fp8.cu): 128 weight rows per block with x
//! staged once per stage in shared memory, K split across blocks that add into a zeroed y
//! where the grid is short of SMs. Past 8 rows the skinny kernels' per-tile x reads outgrow
//! the weights; past 32 the staged x costs more than the FP8 bytes save, and cuBLAS on the
//! bf16 copies is faster (engine/PERF-LOG.md, 2026-12-03 16:00).

use super::skinny::{Fp8Matrix, SKINNY_MAX_ROWS, SkinnyX};
use super::to_i32;
use crate::error::{DriverContext, Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::f16;

/// Most token rows the wide kernels take: a 16-row form for 9-16, a 32-row one for 17-32
/// (rows past the batch are zero-filled).
pub const WIDE_MAX_ROWS: usize = 32;
/// Token rows of the smaller form.
const SMALL_ROWS: usize = 16;
/// Weight rows per block, and the k of a ring stage (one FP8 scale column): n and k must be
/// multiples of it.
const ROWS: usize = 128;
const THREADS: u32 = 256;
const STAGES: u32 = 4;
/// Resident blocks per SM (the kernels' launch bounds and shared memory allow two).
const BLOCKS_PER_SM: usize = 2;

/// Whether `wide_fp8_into` takes an FP8 matrix [n, k] at `rows` token rows.
pub fn wide_fp8_supported(rows: usize, n: usize, k: usize) -> bool {
    (SKINNY_MAX_ROWS + 1..=WIDE_MAX_ROWS).contains(&rows) && n.is_multiple_of(ROWS) && k.is_multiple_of(ROWS)
}

/// A form's dynamic shared memory: a ring of 128 rows x 128 bytes of weights and
/// `token_rows` rows x 256 bytes of x (128 k of f16) per stage.
const fn smem(token_rows: usize) -> u32 {
    STAGES * (ROWS as u32 * 128 + token_rows as u32 * 256)
}
// Two blocks of either form fit an H100/H200 SM's 228 KiB (with the driver's 1 KiB per
// block).
const _: () = assert!(BLOCKS_PER_SM as u32 * (smem(WIDE_MAX_ROWS) + 1024) <= 228 * 1024);

/// Blocks per tile for an [n, k] matrix: as many as the SMs' resident blocks hold at once.
fn splits(gpu: &Gpu, n: usize, k: usize) -> usize {
    split_count(n / ROWS, k / ROWS, BLOCKS_PER_SM * gpu.sms())
}

/// `splits` for `tiles` tiles of `stages` stages on a GPU of `slots` resident blocks: the
/// most whose blocks all fit the slots at once (any count, at least one, at most one per
/// stage), then the fewest that keep the same stages per block, so that no block goes
/// without a stage. One more, so that every slot gets a block and the rest wait for a
/// second wave, ran slower on Qwen3-8B's qkv and down (the lab's `wide_gemm` sweep,
/// engine/PERF-LOG.md step 65; 16 rows: qkv 5 splits 11.4 us against 6 at 12.6, down 8 at
/// 17.1 against 9 at 20.7; 32 rows: 14.2 / 16.5 and 20.9 / 26.9); only gate|up as a plain
/// GEMM at 32 rows ran faster at 2 (39.3 against 44.4 us), and decode runs the SwiGLU form.
fn split_count(tiles: usize, stages: usize, slots: usize) -> usize {
    let stages = stages.max(1);
    let want = (slots / tiles.max(1)).clamp(1, stages);
    stages.div_ceil(stages.div_ceil(want))
}

/// y[m, n] = sum_k x[m, k] w[n, k] for 9-32 rows of x (f16 as the `_f16` norms write it,
/// or bf16), FP8 weights with their block scales (`Fp8Matrix`, plain or interleaved rows).
/// Where K is split, y is zeroed on the stream first (a memset, which a CUDA graph
/// captures) and the blocks add into it, so the sums' bits may differ between runs.
pub fn wide_fp8_into<X: SkinnyX>(
    gpu: &Gpu,
    x: &CudaView<'_, X>,
    w: &Fp8Matrix<'_, '_>,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "wide_fp8";
    let m = check_shapes(OP, x.len(), w, y.len(), w.n)?;
    let name = match (X::F16, m <= SMALL_ROWS) {
        (true, true) => "wide_fp8_m16",
        (true, false) => "wide_fp8_m32",
        (false, true) => "wide_fp8_bx_m16",
        (false, false) => "wide_fp8_bx_m32",
    };
    let s = splits(gpu, w.n, w.k);
    if s > 1 {
        gpu.stream().memset_zeros(y).ctx("wide_fp8: zero y")?;
    }
    launch(gpu, name, x, w, m, s, y)
}

/// act[m, n / 2] = SwiGLU of x w^T over gate|up rows interleaved by 8
/// (`interleave_gate_up`), f16 x and act as the `_xh` skinny kernels (9-32 rows). K is
/// never split: no block would hold a whole sum to apply SwiGLU to (wide_fp8.cu says why
/// that costs Qwen3-8B's gate|up nothing).
pub fn wide_fp8_swiglu_into(
    gpu: &Gpu,
    x: &CudaView<'_, f16>,
    w: &Fp8Matrix<'_, '_>,
    act: &mut CudaViewMut<'_, f16>,
) -> Result<()> {
    const OP: &str = "wide_fp8_swiglu";
    check(w.interleave > 0, OP, || "gate|up rows must be interleaved (interleave > 0)".into())?;
    let m = check_shapes(OP, x.len(), w, act.len(), w.n / 2)?;
    let name = if m <= SMALL_ROWS { "wide_fp8_swiglu_m16" } else { "wide_fp8_swiglu_m32" };
    launch(gpu, name, x, w, m, 1, act)
}

/// The rows of x [m, k] against the matrix and an output of m x `out_cols`.
fn check_shapes(
    op: &'static str,
    x_len: usize,
    w: &Fp8Matrix<'_, '_>,
    out_len: usize,
    out_cols: usize,
) -> Result<usize> {
    w.check(op, ROWS)?;
    check(w.n.is_multiple_of(ROWS), op, || format!("n = {} must be a multiple of {ROWS}", w.n))?;
    check(x_len.is_multiple_of(w.k), op, || format!("x {x_len} is not rows x {}", w.k))?;
    let m = x_len / w.k;
    check((SKINNY_MAX_ROWS + 1..=WIDE_MAX_ROWS).contains(&m), op, || {
        format!("{m} rows; {}..={WIDE_MAX_ROWS} supported", SKINNY_MAX_ROWS + 1)
    })?;
    check(out_len == m * out_cols, op, || format!("out {out_len} != {m} x {out_cols}"))?;
    Ok(m)
}

fn launch<X, O>(
    gpu: &Gpu,
    name: &'static str,
    x: &CudaView<'_, X>,
    w: &Fp8Matrix<'_, '_>,
    m: usize,
    splits: usize,
    out: &mut CudaViewMut<'_, O>,
) -> Result<()> {
    let (ni, ki) = (to_i32(name, "n", w.n)?, to_i32(name, "k", w.k)?);
    let (ri, il) = (to_i32(name, "scale_rows", w.scale_rows)?, to_i32(name, "interleave", w.interleave)?);
    let mut b = Launch::new(gpu, name)?;
    b.input_aligned16(x, "x")?;
    b.input_aligned16(w.codes, "codes")?;
    b.input(w.scale_inv).output(out);
    b.i32(m as i32).i32(ni).i32(ki).i32(ri).i32(il).i32(splits as i32);
    let cfg = LaunchConfig {
        grid_dim: ((w.n / ROWS * splits) as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: smem(if m <= SMALL_ROWS { SMALL_ROWS } else { WIDE_MAX_ROWS }),
    };
    // SAFETY: shapes checked by the callers (check_shapes); n and k are multiples of 128,
    // so every tile and stage the kernel copies lies inside w, x rows past m are not read
    // (zero-filled), and a split output was zeroed before the launch.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_shapes_are_wide_rows_of_128_multiples() {
        assert!(wide_fp8_supported(9, 4096, 4096) && wide_fp8_supported(16, 24576, 12288));
        assert!(wide_fp8_supported(17, 4096, 4096) && wide_fp8_supported(32, 6144, 4096));
        assert!(!wide_fp8_supported(8, 4096, 4096), "8 rows: the skinny kernels");
        assert!(!wide_fp8_supported(33, 4096, 4096), "33 rows: cuBLAS");
        assert!(!wide_fp8_supported(16, 4100, 4096) && !wide_fp8_supported(16, 4096, 4000));
    }

    #[test]
    fn splits_fill_one_wave_of_resident_blocks_without_idle_blocks() {
        // Qwen3-8B on an H200 (132 SMs, 264 slots): qkv 48 tiles of 32 stages (5 splits of
        // 7, 7, 7, 7 and 4 stages), o_proj 32 of 32, down 32 of 96, gate|up 192 of 32 (as a
        // plain GEMM).
        assert_eq!(split_count(48, 32, 264), 5);
        assert_eq!(split_count(32, 32, 264), 8);
        assert_eq!(split_count(32, 96, 264), 8);
        assert_eq!(split_count(192, 32, 264), 1);
        assert_eq!(split_count(2000, 32, 264), 1);
        // Never more blocks than stages, and every block has a stage: 7 wanted of 12
        // stages gives 2 each, so 6 blocks.
        assert_eq!(split_count(1, 3, 264), 3);
        assert_eq!(split_count(2, 96, 264), 96);
        assert_eq!(split_count(37, 12, 264), 6);
        for (tiles, stages) in [(1usize, 1usize), (3, 7), (5, 33), (48, 32), (7, 100)] {
            let s = split_count(tiles, stages, 264);
            let per = stages.div_ceil(s);
            assert!(per * (s - 1) < stages, "{tiles} tiles of {stages}: block {s} idle");
        }
    }

    #[test]
    fn the_rings_hold_four_stages_of_weights_and_x() {
        assert_eq!(smem(16), 4 * (128 * 128 + 16 * 256));
        assert_eq!(smem(32), 4 * (128 * 128 + 32 * 256));
    }
}
