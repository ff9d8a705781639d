//! Kernel timings at Qwen3-8B shapes (GPU machine only; prints, asserts nothing about
//! speed): `cargo test -p kernels --test gpu_timing -- --ignored --nocapture`.
//! Each op: 5 warm-up launches, then the median of 20 launches timed with CUDA events.
//! Inputs are zeros/garbage-free fills: timing does not depend on values here.

use kernels::cudarc::driver::{CudaSlice, sys};
use kernels::ops::{self, AttnDims, PagedAttnArgs};
use kernels::{Gpu, GpuOptions, bf16};

fn time_us(g: &Gpu, mut f: impl FnMut()) -> f32 {
    for _ in 0..5 {
        f();
    }
    let ev = || {
        g.ctx()
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .unwrap()
    };
    let mut t: Vec<f32> = (0..20)
        .map(|_| {
            let (a, b) = (ev(), ev());
            a.record(g.stream()).unwrap();
            f();
            b.record(g.stream()).unwrap();
            b.synchronize().unwrap();
            a.elapsed_ms(&b).unwrap() * 1e3
        })
        .collect();
    t.sort_by(f32::total_cmp);
    t[10]
}

#[test]
#[ignore = "gpu"]
fn qwen3_8b_step_kernel_times() {
    let g = Gpu::new(&GpuOptions::from_env()).unwrap();
    let s = g.stream().clone();
    // (name, n, k) per layer, and lm_head once.
    let shapes = [
        ("qkv", 6144usize, 4096usize),
        ("o_proj", 4096, 4096),
        ("gate_up", 24576, 4096),
        ("down", 4096, 12288),
        ("lm_head", 151_936, 4096),
    ];
    println!("| op | m | us | GB/s (weights) |");
    for m in [1usize, 2, 4, 8] {
        let mut layer_us = 0f32;
        for &(name, n, k) in &shapes {
            let w: CudaSlice<bf16> = s.alloc_zeros(n * k).unwrap();
            let x: CudaSlice<bf16> = s.alloc_zeros(m * k).unwrap();
            let mut y: CudaSlice<f32> = s.alloc_zeros(m * n).unwrap();
            let us = time_us(&g, || {
                ops::gemv_into(&g, &x.as_view(), &w.as_view(), n, k, &mut y.as_view_mut()).unwrap()
            });
            if name != "lm_head" {
                layer_us += us;
            }
            println!(
                "| gemv {name} {n}x{k} | {m} | {us:.1} | {:.0} |",
                (n * k * 2) as f32 / us / 1e3
            );
        }
        println!("| gemv, 36 layers | {m} | {:.0} | |", layer_us * 36.0);
    }
    for m in [4usize, 8, 232] {
        let mut layer_us = 0f32;
        for &(name, n, k) in &shapes {
            let w: CudaSlice<bf16> = s.alloc_zeros(n * k).unwrap();
            let x: CudaSlice<bf16> = s.alloc_zeros(m * k).unwrap();
            let mut y: CudaSlice<f32> = s.alloc_zeros(m * n).unwrap();
            let us = time_us(&g, || {
                ops::gemm_into(&g, &x.as_view(), &w.as_view(), n, k, &mut y.as_view_mut()).unwrap()
            });
            if name != "lm_head" {
                layer_us += us;
            }
            println!(
                "| cublas {name} {n}x{k} | {m} | {us:.1} | {:.0} |",
                (n * k * 2) as f32 / us / 1e3
            );
        }
        println!("| cublas, 36 layers | {m} | {:.0} | |", layer_us * 36.0);
    }
    let d = AttnDims {
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
    };
    let (bs, ctx) = (16usize, 452usize);
    for r in [1usize, 8] {
        let pages = r * ctx.div_ceil(bs);
        let kc: CudaSlice<bf16> = s.alloc_zeros(pages * bs * d.kv_dim()).unwrap();
        let vc: CudaSlice<bf16> = s.alloc_zeros(pages * bs * d.kv_dim()).unwrap();
        let q: CudaSlice<bf16> = s.alloc_zeros(r * d.q_dim()).unwrap();
        let tables: Vec<i32> = (0..pages as i32).collect();
        let offs: Vec<i32> = (0..r as i32).map(|i| i * ctx.div_ceil(bs) as i32).collect();
        let (t, o, c) = (
            s.clone_htod(&tables).unwrap(),
            s.clone_htod(&offs).unwrap(),
            s.clone_htod(&vec![ctx as i32; r]).unwrap(),
        );
        let mut out: CudaSlice<bf16> = s.alloc_zeros(r * d.q_dim()).unwrap();
        let a = PagedAttnArgs {
            q: &q.as_view(),
            k_cache: &kc.as_view(),
            v_cache: &vc.as_view(),
            tables: &t.as_view(),
            table_offs: &o.as_view(),
            ctx_lens: &c.as_view(),
            block_size: bs,
        };
        let us = time_us(&g, || {
            ops::paged_attention_into(&g, d, &a, &mut out.as_view_mut()).unwrap()
        });
        println!(
            "| paged_attention ctx {ctx} | {r} | {us:.1} | x36 = {:.0} us |",
            us * 36.0
        );
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
        let us = time_us(&g, || {
            ops::swiglu_into(&g, &gu.as_view(), 12288, &mut act.as_view_mut()).unwrap()
        });
        println!("| swiglu 12288 | {r} | {us:.1} | |");
    }
}
