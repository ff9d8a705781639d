//! The streaming experiment's CUDA source (gpu_stream_chain.rs): skinny_bulk.cu's pipeline
//! and tiles in front of tests/cuda/stream_chain.cu. nvrtc_compile compiles it too, so a
//! change to the pipeline that breaks the experiment fails CI, not the next GPU run.

pub const SRC: &str = concat!(
    include_str!("../../cuda/common.cuh"),
    "\n",
    include_str!("../../cuda/skinny_tiles.cuh"),
    "\n",
    include_str!("../../cuda/skinny_bulk.cu"),
    "\n",
    include_str!("../cuda/stream_chain.cu")
);
