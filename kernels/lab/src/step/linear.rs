//! The chain's layer projections (`Linear`): zero or random weights in the engine's decode
//! layouts, bf16 or FP8, and their skinny GEMMs plain, with a folded norm, or with SwiGLU;
//! FP8 ones also on f16 x. Past 8 rows they run as the engine does there: FP8 on the wide
//! GEMM (the same bytes read as its wide layout: the values do not matter to the timing),
//! bf16 on cuBLAS and the swiglu kernel after it.

use super::{HIDDEN, INTER};
use kernels::cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use kernels::ops;
use kernels::{Gpu, bf16, f16};

pub enum Linear {
    Bf16(CudaSlice<bf16>),
    Fp8(CudaSlice<u8>, CudaSlice<f32>),
}

/// `LATLAB_CHAIN_RANDOM=1`: the weights hold random values (a 16 MB random block repeated)
/// instead of zeros. Zero weights draw less power: 2026-11-30 20:18 saw tiled weights gain 55 us
/// per bf16 step here and nothing in the engine, near the H200's 700 W limit.
pub(super) fn random_weights() -> bool {
    std::env::var("LATLAB_CHAIN_RANDOM").is_ok_and(|v| v == "1")
}

/// Fill `buf` with copies of `block`.
fn fill_from<T: kernels::cudarc::driver::DeviceRepr>(
    g: &Gpu,
    buf: &mut CudaSlice<T>,
    block: &CudaView<'_, T>,
) {
    let mut off = 0;
    while off < buf.len() {
        let len = block.len().min(buf.len() - off);
        let mut dst = buf.slice_mut(off..off + len);
        g.stream().memcpy_dtod(&block.slice(..len), &mut dst).unwrap();
        off += len;
    }
}

/// 16 MB of random bytes: bf16 values of magnitude under 2 (no NaN or infinity), or
/// e4m3 codes without NaN.
pub(super) fn random_block(g: &Gpu, fp8: bool) -> CudaSlice<u8> {
    let mut r = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..16 << 20)
        .map(|i| {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let b = (r >> 56) as u8;
            match (fp8, i % 2) {
                (true, _) => b & 0xf7 & !0x78 | (b & 0x30),
                (false, 1) => b & 0xbe, // high byte of a bf16: the exponent's top bit clear
                (false, _) => b,
            }
        })
        .collect();
    g.stream().clone_htod(&bytes).unwrap()
}

/// y = x w^T for FP8 w on the kernel the engine runs at x's rows: the skinny GEMM up to 8,
/// the wide one past. The engine zeroes a split wide GEMM's y inside the wide GEMM before it
/// (ops::WideZeros); here nothing does, and sums of zeros stay zero: no memset either.
fn fp8_gemm<X: ops::SkinnyX>(
    g: &Gpu,
    x: &CudaView<'_, X>,
    m8: ops::Fp8Matrix<'_, '_>,
    y: &mut CudaViewMut<'_, f32>,
) {
    if x.len() / m8.k > ops::SKINNY_MAX_ROWS {
        let zeros = ops::WideZeros { y_zeroed: true, clear: None };
        ops::wide_fp8_into(g, x, &ops::WideFp8(m8), y, zeros)
    } else {
        ops::skinny_gemm_fp8_into(g, x, &m8, y)
    }
    .unwrap()
}

impl Linear {
    /// Zeros, or copies of `random` (`random_block`).
    pub fn zeros(g: &Gpu, n: usize, k: usize, fp8: bool, random: Option<&CudaSlice<u8>>) -> Self {
        let s = g.stream();
        if fp8 {
            let mut codes = s.alloc_zeros(n * k).unwrap();
            if let Some(b) = random {
                fill_from(g, &mut codes, &b.as_view());
            }
            Linear::Fp8(codes, s.alloc_zeros(n.div_ceil(128) * k.div_ceil(128)).unwrap())
        } else {
            let mut w = s.alloc_zeros::<bf16>(n * k).unwrap();
            if let Some(b) = random {
                // SAFETY: bf16 is two plain bytes; the block's length is even.
                let b16 = unsafe { b.transmute::<bf16>(b.len() / 2) }.unwrap();
                fill_from(g, &mut w, &b16);
            }
            Linear::Bf16(w)
        }
    }

    /// The layout the engine would upload bf16 weights in (`Tuning::tiled_weights`); the
    /// weights are zeros or a repeated block, so only the kernels' addressing follows it.
    fn layout(g: &Gpu) -> ops::WeightLayout {
        if g.tuning().tiled_weights { ops::WeightLayout::Tiled } else { ops::WeightLayout::Rows }
    }

    fn fp8<'a, 'b>(
        codes: &'a CudaView<'b, u8>,
        scales: &'a CudaView<'b, f32>,
        n: usize,
        k: usize,
        interleave: usize,
    ) -> ops::Fp8Matrix<'a, 'b> {
        ops::Fp8Matrix { codes, scale_inv: scales, scale_rows: 128, n, k, interleave }
    }

    /// y = x w^T, f32 out.
    pub fn run(&self, g: &Gpu, x: &CudaSlice<bf16>, n: usize, k: usize, y: &mut CudaSlice<f32>) {
        let (xv, mut yv) = (x.as_view(), y.as_view_mut());
        let wide = x.len() / k > ops::SKINNY_MAX_ROWS;
        match self {
            Linear::Bf16(w) if wide => ops::gemm_into(g, &xv, &w.as_view(), n, k, &mut yv).unwrap(),
            Linear::Bf16(w) => {
                ops::skinny_gemm_into(g, &xv, &w.as_view(), Self::layout(g), n, k, &mut yv).unwrap()
            }
            Linear::Fp8(c, s) => {
                let (cv, sv) = (c.as_view(), s.as_view());
                fp8_gemm(g, &xv, Self::fp8(&cv, &sv, n, k, 0), &mut yv)
            }
        }
    }

    pub fn is_fp8(&self) -> bool {
        matches!(self, Linear::Fp8(..))
    }

    /// `run` on f16 x (the engine's FP8 decode at 2-8 rows); FP8 weights only.
    pub fn run_f16(&self, g: &Gpu, x: &CudaSlice<f16>, n: usize, k: usize, y: &mut CudaSlice<f32>) {
        let Linear::Fp8(c, s) = self else { panic!("f16 x runs FP8 projections only") };
        let (cv, sv) = (c.as_view(), s.as_view());
        fp8_gemm(g, &x.as_view(), Self::fp8(&cv, &sv, n, k, 0), &mut y.as_view_mut())
    }

    /// `run_swiglu` on f16 x with an f16 act; FP8 weights only.
    pub fn run_swiglu_f16(&self, g: &Gpu, x: &CudaSlice<f16>, act: &mut CudaSlice<f16>) {
        let Linear::Fp8(c, s) = self else { panic!("f16 x runs FP8 projections only") };
        let (cv, sv) = (c.as_view(), s.as_view());
        let m8 = Self::fp8(&cv, &sv, 2 * INTER, HIDDEN, INTER);
        let (xv, mut av) = (x.as_view(), act.as_view_mut());
        if x.len() / HIDDEN > ops::SKINNY_MAX_ROWS {
            ops::wide_fp8_swiglu_into(g, &xv, &ops::WideFp8(m8), &mut av, None)
        } else {
            ops::skinny_gemm_fp8_swiglu_into(g, &xv, &m8, &mut av)
        }
        .unwrap()
    }

    /// `run` with a folded norm's epilogue (`ops::NormEpi`; the engine's FP8 decode at one
    /// row); FP8 weights only.
    pub fn run_epi(
        &self,
        g: &Gpu,
        x: &CudaSlice<bf16>,
        (n, k): (usize, usize),
        y: &mut CudaSlice<f32>,
        epi: ops::NormEpi<'_, '_>,
    ) {
        let Linear::Fp8(c, s) = self else { panic!("folded norms run FP8 projections only") };
        let (cv, sv) = (c.as_view(), s.as_view());
        let m8 = Self::fp8(&cv, &sv, n, k, 0);
        ops::skinny_linear_norm_into(g, &x.as_view(), &m8, &mut y.as_view_mut(), epi).unwrap()
    }

    /// `run_swiglu` as a folded norm's consumer (x: hw, ss: the producer's sums).
    pub fn run_swiglu_scaled(
        &self,
        g: &Gpu,
        x: &CudaSlice<bf16>,
        ss: &CudaSlice<f32>,
        act: &mut CudaSlice<bf16>,
    ) {
        let (xv, mut av, sv) = (x.as_view(), act.as_view_mut(), ss.as_view());
        let epi = ops::NormEpi::Scale { ss: &sv, eps: 1e-6 };
        let Linear::Fp8(c, s) = self else { panic!("folded norms run FP8 projections only") };
        let (cv, scv) = (c.as_view(), s.as_view());
        let m8 = Self::fp8(&cv, &scv, 2 * INTER, HIDDEN, INTER);
        ops::skinny_swiglu_norm_into(g, &xv, &m8, &mut av, epi).unwrap()
    }

    /// act = SwiGLU(x gate|up^T), the fused decode kernel; past 8 rows (bf16 only: FP8
    /// runs `run_swiglu_f16` there) cuBLAS into `gu`, then the swiglu kernel.
    pub fn run_swiglu(
        &self,
        g: &Gpu,
        x: &CudaSlice<bf16>,
        gu: &mut CudaSlice<f32>,
        act: &mut CudaSlice<bf16>,
    ) {
        let (xv, mut av) = (x.as_view(), act.as_view_mut());
        if let (Linear::Bf16(w), true) = (self, x.len() / HIDDEN > ops::SKINNY_MAX_ROWS) {
            ops::gemm_into(g, &xv, &w.as_view(), 2 * INTER, HIDDEN, &mut gu.as_view_mut()).unwrap();
            return ops::swiglu_into(g, &gu.as_view(), INTER, true, &mut av).unwrap();
        }
        match self {
            Linear::Bf16(w) => {
                ops::skinny_gemm_swiglu_into(g, &xv, &w.as_view(), Self::layout(g), INTER, HIDDEN, &mut av)
            }
            Linear::Fp8(c, s) => {
                let (cv, sv) = (c.as_view(), s.as_view());
                let m8 = Self::fp8(&cv, &sv, 2 * INTER, HIDDEN, INTER);
                ops::skinny_gemm_fp8_swiglu_into(g, &xv, &m8, &mut av)
            }
        }
        .unwrap()
    }
}
