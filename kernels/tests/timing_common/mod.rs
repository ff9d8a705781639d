//! Shared by the GPU timing tests: time a sequence of launches as a CUDA graph.

use kernels::Gpu;
use kernels::cudarc::driver::{CudaGraph, sys};

/// `f` run once eagerly (loading the module and any lazily created handles outside the
/// capture), then captured `reps` times back to back into a CUDA graph.
pub fn capture(g: &Gpu, reps: usize, mut f: impl FnMut()) -> CudaGraph {
    f();
    g.stream().synchronize().unwrap();
    let s = g.stream();
    s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    for _ in 0..reps {
        f();
    }
    s.end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("captured")
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
    let ev = || {
        g.ctx()
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .unwrap()
    };
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
