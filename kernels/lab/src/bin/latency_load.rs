//! Experiment, GPU machine only (prints the latencies, asserts only that the instrument
//! worked): how long one dependent load takes on an idle GPU and while every other SM
//! streams HBM as a decode step's GEMMs do (lab/cuda/latency_load.cu). A decode layer's
//! latency-bound kernels (norms, rope, attention, merge) sit on the critical path for one or
//! two such round trips each, while the next GEMM's early copies stream (engine/PERF-LOG.md,
//! 2026-12-01 03:04: the attention's q arrives 1.4 us after its release). If a round trip under
//! load costs several times one at rest, the lever is fewer trips per layer, not a
//! different kernel around them.
//! `cargo run -p kernels-lab --bin latency_load`.
//!
//! Answer (H200, 2026-12-01 03:04 to 2026-12-01 05:42, engine/PERF-LOG.md): an L2 hit costs 145 ns at rest and
//! 456-512 ns beside the stream, nearly an HBM miss's 555 (340-352 at rest). A chain of
//! dependent tiny PDL kernels (a boundary plus one trip each, what a fusion saves per
//! kernel it removes) costs 0.61 us per kernel at rest and 0.95 beside the stream. Kernels
//! of 43.5 KB of code taking turns cost +2.5 us each once four of them (174 KB) no longer
//! fit what an SM keeps (~130 KB); switching between functions alone costs nothing.

use kernels_lab::sources;

use kernels::cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};
use kernels::{Gpu, GpuOptions};
use kernels_lab::timing::{launch_pdl, time_us_reps};
use std::sync::Arc;

const LINE_WORDS: usize = 32; // 128-byte lines of u32
const HOPS: i32 = 20_000;

/// A random cycle over `lines` 128-byte lines: next[l * 32] = the next line's first word.
fn chase_buffer(lines: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<usize> = (0..lines).collect();
    let mut s = seed;
    for i in (1..lines).rev() {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        order.swap(i, (s >> 33) as usize % (i + 1));
    }
    let mut next = vec![0u32; lines * LINE_WORDS];
    for w in 0..lines {
        next[order[w] * LINE_WORDS] = (order[(w + 1) % lines] * LINE_WORDS) as u32;
    }
    next
}

/// ns per hop of `HOPS` dependent loads through `next` from line `start`, on `s`.
fn chase(s: &Arc<CudaStream>, f: &CudaFunction, next: &CudaSlice<u32>, start: usize) -> f64 {
    let mut out = s.alloc_zeros::<u64>(2).unwrap();
    let start = (start * LINE_WORDS) as u32;
    let mut b = s.launch_builder(f);
    b.arg(next).arg(&start).arg(&HOPS).arg(&mut out);
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: next holds a cycle of in-range indices; out has two words.
    unsafe { b.launch(cfg) }.unwrap();
    let v = s.clone_dtoh(&out).unwrap();
    v[0] as f64 / HOPS as f64
}

/// Kernels in the chain of `hop_chain`.
const CHAIN: usize = 200;

/// us per kernel of a chain of `CHAIN` dependent PDL kernels, replayed as a CUDA graph;
/// kernel i is `fs[i % fs.len()]`.
fn hop_chain(g: &Gpu, fs: &[&CudaFunction], a: &CudaSlice<u32>, b: &CudaSlice<u32>) -> f32 {
    let s = g.stream();
    let ((pa, _sa), (pb, _sb)) = (a.device_ptr(s), b.device_ptr(s));
    time_us_reps(g, 1, || {
        for i in 0..CHAIN {
            let (from, to) = if i % 2 == 0 { (pa, pb) } else { (pb, pa) };
            // One block of 32 threads, reading `from`, writing `to`.
            launch_pdl(g, fs[i % fs.len()], 1, 32, 0, &mut [from, to]);
        }
    }) / CHAIN as f32
}

fn one_round_trip_at_rest_and_under_a_weight_stream() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let m = kernels_lab::module(&g, &opts, "latency_load.cu", sources::LATENCY_LOAD);
    let (chase_f, stream_f, hop_f) = (
        m.load_function("latency_chase").unwrap(),
        m.load_function("stream_load").unwrap(),
        m.load_function("latency_hop").unwrap(),
    );
    let s = g.stream();
    let other = g.ctx().new_stream().unwrap();
    // L2-resident (2 MB of lines) and HBM (512 MB, ten times the L2).
    let small = s.clone_htod(&chase_buffer(1 << 14, 1)).unwrap();
    let large = s.clone_htod(&chase_buffer(1 << 22, 2)).unwrap();
    let bytes = 8usize << 30;
    let weights = other.alloc_zeros::<u8>(bytes).unwrap();
    let sink = other.alloc_zeros::<u32>(1).unwrap();
    let n16 = (bytes / 16) as u64;
    // One block of 1024 threads per SM: the chase's one thread still finds room beside it.
    let stream_cfg =
        LaunchConfig { grid_dim: (g.sms() as u32, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
    let launch_stream = |passes: i32| {
        let mut b = other.launch_builder(&stream_f);
        b.arg(&weights).arg(&n16).arg(&passes).arg(&sink);
        // SAFETY: weights holds n16 16-byte pieces; sink one word.
        unsafe { b.launch(stream_cfg) }.unwrap();
    };
    // The stream alone, for its bandwidth.
    launch_stream(1);
    other.synchronize().unwrap();
    let t = std::time::Instant::now();
    launch_stream(4);
    other.synchronize().unwrap();
    let tbs = 4.0 * bytes as f64 / t.elapsed().as_secs_f64() / 1e12;
    println!("stream alone: {tbs:.2} TB/s over {} GiB x 4", bytes >> 30);
    // The L2 chase repeats one warm path (2 MB in all); the HBM one starts each run at
    // another line of its 4M-line cycle, so its 20k hops meet lines no run touched.
    for (name, buf, fresh) in [("L2 hit", &small, 0), ("HBM", &large, 1)] {
        let start = |run: usize| run * fresh * 400_009;
        chase(s, &chase_f, buf, 0); // warm (L2, TLB)
        let rest: Vec<f64> = (1..4).map(|r| chase(s, &chase_f, buf, start(r))).collect();
        // Under load: the stream runs 40 passes (~80 ms) while the chase (~10-40 ms at most
        // for 20k hops) runs beside it; the chase is queued right behind the stream's launch.
        let mut loaded = vec![];
        for r in 4..7 {
            launch_stream(40);
            std::thread::sleep(std::time::Duration::from_millis(2));
            loaded.push(chase(s, &chase_f, buf, start(r)));
            other.synchronize().unwrap();
        }
        println!(
            "{name}: ns per dependent load at rest {:.0} / {:.0} / {:.0}, under the stream {:.0} / {:.0} / {:.0}",
            rest[0], rest[1], rest[2], loaded[0], loaded[1], loaded[2]
        );
        assert!(rest.iter().chain(&loaded).all(|&v| v > 50.0 && v < 10_000.0), "{name}");
    }
    // A kernel boundary plus one round trip: a chain of dependent PDL kernels, at rest and
    // beside the stream (its 40 passes outlast the graph's 10 replays of 200 kernels).
    // Two words each: the code hops may write a second (never, in practice).
    let (ha, hb) = (s.alloc_zeros::<u32>(2).unwrap(), s.alloc_zeros::<u32>(2).unwrap());
    // Then the same with ~43 KB of straight code per kernel, four kernels taking turns,
    // so that each is fetched again (what a layer's ~9 kernels between GEMMs may pay).
    let code_fs: Vec<CudaFunction> =
        (0..4).map(|v| m.load_function(&format!("latency_hop_code{v}")).unwrap()).collect();
    let tiny_fs: Vec<CudaFunction> =
        (1..4).map(|v| m.load_function(&format!("latency_hop_t{v}")).unwrap()).collect();
    // How many ~43 KB kernels an SM keeps: where taking turns starts to cost.
    let chains: [(&str, Vec<&CudaFunction>); 6] = [
        ("tiny kernels", vec![&hop_f]),
        ("four tiny kernels taking turns", std::iter::once(&hop_f).chain(&tiny_fs).collect()),
        ("one ~43 KB kernel", vec![&code_fs[0]]),
        ("two ~43 KB kernels taking turns", code_fs[..2].iter().collect()),
        ("three ~43 KB kernels taking turns", code_fs[..3].iter().collect()),
        ("four ~43 KB kernels taking turns", code_fs.iter().collect()),
    ];
    for (name, fs) in &chains {
        let rest = hop_chain(&g, fs, &ha, &hb);
        launch_stream(40);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let loaded = hop_chain(&g, fs, &ha, &hb);
        other.synchronize().unwrap();
        println!(
            "dependent PDL kernels, {name}: us per kernel at rest {rest:.2}, under the stream {loaded:.2}"
        );
        assert!(rest > 0.2 && loaded > 0.2 && rest < 50.0 && loaded < 50.0, "{name}");
    }
    // Every replay ran every kernel: the value counts the kernels (per chain and state: the
    // eager run, the capture does not run, 10 replays).
    let v = s.clone_dtoh(&ha).unwrap()[0];
    assert_eq!(v as usize, chains.len() * 2 * 11 * CHAIN, "hops counted");
}

fn main() {
    one_round_trip_at_rest_and_under_a_weight_stream();
}
