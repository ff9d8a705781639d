//! Every CUDA source the crate ships, with the kernels each one defines. Sources are baked
//! into the binary (no files to find at run time); the disk cache keys on their text.

pub struct KernelSource {
    /// File name under `kernels/cuda/`, used in errors and cache names.
    pub file: &'static str,
    pub src: &'static str,
    /// `extern "C"` entry points to load from the compiled module.
    pub kernels: &'static [&'static str],
}

pub const ALL: &[KernelSource] = &[
    KernelSource {
        file: "embedding.cu",
        src: include_str!("../cuda/embedding.cu"),
        kernels: &["embed_gather"],
    },
    KernelSource {
        file: "rmsnorm.cu",
        src: include_str!("../cuda/rmsnorm.cu"),
        kernels: &["rmsnorm_rows", "add_rmsnorm_rows"],
    },
    KernelSource {
        file: "qk_norm_rope_kv.cu",
        src: include_str!("../cuda/qk_norm_rope_kv.cu"),
        kernels: &["qk_norm_rope_kv"],
    },
    KernelSource {
        file: "swiglu.cu",
        src: include_str!("../cuda/swiglu.cu"),
        kernels: &["swiglu"],
    },
    KernelSource {
        file: "skinny_gemm.cu",
        src: include_str!("../cuda/skinny_gemm.cu"),
        kernels: &["skinny_gemm_bf16", "skinny_gemm_fp8", "fp8_dequant_bf16"],
    },
    KernelSource {
        file: "decode_attention.cu",
        src: include_str!("../cuda/decode_attention.cu"),
        kernels: &["decode_attention", "decode_attention_combine"],
    },
    KernelSource {
        file: "argmax.cu",
        src: include_str!("../cuda/argmax.cu"),
        kernels: &["argmax_partial", "argmax_final"],
    },
];
