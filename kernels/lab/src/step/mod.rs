//! A whole Qwen3-8B decode step built from the real ops (GPU machine only), in the engine's
//! order (engine/src/model/cuda/step.rs): 36 distinct layers of zero weights (bf16 or FP8:
//! nothing stays in L2 between layers), with kinds of kernels optionally left out. Shared
//! by bin/step_chain.rs (what each kind costs) and bin/step_trace.rs (the block timeline).

use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, AttnDims, PagedAttnArgs, RopeKvArgs};
use kernels::{Gpu, bf16, f16};

mod linear;
pub use linear::Linear;
use linear::{random_block, random_weights};

pub const HIDDEN: usize = 4096;
pub const INTER: usize = 12288;
pub const VOCAB: usize = 151_936;
pub const LAYERS: usize = 36;
pub const PAGE: usize = 16;
/// Mean context of the engine's benchmark decode (232 prompt tokens + 0..220 generated).
pub const CTX: usize = 342;

/// The weight types and batch sizes a step experiment runs, from `LATLAB_CHAIN_WEIGHTS`
/// (`bf16`, `fp8`, or both by default) and `LATLAB_CHAIN_BATCHES` (comma-separated, default
/// `1,8`, each at most `max_rows`): a device call that needs one case pays for one.
pub fn cases(max_rows: usize) -> (Vec<bool>, Vec<usize>) {
    let fp8 = match std::env::var("LATLAB_CHAIN_WEIGHTS").as_deref() {
        Err(_) => vec![false, true],
        Ok("bf16") => vec![false],
        Ok("fp8") => vec![true],
        Ok(w) => panic!("LATLAB_CHAIN_WEIGHTS: {w:?} is not bf16 or fp8"),
    };
    let batches = std::env::var("LATLAB_CHAIN_BATCHES")
        .unwrap_or_else(|_| "1,8".into())
        .split(',')
        .map(|b| match b.trim().parse() {
            Ok(m) if (1..=max_rows).contains(&m) => m,
            _ => panic!("LATLAB_CHAIN_BATCHES: {b:?} is not a batch size in 1..={max_rows}"),
        })
        .collect();
    (fp8, batches)
}

/// What a variant leaves out of the step.
#[derive(Clone, Copy, Default)]
pub struct Omit {
    pub norms: bool,
    pub rope: bool,
    pub attention: bool,
    /// Not an omission: the attention (and its merge) twice per layer, the second time
    /// with its code already in the SM's instruction caches (a timing experiment).
    pub attention_twice: bool,
}

pub struct Layer {
    pub qkv: Linear,
    pub o: Linear,
    pub gate_up: Linear,
    pub down: Linear,
    pub k_cache: CudaSlice<bf16>,
    pub v_cache: CudaSlice<bf16>,
}

impl Layer {
    /// The step's 36 layers of zero weights, and K/V caches for up to `rows` rows.
    pub fn all_zeros(g: &Gpu, fp8: bool, rows: usize) -> Vec<Layer> {
        let d = dims();
        let (qd, kvd) = (d.q_dim(), d.kv_dim());
        let pages = rows * pages_per_row() * PAGE * kvd;
        let random = random_weights().then(|| random_block(g, fp8));
        let r = random.as_ref();
        (0..LAYERS)
            .map(|_| Layer {
                qkv: Linear::zeros(g, qd + 2 * kvd, HIDDEN, fp8, r),
                o: Linear::zeros(g, HIDDEN, qd, fp8, r),
                gate_up: Linear::zeros(g, 2 * INTER, HIDDEN, fp8, r),
                down: Linear::zeros(g, HIDDEN, INTER, fp8, r),
                k_cache: g.stream().alloc_zeros(pages).unwrap(),
                v_cache: g.stream().alloc_zeros(pages).unwrap(),
            })
            .collect()
    }
}

/// One decode step for `m` rows, with `omit`'s kernels left out, in the engine's order
/// (engine/src/model/cuda/step.rs): FP8 weights at one row fold the inner norms into the
/// GEMMs (engine/src/model/cuda/step/fold.rs; "without norms" then leaves out only the
/// first and the last), FP8 weights at 2-8 rows run the GEMMs on f16 x
/// (step/half_x.rs: the norms before qkv and gate|up write f16, and gate|up's SwiGLU its
/// act), bf16 weights neither. Past 8 rows the linears and lm_head run as the engine runs
/// them there (`Linear`; lm_head on cuBLAS).
pub fn step(
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
    ops::embed_gather_into(g, &meta.ids.as_view(), &head.as_view(), HIDDEN, &mut b.x.as_view_mut()).unwrap();
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
    // As the engine decides it (step/fold.rs `folds_norms`, step/half_x.rs `uses_f16_x`).
    let fp8 = layers[0].qkv.is_fp8();
    let fold = fp8 && m == 1;
    let half = fp8 && !fold;
    // `norm` into h16 (the f16-x path).
    let norm16 = |b: &mut Buffers, first: bool| {
        if omit.norms {
            return;
        }
        let (mut x, w, mut h) = (b.x.as_view_mut(), b.norm_w.as_view(), b.h16.as_view_mut());
        if first {
            ops::rmsnorm_f16_into(g, &mut x, &w, 1e-6, &mut h)
        } else {
            ops::add_rmsnorm_f16_into(g, &mut x, &b.o.as_view(), &w, 1e-6, &mut h)
        }
        .unwrap()
    };
    let last = layers.len() - 1;
    // A producer's epilogue: y joins the residual x, the next norm's hw and sums go to h, ss;
    // x_in: attn (o_proj) or act (down).
    let add_norm = |l: &Linear, from_act: bool, b: &mut Buffers| {
        let Buffers { x, h, ss, norm_w, attn, act, .. } = b;
        let epi = ops::NormEpi::AddNorm {
            w: &norm_w.as_view(),
            hw: &mut h.as_view_mut(),
            ss: &mut ss.as_view_mut(),
        };
        let (x_in, k) = if from_act { (&*act, INTER) } else { (&*attn, qd) };
        l.run_epi(g, x_in, (HIDDEN, k), x, epi);
    };
    for (li, l) in layers.iter_mut().enumerate() {
        if fold && li > 0 {
            let Buffers { h, ss, qkv, .. } = &mut *b;
            let epi = ops::NormEpi::Scale { ss: &ss.as_view(), eps: 1e-6 };
            l.qkv.run_epi(g, h, (qd + 2 * kvd, HIDDEN), qkv, epi);
        } else if half {
            norm16(b, li == 0);
            l.qkv.run_f16(g, &b.h16, qd + 2 * kvd, HIDDEN, &mut b.qkv);
        } else {
            norm(b, li == 0);
            l.qkv.run(g, &b.h, qd + 2 * kvd, HIDDEN, &mut b.qkv);
        }
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
        let attention_runs = match (omit.attention, omit.attention_twice) {
            (true, _) => 0,
            (false, false) => 1,
            (false, true) => 2,
        };
        for _ in 0..attention_runs {
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
                &mut ops::SplitScratch { acc: b.part_acc.as_view_mut(), ml: b.part_ml.as_view_mut() },
                &mut b.attn.as_view_mut(),
            )
            .unwrap();
        }
        if fold {
            add_norm(&l.o, false, b);
            l.gate_up.run_swiglu_scaled(g, &b.h, &b.ss, &mut b.act);
            if li < last {
                add_norm(&l.down, true, b);
            } else {
                l.down.run(g, &b.act, HIDDEN, INTER, &mut b.o);
            }
            continue;
        }
        l.o.run(g, &b.attn, HIDDEN, qd, &mut b.o);
        if half {
            norm16(b, false);
            l.gate_up.run_swiglu_f16(g, &b.h16, &mut b.act16);
            l.down.run_f16(g, &b.act16, HIDDEN, INTER, &mut b.o);
            continue;
        }
        norm(b, false);
        l.gate_up.run_swiglu(g, &b.h, &mut b.gu, &mut b.act);
        l.down.run(g, &b.act, HIDDEN, INTER, &mut b.o);
    }
    norm(b, false);
    let mut logits = b.logits.slice_mut(..m * VOCAB);
    let (h, w) = (b.h.as_view(), head.as_view());
    if m > ops::SKINNY_MAX_ROWS {
        ops::gemm_into(g, &h, &w, VOCAB, HIDDEN, &mut logits)
    } else {
        ops::skinny_gemm_into(g, &h, &w, ops::WeightLayout::Rows, VOCAB, HIDDEN, &mut logits)
    }
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

pub fn dims() -> AttnDims {
    AttnDims { heads: 32, kv_heads: 8, head_dim: 128 }
}

/// The step's per-row inputs: token ids, positions, KV slots and page tables, for m rows
/// of CTX tokens (the new token's slot is the last one of the row's pages).
pub struct Meta {
    pub ids: CudaSlice<u32>,
    pub positions: CudaSlice<i32>,
    pub slots: CudaSlice<i32>,
    pub tables: CudaSlice<i32>,
    pub offs: CudaSlice<i32>,
    pub ctx: CudaSlice<i32>,
}

pub fn pages_per_row() -> usize {
    CTX.div_ceil(PAGE)
}

impl Meta {
    pub fn new(g: &Gpu, m: usize) -> Self {
        let s = g.stream();
        let per_row = pages_per_row();
        let tables: Vec<i32> = (0..(m * per_row) as i32).collect();
        let offs: Vec<i32> = (0..m as i32).map(|r| r * per_row as i32).collect();
        let slots: Vec<i32> =
            (0..m).map(|r| ((r * per_row + (CTX - 1) / PAGE) * PAGE + (CTX - 1) % PAGE) as i32).collect();
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

pub struct Buffers {
    pub x: CudaSlice<f32>,
    pub h: CudaSlice<bf16>,
    pub norm_w: CudaSlice<f32>,
    pub head_norm: CudaSlice<f32>,
    pub qkv: CudaSlice<f32>,
    pub q: CudaSlice<bf16>,
    pub attn: CudaSlice<bf16>,
    pub o: CudaSlice<f32>,
    pub act: CudaSlice<bf16>,
    /// gate|up's output before the swiglu kernel (bf16 weights past 8 rows).
    pub gu: CudaSlice<f32>,
    /// The folded norms' partial sums of squares [m, HIDDEN / 16].
    pub ss: CudaSlice<f32>,
    /// h and act as f16, for FP8 GEMMs on f16 x.
    pub h16: CudaSlice<f16>,
    pub act16: CudaSlice<f16>,
    pub part_acc: CudaSlice<f32>,
    pub part_ml: CudaSlice<f32>,
    pub logits: CudaSlice<f32>,
    pub keys: CudaSlice<u64>,
    pub next: CudaSlice<u32>,
}

impl Buffers {
    pub fn new(g: &Gpu, m: usize) -> Self {
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
            gu: s.alloc_zeros(m * 2 * INTER).unwrap(),
            ss: s.alloc_zeros(m * ops::norm_parts(HIDDEN)).unwrap(),
            h16: s.alloc_zeros(m * HIDDEN).unwrap(),
            act16: s.alloc_zeros(m * INTER).unwrap(),
            part_acc: s.alloc_zeros(na.max(1)).unwrap(),
            part_ml: s.alloc_zeros(nm.max(1)).unwrap(),
            logits: s.alloc_zeros(m * VOCAB).unwrap(),
            keys: s.alloc_zeros(m * ops::ARGMAX_PARTS).unwrap(),
            next: s.alloc_zeros(m).unwrap(),
        }
    }
}
