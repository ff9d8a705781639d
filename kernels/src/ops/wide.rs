//! The FP8 decode GEMM for 9-16 token rows (wide_fp8.cu): 128 weight rows per block with x
//! staged once per stage in shared memory, K split over a thread block cluster where the
//! grid is short of SMs. Past 8 rows the skinny kernels' per-tile x reads outgrow the
//! weights; at 17-32 rows its 32-token form ran whole steps slower than cuBLAS on the bf16
//! copies (engine/PERF-LOG.md step 64), so those stay on cuBLAS.

use super::skinny::{Fp8Matrix, SKINNY_MAX_ROWS, SkinnyX};
use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::f16;

/// Most token rows the wide kernels take (one form, 16 token rows; fewer are zero-filled).
pub const WIDE_MAX_ROWS: usize = 16;
/// Weight rows per block, and the k of a ring stage (one FP8 scale column): n and k must be
/// multiples of it.
const ROWS: usize = 128;
const THREADS: u32 = 256;
const STAGES: u32 = 4;
/// Blocks of a tile that split its K: powers of two, so that each takes an equal share of
/// the reduction (wide_fp8.cu); at most the portable cluster size.
const MAX_SPLITS: usize = 8;
/// Resident blocks per SM (the kernels' launch bounds and shared memory allow two).
const BLOCKS_PER_SM: usize = 2;

/// Whether `wide_fp8_into` takes an FP8 matrix [n, k] at `rows` token rows.
pub fn wide_fp8_supported(rows: usize, n: usize, k: usize) -> bool {
    (SKINNY_MAX_ROWS + 1..=WIDE_MAX_ROWS).contains(&rows) && n.is_multiple_of(ROWS) && k.is_multiple_of(ROWS)
}

/// The kernel's dynamic shared memory: a ring of 128 rows x 128 bytes of weights and
/// WIDE_MAX_ROWS rows x 256 bytes of x per stage.
const SMEM: u32 = STAGES * (ROWS as u32 * 128 + WIDE_MAX_ROWS as u32 * 256);
// Two blocks fit an H100/H200 SM's 228 KiB (with the driver's 1 KiB per block).
const _: () = assert!(2 * (SMEM + 1024) <= 228 * 1024);

/// Blocks per tile: the fewest (a power of two, at most 8) that fill every SM's resident
/// blocks, and no more than k's stages.
fn splits(gpu: &Gpu, n: usize, k: usize) -> usize {
    split_count(n / ROWS, k / ROWS, BLOCKS_PER_SM * gpu.sms())
}

/// `splits` for `tiles` tiles of `stages` stages on a GPU of `slots` resident blocks.
fn split_count(tiles: usize, stages: usize, slots: usize) -> usize {
    let most = 1usize << (usize::BITS - 1 - stages.max(1).leading_zeros());
    slots.div_ceil(tiles.max(1)).next_power_of_two().min(MAX_SPLITS).min(most)
}

/// y[m, n] = sum_k x[m, k] w[n, k] for 9-16 rows of x (f16 as the `_f16` norms write it,
/// or bf16), FP8 weights with their block scales (`Fp8Matrix`, plain or interleaved rows).
pub fn wide_fp8_into<X: SkinnyX>(
    gpu: &Gpu,
    x: &CudaView<'_, X>,
    w: &Fp8Matrix<'_, '_>,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "wide_fp8";
    let m = check_shapes(OP, x.len(), w, y.len(), w.n)?;
    let name = if X::F16 { "wide_fp8" } else { "wide_fp8_bx" };
    launch(gpu, name, x, w, m, y)
}

/// act[m, n / 2] = SwiGLU of x w^T over gate|up rows interleaved by 8
/// (`interleave_gate_up`), f16 x and act as the `_xh` skinny kernels (9-16 rows).
pub fn wide_fp8_swiglu_into(
    gpu: &Gpu,
    x: &CudaView<'_, f16>,
    w: &Fp8Matrix<'_, '_>,
    act: &mut CudaViewMut<'_, f16>,
) -> Result<()> {
    const OP: &str = "wide_fp8_swiglu";
    check(w.interleave > 0, OP, || "gate|up rows must be interleaved (interleave > 0)".into())?;
    let m = check_shapes(OP, x.len(), w, act.len(), w.n / 2)?;
    launch(gpu, "wide_fp8_swiglu", x, w, m, act)
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
    out: &mut CudaViewMut<'_, O>,
) -> Result<()> {
    let (ni, ki) = (to_i32(name, "n", w.n)?, to_i32(name, "k", w.k)?);
    let (ri, il) = (to_i32(name, "scale_rows", w.scale_rows)?, to_i32(name, "interleave", w.interleave)?);
    let s = splits(gpu, w.n, w.k);
    let mut b = Launch::new(gpu, name)?;
    b.input_aligned16(x, "x")?;
    b.input_aligned16(w.codes, "codes")?;
    b.input(w.scale_inv).output(out);
    b.i32(m as i32).i32(ni).i32(ki).i32(ri).i32(il).i32(s as i32);
    b.cluster((s as u32, 1, 1));
    let cfg = LaunchConfig {
        grid_dim: ((w.n / ROWS * s) as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: SMEM,
    };
    // SAFETY: shapes checked by the callers (check_shapes); n and k are multiples of 128,
    // so every tile and stage the kernel copies lies inside w, and x rows past m are not
    // read (zero-filled).
    unsafe { b.launch(cfg) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_shapes_are_wide_rows_of_128_multiples() {
        assert!(wide_fp8_supported(9, 4096, 4096) && wide_fp8_supported(16, 24576, 12288));
        assert!(!wide_fp8_supported(8, 4096, 4096), "8 rows: the skinny kernels");
        assert!(!wide_fp8_supported(17, 4096, 4096), "17 rows: cuBLAS");
        assert!(!wide_fp8_supported(16, 4100, 4096) && !wide_fp8_supported(16, 4096, 4000));
    }

    #[test]
    fn splits_fill_the_sms_in_powers_of_two() {
        // Qwen3-8B on an H200 (132 SMs, 264 slots): qkv 48 tiles, o_proj and down 32,
        // gate|up 192.
        assert_eq!(split_count(48, 32, 264), 8);
        assert_eq!(split_count(32, 96, 264), 8);
        assert_eq!(split_count(192, 32, 264), 2);
        assert_eq!(split_count(2000, 32, 264), 1);
        // Never more blocks than stages: 3 stages take 2.
        assert_eq!(split_count(1, 3, 264), 2);
    }

    #[test]
    fn the_ring_holds_four_stages_of_weights_and_x() {
        assert_eq!(SMEM, 4 * (128 * 128 + 16 * 256));
    }
}
