//! Shared by the GPU timing tests: time a sequence of launches as a CUDA graph.

use kernels::Gpu;
use kernels::cudarc::driver::sys;

/// `f` captured `reps` times back to back in a CUDA graph (as a decode step runs it, so
/// eager launch overhead does not hide the kernels); the graph is replayed 3 times to warm
/// up, then 7 times timed with CUDA events: the median / reps, in microseconds.
pub fn time_us_reps(g: &Gpu, reps: usize, mut f: impl FnMut()) -> f32 {
    f(); // load the module and any lazily created handles outside the capture
    g.stream().synchronize().unwrap();
    let s = g.stream();
    s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    for _ in 0..reps {
        f();
    }
    let graph = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("captured");
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
