//! What the CUDA op tests share (GPU machine only): a seeded bf16-exact random source,
//! upload/download, and the error check; the backend tests' logits comparisons (`logits`).
//! Each test binary uses part of it; cuda_gemm's pipelines and e4m3 reference: `skinny`.
#![allow(dead_code)]

pub mod ab;
pub mod logits;
pub mod skinny;

use kernels::cudarc::driver::CudaSlice;
use kernels::{Gpu, GpuOptions, bf16};

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> f32 {
        // splitmix64 -> uniform [-1, 1), rounded to bf16 so both sides see the same value
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let u = (z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
        bf16::from_f32(u).to_f32()
    }
    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
}

pub fn gpu() -> Gpu {
    Gpu::new(&GpuOptions::from_env().unwrap()).expect("GPU with kernels")
}
/// A `Gpu` whose tuning `set` changes from the environment's.
pub fn gpu_tuned(set: impl FnOnce(&mut kernels::Tuning)) -> Gpu {
    let mut o = GpuOptions::from_env().unwrap();
    set(&mut o.tuning);
    Gpu::new(&o).expect("GPU with kernels")
}
pub fn up_bf16(g: &Gpu, v: &[f32]) -> CudaSlice<bf16> {
    let b: Vec<bf16> = v.iter().map(|&x| bf16::from_f32(x)).collect();
    g.stream().clone_htod(&b).unwrap()
}
pub fn up<T: kernels::cudarc::driver::DeviceRepr>(g: &Gpu, v: &[T]) -> CudaSlice<T> {
    g.stream().clone_htod(v).unwrap()
}
pub fn down_bf16(g: &Gpu, s: &CudaSlice<bf16>) -> Vec<f32> {
    g.stream().clone_dtoh(s).unwrap().iter().map(|x| x.to_f32()).collect()
}
pub fn down<T: kernels::cudarc::driver::DeviceRepr>(g: &Gpu, s: &CudaSlice<T>) -> Vec<T> {
    g.stream().clone_dtoh(s).unwrap()
}

/// Max |a - b| / (|b| + floor), and asserts it stays under `tol`.
pub fn check(what: &str, a: &[f32], b: &[f32], floor: f32, tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let (mut worst, mut abs) = (0f32, 0f32);
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let e = (x - y).abs() / (y.abs() + floor);
        assert!(e <= tol, "{what}[{i}]: gpu {x} vs cpu {y} (rel {e:e} > {tol:e})");
        worst = worst.max(e);
        abs = abs.max((x - y).abs());
    }
    eprintln!("{what:<40} max abs {abs:.3e}  max rel {worst:.3e}");
}

/// Random FP8 codes for an [n, k] matrix (0x00..0x6f with a random sign: finite e4m3
/// values) and its 128x128 block scales.
pub fn fp8_codes_and_scales(r: &mut Rng, n: usize, k: usize) -> (Vec<u8>, Vec<f32>) {
    let codes: Vec<u8> = (0..n * k)
        .map(|_| {
            let c = ((r.next() + 1.0) * 55.0) as u8;
            c.min(0x6f) | if r.next() < 0.0 { 0x80 } else { 0 }
        })
        .collect();
    let scales: Vec<f32> =
        (0..n.div_ceil(128) * k.div_ceil(128)).map(|_| (r.next().abs() + 0.1) / 64.0).collect();
    (codes, scales)
}
