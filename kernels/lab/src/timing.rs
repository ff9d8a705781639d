//! Shared by the lab's timing programs: time a sequence of launches as a CUDA graph; launch
//! an experiment's kernel with PDL, as the engine launches its own.

use kernels::Gpu;
use kernels::cudarc::driver::{CudaFunction, CudaGraph, sys};
use std::ffi::c_void;
use sys::CUfunction_attribute;

/// `f` run once eagerly (loading the module and any lazily created handles outside the
/// capture), then captured `reps` times back to back into a CUDA graph.
pub fn capture(g: &Gpu, reps: usize, mut f: impl FnMut()) -> CudaGraph {
    f();
    g.stream().synchronize().unwrap();
    let s = g.stream();
    s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    for _ in 0..reps {
        f();
    }
    s.end_capture(sys::CUgraphInstantiate_flags(0)).unwrap().expect("captured")
}

/// `f` captured `reps` times back to back in a CUDA graph (as a decode step runs it, so
/// eager launch overhead does not hide the kernels); the graph is replayed 3 times to warm
/// up, then 7 times timed with CUDA events: the median / reps, in microseconds.
pub fn time_us_reps(g: &Gpu, reps: usize, mut f: impl FnMut()) -> f32 {
    let graph = capture(g, reps, &mut f);
    let s = g.stream();
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    let ev = || g.ctx().new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    let mut t: Vec<f32> = (0..7)
        .map(|_| {
            let (a, b) = (ev(), ev());
            a.record(s).unwrap();
            graph.launch().unwrap();
            b.record(s).unwrap();
            b.synchronize().unwrap();
            a.elapsed_ms(&b).unwrap() * 1e3 / reps as f32
        })
        .collect();
    t.sort_by(f32::total_cmp);
    t[3]
}

/// A launch with the PDL attribute (as the engine's launch.rs), arguments as 8-byte words.
pub fn launch_pdl(g: &Gpu, f: &CudaFunction, grid: u32, block: u32, smem: u32, args: &mut [u64]) {
    // SAFETY: an all-zero attribute is valid for every variant of the union.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let cfg = sys::CUlaunchConfig {
        gridDimX: grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: smem,
        hStream: g.stream().cu_stream(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    let mut ptrs: Vec<*mut c_void> = args.iter_mut().map(|a| a as *mut u64 as *mut c_void).collect();
    // SAFETY: the callers pass the kernel's parameters in order, each buffer as large as
    // the kernel reads for its arguments.
    unsafe { sys::cuLaunchKernelEx(&cfg, f.cu_function(), ptrs.as_mut_ptr(), std::ptr::null_mut()) }
        .result()
        .unwrap();
}

/// An experiment's kernel opted in to `smem` bytes of dynamic shared memory, and the blocks
/// of `threads` threads with that much that one SM holds at once (at least one: else it
/// panics naming nothing fits). A persistent grid is this times the SMs.
pub fn opt_in_blocks_per_sm(f: &CudaFunction, threads: u32, smem: u32) -> u32 {
    f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
        .unwrap();
    let per_sm = f.occupancy_max_active_blocks_per_multiprocessor(threads, smem as usize, None).unwrap();
    assert!(per_sm > 0, "no block of {threads} threads and {smem} B fits an SM");
    per_sm
}
