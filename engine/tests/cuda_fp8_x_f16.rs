//! FP8 GEMMs that read x as f16 (`ops::SkinnyX`, the `_xh` bulk kernels) and the norms
//! that write it (`ops::rmsnorm_f16_into`, `add_rmsnorm_f16_into`), against the bf16 forms
//! (GPU machine only: `cargo test -p engine --test cuda_fp8_x_f16 -- --ignored`). Every
//! f16 value is the bf16 one taken to f16, as the FP8 kernels take bf16 x themselves, so:
//! - the GEMM's sums from f16 x are the bf16-x sums, bit for bit, at 1, 3 and 8 rows (at
//!   one row the bf16-x kernel stages x in shared memory, the f16-x one never does);
//! - the SwiGLU act it stores in f16 is the bf16 act as f16, bit for bit;
//! - the f16 norms store the bf16 norms' values as f16 and leave the same residual;
//! - the launchers refuse what the kernels cannot do, naming it.

mod cuda_common;

use cuda_common::{Rng, down, fp8_codes_and_scales, gpu_tuned, up, up_bf16};
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, Fp8Matrix};
use kernels::{Gpu, bf16, f16};

/// The ring depths the `_xh` kernels run with: the defaults, and the shallowest.
fn gpus() -> Vec<(Gpu, &'static str)> {
    vec![
        (gpu_tuned(|_| {}), "default rings"),
        (
            gpu_tuned(|t| {
                t.fp8_bulk_stages = 2;
                t.fp8_bulk_stages_small = 2;
            }),
            "2-stage rings",
        ),
    ]
}

/// bf16 values as f16 the way the FP8 kernels convert them: round to nearest even,
/// saturating at +-65504 (`cvt.rn.satfinite`; a large SwiGLU act can get there).
fn as_f16(v: &[bf16]) -> Vec<f16> {
    v.iter().map(|b| f16::from_f32(b.to_f32().clamp(-65504.0, 65504.0))).collect()
}

/// FP8 codes and 128x128 block scales on the GPU (`fp8_codes_and_scales`).
struct Fp8 {
    codes: CudaSlice<u8>,
    scales: CudaSlice<f32>,
    n: usize,
    k: usize,
    interleave: usize,
}

impl Fp8 {
    fn new(g: &Gpu, r: &mut Rng, n: usize, k: usize, interleave: usize) -> Self {
        let (codes, scales) = fp8_codes_and_scales(r, n, k);
        Fp8 { codes: up(g, &codes), scales: up(g, &scales), n, k, interleave }
    }

    fn with<R>(&self, f: impl FnOnce(&Fp8Matrix<'_, '_>) -> R) -> R {
        let (cv, sv) = (self.codes.as_view(), self.scales.as_view());
        f(&Fp8Matrix {
            codes: &cv,
            scale_inv: &sv,
            scale_rows: 128,
            n: self.n,
            k: self.k,
            interleave: self.interleave,
        })
    }
}

fn same_bits<T: PartialEq + std::fmt::Debug>(what: &str, a: &[T], b: &[T]) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let bad = a.iter().zip(b).position(|(x, y)| x != y);
    assert!(
        bad.is_none(),
        "{what}: element {} differs: {:?} against {:?}",
        bad.unwrap(),
        a[bad.unwrap()],
        b[bad.unwrap()]
    );
}

#[test]
#[ignore = "gpu"]
fn f16_x_gives_the_same_sums_and_act() {
    for (g, pipe) in gpus() {
        let mut r = Rng(53);
        // qkv's and down's shapes at Qwen3-8B, and a small one.
        for (n, k) in [(6144, 4096), (4096, 12288), (256, 512)] {
            let w = Fp8::new(&g, &mut r, n, k, 0);
            for m in [1, 3, 8] {
                let what = format!("{pipe} m={m} n={n} k={k}");
                let x = up_bf16(&g, &r.vec(m * k));
                let xh = up(&g, &as_f16(&down(&g, &x)));
                let mut y = g.stream().alloc_zeros::<f32>(m * n).unwrap();
                let mut yh = g.stream().alloc_zeros::<f32>(m * n).unwrap();
                w.with(|m8| ops::skinny_gemm_fp8_into(&g, &x.as_view(), m8, &mut y.as_view_mut())).unwrap();
                w.with(|m8| ops::skinny_gemm_fp8_into(&g, &xh.as_view(), m8, &mut yh.as_view_mut())).unwrap();
                let bits = |v: Vec<f32>| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                same_bits(&what, &bits(down(&g, &yh)), &bits(down(&g, &y)));
            }
        }
        // gate|up with SwiGLU: Qwen3-8B's k, fewer rows than its 12288 (the kernel is the
        // same at any n), and a small one.
        for (inter, k) in [(1536, 4096), (64, 512)] {
            let w = Fp8::new(&g, &mut r, 2 * inter, k, inter);
            for m in [1, 3, 8] {
                let what = format!("{pipe} swiglu m={m} inter={inter} k={k}");
                let x = up_bf16(&g, &r.vec(m * k));
                let xh = up(&g, &as_f16(&down(&g, &x)));
                let mut act = g.stream().alloc_zeros::<bf16>(m * inter).unwrap();
                let mut acth = g.stream().alloc_zeros::<f16>(m * inter).unwrap();
                w.with(|m8| ops::skinny_gemm_fp8_swiglu_into(&g, &x.as_view(), m8, &mut act.as_view_mut()))
                    .unwrap();
                w.with(|m8| ops::skinny_gemm_fp8_swiglu_into(&g, &xh.as_view(), m8, &mut acth.as_view_mut()))
                    .unwrap();
                same_bits(&what, &down(&g, &acth), &as_f16(&down(&g, &act)));
            }
        }
    }
}

#[test]
#[ignore = "gpu"]
fn f16_norms_store_the_bf16_values_as_f16() {
    let g = gpu_tuned(|_| {});
    let mut r = Rng(59);
    for dim in [4096, 1024] {
        let w: Vec<f32> = r.vec(dim).iter().map(|v| 1.0 + v).collect();
        let dw = up(&g, &w);
        for rows in [1, 3, 8] {
            let x0: Vec<f32> = r.vec(rows * dim).iter().map(|v| 4.0 * v).collect();
            let add = up(&g, &r.vec(rows * dim));
            for with_add in [false, true] {
                let what = format!("dim {dim} rows {rows} add {with_add}");
                let (mut x, mut xh) = (up(&g, &x0), up(&g, &x0));
                let mut out = g.stream().alloc_zeros::<bf16>(rows * dim).unwrap();
                let mut outh = g.stream().alloc_zeros::<f16>(rows * dim).unwrap();
                if with_add {
                    ops::add_rmsnorm_into(
                        &g,
                        &mut x.as_view_mut(),
                        &add.as_view(),
                        &dw.as_view(),
                        1e-6,
                        &mut out.as_view_mut(),
                    )
                    .unwrap();
                    ops::add_rmsnorm_f16_into(
                        &g,
                        &mut xh.as_view_mut(),
                        &add.as_view(),
                        &dw.as_view(),
                        1e-6,
                        &mut outh.as_view_mut(),
                    )
                    .unwrap();
                } else {
                    ops::rmsnorm_into(&g, &mut x.as_view_mut(), &dw.as_view(), 1e-6, &mut out.as_view_mut())
                        .unwrap();
                    ops::rmsnorm_f16_into(
                        &g,
                        &mut xh.as_view_mut(),
                        &dw.as_view(),
                        1e-6,
                        &mut outh.as_view_mut(),
                    )
                    .unwrap();
                }
                same_bits(&what, &down(&g, &outh), &as_f16(&down(&g, &out)));
                let bits = |v: Vec<f32>| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                same_bits(&format!("{what} residual"), &bits(down(&g, &xh)), &bits(down(&g, &x)));
            }
        }
    }
}

#[test]
#[ignore = "gpu"]
fn f16_x_launchers_refuse_what_the_kernels_cannot_do() {
    let mut r = Rng(61);
    let g = gpu_tuned(|_| {});
    // The scalar norms (rows whose width the lean kernels do not take) have no f16 form.
    let mut x = up(&g, &r.vec(2 * 64));
    let dw = up(&g, &r.vec(64));
    let mut outh = g.stream().alloc_zeros::<f16>(2 * 64).unwrap();
    let e = ops::rmsnorm_f16_into(&g, &mut x.as_view_mut(), &dw.as_view(), 1e-6, &mut outh.as_view_mut())
        .unwrap_err()
        .to_string();
    assert!(e.contains("rmsnorm_vec_f16") && e.contains("lean kernel"), "{e}");
}
