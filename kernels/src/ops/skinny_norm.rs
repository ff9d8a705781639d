//! Decode's RMSNorm folded into the FP8 skinny GEMMs around it (the engine folds FP8
//! steps of one row): the GEMM that ends a residual branch (o_proj, down) adds its sums to the f32 residual and
//! stores the next GEMM's x unscaled, with per-tile sums of squares; the next GEMM (qkv,
//! gate|up) applies each row's scale to its sums. No norm kernel runs between them.
//! skinny_norm.cuh (NormIo) holds the kernels' side and why.

use super::skinny::TILE_N;
use super::to_i32;
use crate::error::{Result, check};
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut};
use half::bf16;

/// What a decode skinny GEMM does around its sums besides storing them.
pub enum NormEpi<'a, 'b> {
    /// y = x wᵀ.
    None,
    /// x holds a producer's `hw` (a norm's input times its weights, not yet its scale):
    /// y[m] = rsqrt(sum(ss[m]) / k + eps) (x wᵀ)[m], with ss [m, parts] the producer's
    /// partial sums of squares (parts % 4 == 0).
    Scale { ss: &'a CudaView<'b, f32>, eps: f32 },
    /// y is the f32 residual [m, n]: y += x wᵀ, then hw = bf16(y w) [m, n] with w the next
    /// norm's weights [n], and ss [m, n / 16] the sums of y² over each 16 columns (n % 16 ==
    /// 0). Not for SwiGLU outputs.
    AddNorm { w: &'a CudaView<'b, f32>, hw: &'a mut CudaViewMut<'b, bf16>, ss: &'a mut CudaViewMut<'b, f32> },
}

/// Partial sums a producer of n output columns writes per row (one per 16-column tile).
pub fn norm_parts(n: usize) -> usize {
    n.div_ceil(TILE_N)
}

impl NormEpi<'_, '_> {
    /// Checks the buffers against a launch over m rows and n outputs (`swiglu`: the
    /// kernel's output is SwiGLU's, which only a consumer may be) and returns the bytes of
    /// shared memory the kernel's epilogue keeps (skinny_norm.cuh, norm_epi_bytes).
    pub(super) fn check(&self, op: &'static str, m: usize, n: usize, swiglu: bool) -> Result<u32> {
        match self {
            NormEpi::None => Ok(0),
            NormEpi::Scale { ss, .. } => {
                let parts = ss.len() / m;
                check(ss.len() == m * parts && parts > 0, op, || {
                    format!("norm partial sums {} are not {m} rows of some", ss.len())
                })?;
                check(parts.is_multiple_of(4), op, || {
                    format!("{parts} norm partial sums per row: a multiple of 4 is needed")
                })?;
                Ok((m * parts * 4) as u32)
            }
            NormEpi::AddNorm { w, hw, ss } => {
                check(!swiglu, op, || "a SwiGLU output cannot join the residual".to_string())?;
                check(n.is_multiple_of(TILE_N), op, || {
                    format!("n = {n}: the residual's norm needs a multiple of {TILE_N}")
                })?;
                check(w.len() == n, op, || format!("norm weights {} != n = {n}", w.len()))?;
                check(hw.len() == m * n, op, || format!("hw {} != {m} x {n}", hw.len()))?;
                let parts = norm_parts(n);
                check(ss.len() == m * parts, op, || {
                    format!("norm partial sums {} != {m} x {parts}", ss.len())
                })?;
                Ok(2 * 128 * 4)
            }
        }
    }

    /// The `_norm` kernels' trailing NormIo arguments (ss_in, nt_in, eps, nw, hw, ss_out).
    pub(super) fn push(self, b: &mut Launch<'_>, m: usize) -> Result<()> {
        let op = b.op();
        match self {
            // The plain kernels take no NormIo.
            NormEpi::None => {}
            NormEpi::Scale { ss, eps } => {
                b.input_aligned16(ss, "norm partial sums")?;
                b.i32(to_i32(op, "norm parts", ss.len() / m)?).f32(eps);
                b.null().null().null();
            }
            NormEpi::AddNorm { w, hw, ss } => {
                b.null().i32(0).f32(0.0);
                b.input(w).output(hw).output(ss);
            }
        }
        Ok(())
    }
}
