//! The kernel lab: experiments and instruments that measure the production kernels (and
//! kernels that lost to them) on the GPU machine. They print what they measure and assert
//! only that what they time computes the right thing; `cargo test` runs none of them, and
//! CI only builds them (and compiles their CUDA sources with NVRTC) so they do not rot.
//! README.md says how to run each and what it answered.

pub mod rng;
pub mod sources;
pub mod step;
pub mod timing;

use kernels::compile::{CompileOptions, compile_cubin};
use kernels::cudarc::driver::CudaModule;
use kernels::cudarc::nvrtc::Ptx;
use kernels::{Gpu, GpuOptions};
use std::sync::Arc;

/// An experiment's source (`name` for errors and the cache) compiled for `g`'s
/// architecture with the options' include directories.
pub fn cubin(g: &Gpu, opts: &GpuOptions, name: &str, src: &str) -> Vec<u8> {
    let copts = CompileOptions {
        arch: g.arch().to_string(),
        include_dirs: opts.include_dirs.clone(),
        defines: vec![],
    };
    compile_cubin(name, src, &copts).unwrap()
}

/// `cubin`, loaded on `g`.
pub fn module(g: &Gpu, opts: &GpuOptions, name: &str, src: &str) -> Arc<CudaModule> {
    let bin = cubin(g, opts, name, src);
    g.ctx().load_module(Ptx::from_binary(bin)).unwrap()
}

/// max |a - b| / max |b|: how far a timed kernel's output is off its reference.
pub fn rel_err(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs())) / scale
}

/// Blocks per tile of a split-K wide GEMM over `stages` ring stages: `want`, at most one
/// per stage, then the fewest that keep the same stages per block (ops::wide's rule).
pub fn no_idle(stages: usize, want: usize) -> usize {
    let want = want.clamp(1, stages);
    stages.div_ceil(stages.div_ceil(want))
}
