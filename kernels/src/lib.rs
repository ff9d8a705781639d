//! latlab's CUDA kernels: CUDA C++ sources (`cuda/*.cu`), compiled at run time by NVRTC
//! to cubins cached on disk (`compile`), loaded into one context and stream (`Gpu`), and
//! typed launchers (`ops`) that check shapes and write into caller-provided buffers, so
//! that a decode step can later be captured in a CUDA graph.
//!
//! Nothing here touches CUDA until `Gpu::new` or `compile::compile_cubin` is called:
//! the crate builds (and its CI tests run) on machines without a GPU.

pub mod carveout;
pub mod compile;
pub mod error;
pub mod gpu;
mod launch;
pub mod ops;
pub mod sources;
pub mod trace;
pub mod tuning;

pub use cudarc;
pub use error::{KernelError, Result};
pub use gpu::{BULK_STAGES_RANGE, Gpu, GpuOptions, Tuning};
pub use half::{bf16, f16};
