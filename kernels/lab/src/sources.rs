//! The lab's CUDA sources: each experiment's file under `kernels/lab/cuda/` behind the
//! production headers and pipeline it builds on (`kernels/cuda/`). Plain constants, so
//! that the kernels crate's NVRTC check (kernels/tests/nvrtc_compile.rs, CI) includes this
//! file and compiles them too: a change to the pipeline that breaks an experiment fails
//! CI, not the next GPU run.

/// An experiment's file under lab/cuda/ behind the bulk pipeline it builds on.
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

/// An experiment's file under lab/cuda/ behind the production wide FP8 GEMM (its helpers,
/// entries and main loop) and the headers it needs.
macro_rules! behind_wide_fp8 {
    ($file:literal) => {
        concat!(
            include_str!("../../cuda/common.cuh"),
            "\n",
            include_str!("../../cuda/skinny_tiles.cuh"),
            "\n",
            include_str!("../../cuda/bulk_ring.cuh"),
            "\n",
            include_str!("../../cuda/wide_fp8.cu"),
            "\n",
            include_str!(concat!("../cuda/", $file))
        )
    };
}

/// The streaming experiment (bin/stream_chain.rs).
pub const STREAM_CHAIN: &str = behind_bulk_pipeline!("stream_chain.cu");
/// The wide decode GEMM experiment (bin/wide_gemm.rs): the production wide FP8 GEMM, whose
/// entries it times at chosen split counts and whose main loop its 64-row form runs, and
/// the bf16 forms beside it.
pub const WIDE_GEMM: &str = behind_wide_fp8!("wide_gemm.cu");
/// The wide FP8 GEMM on the warpgroup MMA (bin/wide_wgmma.rs): 8b64780's form and one with
/// two stages of MMAs in flight, behind the production kernel's helpers.
pub const WIDE_WGMMA: &str = behind_wide_fp8!("wide_wgmma.cu");
/// The warpgroup-MMA experiment (bin/wgmma_probe.rs).
pub const WGMMA_PROBE: &str = behind_bulk_pipeline!("wgmma_probe.cu");
/// The copy-ceiling experiment (bin/copy_ceiling.rs), with the fat-block kernels
/// (lab/cuda/skinny_fat.cu, out of the engine) behind it, which its step-59 row times.
pub const COPY_CEILING: &str =
    concat!(behind_bulk_pipeline!("copy_ceiling.cu"), "\n", include_str!("../cuda/skinny_fat.cu"));
/// The latency-under-load experiment (bin/latency_load.rs): common.cuh only.
pub const LATENCY_LOAD: &str =
    concat!(include_str!("../../cuda/common.cuh"), "\n", include_str!("../cuda/latency_load.cu"));

/// The fused-MLP experiment (lab/cuda/mlp_fused.cu) behind the ring it builds on, with
/// `defines` in front: the end-of-block adds as bin/mlp_fused.rs times them (none: scalar
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

/// Every lab source, (name, text), for the NVRTC check.
pub const ALL: &[(&str, &str)] = &[
    ("stream_chain.cu", STREAM_CHAIN),
    ("wgmma_probe.cu", WGMMA_PROBE),
    ("copy_ceiling.cu", COPY_CEILING),
    ("mlp_fused.cu", MLP_FUSED),
    ("mlp_fused_red_v4.cu", MLP_FUSED_RED_V4),
    ("mlp_fused_no_red.cu", MLP_FUSED_NO_RED),
    ("latency_load.cu", LATENCY_LOAD),
    ("wide_gemm.cu", WIDE_GEMM),
    ("wide_wgmma.cu", WIDE_WGMMA),
];
