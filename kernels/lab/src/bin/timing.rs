//! Kernel timings at Qwen3-8B shapes (GPU machine only; prints, asserts nothing about
//! speed): `cargo run -p kernels-lab --bin timing`; `LATLAB_TIMING_DRAFT=1` times only the
//! EAGLE-3 draft level's GEMMs and top-k.
//! Each op is captured 20 times back to back in a CUDA graph (as a decode step runs it, so
//! eager launch overhead, ~13 us per launch here, does not hide the kernel); the graph is
//! replayed 3 times to warm up, then 7 times timed with CUDA events: the median / 20.
//! Inputs are zeros: timing does not depend on values here.

use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, AttnDims, PagedAttnArgs};
use kernels::{Gpu, GpuOptions, Tuning, bf16};
use kernels_lab::timing::time_us_reps;

const REPS: usize = 20;

fn time_us(g: &Gpu, f: impl FnMut()) -> f32 {
    time_us_reps(g, REPS, f)
}

/// (name, n, k) per layer, and lm_head once.
const SHAPES: [(&str, usize, usize); 5] = [
    ("qkv", 6144, 4096),
    ("o_proj", 4096, 4096),
    ("gate_up", 24576, 4096),
    ("down", 4096, 12288),
    ("lm_head", 151_936, 4096),
];

fn row(what: &str, m: usize, us: f32, bytes: usize) {
    println!("| {what} | {m} | {us:.1} | {:.0} |", bytes as f32 / us / 1e3);
}

fn qwen3_8b_step_kernel_times() {
    let g = Gpu::new(&GpuOptions::from_env().unwrap()).unwrap();
    let s = g.stream().clone();
    println!("| op | m | us | GB/s (weights) |");
    // LATLAB_TIMING_QUICK=1: only the whole-model linears, attention and argmax.
    let quick = std::env::var("LATLAB_TIMING_QUICK").is_ok_and(|v| v == "1");
    let per_shape: &[usize] = if quick { &[] } else { &[1, 2, 4, 8] };
    for &m in per_shape {
        let (mut new, mut fp8, mut head) = (0f32, 0f32, 0f32);
        for &(name, n, k) in &SHAPES {
            let w: CudaSlice<bf16> = s.alloc_zeros(n * k).unwrap();
            let w8: CudaSlice<u8> = s.alloc_zeros(n * k).unwrap();
            let sc: CudaSlice<f32> = s.alloc_zeros(n.div_ceil(128) * k.div_ceil(128)).unwrap();
            let x: CudaSlice<bf16> = s.alloc_zeros(m * k).unwrap();
            let mut y: CudaSlice<f32> = s.alloc_zeros(m * n).unwrap();
            let b = time_us(&g, || {
                ops::skinny_gemm_into(
                    &g,
                    &x.as_view(),
                    &w.as_view(),
                    ops::WeightLayout::Rows,
                    n,
                    k,
                    &mut y.as_view_mut(),
                )
                .unwrap()
            });
            let c = time_us(&g, || {
                let m8 = ops::Fp8Matrix {
                    codes: &w8.as_view(),
                    scale_inv: &sc.as_view(),
                    scale_rows: 128,
                    n,
                    k,
                    interleave: 0,
                };
                ops::skinny_gemm_fp8_into(&g, &x.as_view(), &m8, &mut y.as_view_mut()).unwrap()
            });
            row(&format!("skinny bf16 {name} {n}x{k}"), m, b, n * k * 2);
            row(&format!("skinny fp8 {name}"), m, c, n * k);
            if name == "lm_head" {
                head = b;
            } else {
                (new, fp8) = (new + b, fp8 + c);
            }
        }
        // Repeats of one matrix partly hit L2: whole_model_linears below is the real cost.
        println!(
            "| 36 x one layer + lm_head: skinny bf16 {:.0} us, skinny fp8 (lm_head bf16) {:.0} us | {m} | | |",
            new * 36.0 + head,
            fp8 * 36.0 + head
        );
    }
    whole_model_linears(&g, &tuning_variants(), quick);
    let cublas: &[usize] = if quick { &[] } else { &[4, 8, 232] };
    for &m in cublas {
        let mut layer_us = 0f32;
        for &(name, n, k) in &SHAPES {
            let w: CudaSlice<bf16> = s.alloc_zeros(n * k).unwrap();
            let x: CudaSlice<bf16> = s.alloc_zeros(m * k).unwrap();
            let mut y: CudaSlice<f32> = s.alloc_zeros(m * n).unwrap();
            let us = time_us(&g, || {
                ops::gemm_into(&g, &x.as_view(), &w.as_view(), n, k, &mut y.as_view_mut()).unwrap()
            });
            if name != "lm_head" {
                layer_us += us;
            }
            row(&format!("cublas {name} {n}x{k}"), m, us, n * k * 2);
        }
        println!("| cublas, 36 layers | {m} | {:.0} | |", layer_us * 36.0);
    }
    let d = AttnDims { heads: 32, kv_heads: 8, head_dim: 128 };
    let bs = 16usize;
    for (r, ctx) in [(1usize, 452usize), (8, 452), (16, 264), (1, 2048), (232, 232)] {
        let per_row = ctx.div_ceil(bs);
        let pages = r * per_row;
        let kc: CudaSlice<bf16> = s.alloc_zeros(pages * bs * d.kv_dim()).unwrap();
        let vc: CudaSlice<bf16> = s.alloc_zeros(pages * bs * d.kv_dim()).unwrap();
        let q: CudaSlice<bf16> = s.alloc_zeros(r * d.q_dim()).unwrap();
        let tables: Vec<i32> = (0..pages as i32).collect();
        let offs: Vec<i32> = (0..r as i32).map(|i| i * per_row as i32).collect();
        // 232 rows of one prompt: causal lengths 1..=232 in one table, as prefill sends.
        let (offs, ctxs): (Vec<i32>, Vec<i32>) =
            if r == 232 { (vec![0; r], (1..=r as i32).collect()) } else { (offs, vec![ctx as i32; r]) };
        let (t, o, c) =
            (s.clone_htod(&tables).unwrap(), s.clone_htod(&offs).unwrap(), s.clone_htod(&ctxs).unwrap());
        let mut out: CudaSlice<bf16> = s.alloc_zeros(r * d.q_dim()).unwrap();
        let a = PagedAttnArgs {
            q: &q.as_view(),
            k_cache: &kc.as_view(),
            v_cache: &vc.as_view(),
            tables: &t.as_view(),
            table_offs: &o.as_view(),
            ctx_lens: &c.as_view(),
            block_size: bs,
            settled: r <= 8,
        };
        // The engine's split count (attention_splits), then the others for comparison.
        let auto = ops::attention_splits(&g, r, d.kv_heads);
        let mut options = vec![auto];
        if r <= 8 {
            options.extend([2, 4, 8, 16, 32].into_iter().filter(|&s| s != auto));
        }
        let (na, nm) = ops::attention_partials_len(r, d, ops::MAX_SPLITS);
        let mut pa: CudaSlice<f32> = s.alloc_zeros(na.max(1)).unwrap();
        let mut pm: CudaSlice<f32> = s.alloc_zeros(nm.max(1)).unwrap();
        for splits in options {
            let new = time_us(&g, || {
                ops::decode_attention_into(
                    &g,
                    d,
                    &a,
                    splits,
                    &mut ops::SplitScratch { acc: pa.as_view_mut(), ml: pm.as_view_mut() },
                    &mut out.as_view_mut(),
                )
                .unwrap()
            });
            let mark = if splits == auto { " (engine)" } else { "" };
            println!(
                "| attention ctx {ctx}, {splits} splits{mark} | {r} | {new:.1} | x36 = {:.0} us |",
                new * 36.0
            );
        }
        if r > 8 && ops::prefill_attention_supported(d) {
            let us = time_us(&g, || ops::prefill_attention_into(&g, d, &a, &mut out.as_view_mut()).unwrap());
            println!(
                "| attention ctx {ctx}, prefill kernel (tensor cores) | {r} | {us:.1} | x36 = {:.0} us |",
                us * 36.0
            );
        }
        if r == 16 {
            // A verify's tree: 16 nodes after ctx - 16 committed positions, one table, each
            // node seeing the committed KV and a chain of ancestors (the mask's shape does
            // not change the work: every tile is staged and multiplied).
            let lo = (ctx - r) as i32;
            let same: Vec<i32> = vec![0; r];
            let ctxs: Vec<i32> = (0..r as i32).map(|j| lo + j + 1).collect();
            let tree: Vec<i32> = (0..r).flat_map(|j| [lo, ((1u64 << (j + 1)) - 1) as i32, 0]).collect();
            let (o, c, tr) =
                (s.clone_htod(&same).unwrap(), s.clone_htod(&ctxs).unwrap(), s.clone_htod(&tree).unwrap());
            let ta = PagedAttnArgs { table_offs: &o.as_view(), ctx_lens: &c.as_view(), settled: false, ..a };
            let engine = ops::tree_attention_splits(&g, r, d.kv_heads);
            let (na, nm) = ops::attention_partials_len(r, d, ops::MAX_TREE_SPLITS);
            let (mut ta_acc, mut ta_ml) =
                (s.alloc_zeros::<f32>(na).unwrap(), s.alloc_zeros::<f32>(nm).unwrap());
            for splits in [1, 2, 4, engine, ops::MAX_TREE_SPLITS] {
                let us = time_us(&g, || {
                    let mut sc = ops::SplitScratch { acc: ta_acc.as_view_mut(), ml: ta_ml.as_view_mut() };
                    let tv = tr.as_view();
                    ops::tree_attention_into(&g, d, &ta, &tv, (splits, &mut sc), &mut out.as_view_mut())
                        .unwrap()
                });
                let mark = if splits == engine { " (engine)" } else { "" };
                println!(
                    "| tree attention, 16 nodes after {lo}, {splits} splits{mark} | {r} | {us:.1} | x36 = {:.0} us |",
                    us * 36.0
                );
            }
        }
    }
    for r in [1usize, 8] {
        let mut x: CudaSlice<f32> = s.alloc_zeros(r * 4096).unwrap();
        let add: CudaSlice<f32> = s.alloc_zeros(r * 4096).unwrap();
        let w: CudaSlice<f32> = s.alloc_zeros(4096).unwrap();
        let mut h: CudaSlice<bf16> = s.alloc_zeros(r * 4096).unwrap();
        let us = time_us(&g, || {
            ops::add_rmsnorm_into(
                &g,
                &mut x.as_view_mut(),
                &add.as_view(),
                &w.as_view(),
                1e-6,
                &mut h.as_view_mut(),
            )
            .unwrap()
        });
        println!("| add_rmsnorm 4096 | {r} | {us:.1} | |");
        let gu: CudaSlice<f32> = s.alloc_zeros(r * 24576).unwrap();
        let mut act: CudaSlice<bf16> = s.alloc_zeros(r * 12288).unwrap();
        let us =
            time_us(&g, || ops::swiglu_into(&g, &gu.as_view(), 12288, true, &mut act.as_view_mut()).unwrap());
        println!("| swiglu 12288 | {r} | {us:.1} | |");
        let logits: CudaSlice<f32> = s.alloc_zeros(r * 151_936).unwrap();
        let mut ids: CudaSlice<u32> = s.alloc_zeros(r).unwrap();
        let mut keys: CudaSlice<u64> = s.alloc_zeros(r * ops::ARGMAX_PARTS).unwrap();
        let us = time_us(&g, || {
            ops::argmax_into(&g, &logits.as_view(), 151_936, &mut keys.as_view_mut(), &mut ids.as_view_mut())
                .unwrap()
        });
        println!("| argmax 151936 | {r} | {us:.1} | |");
    }
}

/// The tunings to compare, each on its own `Gpu` over the same buffers (one context): the
/// skinny GEMMs at several ring depths (`Tuning::bulk_stages` / `_small`, bf16 and FP8
/// alike); PDL off/on with `LATLAB_TIMING_SWEEP=pdl`; `LATLAB_TIMING_SWEEP=0` times only
/// the defaults.
fn tuning_variants() -> Vec<(String, Gpu)> {
    let base = GpuOptions::from_env().unwrap();
    let d = base.tuning;
    let mut tunings = vec![d];
    let mut add = |t: Tuning| {
        if !tunings.contains(&t) {
            tunings.push(t);
        }
    };
    match std::env::var("LATLAB_TIMING_SWEEP").unwrap_or_default().as_str() {
        "0" => {}
        "pdl" => {
            for pdl in [false, true] {
                add(Tuning { pdl, ..d });
            }
        }
        _ => {
            for (bulk_stages, bulk_stages_small) in [(4, 4), (4, 6), (3, 6), (4, 8)] {
                add(Tuning {
                    bulk_stages,
                    bulk_stages_small,
                    fp8_bulk_stages: bulk_stages,
                    fp8_bulk_stages_small: bulk_stages_small,
                    ..d
                });
            }
        }
    }
    tunings
        .into_iter()
        .map(|t| {
            let opts = GpuOptions { tuning: t, ..base.clone() };
            let label = format!(
                "bf16 rings x{}/{}, fp8 x{}/{}, pdl {}",
                t.bulk_stages, t.bulk_stages_small, t.fp8_bulk_stages, t.fp8_bulk_stages_small, t.pdl as u8
            );
            (label, Gpu::new(&opts).unwrap())
        })
        .collect()
}

/// Every linear of a decode step over 36 distinct layers' weights (13.9 GB bf16, 7 GB FP8:
/// nothing stays in the 60 MB L2 between layers, as in a real step) plus the bf16 lm_head,
/// captured once per variant and replayed: the number a decode step actually pays.
fn whole_model_linears(g: &Gpu, tunings: &[(String, Gpu)], quick: bool) {
    let s = g.stream().clone();
    let layer: Vec<(usize, usize)> = SHAPES[..4].iter().map(|&(_, n, k)| (n, k)).collect();
    let bf: Vec<Vec<CudaSlice<bf16>>> =
        (0..36).map(|_| layer.iter().map(|&(n, k)| s.alloc_zeros(n * k).unwrap()).collect()).collect();
    let f8: Vec<Vec<(CudaSlice<u8>, CudaSlice<f32>)>> = (0..36)
        .map(|_| {
            layer
                .iter()
                .map(|&(n, k)| {
                    (s.alloc_zeros(n * k).unwrap(), s.alloc_zeros(n.div_ceil(128) * k.div_ceil(128)).unwrap())
                })
                .collect()
        })
        .collect();
    let (vocab, hd) = (SHAPES[4].1, SHAPES[4].2);
    let head: CudaSlice<bf16> = s.alloc_zeros(vocab * hd).unwrap();
    let x: CudaSlice<bf16> = s.alloc_zeros(8 * 12288).unwrap();
    let mut y: CudaSlice<f32> = s.alloc_zeros(8 * vocab).unwrap();
    s.synchronize().unwrap(); // the tunings' own streams use these buffers next
    let weight_gb = |fp8: bool| {
        let lin: usize = layer.iter().map(|&(n, k)| n * k).sum::<usize>() * 36;
        (lin * if fp8 { 1 } else { 2 } + vocab * hd * 2) as f32 / 1e9
    };
    for m in [1usize, 2, 4, 8] {
        let mut variants: Vec<(String, bool, f32)> = vec![];
        let kinds: &[&str] =
            if quick { &["skinny bf16", "skinny fp8"] } else { &["skinny bf16", "cublas", "skinny fp8"] };
        // cuBLAS once (on the default Gpu); our kernels under every tuning.
        let mut runs: Vec<(&str, &str, &Gpu)> = vec![];
        for &kind in kinds {
            if kind == "cublas" {
                if ops::blas_available(g) {
                    runs.push((kind, "", g));
                }
            } else {
                runs.extend(tunings.iter().map(|(l, t)| (kind, l.as_str(), t)));
            }
        }
        for (kind, label, g) in runs {
            let us = time_us_reps(g, 1, || {
                for l in 0..36 {
                    for (i, &(n, k)) in layer.iter().enumerate() {
                        let xs = x.slice(..m * k);
                        let mut ys = y.slice_mut(..m * n);
                        match kind {
                            "skinny bf16" => ops::skinny_gemm_into(
                                g,
                                &xs,
                                &bf[l][i].as_view(),
                                ops::WeightLayout::Rows,
                                n,
                                k,
                                &mut ys,
                            ),
                            "cublas" => ops::gemm_into(g, &xs, &bf[l][i].as_view(), n, k, &mut ys),
                            _ => ops::skinny_gemm_fp8_into(
                                g,
                                &xs,
                                &ops::Fp8Matrix {
                                    codes: &f8[l][i].0.as_view(),
                                    scale_inv: &f8[l][i].1.as_view(),
                                    scale_rows: 128,
                                    n,
                                    k,
                                    interleave: 0,
                                },
                                &mut ys,
                            ),
                        }
                        .unwrap();
                    }
                }
                let xs = x.slice(..m * hd);
                let mut ys = y.slice_mut(..m * vocab);
                match kind {
                    "cublas" => ops::gemm_into(g, &xs, &head.as_view(), vocab, hd, &mut ys),
                    _ => ops::skinny_gemm_into(
                        g,
                        &xs,
                        &head.as_view(),
                        ops::WeightLayout::Rows,
                        vocab,
                        hd,
                        &mut ys,
                    ),
                }
                .unwrap();
            });
            let name = if label.is_empty() { kind.to_string() } else { format!("{kind}, {label}") };
            variants.push((name, kind.ends_with("fp8"), us));
        }
        for (kind, fp8, us) in variants {
            println!(
                "| whole model linears + lm_head, {kind} | {m} | {us:.0} | {:.0} |",
                weight_gb(fp8) * 1e6 / us
            );
        }
    }
}

fn main() {
    // LATLAB_TIMING_DRAFT=1: only the EAGLE-3 draft level's kernels.
    if std::env::var("LATLAB_TIMING_DRAFT").is_ok_and(|v| v == "1") {
        let g = Gpu::new(&GpuOptions::from_env().unwrap()).unwrap();
        return draft_level_kernel_times(&g);
    }
    qwen3_8b_step_kernel_times();
}

/// The EAGLE-3 draft's GEMMs and top-k at one tree level of batch 1 (4 rows: the topk
/// frontier nodes), FP8 as for an FP8 target. Each matrix is held in enough copies (160 MB
/// or more in all) that the replays stream it from HBM, as a level does (its ~350 MB of
/// weights exceed the L2). What the level's graph adds beyond these (tree attention, ~15
/// us for 16 rows above; norms, RoPE, gathers) is the rest of its time.
fn draft_level_kernel_times(g: &Gpu) {
    let s = g.stream().clone();
    let m = 4usize;
    let shapes: [(&str, usize, usize); 6] = [
        ("fc (extension only)", 4096, 12288),
        ("qkv", 6144, 8192),
        ("o_proj", 4096, 4096),
        ("gate_up", 24576, 4096),
        ("down", 4096, 12288),
        ("lm_head (32k)", 32000, 4096),
    ];
    let mut level = 0f32;
    for (name, n, k) in shapes {
        let copies = (160usize << 20).div_ceil(n * k).max(1);
        let w8: Vec<CudaSlice<u8>> = (0..copies).map(|_| s.alloc_zeros(n * k).unwrap()).collect();
        let sc: CudaSlice<f32> = s.alloc_zeros(n.div_ceil(128) * k.div_ceil(128)).unwrap();
        let x: CudaSlice<bf16> = s.alloc_zeros(m * k).unwrap();
        let mut y: CudaSlice<f32> = s.alloc_zeros(m * n).unwrap();
        let mut i = 0;
        let us = time_us(g, || {
            let codes = w8[i % copies].as_view();
            i += 1;
            let m8 = ops::Fp8Matrix {
                codes: &codes,
                scale_inv: &sc.as_view(),
                scale_rows: 128,
                n,
                k,
                interleave: 0,
            };
            ops::skinny_gemm_fp8_into(g, &x.as_view(), &m8, &mut y.as_view_mut()).unwrap()
        });
        row(&format!("draft fp8 {name} {n}x{k}"), m, us, n * k);
        if !name.starts_with("fc") {
            level += us;
        }
    }
    let (vocab, k) = (32000usize, 4usize);
    let logits: CudaSlice<f32> = s.alloc_zeros(m * vocab).unwrap();
    let (mut ids, mut lp) = (s.alloc_zeros::<i32>(m * k).unwrap(), s.alloc_zeros::<f32>(m * k).unwrap());
    let us = time_us(g, || {
        ops::topk_logprobs_into(g, &logits.as_view(), vocab, k, &mut ids.as_view_mut(), &mut lp.as_view_mut())
            .unwrap()
    });
    println!("| draft top-{k} of {vocab} | {m} | {us:.1} | |");
    level += us;
    println!("| draft level: its GEMMs and top-k | {m} | {level:.1} | |");
}
