//! A whole Qwen3-8B decode step built from the real ops (GPU machine only), in the engine's
//! order (engine/src/model/cuda/step.rs): 36 distinct layers of zero weights (bf16 or FP8:
//! nothing stays in L2 between layers), with kinds of kernels optionally left out. Shared
//! by gpu_step_chain (what each kind costs) and gpu_step_trace (the block timeline).
#![allow(dead_code)]

use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, AttnDims, PagedAttnArgs, RopeKvArgs};
use kernels::{Gpu, bf16};

pub const HIDDEN: usize = 4096;
pub const INTER: usize = 12288;
pub const VOCAB: usize = 151_936;
pub const LAYERS: usize = 36;
pub const PAGE: usize = 16;
/// Mean context of the engine's benchmark decode (232 prompt tokens + 0..220 generated).
pub const CTX: usize = 342;

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

pub enum Linear {
    Bf16(CudaSlice<bf16>),
    Fp8(CudaSlice<u8>, CudaSlice<f32>),
}

/// `LATLAB_CHAIN_RANDOM=1`: the weights hold random values (a 16 MB random block repeated)
/// instead of zeros. Zero weights draw less power: session 12 saw tiled weights gain 55 us
/// per bf16 step here and nothing in the engine, near the H200's 700 W limit.
fn random_weights() -> bool {
    std::env::var("LATLAB_CHAIN_RANDOM").is_ok_and(|v| v == "1")
}

/// Fill `buf` with copies of `block`.
fn fill_from<T: kernels::cudarc::driver::DeviceRepr>(
    g: &Gpu,
    buf: &mut CudaSlice<T>,
    block: &kernels::cudarc::driver::CudaView<'_, T>,
) {
    let mut off = 0;
    while off < buf.len() {
        let len = block.len().min(buf.len() - off);
        let mut dst = buf.slice_mut(off..off + len);
        g.stream()
            .memcpy_dtod(&block.slice(..len), &mut dst)
            .unwrap();
        off += len;
    }
}

/// 16 MB of random bytes: bf16 values of magnitude under 2 (no NaN or infinity), or
/// e4m3 codes without NaN.
fn random_block(g: &Gpu, fp8: bool) -> CudaSlice<u8> {
    let mut r = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..16 << 20)
        .map(|i| {
            r = r
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let b = (r >> 56) as u8;
            match (fp8, i % 2) {
                (true, _) => b & 0xf7 & !0x78 | (b & 0x30),
                (false, 1) => b & 0xbe, // high byte of a bf16: the exponent's top bit clear
                (false, _) => b,
            }
        })
        .collect();
    g.stream().clone_htod(&bytes).unwrap()
}

impl Linear {
    /// Zeros, or copies of `random` (`random_block`).
    pub fn zeros(g: &Gpu, n: usize, k: usize, fp8: bool, random: Option<&CudaSlice<u8>>) -> Self {
        let s = g.stream();
        if fp8 {
            let mut codes = s.alloc_zeros(n * k).unwrap();
            if let Some(b) = random {
                fill_from(g, &mut codes, &b.as_view());
            }
            Linear::Fp8(
                codes,
                s.alloc_zeros(n.div_ceil(128) * k.div_ceil(128)).unwrap(),
            )
        } else {
            let mut w = s.alloc_zeros::<bf16>(n * k).unwrap();
            if let Some(b) = random {
                // SAFETY: bf16 is two plain bytes; the block's length is even.
                let b16 = unsafe { b.transmute::<bf16>(b.len() / 2) }.unwrap();
                fill_from(g, &mut w, &b16);
            }
            Linear::Bf16(w)
        }
    }

    /// The layout the engine would upload these weights in (`Tuning::tiles_weights`); the
    /// weights are zeros or a repeated block, so only the kernels' addressing follows it.
    fn layout(g: &Gpu, fp8: bool) -> ops::WeightLayout {
        if g.tuning().tiles_weights(fp8) {
            ops::WeightLayout::Tiled
        } else {
            ops::WeightLayout::Rows
        }
    }

    fn fp8<'a, 'b>(
        g: &Gpu,
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
            layout: Self::layout(g, true),
        }
    }

    /// y = x w^T, f32 out.
    pub fn run(&self, g: &Gpu, x: &CudaSlice<bf16>, n: usize, k: usize, y: &mut CudaSlice<f32>) {
        let (xv, mut yv) = (x.as_view(), y.as_view_mut());
        match self {
            Linear::Bf16(w) => {
                ops::skinny_gemm_into(g, &xv, &w.as_view(), Self::layout(g, false), n, k, &mut yv)
            }
            Linear::Fp8(c, s) => {
                let (cv, sv) = (c.as_view(), s.as_view());
                ops::skinny_gemm_fp8_into(g, &xv, &Self::fp8(g, &cv, &sv, n, k, 0), &mut yv)
            }
        }
        .unwrap()
    }

    /// `run` with a folded norm's epilogue (`ops::NormEpi`, Tuning::norm_epilogue).
    pub fn run_epi(
        &self,
        g: &Gpu,
        x: &CudaSlice<bf16>,
        (n, k): (usize, usize),
        y: &mut CudaSlice<f32>,
        epi: ops::NormEpi<'_, '_>,
    ) {
        let (xv, mut yv) = (x.as_view(), y.as_view_mut());
        match self {
            Linear::Bf16(w) => {
                let sw = ops::SkinnyWeights::Bf16(&w.as_view(), Self::layout(g, false));
                ops::skinny_linear_norm_into(g, &xv, sw, (n, k), &mut yv, epi)
            }
            Linear::Fp8(c, s) => {
                let (cv, sv) = (c.as_view(), s.as_view());
                let m8 = Self::fp8(g, &cv, &sv, n, k, 0);
                ops::skinny_linear_norm_into(
                    g,
                    &xv,
                    ops::SkinnyWeights::Fp8(&m8),
                    (n, k),
                    &mut yv,
                    epi,
                )
            }
        }
        .unwrap()
    }

    /// `run_swiglu` as a folded norm's consumer (x: hw, ss: the producer's sums).
    pub fn run_swiglu_scaled(
        &self,
        g: &Gpu,
        x: &CudaSlice<bf16>,
        ss: &CudaSlice<f32>,
        act: &mut CudaSlice<bf16>,
    ) {
        let (xv, mut av, sv) = (x.as_view(), act.as_view_mut(), ss.as_view());
        let epi = ops::NormEpi::Scale { ss: &sv, eps: 1e-6 };
        match self {
            Linear::Bf16(w) => {
                let sw = ops::SkinnyWeights::Bf16(&w.as_view(), Self::layout(g, false));
                ops::skinny_swiglu_norm_into(g, &xv, sw, (INTER, HIDDEN), &mut av, epi)
            }
            Linear::Fp8(c, s) => {
                let (cv, scv) = (c.as_view(), s.as_view());
                let m8 = Self::fp8(g, &cv, &scv, 2 * INTER, HIDDEN, INTER);
                ops::skinny_swiglu_norm_into(
                    g,
                    &xv,
                    ops::SkinnyWeights::Fp8(&m8),
                    (INTER, HIDDEN),
                    &mut av,
                    epi,
                )
            }
        }
        .unwrap()
    }

    /// act = SwiGLU(x gate|up^T), the fused decode kernel.
    pub fn run_swiglu(&self, g: &Gpu, x: &CudaSlice<bf16>, act: &mut CudaSlice<bf16>) {
        let (xv, mut av) = (x.as_view(), act.as_view_mut());
        match self {
            Linear::Bf16(w) => ops::skinny_gemm_swiglu_into(
                g,
                &xv,
                &w.as_view(),
                Self::layout(g, false),
                INTER,
                HIDDEN,
                &mut av,
            ),
            Linear::Fp8(c, s) => {
                let (cv, sv) = (c.as_view(), s.as_view());
                let m8 = Self::fp8(g, &cv, &sv, 2 * INTER, HIDDEN, INTER);
                ops::skinny_gemm_fp8_swiglu_into(g, &xv, &m8, &mut av)
            }
        }
        .unwrap()
    }
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
    /// The step's 36 layers of zero weights, and K/V caches for up to 8 rows.
    pub fn all_zeros(g: &Gpu, fp8: bool) -> Vec<Layer> {
        let d = dims();
        let (qd, kvd) = (d.q_dim(), d.kv_dim());
        let pages = 8 * pages_per_row() * PAGE * kvd;
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
/// (engine/src/model/cuda/step.rs), with the inner norms folded into the GEMMs where the
/// tuning says so (`Tuning::norm_epilogue`; "without norms" then leaves out only the first
/// and the last).
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
    let fold = g.tuning().folds_norms(m);
    let last = layers.len() - 1;
    // A producer's epilogue: y joins the residual x, the next norm's hw and sums go to h, ss;
    // x_in: attn (o_proj) or act (down).
    let add_norm = |l: &Linear, from_act: bool, b: &mut Buffers| {
        let Buffers {
            x,
            h,
            ss,
            norm_w,
            attn,
            act,
            ..
        } = b;
        let epi = ops::NormEpi::AddNorm {
            w: &norm_w.as_view(),
            hw: &mut h.as_view_mut(),
            ss: &mut ss.as_view_mut(),
        };
        let (x_in, k) = if from_act {
            (&*act, INTER)
        } else {
            (&*attn, qd)
        };
        l.run_epi(g, x_in, (HIDDEN, k), x, epi);
    };
    for (li, l) in layers.iter_mut().enumerate() {
        if fold && li > 0 {
            let Buffers { h, ss, qkv, .. } = &mut *b;
            let epi = ops::NormEpi::Scale {
                ss: &ss.as_view(),
                eps: 1e-6,
            };
            l.qkv.run_epi(g, h, (qd + 2 * kvd, HIDDEN), qkv, epi);
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
                &mut ops::SplitScratch {
                    acc: b.part_acc.as_view_mut(),
                    ml: b.part_ml.as_view_mut(),
                },
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
        ops::WeightLayout::Rows,
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

pub fn dims() -> AttnDims {
    AttnDims {
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
    }
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
    /// The folded norms' partial sums of squares [m, HIDDEN / 16].
    pub ss: CudaSlice<f32>,
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
            ss: s.alloc_zeros(m * ops::norm_parts(HIDDEN)).unwrap(),
            part_acc: s.alloc_zeros(na.max(1)).unwrap(),
            part_ml: s.alloc_zeros(nm.max(1)).unwrap(),
            logits: s.alloc_zeros(m * VOCAB).unwrap(),
            keys: s.alloc_zeros(m * ops::ARGMAX_PARTS).unwrap(),
            next: s.alloc_zeros(m).unwrap(),
        }
    }
}
