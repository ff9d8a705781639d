//! Experiment, GPU machine only (prints the speeds; asserts only correctness): FP8 decode
//! GEMMs on the warpgroup MMA (lab/cuda/wgmma_probe.cu: e4m3 weights times e4m3
//! activations, QGMMA in SASS) against the engine's FP8 kernel (e4m3 weights unpacked to
//! f16 for HMMA, bf16 x), on Qwen3-8B's gate|up, qkv and down shapes at batch 1 and 8.
//! x comes quantized (per token and 128-k group) and laid out by the host, so this times
//! the weight stream alone. `cargo run -p kernels-lab --bin wgmma_probe`.
//!
//! Answer so far (H200, 2026-11-30 16:45, engine/PERF-LOG.md step 33): correct (error < 1e-4 of
//! sum |x w|: QGMMA accumulates 32 products more coarsely than f32), and its time does not
//! depend on the batch. At batch 8 it beats the engine's kernel on gate|up and down (-5 to
//! -6 %) and loses on qkv (+5 %); at batch 1 it loses everywhere (+4 to +18 %). Its ring
//! alone (`stream_only`: consumers that only hand stages back) streams gate|up at 3.80
//! TB/s, what the engine's FP8 kernel does with all its work at batch 1: the 2-D
//! tensor-copy ring, not the MMAs, is what holds it back.

use kernels_lab::rng::Rng;
use kernels_lab::sources;

use kernels::cudarc::driver::sys::{self, CUfunction_attribute};
use kernels::cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};
use kernels::ops;
use kernels::{Gpu, GpuOptions, bf16};
use kernels_lab::timing::time_us_reps;

const ROWS: usize = 64;
const STAGE_BYTES: usize = ROWS * 256;
const THREADS: u32 = 2 * 128 + 32;
/// Dynamic shared memory a block may have: 227 KiB less the kernels' static arrays.
const SMEM_LIMIT: usize = 227 * 1024 - 4096;

/// A CUtensorMap as the kernel takes it: 128 bytes by value, 64-byte aligned.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct TensorMap([u64; 16]);
// SAFETY: plain bytes, passed by value as the kernel's __grid_constant__ parameter.
unsafe impl DeviceRepr for TensorMap {}

/// The weights w [n, k] u8 as 128-k x 64-row boxes with 128-byte swizzle.
fn tensor_map(g: &Gpu, w: &CudaSlice<u8>, n: usize, k: usize) -> TensorMap {
    let (ptr, _sync) = w.device_ptr(g.stream());
    let dims = [k as u64, n as u64];
    let strides = [k as u64];
    let boxes = [128u32, ROWS as u32];
    let unit = [1u32, 1];
    let mut m = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: every pointer is to a live local of the length the rank (2) asks for.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut m,
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            2,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            unit.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        .result()
        .unwrap();
    }
    TensorMap(m.opaque)
}

/// e4m3fn code -> value (sign, 4 exponent bits with bias 7, 3 mantissa bits).
fn e4m3(c: u8) -> f64 {
    let sign = if c & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((c >> 3) & 0xf) as i32, (c & 7) as f64);
    sign * if e == 0 { m / 8.0 * 2f64.powi(-6) } else { (1.0 + m / 8.0) * 2f64.powi(e - 7) }
}

/// x codes [8, k] in the kernel's B layout: step j = c * 4 + q of chunk c holds, for token
/// n, physical bytes 32T + 8q + 4h + i of the chunk at j * 256 + h * 128 + n * 16 + 4T + i
/// (the fragment's k order for A's words 2q and 2q + 1, wgmma_probe.cu).
fn x_layout(codes: &[u8], k: usize) -> Vec<u8> {
    let mut out = vec![0u8; 8 * k];
    for n in 0..8 {
        for kk in 0..k {
            let (c, p) = (kk / 128, kk % 128);
            let (t, q, h, i) = (p / 32, (p % 32) / 8, (p % 8) / 4, p % 4);
            out[(c * 4 + q) * 256 + h * 128 + n * 16 + 4 * t + i] = codes[n * k + kk];
        }
    }
    out
}

struct Probe {
    func: CudaFunction,
}

impl Probe {
    /// The ring, x's codes and scales, and room to align the ring to 1024 bytes.
    fn smem(&self, stages: usize, k: usize) -> usize {
        stages * STAGE_BYTES + 8 * k + k / 128 * 8 * 4 + 1024
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        g: &Gpu,
        w: &TensorMap,
        s: &CudaSlice<f32>,
        xq: &CudaSlice<u8>,
        xs: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
        (m, n, k): (usize, usize, usize),
        (stages, unit_k): (usize, usize),
        stream_only: bool,
    ) {
        let smem = self.smem(stages, k) as u32;
        self.func
            .set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
            .unwrap();
        // Split-K units add into y: zero it first (part of the timed work).
        g.stream().memset_zeros(y).unwrap();
        let units = n / ROWS * (k / unit_k);
        let per_sm =
            self.func.occupancy_max_active_blocks_per_multiprocessor(THREADS, smem as usize, None).unwrap()
                as usize;
        let grid = units.min(per_sm * g.sms());
        let (mi, ni, ki, st, uk) = (m as i32, n as i32, k as i32, stages as i32, unit_k as i32);
        let so = stream_only as i32;
        let mut b = g.stream().launch_builder(&self.func);
        b.arg(w).arg(s).arg(xq).arg(xs).arg(y).arg(&mi).arg(&ni).arg(&ki).arg(&st).arg(&uk).arg(&so);
        let cfg = LaunchConfig {
            grid_dim: (grid as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: smem,
        };
        // SAFETY: every buffer has the size the kernel reads for (m, n, k).
        unsafe { b.launch(cfg) }.unwrap();
    }
}

fn fp8_decode_gemm_on_the_warpgroup_mma() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let st = g.stream();
    let module = kernels_lab::module(&g, &opts, "wgmma_probe.cu", sources::WGMMA_PROBE);
    let probe = Probe { func: module.load_function("fp8_wgmma_probe").unwrap() };
    println!("| shape | m | kernel | us | TB/s | max err / sum|xw| |");
    let mut r = Rng(5);
    // Four copies of each matrix, run in turn, so that no run finds its weights in L2.
    const COPIES: usize = 4;
    for (name, n, k) in [("gate|up", 24576usize, 4096usize), ("qkv", 6144, 4096), ("down", 4096, 12288)] {
        let sc = k / 128;
        let codes: Vec<u8> = (0..n * k).map(|_| r.code()).collect();
        let scales: Vec<f32> = (0..n / 128 * sc).map(|_| r.scale()).collect();
        let w: Vec<CudaSlice<u8>> = (0..COPIES).map(|_| st.clone_htod(&codes).unwrap()).collect();
        let maps: Vec<TensorMap> = w.iter().map(|c| tensor_map(&g, c, n, k)).collect();
        let s = st.clone_htod(&scales).unwrap();
        for m in [1usize, 8] {
            // x: codes for m tokens (zeros past m) and a scale per token and group.
            let mut xc = vec![0u8; 8 * k];
            for c in xc.iter_mut().take(m * k) {
                *c = r.code();
            }
            let mut xsc = vec![0f32; sc * 8];
            for (i, v) in xsc.iter_mut().enumerate() {
                if i % 8 < m {
                    *v = r.scale();
                }
            }
            let xq = st.clone_htod(&x_layout(&xc, k)).unwrap();
            let xs = st.clone_htod(&xsc).unwrap();
            let mut y = st.alloc_zeros::<f32>(m * n).unwrap();
            // Correctness of the probe against f64, whole-K and split-K units at several ring
            // depths (a race between the wgmma's registers and the code after its wait
            // showed at some only).
            let mut worst = 0f64;
            for (unit_k, stages) in [(k, 4), (1024, 3), (2048, 6), (2048, 4)] {
                probe.run(&g, &maps[0], &s, &xq, &xs, &mut y, (m, n, k), (stages, unit_k), false);
                let got = st.clone_dtoh(&y).unwrap();
                let mut err = 0f64;
                for t in 0..m {
                    for j in (0..n).step_by(37) {
                        let (mut want, mut mag) = (0f64, 0f64);
                        for kk in 0..k {
                            let v = e4m3(codes[j * k + kk])
                                * scales[(j / 128) * sc + kk / 128] as f64
                                * e4m3(xc[t * k + kk])
                                * xsc[(kk / 128) * 8 + t] as f64;
                            want += v;
                            mag += v.abs();
                        }
                        err = err.max((got[t * n + j] as f64 - want).abs() / mag.max(1e-30));
                    }
                }
                assert!(
                    err < 1e-3,
                    "{name} m={m} stages={stages} unit_k={unit_k}: wgmma probe off by {err:e} of sum|xw|"
                );
                worst = worst.max(err);
            }
            let bytes = (n * k) as f64;
            for stream_only in [false, true] {
                for stages in [3usize, 4, 6, 8] {
                    if probe.smem(stages, k) > SMEM_LIMIT {
                        continue;
                    }
                    for unit_k in [k, 2048] {
                        let us = time_us_reps(&g, COPIES, || {
                            for map in &maps {
                                let shape = (m, n, k);
                                probe.run(
                                    &g,
                                    map,
                                    &s,
                                    &xq,
                                    &xs,
                                    &mut y,
                                    shape,
                                    (stages, unit_k),
                                    stream_only,
                                );
                            }
                        }) / COPIES as f32;
                        let what = if stream_only { "ring alone (timing only)" } else { "wgmma" };
                        println!(
                            "| {name} {n}x{k} | {m} | {what}, {stages} stages, {} units of k {unit_k} | {us:.1} | {:.2} | {worst:.1e} |",
                            n / ROWS * (k / unit_k),
                            bytes / (us as f64 * 1e-6) / 1e12
                        );
                    }
                }
            }
            // The engine's kernel on the same codes, bf16 x.
            let xb = st.alloc_zeros::<bf16>(m * k).unwrap();
            let us = time_us_reps(&g, COPIES, || {
                for wc in &w {
                    let m8 = ops::Fp8Matrix {
                        codes: &wc.as_view(),
                        scale_inv: &s.as_view(),
                        scale_rows: 128,
                        n,
                        k,
                        interleave: 0,
                    };
                    ops::skinny_gemm_fp8_into(&g, &xb.as_view(), &m8, &mut y.as_view_mut()).unwrap();
                }
            }) / COPIES as f32;
            println!(
                "| {name} {n}x{k} | {m} | engine (f16 HMMA, bf16 x) | {us:.1} | {:.2} | |",
                bytes / (us as f64 * 1e-6) / 1e12
            );
        }
    }
}

fn main() {
    fp8_decode_gemm_on_the_warpgroup_mma();
}
