//! Experiment, GPU machine only (prints the speeds, asserts nothing about them): how fast
//! the weights of a Qwen3-8B decode step's 144 layer linears (36 distinct layers, bf16
//! 13.9 GB, FP8 6.9 GB) can stream into the SMs at all, with no multiplying, and by which
//! way of moving them (lab/cuda/copy_ceiling.cu):
//! - plain 16-byte loads (engine/PERF.md's read ceiling was measured so: 4.52 TB/s);
//! - the engine's ring (a producer warp, 16 KB stages of 16 bulk copies of 1 KB, one per
//!   weight row, 8 warps reading the stage from shared memory);
//! - the same ring fed from weights laid out tile by tile, so that a stage is one
//!   contiguous 16 KB, taken in 1, 2, 4 or 16 copies;
//!
//! each as one launch over all the bytes and as a chain of 144 launches with PDL in a CUDA
//! graph (as a step runs them), beside the engine's bf16 GEMMs on the same bytes. If the
//! tiled ring streams much faster than the row ring, a tiled weight layout is the way to
//! faster linears. `cargo run -p kernels-lab --bin copy_ceiling`.
//!
//! Answer (H200, 2026-11-30 20:18, engine/PERF-LOG.md steps 34-35): yes for the ring (4.23 TB/s
//! row-major, 4.63 tiled), but the engine's GEMMs went only from 4.00 to 4.06 TB/s tiled: their
//! consumers hold them. `what_in_the_gemm_consumers_costs` rebuilds the engine's bf16 GEMM
//! with consumer parts switched off (timing only) to say which part. Answer (2026-11-30 23:19,
//! PERF-LOG.md): the per-stage x loads, 143-170 us of the 144 launches; the MMAs and the
//! epilogue 13-34 us; a further ~160 us lies between the consumers doing nothing and the
//! ring alone.

use kernels_lab::sources;
use kernels_lab::timing;

use kernels::cudarc::driver::{CudaFunction, CudaSlice, DevicePtr};
use kernels::ops;
use kernels::{Gpu, GpuOptions, bf16};
use kernels_lab::timing::{launch_pdl, time_us_reps};

const HIDDEN: usize = 4096;
const INTER: usize = 12288;
const QKV: usize = 6144;
const LAYERS: usize = 36;
const RING_THREADS: u32 = 9 * 32;

/// The (N, K) of one layer's linears, in step order.
const SHAPES: [(usize, usize); 4] = [(QKV, HIDDEN), (HIDDEN, HIDDEN), (2 * INTER, HIDDEN), (HIDDEN, INTER)];

/// One matrix of the step: its byte offset in the buffer, rows, bytes per row, and bytes
/// from one row's start to the next (row_bytes + a pad).
#[derive(Clone, Copy)]
struct Mat {
    off: usize,
    n: usize,
    k: usize,
    row_bytes: usize,
    pitch: usize,
}

fn step_mats(elem: usize, pad: usize) -> Vec<Mat> {
    let mut off = 0;
    let mut v = Vec::new();
    for _ in 0..LAYERS {
        for (n, k) in SHAPES {
            let row_bytes = k * elem;
            let pitch = row_bytes + pad;
            v.push(Mat { off, n, k, row_bytes, pitch });
            off += n * pitch;
        }
    }
    v
}

/// How the ring takes its stages.
#[derive(Clone, Copy)]
enum Feed {
    /// `piece` bytes of each of 16 rows per stage, rows `Mat::pitch` apart (the engine: 1 KB).
    Rows { piece: usize },
    /// Weights laid out tile by tile: a stage is 16 KB in a row, taken in this many copies.
    Tiled { copies: usize },
}

/// The persistent grid over n rows' 16-row tiles: the blocks of `smem` bytes that fit at
/// once (the kernel opted in to that much dynamic shared memory first), as the engine sizes
/// it.
fn persistent_grid(g: &Gpu, f: &CudaFunction, smem: u32, n: usize) -> u32 {
    let per_sm = timing::opt_in_blocks_per_sm(f, RING_THREADS, smem) as usize;
    n.div_ceil(16).min(per_sm * g.sms()) as u32
}

struct Kernels {
    ring: CudaFunction,
    loads: CudaFunction,
    gemm: CudaFunction,
    /// The engine's fat-block bf16 kernel (skinny_fat.cu, step 59).
    fat: CudaFunction,
}

/// copy_ceiling_gemm's consumer parts (bits: x loads, MMAs, epilogue).
const ALL_PARTS: u64 = 7;

impl Kernels {
    /// copy_ceiling.cu compiled and loaded on `g`.
    fn load(g: &Gpu, opts: &GpuOptions) -> Self {
        let module = kernels_lab::module(g, opts, "copy_ceiling.cu", sources::COPY_CEILING);
        Kernels {
            ring: module.load_function("copy_ceiling_ring").unwrap(),
            loads: module.load_function("copy_ceiling_loads").unwrap(),
            gemm: module.load_function("copy_ceiling_gemm").unwrap(),
            fat: module.load_function("skinny_gemm_bf16_fat").unwrap(),
        }
    }

    /// The ring over matrix m of the buffer at `base`.
    fn ring(&self, g: &Gpu, base: u64, out: u64, m: &Mat, feed: Feed, stages: usize) {
        let piece = match feed {
            Feed::Rows { piece } => piece,
            Feed::Tiled { .. } => 1024,
        };
        let smem = (stages * 16 * (piece + 16)) as u32;
        let grid = persistent_grid(g, &self.ring, smem, m.n);
        let (tiled, copies) = match feed {
            Feed::Rows { .. } => (0, 16),
            Feed::Tiled { copies } => (1, copies as u64),
        };
        let mut a = [
            base + m.off as u64,
            m.n as u64,
            m.row_bytes as u64,
            m.pitch as u64,
            piece as u64,
            tiled,
            copies,
            stages as u64,
            out,
        ];
        launch_pdl(g, &self.ring, grid, RING_THREADS, smem, &mut a);
    }

    /// The engine's bf16 GEMM rebuilt with consumer `parts` (copy_ceiling_gemm) over matrix
    /// m at `w`, x [1, k] at `x`, y at `y`; the engine's ring depths.
    #[allow(clippy::too_many_arguments)]
    fn gemm(&self, g: &Gpu, w: u64, x: u64, y: u64, m: &Mat, tiled: bool, parts: u64) {
        let small = m.n.div_ceil(16) < 2 * g.sms();
        let t = g.tuning();
        let stages = if small { t.bulk_stages_small } else { t.bulk_stages } as usize;
        // Parts bit 3 reads x from 2 KB behind the ring (copy_ceiling.cu).
        let smem = (stages * 16 * (1024 + 16)) as u32 + if parts & 8 != 0 { 2048 } else { 0 };
        let grid = persistent_grid(g, &self.gemm, smem, m.n);
        let mut a = [x, w, y, 1, m.n as u64, m.k as u64, stages as u64, tiled as u64, parts];
        launch_pdl(g, &self.gemm, grid, RING_THREADS, smem, &mut a);
    }

    /// The fat-block GEMM (skinny_gemm_bf16_fat, step 59) over matrix m at `w`, x [1, k]
    /// at `x`, y at `y`: one CTA per SM holding 3 rings of 4 stages where the bulk kernels
    /// fit 3 blocks (qkv, gate|up), 2 of 6 where they fit 2 (o_proj, down), and x once.
    #[allow(clippy::too_many_arguments)]
    fn gemm_fat(&self, g: &Gpu, w: u64, x: u64, y: u64, m: &Mat, tiled: bool) {
        let small = m.n.div_ceil(16) < 2 * g.sms();
        let (groups, stages) = if small { (2u32, 6u32) } else { (3, 4) };
        let smem = groups * stages * 16 * 1040 + m.k as u32 * 2 + groups * 8 * 16 * 4;
        let per_sm = timing::opt_in_blocks_per_sm(&self.fat, groups * RING_THREADS, smem);
        assert_eq!(per_sm, 1, "one fat block per SM");
        let grid = (m.n.div_ceil(16).div_ceil(groups as usize)).min(g.sms()) as u32;
        let mut a = [x, w, y, 1, m.n as u64, m.k as u64, stages as u64, tiled as u64, groups as u64];
        launch_pdl(g, &self.fat, grid, groups * RING_THREADS, smem, &mut a);
    }

    fn loads(&self, g: &Gpu, base: u64, out: u64, bytes: usize, unroll: u64, per_sm: usize) {
        let mut a = [base, (bytes / 16) as u64, unroll, out];
        launch_pdl(g, &self.loads, (per_sm * g.sms()) as u32, 256, 0, &mut a);
    }
}

fn how_fast_the_step_weights_stream_by_each_way_of_moving_them() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let st = g.stream();
    let k = Kernels::load(&g, &opts);
    /// Row pads tried (bytes added to each row's pitch): the rows feed's 16 pieces sit a
    /// power of two apart in the checkpoint's layout.
    const PADS: [usize; 5] = [0, 128, 256, 1024, 2048];
    let bf16_mats = step_mats(2, PADS[PADS.len() - 1]);
    let last = bf16_mats.last().unwrap();
    let total = last.off + last.n * last.pitch;
    // The bytes' values do not matter: nothing checks them.
    // SAFETY: read as plain bytes only.
    let buf: CudaSlice<bf16> = unsafe { st.alloc::<bf16>(total / 2) }.unwrap();
    let out: CudaSlice<u32> = st.alloc_zeros::<u32>(1 << 16).unwrap();
    let (base, _s1) = buf.device_ptr(st);
    let (outp, _s2) = out.device_ptr(st);
    println!("| weights | how | 144 launches, PDL: us (TB/s of the weights) |");
    for (name, elem) in [("bf16", 2usize), ("FP8", 1)] {
        let mats = step_mats(elem, 0);
        let l = mats.last().unwrap();
        let bytes = l.off + l.n * l.row_bytes;
        let row = |label: &str, us: f32| {
            println!("| {name} | {label} | {us:.0} ({:.2}) |", bytes as f64 / (us as f64 * 1e-6) / 1e12);
        };
        let us = time_us_reps(&g, 1, || {
            for m in &mats {
                k.loads(&g, base + m.off as u64, outp, m.n * m.row_bytes, 4, 4);
            }
        });
        row("16-byte loads, 4 in flight, 4 x 256 threads per SM", us);
        for (main, small) in [(4usize, 6usize), (3, 6)] {
            let stages = |m: &Mat, piece: usize| {
                let s = if m.n.div_ceil(16) < 2 * g.sms() { small } else { main };
                // 2 KB pieces: stages twice as large, half as many.
                (s * 1024 / piece).max(2)
            };
            for copies in [1usize, 16] {
                let feed = Feed::Tiled { copies };
                let us = time_us_reps(&g, 1, || {
                    for m in &mats {
                        k.ring(&g, base, outp, m, feed, stages(m, 1024));
                    }
                });
                row(&format!("ring {main}/{small}, tiled layout, {copies} copies per 16 KB stage"), us);
            }
            for piece in [1024usize, 2048] {
                for pad in PADS {
                    let mats = step_mats(elem, pad);
                    let feed = Feed::Rows { piece };
                    let us = time_us_reps(&g, 1, || {
                        for m in &mats {
                            k.ring(&g, base, outp, m, feed, stages(m, piece));
                        }
                    });
                    row(
                        &format!(
                            "ring {main}/{small} (16 KB stages), rows: {} KB per row, row pitch + {pad} B",
                            piece / 1024
                        ),
                        us,
                    );
                }
            }
        }
        if elem == 2 {
            // The engine's GEMMs (batch 1) on the same bytes.
            let x = st.alloc_zeros::<bf16>(INTER).unwrap();
            let mut y = st.alloc_zeros::<f32>(2 * INTER).unwrap();
            for layout in [ops::WeightLayout::Rows, ops::WeightLayout::Tiled] {
                let us = time_us_reps(&g, 1, || {
                    for m in &mats {
                        let e = m.off / 2;
                        let w = buf.slice(e..e + m.n * m.k);
                        let xv = x.slice(0..m.k);
                        let mut yv = y.slice_mut(0..m.n);
                        ops::skinny_gemm_into(&g, &xv, &w, layout, m.n, m.k, &mut yv).unwrap();
                    }
                });
                row(&format!("the engine's GEMMs, batch 1 (no SwiGLU), {layout:?} layout"), us);
            }
        }
    }
}

/// What in the bf16 GEMMs' consumers costs (copy_ceiling_gemm with parts switched off,
/// timing only), over the step's 144 layer linears as PDL launches, row-major and tiled,
/// beside the ring alone. First the rebuilt kernel with every part on is checked against
/// the engine's op, bit for bit, in both layouts: it is the engine's kernel.
fn what_in_the_gemm_consumers_costs() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let st = g.stream();
    let k = Kernels::load(&g, &opts);
    // Correctness: one gate|up-sized and one down-sized matrix of random values.
    let mut r = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        bf16::from_f32(((r >> 40) as f32 / (1u64 << 24) as f32) - 0.5)
    };
    for (n, kk) in [(1000usize, 4096usize), (4096, 12288)] {
        let wv: Vec<bf16> = (0..n * kk).map(|_| rnd()).collect();
        let xv: Vec<bf16> = (0..kk).map(|_| rnd()).collect();
        let m = Mat { off: 0, n, k: kk, row_bytes: kk * 2, pitch: kk * 2 };
        let x = st.clone_htod(&xv).unwrap();
        let mut want = st.alloc_zeros::<f32>(n).unwrap();
        let w_rows = st.clone_htod(&wv).unwrap();
        let mut yv = want.as_view_mut();
        let layout = ops::WeightLayout::Rows;
        ops::skinny_gemm_into(&g, &x.as_view(), &w_rows.as_view(), layout, n, kk, &mut yv).unwrap();
        let want = st.clone_dtoh(&want).unwrap();
        for tiled in [false, true] {
            let w =
                if tiled { st.clone_htod(&ops::tile_weights(&wv, n, kk)).unwrap() } else { w_rows.clone() };
            let y = st.alloc_zeros::<f32>(n).unwrap();
            let ((wp, _a), (xp, _b), (yp, _c)) = (w.device_ptr(st), x.device_ptr(st), y.device_ptr(st));
            for fat in [false, true] {
                if fat {
                    k.gemm_fat(&g, wp, xp, yp, &m, tiled);
                } else {
                    k.gemm(&g, wp, xp, yp, &m, tiled, ALL_PARTS);
                }
                let got = st.clone_dtoh(&y).unwrap();
                let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{n}x{kk} tiled {tiled} fat {fat}: the rebuilt GEMM != the engine's op");
            }
        }
    }
    // x from shared memory (parts bit 3) must not cost a block per SM: the gate|up grid.
    for parts in [7u32, 14] {
        let smem = 4 * 16 * 1040 + if parts & 8 != 0 { 2048 } else { 0 };
        let grid = persistent_grid(&g, &k.gemm, smem, 2 * INTER);
        println!("parts {parts}: gate|up grid {grid} blocks");
    }
    // Timing over the step's linears (their values do not matter).
    let mats = step_mats(2, 0);
    let l = mats.last().unwrap();
    let bytes = l.off + l.n * l.row_bytes;
    // SAFETY: read as plain bytes only.
    let buf: CudaSlice<bf16> = unsafe { st.alloc::<bf16>(bytes / 2) }.unwrap();
    let x = st.alloc_zeros::<bf16>(INTER).unwrap();
    let y = st.alloc_zeros::<f32>(2 * INTER).unwrap();
    let ((base, _a), (xp, _b), (yp, _c)) = (buf.device_ptr(st), x.device_ptr(st), y.device_ptr(st));
    let tbs = |us: f32| bytes as f64 / (us as f64 * 1e-6) / 1e12;
    println!("| bf16 linears, 144 launches, PDL | row-major: us (TB/s) | tiled: us (TB/s) |");
    let row = |label: &str, f: &dyn Fn(bool)| {
        let [a, b] = [false, true].map(|tiled| time_us_reps(&g, 1, || f(tiled)));
        println!("| {label} | {a:.0} ({:.2}) | {b:.0} ({:.2}) |", tbs(a), tbs(b));
    };
    // LATLAB_CONSUMER_ONLY=7,6: only those parts (and no ring), for a profiler
    // (scripts/gpu/ncu_gemm.sh) to see a few variants' launches.
    let only: Option<Vec<u64>> = std::env::var("LATLAB_CONSUMER_ONLY").ok().map(|v| {
        v.split(',').map(|p| p.trim().parse().expect("LATLAB_CONSUMER_ONLY: parts numbers")).collect()
    });
    for (parts, label) in [
        (7u64, "GEMM, all parts (the engine's kernel)"),
        (6, "without x loads"),
        (5, "without MMAs"),
        (3, "without the per-tile epilogue"),
        (1, "x loads only"),
        (0, "no consumer work (weights read from shared memory only)"),
        (14, "x from shared memory (timing only), MMAs, epilogue"),
    ] {
        if only.as_ref().is_some_and(|o| !o.contains(&parts)) {
            continue;
        }
        row(label, &|tiled| {
            for m in &mats {
                k.gemm(&g, base + m.off as u64, xp, yp, m, tiled, parts);
            }
        });
    }
    row("fat blocks: x staged once per SM (step 59)", &|tiled| {
        for m in &mats {
            k.gemm_fat(&g, base + m.off as u64, xp, yp, m, tiled);
        }
    });
    if only.is_some() {
        return;
    }
    row("the ring alone (4 / 6 stages)", &|tiled| {
        let feed = if tiled { Feed::Tiled { copies: 1 } } else { Feed::Rows { piece: 1024 } };
        for m in &mats {
            let stages = if m.n.div_ceil(16) < 2 * g.sms() { 6 } else { 4 };
            k.ring(&g, base, yp, m, feed, stages);
        }
    });
}

/// Runs every experiment of this file, or those whose names contain the first argument.
fn main() {
    let only = std::env::args().nth(1);
    let run = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    if run("how_fast_the_step_weights_stream_by_each_way_of_moving_them") {
        how_fast_the_step_weights_stream_by_each_way_of_moving_them();
    }
    if run("what_in_the_gemm_consumers_costs") {
        what_in_the_gemm_consumers_costs();
    }
}
