//! Every CUDA source the crate ships, with the kernels each one defines. Sources are baked
//! into the binary (no files to find at run time); the disk cache keys on their text.

pub struct KernelSource {
    /// File name under `kernels/cuda/`, used in errors and cache names.
    pub file: &'static str,
    pub src: &'static str,
    /// `extern "C"` entry points to load from the compiled module.
    pub kernels: &'static [&'static str],
}

/// A kernel file under `cuda/` with the headers it builds on in front of it, in order, each
/// followed by a newline.
macro_rules! with_headers {
    ([$($header:literal),*], $file:literal) => {
        concat!(
            $(include_str!(concat!("../cuda/", $header)), "\n",)*
            include_str!(concat!("../cuda/", $file))
        )
    };
}

/// A kernel file with `cuda/common.cuh` (the PDL helpers) in front of it.
macro_rules! with_common {
    ($file:literal) => {
        with_headers!(["common.cuh"], $file)
    };
}

/// A file with common.cuh and the skinny GEMMs' tiles (skinny_tiles.cuh: the FP8 layout).
macro_rules! with_tiles {
    ($file:literal) => {
        with_headers!(["common.cuh", "skinny_tiles.cuh"], $file)
    };
}

/// skinny_bulk.cu: `with_tiles!`, the norm epilogue its `_norm` kernels add
/// (skinny_norm.cuh) and the bulk-copy ring (bulk_ring.cuh).
macro_rules! with_tiles_norm {
    ($file:literal) => {
        with_headers!(["common.cuh", "skinny_tiles.cuh", "skinny_norm.cuh", "bulk_ring.cuh"], $file)
    };
}

/// A split attention file with common.cuh and what the split attention shares
/// (attention_split.cuh: tile slots, the splits' merge).
macro_rules! with_merge {
    ($file:literal) => {
        with_headers!(["common.cuh", "attention_split.cuh"], $file)
    };
}

pub const ALL: &[KernelSource] = &[
    KernelSource { file: "embedding.cu", src: with_common!("embedding.cu"), kernels: &["embed_gather"] },
    KernelSource {
        file: "rmsnorm.cu",
        src: with_common!("rmsnorm.cu"),
        kernels: &[
            "rmsnorm_rows",
            "add_rmsnorm_rows",
            "rmsnorm_vec",
            "add_rmsnorm_vec",
            "rmsnorm_vec_f16",
            "add_rmsnorm_vec_f16",
        ],
    },
    KernelSource {
        file: "qk_norm_rope_kv.cu",
        src: with_headers!(["common.cuh", "rope.cuh"], "qk_norm_rope_kv.cu"),
        kernels: &["qk_norm_rope_kv"],
    },
    KernelSource { file: "swiglu.cu", src: with_common!("swiglu.cu"), kernels: &["swiglu"] },
    KernelSource {
        file: "fp8_dequant.cu",
        src: with_tiles!("fp8_dequant.cu"),
        kernels: &["fp8_dequant_bf16"],
    },
    KernelSource {
        file: "skinny_bulk.cu",
        src: with_tiles_norm!("skinny_bulk.cu"),
        kernels: &[
            "skinny_gemm_bf16_bulk_persistent",
            "skinny_gemm_bf16_swiglu_bulk_persistent",
            "skinny_gemm_fp8_bulk_persistent",
            "skinny_gemm_fp8_swiglu_bulk_persistent",
            "skinny_gemm_fp8_bulk_persistent_xs",
            "skinny_gemm_fp8_swiglu_bulk_persistent_xs",
            "skinny_gemm_fp8_bulk_persistent_norm",
            "skinny_gemm_fp8_swiglu_bulk_persistent_norm",
            "skinny_gemm_fp8_bulk_persistent_xs_norm",
            "skinny_gemm_fp8_swiglu_bulk_persistent_xs_norm",
            "skinny_gemm_fp8_bulk_persistent_xh",
            "skinny_gemm_fp8_swiglu_bulk_persistent_xh",
        ],
    },
    KernelSource {
        file: "decode_attention.cu",
        src: with_merge!("decode_attention.cu"),
        kernels: &[
            "decode_attention",
            "decode_attention_cluster",
            "decode_attention_d32",
            "decode_attention_combine",
        ],
    },
    KernelSource {
        file: "decode_attention_mma.cu",
        src: with_merge!("decode_attention_mma.cu"),
        kernels: &["decode_attention_mma", "decode_attention_mma_cluster"],
    },
    KernelSource {
        file: "prefill_attention.cu",
        src: with_common!("prefill_attention.cu"),
        kernels: &["prefill_attention"],
    },
    KernelSource {
        file: "wide_fp8.cu",
        src: with_headers!(["common.cuh", "skinny_tiles.cuh", "bulk_ring.cuh"], "wide_fp8.cu"),
        kernels: &[
            "wide_fp8_m16",
            "wide_fp8_bx_m16",
            "wide_fp8_swiglu_m16",
            "wide_fp8_m32",
            "wide_fp8_bx_m32",
            "wide_fp8_swiglu_m32",
            "wide_fp8_m48",
            "wide_fp8_bx_m48",
            "wide_fp8_swiglu_m48",
            "wide_fp8_m64",
            "wide_fp8_bx_m64",
            "wide_fp8_swiglu_m64",
        ],
    },
    KernelSource {
        file: "eagle3.cu",
        src: with_headers!(["common.cuh", "rope.cuh"], "eagle3.cu"),
        kernels: &[
            "eagle3_input",
            "rope_kv",
            "rows_gather_bf16",
            "rows_gather_f32",
            "topk_logprobs_k1",
            "topk_logprobs_k2",
            "topk_logprobs_k4",
            "topk_logprobs_k8",
            "topk_logprobs_k16",
        ],
    },
    KernelSource {
        file: "kv_slots.cu",
        src: with_common!("kv_slots.cu"),
        kernels: &["aux_store", "slot_rows_move"],
    },
    KernelSource {
        file: "argmax.cu",
        src: with_common!("argmax.cu"),
        kernels: &["argmax_partial", "argmax_final"],
    },
];
