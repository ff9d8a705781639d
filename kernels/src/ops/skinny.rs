//! Skinny GEMM on the tensor cores for decode batches (M <= 8 token rows): bf16 weights, or
//! FP8 e4m3 weights with 128x128 block scales, dequantized in registers. f32 out. Which
//! kernel a launch runs, and in what shape, is skinny_plan.rs's business.

use super::skinny_norm::NormEpi;
use super::skinny_plan::{bulk_args, launch_cfg, start, weights};
use super::to_i32;
use super::weight_layout::WeightLayout;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::bf16;
use rayon::prelude::*;

/// Most token rows one launch takes (the MMA's n = 8).
pub const SKINNY_MAX_ROWS: usize = 8;
/// Output rows per block (the MMA's m = 16); must match skinny_tiles.cuh.
pub(super) const TILE_N: usize = 16;
/// Threads per block: 8 warps splitting K (SG_WARPS in skinny_tiles.cuh).
pub(super) const THREADS: u32 = 256;
/// FP8 scale blocks (rows x cols), the only layout the kernel reads.
pub const FP8_BLOCK: usize = 128;

fn rows_of(op: &'static str, x_len: usize, k: usize, y_len: usize, n: usize) -> Result<usize> {
    check(x_len.is_multiple_of(k), op, || format!("x {x_len} is not rows x {k}"))?;
    let m = x_len / k;
    check((1..=SKINNY_MAX_ROWS).contains(&m), op, || format!("{m} rows; 1..={SKINNY_MAX_ROWS} supported"))?;
    check(y_len == m * n, op, || format!("y {y_len} != {m} x {n}"))?;
    Ok(m)
}

/// A bf16 weight matrix of w_len elements is [n, k] with k a positive multiple of 8 (the
/// kernels' 16-byte loads).
fn check_bf16_weights(op: &'static str, w_len: usize, n: usize, k: usize) -> Result<()> {
    check(k > 0 && k.is_multiple_of(8), op, || format!("k = {k} must be a positive multiple of 8"))?;
    check(w_len == n * k, op, || format!("w {w_len} != {n} x {k}"))
}

/// y[m, n] = sum_k x[m, k] w[n, k]: x [m, k] bf16 (1 <= m <= 8), w [n, k] bf16 (HF layout,
/// or tiled: `WeightLayout`), y [m, n] f32; k % 8 == 0 (16-byte loads).
pub fn skinny_gemm_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &CudaView<'_, bf16>,
    layout: WeightLayout,
    n: usize,
    k: usize,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_bf16";
    check_bf16_weights(OP, w.len(), n, k)?;
    let m = rows_of(OP, x.len(), k, y.len(), n)?;
    launch_bf16(gpu, OP, x, (w, layout), (m, n, k), y)
}

/// Launch a bf16 skinny kernel whose shapes the caller checked: x [m, k], w [n, k], out.
fn launch_bf16<O>(
    gpu: &Gpu,
    op: &'static str,
    x: &CudaView<'_, bf16>,
    (w, layout): (&CudaView<'_, bf16>, WeightLayout),
    (m, n, k): (usize, usize, usize),
    out: &mut CudaViewMut<'_, O>,
) -> Result<()> {
    let (mi, ni, ki) = (m as i32, to_i32(op, "n", n)?, to_i32(op, "k", k)?);
    let (mut b, pipe) = start(gpu, op, (m, n, k), 0, false)?;
    b.input(x);
    weights(&mut b, w)?;
    b.output(out).i32(mi).i32(ni).i32(ki);
    bulk_args(&mut b, pipe, layout);
    // SAFETY: the caller checked the shapes; k % 8 == 0 keeps every row 16-byte aligned
    // given cudarc's 256-byte-aligned allocations (views at row offsets keep it too).
    unsafe { b.launch(launch_cfg(pipe)) }?;
    Ok(())
}

/// Where an FP8 matrix's codes and scales live: w [n, k] e4m3fn codes, scale_inv
/// [ceil(n / scale_rows), ceil(k / 128)] f32, real weight = code * scale_inv[n /
/// scale_rows][k / 128]. scale_rows is 128 in the Qwen3-8B-FP8 layout (1: a row each).
/// `interleave` > 0: the codes are gate|up rows interleaved by `interleave_gate_up` (n = 2
/// x interleave) while the scales stay in gate-then-up order; 0: plain rows. Codes and
/// scales are row-major.
pub struct Fp8Matrix<'a, 'b> {
    pub codes: &'a CudaView<'b, u8>,
    pub scale_inv: &'a CudaView<'b, f32>,
    pub scale_rows: usize,
    pub n: usize,
    pub k: usize,
    pub interleave: usize,
}

impl Fp8Matrix<'_, '_> {
    pub(super) fn check(&self, op: &'static str, k_mult: usize) -> Result<(i32, i32, i32)> {
        let (n, k, r, il) = (self.n, self.k, self.scale_rows, self.interleave);
        check(il == 0 || (n == 2 * il && il.is_multiple_of(GATE_UP_GROUP)), op, || {
            format!("interleave {il}: needs n = 2 x interleave (n = {n}), a multiple of {GATE_UP_GROUP}")
        })?;
        check(k > 0 && k.is_multiple_of(k_mult), op, || {
            format!("k = {k} must be a positive multiple of {k_mult}")
        })?;
        check(r == 1 || r.is_multiple_of(16), op, || {
            format!("scale_rows {r} must be 1 or a multiple of the 16-row tile")
        })?;
        check(self.codes.len() == n * k, op, || format!("codes {} != {n} x {k}", self.codes.len()))?;
        let (sr, sc) = (n.div_ceil(r), k.div_ceil(FP8_BLOCK));
        check(self.scale_inv.len() == sr * sc, op, || {
            format!("scale_inv {} != {sr} x {sc}", self.scale_inv.len())
        })?;
        Ok((to_i32(op, "n", n)?, to_i32(op, "k", k)?, to_i32(op, "scale_rows", r)?))
    }
}

/// y[m, n] = sum_k x[m, k] w[n, k] with FP8 weights dequantized in registers; k % 16 == 0.
/// x is bf16, or f16 (`SkinnyX`).
pub fn skinny_gemm_fp8_into<X: SkinnyX>(
    gpu: &Gpu,
    x: &CudaView<'_, X>,
    w: &Fp8Matrix<'_, '_>,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_fp8";
    let sizes = w.check(OP, 16)?;
    let m = rows_of(OP, x.len(), w.k, y.len(), w.n)?;
    launch_fp8(gpu, OP, x, w, m, sizes, y, NormEpi::None)
}

/// Launch an FP8 skinny kernel whose shapes the caller checked (`sizes` from
/// `Fp8Matrix::check`): x [m, k] (bf16, or f16 for the `_xh` forms: `SkinnyX`), the
/// matrix, out, and the norm epilogue's buffers (checked here).
#[allow(clippy::too_many_arguments)]
fn launch_fp8<X: SkinnyX, O>(
    gpu: &Gpu,
    op: &'static str,
    x: &CudaView<'_, X>,
    w: &Fp8Matrix<'_, '_>,
    m: usize,
    (ni, ki, ri): (i32, i32, i32),
    out: &mut CudaViewMut<'_, O>,
    epi: NormEpi<'_, '_>,
) -> Result<()> {
    let il = to_i32(op, "interleave", w.interleave)?;
    let epi_bytes = epi.check(op, m, w.n, op.ends_with("_swiglu"))?;
    let (mut b, pipe) = start(gpu, op, (m, w.n, w.k), epi_bytes, X::F16)?;
    b.input(x);
    weights(&mut b, w.codes)?;
    b.input(w.scale_inv).output(out);
    b.i32(m as i32).i32(ni).i32(ki).i32(ri).i32(il);
    bulk_args(&mut b, pipe, WeightLayout::Rows);
    epi.push(&mut b, m)?;
    // SAFETY: the caller checked the shapes; k % 16 == 0 keeps every fp8 row 16-byte
    // aligned.
    unsafe { b.launch(launch_cfg(pipe)) }?;
    Ok(())
}

/// The types x comes in to the FP8 skinny kernels: bf16, or f16 (the `_xh` kernels, which
/// read x as its producer wrote it, `rmsnorm_f16_into` or an f16 SwiGLU act, instead of
/// converting bf16 x to f16 at every ring stage of every block; the engine's FP8 decode at
/// 2-8 rows). The f16 values are the bf16 ones converted as those kernels convert them, so
/// the sums are the same bits. With f16, a SwiGLU act is f16 too.
pub trait SkinnyX: cudarc::driver::DeviceRepr + sealed::Sealed {
    const F16: bool;
}
/// Only bf16 and f16 are x types (the kernels read 16-bit words).
mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}
impl SkinnyX for bf16 {
    const F16: bool = false;
}
impl SkinnyX for half::f16 {
    const F16: bool = true;
}

/// Rows per group when gate|up are interleaved for the fused SwiGLU kernels (half the
/// skinny GEMM's 16-row tile, so each tile holds 8 gate rows and their 8 up rows).
pub const GATE_UP_GROUP: usize = 8;

/// gate [inter, k] and up [inter, k] (row-major, HF layout) -> [2 * inter, k] with rows
/// gate 0..8, up 0..8, gate 8..16, up 8..16, ...: the layout the `*_swiglu` kernels and
/// `swiglu_into(.., tiled = true)` read. inter % 8 == 0.
pub fn interleave_gate_up<T: Copy + Send + Sync>(gate: &[T], up: &[T], k: usize) -> Vec<T> {
    assert!(k > 0 && gate.len() == up.len() && gate.len().is_multiple_of(k));
    let inter = gate.len() / k;
    assert!(inter.is_multiple_of(GATE_UP_GROUP), "inter {inter} % {GATE_UP_GROUP} != 0");
    let block = GATE_UP_GROUP * k;
    // Element by element in parallel, straight into the output (400 MB per Qwen3-8B layer
    // in bf16: one thread copying took seconds of a load).
    (0..2 * gate.len())
        .into_par_iter()
        .map(|i| {
            let (pair, at) = (i / (2 * block), i % (2 * block));
            if at < block { gate[pair * block + at] } else { up[pair * block + at - block] }
        })
        .collect()
}

/// act[m, c] = bf16(silu(gate) * up) of x [m, k] times interleaved gate|up weights w [2 *
/// inter, k] (`interleave_gate_up`), in one kernel: gate|up GEMM and SwiGLU fused.
pub fn skinny_gemm_swiglu_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &CudaView<'_, bf16>,
    layout: WeightLayout,
    inter: usize,
    k: usize,
    act: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_bf16_swiglu";
    check(inter > 0 && inter.is_multiple_of(GATE_UP_GROUP), OP, || {
        format!("inter = {inter} must be a positive multiple of {GATE_UP_GROUP}")
    })?;
    let n = 2 * inter;
    check_bf16_weights(OP, w.len(), n, k)?;
    let m = rows_of(OP, x.len(), k, act.len(), inter)?;
    launch_bf16(gpu, OP, x, (w, layout), (m, n, k), act)
}

/// `skinny_gemm_swiglu_into` with FP8 weights: `w.interleave` must be `w.n / 2`. x and act
/// are both bf16 or both f16 (`SkinnyX`).
pub fn skinny_gemm_fp8_swiglu_into<X: SkinnyX>(
    gpu: &Gpu,
    x: &CudaView<'_, X>,
    w: &Fp8Matrix<'_, '_>,
    act: &mut CudaViewMut<'_, X>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_fp8_swiglu";
    let sizes = w.check(OP, 16)?;
    check(w.interleave > 0, OP, || "the matrix is not interleaved gate|up".to_string())?;
    let m = rows_of(OP, x.len(), w.k, act.len(), w.interleave)?;
    launch_fp8(gpu, OP, x, w, m, sizes, act, NormEpi::None)
}

/// `skinny_gemm_fp8_into` with decode's RMSNorm folded in: as the norm's consumer
/// (`NormEpi::Scale`, x is the producer's hw) or producer (`NormEpi::AddNorm`, y is the
/// residual). FP8 weights only: the engine folds FP8 steps of one row, where it measured
/// faster (bf16 steps keep their norm kernels; engine/PERF-LOG.md step 52).
pub fn skinny_linear_norm_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &Fp8Matrix<'_, '_>,
    y: &mut CudaViewMut<'_, f32>,
    epi: NormEpi<'_, '_>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_fp8";
    let sizes = w.check(OP, 16)?;
    let m = rows_of(OP, x.len(), w.k, y.len(), w.n)?;
    launch_fp8(gpu, OP, x, w, m, sizes, y, epi)
}

/// `skinny_gemm_fp8_swiglu_into` as a folded norm's consumer (`NormEpi::Scale`): x is the
/// producer's hw; gate and up are scaled before SwiGLU.
pub fn skinny_swiglu_norm_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &Fp8Matrix<'_, '_>,
    act: &mut CudaViewMut<'_, bf16>,
    epi: NormEpi<'_, '_>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_fp8_swiglu";
    let sizes = w.check(OP, 16)?;
    check(w.interleave > 0, OP, || "the matrix is not interleaved gate|up".to_string())?;
    let m = rows_of(OP, x.len(), w.k, act.len(), w.interleave)?;
    launch_fp8(gpu, OP, x, w, m, sizes, act, epi)
}

/// out [n, k] bf16 row-major = the FP8 matrix's values (prefill runs cuBLAS on them);
/// k % 8 == 0.
pub fn fp8_dequant_into(gpu: &Gpu, w: &Fp8Matrix<'_, '_>, out: &mut CudaViewMut<'_, bf16>) -> Result<()> {
    const OP: &str = "fp8_dequant_bf16";
    let (ni, ki, ri) = w.check(OP, 8)?;
    check(out.len() >= w.n * w.k, OP, || format!("out {} < {} x {}", out.len(), w.n, w.k))?;
    let groups = (w.n * w.k / 8) as u32;
    let mut b = Launch::new(gpu, OP)?;
    let il = to_i32(OP, "interleave", w.interleave)?;
    b.input(w.codes).input(w.scale_inv).output(out).i32(ni).i32(ki).i32(ri).i32(il);
    let cfg =
        LaunchConfig { grid_dim: (groups.div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: shapes checked above; k % 8 == 0 keeps every 8-code group aligned.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_bf16_weights, interleave_gate_up};

    #[test]
    fn bf16_weight_checks_name_the_bad_dimension() {
        assert!(check_bf16_weights("op", 64 * 16, 64, 16).is_ok());
        let e = check_bf16_weights("op", 60 * 12, 60, 12).unwrap_err().to_string();
        assert!(e.contains("op") && e.contains("k = 12"), "{e}");
        let e = check_bf16_weights("op", 100, 64, 16).unwrap_err().to_string();
        assert!(e.contains("w 100 != 64 x 16"), "{e}");
    }

    #[test]
    fn gate_up_interleave_alternates_blocks_of_8_rows() {
        let k = 3;
        let gate: Vec<u32> = (0..16 * k as u32).collect();
        let up: Vec<u32> = (1000..1000 + 16 * k as u32).collect();
        let out = interleave_gate_up(&gate, &up, k);
        let row = |r: usize| &out[r * k..(r + 1) * k];
        assert_eq!(out.len(), 32 * k);
        assert_eq!(row(0), &gate[..k]);
        assert_eq!(row(7), &gate[7 * k..8 * k]);
        assert_eq!(row(8), &up[..k]);
        assert_eq!(row(15), &up[7 * k..8 * k]);
        assert_eq!(row(16), &gate[8 * k..9 * k]);
        assert_eq!(row(31), &up[15 * k..16 * k]);
    }
}
