//! The wgmma experiment's CUDA source (gpu_wgmma_probe.rs): skinny_bulk.cu's mbarrier and
//! bulk-copy helpers in front of tests/cuda/wgmma_probe.cu. nvrtc_compile compiles it too.

pub const SRC: &str = concat!(
    include_str!("../../cuda/common.cuh"),
    "\n",
    include_str!("../../cuda/skinny_tiles.cuh"),
    "\n",
    include_str!("../../cuda/skinny_bulk.cu"),
    "\n",
    include_str!("../cuda/wgmma_probe.cu")
);
