//! Every CUDA op against a CPU reference on fresh random inputs (GPU machine only:
//! `cargo test -p engine --test cuda_ops -- --ignored`).
//!
//! Inputs are bf16-representable, so the reference sees exactly what the kernel sees; what
//! remains is f32 summation order (~1e-6 relative over these lengths) and, where a kernel
//! writes bf16, one output rounding (2^-9 relative). Tolerances say which applies.

use engine::model::cpu::ops::{rms_norm, rope};
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, AttnDims, PagedAttnArgs, RopeKvArgs};
use kernels::{Gpu, GpuOptions, bf16};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        // splitmix64 -> uniform [-1, 1), rounded to bf16 so both sides see the same value
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let u = (z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
        bf16::from_f32(u).to_f32()
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
}

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions::from_env()).expect("GPU with kernels")
}
fn up_bf16(g: &Gpu, v: &[f32]) -> CudaSlice<bf16> {
    let b: Vec<bf16> = v.iter().map(|&x| bf16::from_f32(x)).collect();
    g.stream().clone_htod(&b).unwrap()
}
fn up<T: kernels::cudarc::driver::DeviceRepr>(g: &Gpu, v: &[T]) -> CudaSlice<T> {
    g.stream().clone_htod(v).unwrap()
}
fn down_bf16(g: &Gpu, s: &CudaSlice<bf16>) -> Vec<f32> {
    g.stream()
        .clone_dtoh(s)
        .unwrap()
        .iter()
        .map(|x| x.to_f32())
        .collect()
}
fn down<T: kernels::cudarc::driver::DeviceRepr>(g: &Gpu, s: &CudaSlice<T>) -> Vec<T> {
    g.stream().clone_dtoh(s).unwrap()
}

/// Max |a - b| / (|b| + floor), and asserts it stays under `tol`.
fn check(what: &str, a: &[f32], b: &[f32], floor: f32, tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let (mut worst, mut abs) = (0f32, 0f32);
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let e = (x - y).abs() / (y.abs() + floor);
        assert!(
            e <= tol,
            "{what}[{i}]: gpu {x} vs cpu {y} (rel {e:e} > {tol:e})"
        );
        worst = worst.max(e);
        abs = abs.max((x - y).abs());
    }
    eprintln!("{what:<40} max abs {abs:.3e}  max rel {worst:.3e}");
}

/// cuBLAS GEMM (decode at 4-8 rows and prefill) against the same f64 reference.
#[test]
#[ignore = "gpu"]
fn cublas_gemm_matches_f64_reference() {
    let g = gpu();
    assert!(
        ops::blas_available(&g),
        "libcublas must load on the GPU machine"
    );
    let mut r = Rng(9);
    for (m, n, k) in [
        (4, 37, 64),
        (8, 1000, 4096),
        (232, 300, 4096),
        (5, 257, 12288),
    ] {
        let (w, x) = (r.vec(n * k), r.vec(m * k));
        let mut y = g.stream().alloc_zeros::<f32>(m * n).unwrap();
        ops::gemm_into(
            &g,
            &up_bf16(&g, &x).as_view(),
            &up_bf16(&g, &w).as_view(),
            n,
            k,
            &mut y.as_view_mut(),
        )
        .unwrap();
        let got = down(&g, &y);
        let err: Vec<f32> = (0..m * n)
            .map(|i| {
                let (t, j) = (i / n, i % n);
                let (xs, ws) = (&x[t * k..][..k], &w[j * k..][..k]);
                let want: f64 = xs.iter().zip(ws).map(|(a, b)| *a as f64 * *b as f64).sum();
                let mag: f32 = xs.iter().zip(ws).map(|(a, b)| (a * b).abs()).sum();
                (got[i] - want as f32) / mag
            })
            .collect();
        check(
            &format!("cublas gemm m={m} n={n} k={k} (err / sum|xw|)"),
            &err,
            &vec![0.0; err.len()],
            1.0,
            1e-5,
        );
    }
}

#[test]
#[ignore = "gpu"]
fn embed_norms_swiglu_argmax_match_cpu() {
    let g = gpu();
    let mut r = Rng(2);
    let (vocab, hd, t) = (1000, 4096, 5);
    let table = r.vec(vocab * hd);
    let ids: Vec<u32> = vec![3, 999, 0, 3, 517];
    let mut x = g.stream().alloc_zeros::<f32>(t * hd).unwrap();
    ops::embed_gather_into(
        &g,
        &up(&g, &ids).as_view(),
        &up_bf16(&g, &table).as_view(),
        hd,
        &mut x.as_view_mut(),
    )
    .unwrap();
    let want: Vec<f32> = ids
        .iter()
        .flat_map(|&i| table[i as usize * hd..][..hd].to_vec())
        .collect();
    check("embed_gather (exact)", &down(&g, &x), &want, 1.0, 0.0);

    // add + RMSNorm: residual updated in f32 exactly; normed output rounded to bf16 once.
    let (xv, addv, w) = (r.vec(t * hd), r.vec(t * hd), r.vec(hd));
    let (mut dx, dadd, dw) = (up(&g, &xv), up(&g, &addv), up(&g, &w));
    let mut out = g.stream().alloc_zeros::<bf16>(t * hd).unwrap();
    ops::add_rmsnorm_into(
        &g,
        &mut dx.as_view_mut(),
        &dadd.as_view(),
        &dw.as_view(),
        1e-6,
        &mut out.as_view_mut(),
    )
    .unwrap();
    let mut sum: Vec<f32> = xv.iter().zip(&addv).map(|(a, b)| a + b).collect();
    check("add_rmsnorm residual", &down(&g, &dx), &sum, 1e-6, 1e-6);
    rms_norm(&mut sum, &w, 1e-6);
    check(
        "add_rmsnorm out (bf16)",
        &down_bf16(&g, &out),
        &sum,
        1e-3,
        5e-3,
    );
    let mut dx2 = up(&g, &xv);
    ops::rmsnorm_into(
        &g,
        &mut dx2.as_view_mut(),
        &dw.as_view(),
        1e-6,
        &mut out.as_view_mut(),
    )
    .unwrap();
    let mut plain = xv.clone();
    rms_norm(&mut plain, &w, 1e-6);
    check(
        "rmsnorm out (bf16)",
        &down_bf16(&g, &out),
        &plain,
        1e-3,
        5e-3,
    );

    let inter = 12288;
    let gu: Vec<f32> = r.vec(t * 2 * inter).iter().map(|v| v * 4.0).collect();
    let mut act = g.stream().alloc_zeros::<bf16>(t * inter).unwrap();
    ops::swiglu_into(&g, &up(&g, &gu).as_view(), inter, &mut act.as_view_mut()).unwrap();
    let want: Vec<f32> = (0..t * inter)
        .map(|i| {
            let (row, c) = (i / inter, i % inter);
            let (gv, uv) = (gu[row * 2 * inter + c], gu[row * 2 * inter + inter + c]);
            gv / (1.0 + (-gv).exp()) * uv
        })
        .collect();
    check("swiglu (bf16)", &down_bf16(&g, &act), &want, 1e-3, 5e-3);

    let v = 151_936;
    let mut logits = r.vec(3 * v);
    logits[v + 7] = 5.0;
    logits[v + 90_000] = 5.0; // tie: first wins
    logits[2 * v + v - 1] = 9.0;
    let mut am = g.stream().alloc_zeros::<u32>(3).unwrap();
    let mut keys = g
        .stream()
        .alloc_zeros::<u64>(3 * ops::ARGMAX_PARTS)
        .unwrap();
    ops::argmax_into(
        &g,
        &up(&g, &logits).as_view(),
        v,
        &mut keys.as_view_mut(),
        &mut am.as_view_mut(),
    )
    .unwrap();
    let want: Vec<u32> = logits.chunks(v).map(engine::sampling::argmax).collect();
    assert_eq!(down(&g, &am), want);
    assert_eq!(want[1..], [7, v as u32 - 1]);
    eprintln!("argmax_rows                              exact (ties -> first)");
}

/// Qwen3-8B's head geometry (32 q heads, 8 kv heads, head_dim 128) and the tiny MQA one.
#[test]
#[ignore = "gpu"]
fn rope_kv_write_and_split_attention_match_cpu() {
    let g = gpu();
    for (heads, kv_heads, head_dim, theta) in
        [(32, 8, 128, 1e6f32), (6, 1, 8, 1e6), (4, 2, 32, 1e4)]
    {
        let d = AttnDims {
            heads,
            kv_heads,
            head_dim,
        };
        let (qd, kvd) = (d.q_dim(), d.kv_dim());
        let mut r = Rng(3 + heads as u64);
        let (bs, pages) = (16, 40);
        // Three sequences on disjoint, scattered pages (a page shared by two positions would
        // make the cache write a race): lengths 1, 37, 300.
        let tables: Vec<Vec<u32>> = vec![
            vec![39],
            (0..3).map(|i| 30 - i).collect(),
            (0..19).map(|i| i * 7 % 19).collect(),
        ];
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
        let (dqkv, dqn, dkn, dpos, dslots) = (
            up(&g, &qkv),
            up(&g, &qn),
            up(&g, &kn),
            up(&g, &positions),
            up(&g, &slots),
        );
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
        let (mut q_ref, mut k_ref, mut v_ref) = (
            vec![0f32; tt * qd],
            vec![0f32; pages * bs * kvd],
            vec![0f32; pages * bs * kvd],
        );
        for i in 0..tt {
            let row = &qkv[i * (qd + 2 * kvd)..][..qd + 2 * kvd];
            let mut q = row[..qd].to_vec();
            let mut k = row[qd..qd + kvd].to_vec();
            rms_norm(&mut q, &qn, 1e-6);
            rms_norm(&mut k, &kn, 1e-6);
            q.chunks_exact_mut(head_dim)
                .for_each(|h| rope(h, positions[i] as usize, theta));
            k.chunks_exact_mut(head_dim)
                .for_each(|h| rope(h, positions[i] as usize, theta));
            q_ref[i * qd..][..qd].copy_from_slice(&q);
            let sl = slots[i] as usize;
            k_ref[sl * kvd..][..kvd].copy_from_slice(&k);
            v_ref[sl * kvd..][..kvd].copy_from_slice(&row[qd + kvd..]);
        }
        let tag = format!("h{heads}/kv{kv_heads}/d{head_dim}");
        // RoPE angles reach 300 rad: sin/cos implementations differ by ~1e-6 there.
        check(
            &format!("qk_norm_rope q ({tag}, bf16)"),
            &down_bf16(&g, &q_out),
            &q_ref,
            1e-2,
            5e-3,
        );
        check(
            &format!("qk_norm_rope k cache ({tag}, bf16)"),
            &down_bf16(&g, &kc),
            &k_ref,
            1e-2,
            5e-3,
        );
        check(
            &format!("v cache ({tag}, exact)"),
            &down_bf16(&g, &vc),
            &v_ref,
            1e-6,
            0.0,
        );

        // Attention: the last row of seq 0 and 1 (decode-like) and every row of seq 2
        // (prefill-like, causal), from the bf16 q and caches the kernel just wrote.
        let (qb, kb, vb) = (
            down_bf16(&g, &q_out),
            down_bf16(&g, &kc),
            down_bf16(&g, &vc),
        );
        let mut flat = vec![];
        let offs: Vec<i32> = tables
            .iter()
            .map(|tb| {
                let o = flat.len() as i32;
                flat.extend(tb.iter().map(|&p| p as i32));
                o
            })
            .collect();
        let rows: Vec<usize> = (0..tt)
            .filter(|&i| seq_of[i] == 2 || positions[i] as usize + 1 == lens[seq_of[i]])
            .collect();
        let qrows: Vec<f32> = rows
            .iter()
            .flat_map(|&i| qb[i * qd..][..qd].to_vec())
            .collect();
        let row_offs: Vec<i32> = rows.iter().map(|&i| offs[seq_of[i]]).collect();
        let ctx: Vec<i32> = rows.iter().map(|&i| positions[i] + 1).collect();
        let (dq, dt, dof, dctx) = (
            up_bf16(&g, &qrows),
            up(&g, &flat),
            up(&g, &row_offs),
            up(&g, &ctx),
        );
        let pa = PagedAttnArgs {
            q: &dq.as_view(),
            k_cache: &kc.as_view(),
            v_cache: &vc.as_view(),
            tables: &dt.as_view(),
            table_offs: &dof.as_view(),
            ctx_lens: &dctx.as_view(),
            block_size: bs,
        };
        // The split-context kernel over the same inputs, with one split (direct write), a
        // few, the count decode picks, and the most (splits longer than short contexts).
        let mut split_outs = vec![];
        for splits in [
            1,
            3,
            ops::attention_splits(rows.len(), kv_heads),
            ops::MAX_SPLITS,
        ] {
            let (na, nm) = ops::attention_partials_len(rows.len(), d, splits);
            let mut pacc = g.stream().alloc_zeros::<f32>(na.max(1)).unwrap();
            let mut pml = g.stream().alloc_zeros::<f32>(nm.max(1)).unwrap();
            let mut o2 = g.stream().alloc_zeros::<bf16>(rows.len() * qd).unwrap();
            ops::decode_attention_into(
                &g,
                d,
                &pa,
                splits,
                &mut pacc.as_view_mut(),
                &mut pml.as_view_mut(),
                &mut o2.as_view_mut(),
            )
            .unwrap();
            split_outs.push((splits, down_bf16(&g, &o2)));
        }
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
                        .map(|p| {
                            (sc[p] - mx).exp() / z * vb[slot(p) * kvd + kvh * head_dim + dd] as f64
                        })
                        .sum::<f64>()
                        as f32;
                }
            }
        }
        // Outputs are averages of values in [-1, 1]: judge error against 0.05 + |want|.
        for (splits, got) in &split_outs {
            check(
                &format!("decode_attention ({tag}, {splits} splits, bf16)"),
                got,
                &want,
                5e-2,
                5e-3,
            );
        }
    }
}

/// e4m3fn code -> value, written out from the format (sign, 4 exponent bits with bias 7,
/// 3 mantissa bits; exponent 0 is subnormal): the reference the FP8 GEMM is held to.
fn e4m3_value(c: u8) -> f32 {
    let sign = if c & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((c >> 3) & 0xf) as i32, (c & 7) as f32);
    sign * if e == 0 {
        m / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - 7)
    }
}

/// Tensor-core skinny GEMM, bf16 and FP8 block-scaled weights, against f64 for every row
/// count, including shapes whose n is not a multiple of the 16-row tile and k not of the
/// 32/64-k chunk.
#[test]
#[ignore = "gpu"]
fn skinny_gemm_matches_f64_reference_for_every_row_count() {
    let g = gpu();
    let mut r = Rng(11);
    for (n, k) in [(37, 64), (300, 208), (1000, 4096), (256, 12288)] {
        let w = r.vec(n * k);
        let dw = up_bf16(&g, &w);
        // FP8: random codes (no NaN: 0x7f / 0xff) and positive block scales.
        let codes: Vec<u8> = (0..n * k)
            .map(|_| {
                let c = ((r.next() + 1.0) * 127.99) as u8;
                if c & 0x7f == 0x7f { c - 1 } else { c }
            })
            .collect();
        // Scales per 128 rows (the checkpoint layout) and per row (fused tiny projections).
        let sc = k.div_ceil(128);
        let scaled = |rows_per: usize, r: &mut Rng| {
            let s: Vec<f32> = (0..n.div_ceil(rows_per) * sc)
                .map(|_| (r.next().abs() + 0.1) / 64.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| e4m3_value(codes[i]) * s[(i / k / rows_per) * sc + (i % k) / 128])
                .collect();
            (s, w)
        };
        let (s128, w128) = scaled(128, &mut r);
        let (s1, w1) = scaled(1, &mut r);
        let dcodes = up(&g, &codes);
        let (ds128, ds1) = (up(&g, &s128), up(&g, &s1));
        let fp8 = |s: &CudaSlice<f32>, rows: usize| (s.clone(), rows);
        let variants = [
            ("bf16", &w, None),
            ("fp8/128 rows", &w128, Some(fp8(&ds128, 128))),
            ("fp8/1 row", &w1, Some(fp8(&ds1, 1))),
        ];
        // The prefill path's dequantization: exactly code * scale rounded once to bf16.
        for (what, wref, f) in &variants {
            let Some((ds, rows)) = f else { continue };
            let mut out = g.stream().alloc_zeros::<bf16>(n * k).unwrap();
            let m8 = ops::Fp8Matrix {
                codes: &dcodes.as_view(),
                scale_inv: &ds.as_view(),
                scale_rows: *rows,
                n,
                k,
            };
            ops::fp8_dequant_into(&g, &m8, &mut out.as_view_mut()).unwrap();
            let want: Vec<f32> = wref.iter().map(|&v| bf16::from_f32(v).to_f32()).collect();
            check(
                &format!("fp8_dequant {what} {n}x{k} (exact)"),
                &down_bf16(&g, &out),
                &want,
                1e-30,
                0.0,
            );
        }
        for m in 1..=8 {
            let x = r.vec(m * k);
            let dx = up_bf16(&g, &x);
            for (kind, wref, f) in &variants {
                let mut y = g.stream().alloc_zeros::<f32>(m * n).unwrap();
                match f {
                    None => ops::skinny_gemm_into(
                        &g,
                        &dx.as_view(),
                        &dw.as_view(),
                        n,
                        k,
                        &mut y.as_view_mut(),
                    ),
                    Some(_) if k % 16 != 0 => continue,
                    Some((ds, rows)) => ops::skinny_gemm_fp8_into(
                        &g,
                        &dx.as_view(),
                        &ops::Fp8Matrix {
                            codes: &dcodes.as_view(),
                            scale_inv: &ds.as_view(),
                            scale_rows: *rows,
                            n,
                            k,
                        },
                        &mut y.as_view_mut(),
                    ),
                }
                .unwrap();
                let got = down(&g, &y);
                let mut err = vec![0f32; m * n];
                for t in 0..m {
                    for j in 0..n {
                        let (xs, ws) = (&x[t * k..][..k], &wref[j * k..][..k]);
                        let want: f64 = xs.iter().zip(ws).map(|(a, b)| *a as f64 * *b as f64).sum();
                        let mag: f64 = xs
                            .iter()
                            .zip(ws)
                            .map(|(a, b)| (*a as f64 * *b as f64).abs())
                            .sum();
                        err[t * n + j] = ((got[t * n + j] as f64 - want) / mag.max(1e-30)) as f32;
                    }
                }
                check(
                    &format!("skinny {kind} m={m} n={n} k={k} (err / sum|xw|)"),
                    &err,
                    &vec![0.0; err.len()],
                    1.0,
                    1e-5,
                );
            }
        }
    }
}
