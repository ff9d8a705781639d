//! The CUDA attention ops against a CPU reference on fresh random inputs (GPU machine only:
//! `cargo test -p engine --test cuda_attention -- --ignored`): q/k-norm + RoPE + the KV
//! write, every split decode attention kernel (CUDA cores, tensor cores, merged in a kernel
//! or in clusters: each geometry and split count reaches its own, `ops::attention_kernel`)
//! and the prefill kernel; the decode form that reads settled K/V early against the one
//! that waits, bit for bit.
//!
//! Inputs are bf16-representable, so the reference sees exactly what the kernel sees; what
//! remains is f32 summation order and, where a kernel writes bf16 or rounds P to bf16, that
//! rounding. Tolerances say which applies.

mod cuda_common;

use cuda_common::{Rng, check, down_bf16, gpu, up, up_bf16};
use engine::model::cpu::ops::{rms_norm, rope};
use kernels::bf16;
use kernels::ops::{self, AttnDims, PagedAttnArgs, RopeKvArgs};

/// Qwen3-8B's head geometry (32 q heads, 8 kv heads, head_dim 128: the tensor-core
/// kernels), the tiny MQA one (head_dim 8: the pair layout) and one of head_dim 32 (the
/// fast CUDA-core scores): between them, every decode attention kernel.
#[test]
#[ignore = "gpu"]
fn rope_kv_write_and_split_attention_match_cpu() {
    let g = gpu();
    let mut reached = std::collections::BTreeSet::new();
    for (heads, kv_heads, head_dim, theta) in [(32, 8, 128, 1e6f32), (6, 1, 8, 1e6), (4, 2, 32, 1e4)] {
        let d = AttnDims { heads, kv_heads, head_dim };
        let (qd, kvd) = (d.q_dim(), d.kv_dim());
        let mut r = Rng(3 + heads as u64);
        let (bs, pages) = (16, 40);
        // Three sequences on disjoint, scattered pages (a page shared by two positions would
        // make the cache write a race): lengths 1, 37, 300.
        let tables: Vec<Vec<u32>> =
            vec![vec![39], (0..3).map(|i| 30 - i).collect(), (0..19).map(|i| i * 7 % 19).collect()];
        let lens = [1usize, 37, 300];
        // Fill the caches through the kernel: every position of every sequence as one step.
        let (mut positions, mut slots, mut seq_of) = (vec![], vec![], vec![]);
        for (s, (tb, &n)) in tables.iter().zip(&lens).enumerate() {
            for p in 0..n {
                positions.push(p as i32);
                slots.push((tb[p / bs] as usize * bs + p % bs) as i32);
                seq_of.push(s);
            }
        }
        let tt = positions.len();
        let qkv = r.vec(tt * (qd + 2 * kvd));
        let (qn, kn) = (r.vec(head_dim), r.vec(head_dim));
        let mut q_out = g.stream().alloc_zeros::<bf16>(tt * qd).unwrap();
        let mut kc = g.stream().alloc_zeros::<bf16>(pages * bs * kvd).unwrap();
        let mut vc = g.stream().alloc_zeros::<bf16>(pages * bs * kvd).unwrap();
        let (dqkv, dqn, dkn, dpos, dslots) =
            (up(&g, &qkv), up(&g, &qn), up(&g, &kn), up(&g, &positions), up(&g, &slots));
        let a = RopeKvArgs {
            qkv: &dqkv.as_view(),
            q_norm: &dqn.as_view(),
            k_norm: &dkn.as_view(),
            positions: &dpos.as_view(),
            slots: &dslots.as_view(),
            theta,
            eps: 1e-6,
        };
        ops::qk_norm_rope_kv_into(
            &g,
            d,
            &a,
            &mut q_out.as_view_mut(),
            &mut kc.as_view_mut(),
            &mut vc.as_view_mut(),
        )
        .unwrap();
        // CPU: per-head RMSNorm then RoPE, as the CPU backend does.
        let (mut q_ref, mut k_ref, mut v_ref) =
            (vec![0f32; tt * qd], vec![0f32; pages * bs * kvd], vec![0f32; pages * bs * kvd]);
        for i in 0..tt {
            let row = &qkv[i * (qd + 2 * kvd)..][..qd + 2 * kvd];
            let mut q = row[..qd].to_vec();
            let mut k = row[qd..qd + kvd].to_vec();
            rms_norm(&mut q, &qn, 1e-6);
            rms_norm(&mut k, &kn, 1e-6);
            q.chunks_exact_mut(head_dim).for_each(|h| rope(h, positions[i] as usize, theta));
            k.chunks_exact_mut(head_dim).for_each(|h| rope(h, positions[i] as usize, theta));
            q_ref[i * qd..][..qd].copy_from_slice(&q);
            let sl = slots[i] as usize;
            k_ref[sl * kvd..][..kvd].copy_from_slice(&k);
            v_ref[sl * kvd..][..kvd].copy_from_slice(&row[qd + kvd..]);
        }
        let tag = format!("h{heads}/kv{kv_heads}/d{head_dim}");
        // RoPE angles reach 300 rad: sin/cos implementations differ by ~1e-6 there.
        check(&format!("qk_norm_rope q ({tag}, bf16)"), &down_bf16(&g, &q_out), &q_ref, 1e-2, 5e-3);
        check(&format!("qk_norm_rope k cache ({tag}, bf16)"), &down_bf16(&g, &kc), &k_ref, 1e-2, 5e-3);
        check(&format!("v cache ({tag}, exact)"), &down_bf16(&g, &vc), &v_ref, 1e-6, 0.0);

        // Attention: the last row of seq 0 and 1 (decode-like) and every row of seq 2
        // (prefill-like, causal), from the bf16 q and caches the kernel just wrote.
        let (qb, kb, vb) = (down_bf16(&g, &q_out), down_bf16(&g, &kc), down_bf16(&g, &vc));
        let mut flat = vec![];
        let offs: Vec<i32> = tables
            .iter()
            .map(|tb| {
                let o = flat.len() as i32;
                flat.extend(tb.iter().map(|&p| p as i32));
                o
            })
            .collect();
        let rows: Vec<usize> =
            (0..tt).filter(|&i| seq_of[i] == 2 || positions[i] as usize + 1 == lens[seq_of[i]]).collect();
        let qrows: Vec<f32> = rows.iter().flat_map(|&i| qb[i * qd..][..qd].to_vec()).collect();
        let row_offs: Vec<i32> = rows.iter().map(|&i| offs[seq_of[i]]).collect();
        let ctx: Vec<i32> = rows.iter().map(|&i| positions[i] + 1).collect();
        let (dq, dt, dof, dctx) = (up_bf16(&g, &qrows), up(&g, &flat), up(&g, &row_offs), up(&g, &ctx));
        let pa = PagedAttnArgs {
            q: &dq.as_view(),
            k_cache: &kc.as_view(),
            v_cache: &vc.as_view(),
            tables: &dt.as_view(),
            table_offs: &dof.as_view(),
            ctx_lens: &dctx.as_view(),
            block_size: bs,
            settled: false,
        };
        let want = attention_reference((&qb, &kb, &vb), d, (&rows, &seq_of), &tables, bs, &ctx);
        // The split-context kernel over the same inputs, with one split (direct write), a
        // few (merged in a cluster), the count decode picks, and the most (splits longer
        // than short contexts, merged by the second kernel).
        for splits in
            [1, 3, ops::MAX_CLUSTER_SPLITS, ops::attention_splits(&g, rows.len(), kv_heads), ops::MAX_SPLITS]
        {
            let kernel = ops::attention_kernel(d, ops::uses_cluster(splits));
            reached.insert(kernel);
            let out = attend(&g, d, &pa, splits, qd);
            // The decode form, which reads the older positions' K/V before waiting on the
            // previous kernel (true here: the caches were written and downloaded above):
            // the same arithmetic, so the same bits.
            let settled = PagedAttnArgs { settled: true, ..pa };
            check(
                &format!("{kernel} settled ({tag}, {splits} splits) vs not (exact)"),
                &attend(&g, d, &settled, splits, qd),
                &out,
                1e-30,
                0.0,
            );
            // Outputs are averages of values in [-1, 1]: judge error against 0.05 + |want|.
            // The tensor-core kernels round P to bf16, as the prefill kernel below: its
            // bound.
            let floor = if kernel.starts_with("decode_attention_mma") { 0.5 } else { 5e-2 };
            check(&format!("{kernel} ({tag}, {splits} splits, bf16)"), &out, &want, floor, 5e-3);
        }
        // The tensor-core prefill kernel where it applies (head_dim 128). Its first block of
        // 16 rows holds rows of all three sequences (three passes over three tables). P is
        // rounded to bf16 for the P V product: each weight is off by up to 2^-9 of itself,
        // so an output may be off by 2^-9 * sum_p P |v| <= 2^-9 (|v| <= 1) before its own
        // bf16 rounding (2^-9 |want|), whatever the context length; short contexts come
        // close (H200, 2026-11-30: 6.5e-4 on a want of 0.0087). Bound: 2.5e-3 + 5e-3 |want|.
        if ops::prefill_attention_supported(d) {
            let mut o3 = g.stream().alloc_zeros::<bf16>(rows.len() * qd).unwrap();
            ops::prefill_attention_into(&g, d, &pa, &mut o3.as_view_mut()).unwrap();
            check(&format!("prefill_attention ({tag}, bf16 P)"), &down_bf16(&g, &o3), &want, 0.5, 5e-3);
        }
    }
    let every: std::collections::BTreeSet<&str> = [
        "decode_attention",
        "decode_attention_cluster",
        "decode_attention_d32",
        "decode_attention_mma",
        "decode_attention_mma_cluster",
    ]
    .into();
    assert_eq!(reached, every, "the geometries must reach every decode attention kernel");
}

/// Attention in f64 of query rows `rows` (flat token indices; `seq_of` their sequences)
/// over the bf16 values q, k, v the kernels read: row ri attends to positions 0..ctx[ri] of
/// its sequence's pages.
fn attention_reference(
    (qb, kb, vb): (&[f32], &[f32], &[f32]),
    d: AttnDims,
    (rows, seq_of): (&[usize], &[usize]),
    tables: &[Vec<u32>],
    bs: usize,
    ctx: &[i32],
) -> Vec<f32> {
    let (heads, kv_heads, head_dim) = (d.heads, d.kv_heads, d.head_dim);
    let (qd, kvd) = (d.q_dim(), d.kv_dim());
    let mut want = vec![0f32; rows.len() * qd];
    let scale = 1.0 / (head_dim as f64).sqrt();
    for (ri, &i) in rows.iter().enumerate() {
        let tb = &tables[seq_of[i]];
        for h in 0..heads {
            let kvh = h / (heads / kv_heads);
            let qv = &qb[i * qd + h * head_dim..][..head_dim];
            let slot = |p: usize| tb[p / bs] as usize * bs + p % bs;
            let sc: Vec<f64> = (0..ctx[ri] as usize)
                .map(|p| {
                    qv.iter()
                        .zip(&kb[slot(p) * kvd + kvh * head_dim..][..head_dim])
                        .map(|(a, b)| *a as f64 * *b as f64)
                        .sum::<f64>()
                        * scale
                })
                .collect();
            let mx = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = sc.iter().map(|s| (s - mx).exp()).sum();
            for dd in 0..head_dim {
                want[ri * qd + h * head_dim + dd] = (0..sc.len())
                    .map(|p| (sc[p] - mx).exp() / z * vb[slot(p) * kvd + kvh * head_dim + dd] as f64)
                    .sum::<f64>() as f32;
            }
        }
    }
    want
}

/// decode_attention_into on `g` over a fresh zeroed scratch, its output: allocated and read
/// back through g's own stream (a read on another GPU's stream would not wait).
fn attend(g: &kernels::Gpu, d: AttnDims, pa: &PagedAttnArgs<'_, '_>, splits: usize, qd: usize) -> Vec<f32> {
    let rows = pa.ctx_lens.len();
    let s = g.stream();
    let (na, nm) = ops::attention_partials_len(rows, d, splits);
    let mut acc = s.alloc_zeros::<f32>(na.max(1)).unwrap();
    let mut ml = s.alloc_zeros::<f32>(nm.max(1)).unwrap();
    let mut o = s.alloc_zeros::<bf16>(rows * qd).unwrap();
    let mut scratch = ops::SplitScratch { acc: acc.as_view_mut(), ml: ml.as_view_mut() };
    ops::decode_attention_into(g, d, pa, splits, &mut scratch, &mut o.as_view_mut()).unwrap();
    down_bf16(g, &o)
}

/// Tree attention (a speculative verify's) against a masked f64 reference, at one split
/// (direct write) and at several (partials merged by the second kernel): two 16-node
/// trees of different shapes on scattered pages, after 150 and 300 committed positions,
/// in one call (one block of 16 rows per tree). Row j of a tree sees the committed
/// positions and its ancestors and itself among the tree's nodes.
#[test]
#[ignore = "gpu"]
fn tree_attention_matches_a_masked_reference_at_every_split_count() {
    let g = gpu();
    let d = AttnDims { heads: 32, kv_heads: 8, head_dim: 128 };
    let (qd, kvd, bs, pages) = (d.q_dim(), d.kv_dim(), 16usize, 48usize);
    let mut r = Rng(71);
    // Parents per node (node 0 is the root, its own ancestor only): the seed's shape
    // (four children of the root, then chains and forks) and a chain.
    let shapes: [Vec<usize>; 2] = [
        vec![usize::MAX, 0, 0, 0, 0, 1, 1, 2, 3, 5, 5, 6, 7, 9, 10, 11],
        (0..16).map(|j| if j == 0 { usize::MAX } else { j - 1 }).collect(),
    ];
    let los = [150usize, 300];
    let tables: Vec<Vec<u32>> =
        vec![(0..11).map(|i| 47 - 2 * i).collect(), (0..20).map(|i| (i * 5 % 20) as u32 + 2).collect()];
    let kc_host = r.vec(pages * bs * kvd);
    let vc_host = r.vec(pages * bs * kvd);
    let (kc, vc) = (up_bf16(&g, &kc_host), up_bf16(&g, &vc_host));
    let (kb, vb) = (down_bf16(&g, &kc), down_bf16(&g, &vc));
    let q = up_bf16(&g, &r.vec(32 * qd));
    let qb = down_bf16(&g, &q);
    let (mut flat, mut offs, mut ctx, mut tree) = (vec![], vec![], vec![], vec![]);
    let mut visible: Vec<Vec<usize>> = vec![];
    for (s, parents) in shapes.iter().enumerate() {
        let off = flat.len() as i32;
        flat.extend(tables[s].iter().map(|&p| p as i32));
        let lo = los[s];
        for j in 0..16 {
            let (mut mask, mut at) = (0u64, j);
            while at != usize::MAX {
                mask |= 1 << at;
                at = parents[at];
            }
            offs.push(off);
            ctx.push((lo + j + 1) as i32);
            tree.extend([lo as i32, mask as u32 as i32, (mask >> 32) as u32 as i32]);
            let tb = &tables[s];
            let slot = |p: usize| tb[p / bs] as usize * bs + p % bs;
            visible.push((0..lo + 16).filter(|&p| p < lo || (mask >> (p - lo)) & 1 == 1).map(slot).collect());
        }
    }
    let scale = 1.0 / (d.head_dim as f64).sqrt();
    let mut want = vec![0f32; 32 * qd];
    for (row, slots) in visible.iter().enumerate() {
        for h in 0..d.heads {
            let kvh = h / (d.heads / d.kv_heads);
            let qv = &qb[row * qd + h * 128..][..128];
            let sc: Vec<f64> = slots
                .iter()
                .map(|&sl| {
                    qv.iter()
                        .zip(&kb[sl * kvd + kvh * 128..][..128])
                        .map(|(a, b)| *a as f64 * *b as f64)
                        .sum::<f64>()
                        * scale
                })
                .collect();
            let mx = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = sc.iter().map(|s| (s - mx).exp()).sum();
            for dd in 0..128 {
                want[row * qd + h * 128 + dd] = slots
                    .iter()
                    .zip(&sc)
                    .map(|(&sl, s)| (s - mx).exp() / z * vb[sl * kvd + kvh * 128 + dd] as f64)
                    .sum::<f64>() as f32;
            }
        }
    }
    let (dt, dof, dctx, dtree) = (up(&g, &flat), up(&g, &offs), up(&g, &ctx), up(&g, &tree));
    let pa = PagedAttnArgs {
        q: &q.as_view(),
        k_cache: &kc.as_view(),
        v_cache: &vc.as_view(),
        tables: &dt.as_view(),
        table_offs: &dof.as_view(),
        ctx_lens: &dctx.as_view(),
        block_size: bs,
        settled: false,
    };
    let engine_splits = ops::tree_attention_splits(&g, 32, d.kv_heads);
    for splits in [1, 2, 3, engine_splits, ops::MAX_TREE_SPLITS] {
        let s = g.stream();
        let (na, nm) = ops::attention_partials_len(32, d, splits);
        let (mut acc, mut ml) = (s.alloc_zeros::<f32>(na).unwrap(), s.alloc_zeros::<f32>(nm).unwrap());
        let mut o = s.alloc_zeros::<bf16>(32 * qd).unwrap();
        let mut scratch = ops::SplitScratch { acc: acc.as_view_mut(), ml: ml.as_view_mut() };
        ops::tree_attention_into(&g, d, &pa, &dtree.as_view(), (splits, &mut scratch), &mut o.as_view_mut())
            .unwrap();
        // P rounds to bf16 as in the prefill kernel: its bound (rope_kv_write_... above).
        check(&format!("tree_attention ({splits} splits, bf16 P)"), &down_bf16(&g, &o), &want, 0.5, 5e-3);
    }
}
