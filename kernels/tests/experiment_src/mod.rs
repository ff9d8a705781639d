//! The GPU experiments' CUDA sources: skinny_bulk.cu's pipeline and tiles (and common.cuh)
//! in front of each experiment's own file in tests/cuda/. nvrtc_compile compiles them too,
//! so a change to the pipeline that breaks an experiment fails CI, not the next GPU run.
//! Each test binary uses part of it.
#![allow(dead_code)]

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

/// An experiment's file under tests/cuda/ behind the bulk pipeline it builds on.
macro_rules! behind_bulk_pipeline {
    ($file:literal) => {
        concat!(
            include_str!("../../cuda/common.cuh"),
            "\n",
            include_str!("../../cuda/skinny_tiles.cuh"),
            "\n",
            include_str!("../../cuda/skinny_norm.cuh"),
            "\n",
            include_str!("../../cuda/bulk_ring.cuh"),
            "\n",
            include_str!("../../cuda/skinny_bulk.cu"),
            "\n",
            include_str!(concat!("../cuda/", $file))
        )
    };
}

/// The streaming experiment (gpu_stream_chain.rs).
pub const STREAM_CHAIN: &str = behind_bulk_pipeline!("stream_chain.cu");
/// The warpgroup-MMA experiment (gpu_wgmma_probe.rs).
pub const WGMMA_PROBE: &str = behind_bulk_pipeline!("wgmma_probe.cu");
/// The copy-ceiling experiment (gpu_copy_ceiling.rs).
/// With the fat-block kernels (skinny_fat.cu) behind it, which its step-59 row times.
pub const COPY_CEILING: &str = concat!(
    behind_bulk_pipeline!("copy_ceiling.cu"),
    "\n",
    include_str!("../../cuda/skinny_fat.cu")
);
/// The latency-under-load experiment (gpu_latency_load.rs): common.cuh only.
pub const LATENCY_LOAD: &str = concat!(
    include_str!("../../cuda/common.cuh"),
    "\n",
    include_str!("../cuda/latency_load.cu")
);

/// The fused-MLP experiment (tests/cuda/mlp_fused.cu) behind the ring it builds on, with
/// `defines` in front: the end-of-block adds as gpu_mlp_fused times them (none: scalar
/// reds; `MF_RED_V4`; `MF_NO_RED`).
macro_rules! fused_mlp_with {
    ($defines:literal) => {
        concat!(
            $defines,
            include_str!("../../cuda/common.cuh"),
            "\n",
            include_str!("../../cuda/skinny_tiles.cuh"),
            "\n",
            include_str!("../../cuda/bulk_ring.cuh"),
            "\n",
            include_str!("../cuda/mlp_fused.cu")
        )
    };
}

/// The fused MLP adding its partials with one scalar red per output.
pub const MLP_FUSED: &str = fused_mlp_with!("");
/// The fused MLP adding its partials with one 16-byte vector red per 4 outputs.
pub const MLP_FUSED_RED_V4: &str = fused_mlp_with!("#define MF_RED_V4\n");
/// The fused MLP with no adds at all (timing only: wrong values).
pub const MLP_FUSED_NO_RED: &str = fused_mlp_with!("#define MF_NO_RED\n");
