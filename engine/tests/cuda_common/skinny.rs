//! cuda_gemm's fixtures: the skinny GEMM pipelines it runs every case on (one `Gpu` each),
//! their labels, and the e4m3 reference values and codes the FP8 cases are held to.

use super::Rng;
use kernels::{Gpu, GpuOptions, Tuning};

/// The skinny GEMMs' two pipelines, each on its own `Gpu`, bf16 and FP8 alike: register,
/// and bulk-copy at the default ring depth, at the shallowest, persistent
/// (`bulk_persistent`), and with FP8's x staged in shared memory wherever it fits
/// (`x_smem_kb`, 0 in the others), one-tile and persistent, and bf16 at one row as fat blocks
/// (`bf16_fat`: x staged once per SM for several rings). Most test shapes have fewer tiles than two per SM, so they run with
/// `bulk_stages_small` / `fp8_bulk_stages_small` (the label names the bf16 depth); the
/// largest have more tiles than the persistent grid has blocks, so its blocks loop.
pub fn skinny_gpus() -> Vec<Gpu> {
    let base = GpuOptions::from_env().unwrap();
    let (small, small8) = (
        base.tuning.bulk_stages_small,
        base.tuning.fp8_bulk_stages_small,
    );
    [
        (false, small, small8, false, 0, false),
        (true, small, small8, false, 0, false),
        (true, 2, 2, false, 0, false),
        (true, small, small8, true, 0, false),
        (true, small, small8, false, 227, false),
        (true, small, small8, true, 227, false),
        (true, small, small8, true, 0, true),
    ]
    .into_iter()
    .map(
        |(bulk, bulk_stages_small, fp8_bulk_stages_small, bulk_persistent, x_smem_kb, bf16_fat)| {
            let tuning = Tuning {
                bf16_fat: if bf16_fat {
                    kernels::FatBlocks::All
                } else {
                    kernels::FatBlocks::Off
                },
                skinny_bulk_bf16: bulk,
                skinny_bulk_fp8: bulk,
                bulk_stages_small,
                fp8_bulk_stages_small,
                bulk_persistent,
                x_smem_kb,
                // FP8 persistent at every row count, not only from the default's 2.
                fp8_persistent_rows: 1,
                ..base.tuning
            };
            Gpu::new(&GpuOptions {
                tuning,
                ..base.clone()
            })
            .expect("GPU with kernels")
        },
    )
    .collect()
}

pub fn pipeline(g: &Gpu) -> String {
    let t = g.tuning();
    if t.skinny_bulk_bf16 {
        let persistent = if t.bulk_persistent { " persistent" } else { "" };
        let xs = if t.x_smem_kb > 0 { " x-smem" } else { "" };
        let fat = if t.bf16_fat == kernels::FatBlocks::All {
            " fat (bf16, 1 row)"
        } else {
            ""
        };
        format!("bulk x{}{persistent}{xs}{fat}", t.bulk_stages_small)
    } else {
        "regs".to_string()
    }
}

/// e4m3fn code -> value, written out from the format (sign, 4 exponent bits with bias 7,
/// 3 mantissa bits; exponent 0 is subnormal): the reference the FP8 GEMM is held to.
pub fn e4m3_value(c: u8) -> f32 {
    let sign = if c & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((c >> 3) & 0xf) as i32, (c & 7) as f32);
    sign * if e == 0 {
        m / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - 7)
    }
}

/// `len` random e4m3fn codes over every value but NaN (0x7f / 0xff), subnormals included.
pub fn random_e4m3_codes(r: &mut Rng, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            let c = ((r.next() + 1.0) * 127.99) as u8;
            if c & 0x7f == 0x7f { c - 1 } else { c }
        })
        .collect()
}
