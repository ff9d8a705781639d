//! Where a decode step's time goes outside the linears (GPU machine only; prints, asserts
//! nothing about speed): `cargo test -p kernels --test gpu_step_chain -- --ignored
//! --nocapture`.
//!
//! A whole Qwen3-8B decode step is launched from the real ops over 36 distinct layers of
//! zero weights (bf16 or FP8: nothing stays in L2 between layers), in the engine's order,
//! captured as one CUDA graph, as the engine replays it. Then the same step with one kind of
//! kernel left out. The difference is what that kind costs inside the chain (its own work
//! plus the dependency hand-offs around it), which a kernel timed alone cannot show: with
//! programmatic dependent launch a kernel's cost depends on its neighbours.

mod timing_common;

use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, AttnDims, PagedAttnArgs, RopeKvArgs};
use kernels::{Gpu, GpuOptions, bf16};
use timing_common::time_us_reps;

const HIDDEN: usize = 4096;
const INTER: usize = 12288;
const VOCAB: usize = 151_936;
const LAYERS: usize = 36;
const PAGE: usize = 16;
/// Mean context of the engine's benchmark decode (232 prompt tokens + 0..220 generated).
const CTX: usize = 342;

/// What a variant leaves out of the step.
#[derive(Clone, Copy, Default)]
struct Omit {
    norms: bool,
    rope: bool,
    attention: bool,
}

enum Linear {
    Bf16(CudaSlice<bf16>),
    Fp8(CudaSlice<u8>, CudaSlice<f32>),
}

impl Linear {
    fn zeros(g: &Gpu, n: usize, k: usize, fp8: bool) -> Self {
        let s = g.stream();
        if fp8 {
            Linear::Fp8(
                s.alloc_zeros(n * k).unwrap(),
                s.alloc_zeros(n.div_ceil(128) * k.div_ceil(128)).unwrap(),
            )
        } else {
            Linear::Bf16(s.alloc_zeros(n * k).unwrap())
        }
    }

    fn fp8<'a, 'b>(
        codes: &'a kernels::cudarc::driver::CudaView<'b, u8>,
        scales: &'a kernels::cudarc::driver::CudaView<'b, f32>,
        n: usize,
        k: usize,
        interleave: usize,
    ) -> ops::Fp8Matrix<'a, 'b> {
        ops::Fp8Matrix {
            codes,
            scale_inv: scales,
            scale_rows: 128,
            n,
            k,
            interleave,
        }
    }

    /// y = x w^T, f32 out.
    fn run(&self, g: &Gpu, x: &CudaSlice<bf16>, n: usize, k: usize, y: &mut CudaSlice<f32>) {
        let (xv, mut yv) = (x.as_view(), y.as_view_mut());
        match self {
            Linear::Bf16(w) => ops::skinny_gemm_into(g, &xv, &w.as_view(), n, k, &mut yv),
            Linear::Fp8(c, s) => {
                let (cv, sv) = (c.as_view(), s.as_view());
                ops::skinny_gemm_fp8_into(g, &xv, &Self::fp8(&cv, &sv, n, k, 0), &mut yv)
            }
        }
        .unwrap()
    }

    /// act = SwiGLU(x gate|up^T), the fused decode kernel.
    fn run_swiglu(&self, g: &Gpu, x: &CudaSlice<bf16>, act: &mut CudaSlice<bf16>) {
        let (xv, mut av) = (x.as_view(), act.as_view_mut());
        match self {
            Linear::Bf16(w) => {
                ops::skinny_gemm_swiglu_into(g, &xv, &w.as_view(), INTER, HIDDEN, &mut av)
            }
            Linear::Fp8(c, s) => {
                let (cv, sv) = (c.as_view(), s.as_view());
                let m8 = Self::fp8(&cv, &sv, 2 * INTER, HIDDEN, INTER);
                ops::skinny_gemm_fp8_swiglu_into(g, &xv, &m8, &mut av)
            }
        }
        .unwrap()
    }
}

struct Layer {
    qkv: Linear,
    o: Linear,
    gate_up: Linear,
    down: Linear,
    k_cache: CudaSlice<bf16>,
    v_cache: CudaSlice<bf16>,
}

/// One decode step for `m` rows, with `omit`'s kernels left out, in the engine's order
/// (engine/src/model/cuda/step.rs).
fn step(
    g: &Gpu,
    m: usize,
    layers: &mut [Layer],
    head: &CudaSlice<bf16>,
    meta: &Meta,
    b: &mut Buffers,
    omit: Omit,
) {
    let d = dims();
    let (qd, kvd) = (d.q_dim(), d.kv_dim());
    ops::embed_gather_into(
        g,
        &meta.ids.as_view(),
        &head.as_view(),
        HIDDEN,
        &mut b.x.as_view_mut(),
    )
    .unwrap();
    let norm = |b: &mut Buffers, first: bool| {
        if omit.norms {
            return;
        }
        let (mut x, w, mut h) = (b.x.as_view_mut(), b.norm_w.as_view(), b.h.as_view_mut());
        if first {
            ops::rmsnorm_into(g, &mut x, &w, 1e-6, &mut h)
        } else {
            ops::add_rmsnorm_into(g, &mut x, &b.o.as_view(), &w, 1e-6, &mut h)
        }
        .unwrap()
    };
    for (li, l) in layers.iter_mut().enumerate() {
        norm(b, li == 0);
        l.qkv.run(g, &b.h, qd + 2 * kvd, HIDDEN, &mut b.qkv);
        if !omit.rope {
            let a = RopeKvArgs {
                qkv: &b.qkv.as_view(),
                q_norm: &b.head_norm.as_view(),
                k_norm: &b.head_norm.as_view(),
                positions: &meta.positions.as_view(),
                slots: &meta.slots.as_view(),
                theta: 1e6,
                eps: 1e-6,
            };
            ops::qk_norm_rope_kv_into(
                g,
                d,
                &a,
                &mut b.q.as_view_mut(),
                &mut l.k_cache.as_view_mut(),
                &mut l.v_cache.as_view_mut(),
            )
            .unwrap();
        }
        if !omit.attention {
            let pa = PagedAttnArgs {
                q: &b.q.as_view(),
                k_cache: &l.k_cache.as_view(),
                v_cache: &l.v_cache.as_view(),
                tables: &meta.tables.as_view(),
                table_offs: &meta.offs.as_view(),
                ctx_lens: &meta.ctx.as_view(),
                block_size: PAGE,
                settled: true,
            };
            ops::decode_attention_into(
                g,
                d,
                &pa,
                ops::attention_splits(g, m, d.kv_heads),
                &mut ops::SplitScratch {
                    acc: b.part_acc.as_view_mut(),
                    ml: b.part_ml.as_view_mut(),
                },
                &mut b.attn.as_view_mut(),
            )
            .unwrap();
        }
        l.o.run(g, &b.attn, HIDDEN, qd, &mut b.o);
        norm(b, false);
        l.gate_up.run_swiglu(g, &b.h, &mut b.act);
        l.down.run(g, &b.act, HIDDEN, INTER, &mut b.o);
    }
    norm(b, false);
    let mut logits = b.logits.slice_mut(..m * VOCAB);
    ops::skinny_gemm_into(
        g,
        &b.h.as_view(),
        &head.as_view(),
        VOCAB,
        HIDDEN,
        &mut logits,
    )
    .unwrap();
    ops::argmax_into(
        g,
        &b.logits.slice(..m * VOCAB),
        VOCAB,
        &mut b.keys.as_view_mut(),
        &mut b.next.as_view_mut(),
    )
    .unwrap();
}

fn dims() -> AttnDims {
    AttnDims {
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
    }
}

/// The step's per-row inputs: token ids, positions, KV slots and page tables, for m rows
/// of CTX tokens (the new token's slot is the last one of the row's pages).
struct Meta {
    ids: CudaSlice<u32>,
    positions: CudaSlice<i32>,
    slots: CudaSlice<i32>,
    tables: CudaSlice<i32>,
    offs: CudaSlice<i32>,
    ctx: CudaSlice<i32>,
}

fn pages_per_row() -> usize {
    CTX.div_ceil(PAGE)
}

impl Meta {
    fn new(g: &Gpu, m: usize) -> Self {
        let s = g.stream();
        let per_row = pages_per_row();
        let tables: Vec<i32> = (0..(m * per_row) as i32).collect();
        let offs: Vec<i32> = (0..m as i32).map(|r| r * per_row as i32).collect();
        let slots: Vec<i32> = (0..m)
            .map(|r| ((r * per_row + (CTX - 1) / PAGE) * PAGE + (CTX - 1) % PAGE) as i32)
            .collect();
        Meta {
            ids: s.alloc_zeros(m).unwrap(),
            positions: s.clone_htod(&vec![CTX as i32 - 1; m]).unwrap(),
            slots: s.clone_htod(&slots).unwrap(),
            tables: s.clone_htod(&tables).unwrap(),
            offs: s.clone_htod(&offs).unwrap(),
            ctx: s.clone_htod(&vec![CTX as i32; m]).unwrap(),
        }
    }
}

struct Buffers {
    x: CudaSlice<f32>,
    h: CudaSlice<bf16>,
    norm_w: CudaSlice<f32>,
    head_norm: CudaSlice<f32>,
    qkv: CudaSlice<f32>,
    q: CudaSlice<bf16>,
    attn: CudaSlice<bf16>,
    o: CudaSlice<f32>,
    act: CudaSlice<bf16>,
    part_acc: CudaSlice<f32>,
    part_ml: CudaSlice<f32>,
    logits: CudaSlice<f32>,
    keys: CudaSlice<u64>,
    next: CudaSlice<u32>,
}

impl Buffers {
    fn new(g: &Gpu, m: usize) -> Self {
        let s = g.stream();
        let d = dims();
        let (qd, kvd) = (d.q_dim(), d.kv_dim());
        let (na, nm) = ops::attention_partials_len(m, d, ops::attention_splits(g, m, d.kv_heads));
        Buffers {
            x: s.alloc_zeros(m * HIDDEN).unwrap(),
            h: s.alloc_zeros(m * HIDDEN).unwrap(),
            norm_w: s.alloc_zeros(HIDDEN).unwrap(),
            head_norm: s.alloc_zeros(d.head_dim).unwrap(),
            qkv: s.alloc_zeros(m * (qd + 2 * kvd)).unwrap(),
            q: s.alloc_zeros(m * qd).unwrap(),
            attn: s.alloc_zeros(m * qd).unwrap(),
            o: s.alloc_zeros(m * HIDDEN).unwrap(),
            act: s.alloc_zeros(m * INTER).unwrap(),
            part_acc: s.alloc_zeros(na.max(1)).unwrap(),
            part_ml: s.alloc_zeros(nm.max(1)).unwrap(),
            logits: s.alloc_zeros(m * VOCAB).unwrap(),
            keys: s.alloc_zeros(m * ops::ARGMAX_PARTS).unwrap(),
            next: s.alloc_zeros(m).unwrap(),
        }
    }
}

#[test]
#[ignore = "gpu"]
fn decode_step_marginal_costs() {
    let g = Gpu::new(&GpuOptions::from_env().unwrap()).unwrap();
    let d = dims();
    let (qd, kvd) = (d.q_dim(), d.kv_dim());
    let head: CudaSlice<bf16> = g.stream().alloc_zeros(VOCAB * HIDDEN).unwrap();
    let variants: [(&str, Omit); 5] = [
        ("whole step", Omit::default()),
        (
            "without norms",
            Omit {
                norms: true,
                ..Omit::default()
            },
        ),
        (
            "without qk-norm/rope/kv write",
            Omit {
                rope: true,
                ..Omit::default()
            },
        ),
        (
            "without attention",
            Omit {
                attention: true,
                ..Omit::default()
            },
        ),
        (
            "linears, embedding, argmax only",
            Omit {
                norms: true,
                rope: true,
                attention: true,
            },
        ),
    ];
    println!("| weights | m | step | us | minus whole step |");
    for fp8 in [false, true] {
        let pages = 8 * pages_per_row() * PAGE * kvd;
        let mut layers: Vec<Layer> = (0..LAYERS)
            .map(|_| Layer {
                qkv: Linear::zeros(&g, qd + 2 * kvd, HIDDEN, fp8),
                o: Linear::zeros(&g, HIDDEN, qd, fp8),
                gate_up: Linear::zeros(&g, 2 * INTER, HIDDEN, fp8),
                down: Linear::zeros(&g, HIDDEN, INTER, fp8),
                k_cache: g.stream().alloc_zeros(pages).unwrap(),
                v_cache: g.stream().alloc_zeros(pages).unwrap(),
            })
            .collect();
        for m in [1usize, 8] {
            let meta = Meta::new(&g, m);
            let mut b = Buffers::new(&g, m);
            let mut whole = 0f32;
            for (name, omit) in variants {
                let us = time_us_reps(&g, 1, || {
                    step(&g, m, &mut layers, &head, &meta, &mut b, omit)
                });
                if matches!(name, "whole step") {
                    whole = us;
                }
                println!(
                    "| {} | {m} | {name} | {us:.0} | {:.0} |",
                    if fp8 { "fp8" } else { "bf16" },
                    us - whole
                );
            }
        }
    }
}
