//! cuda_gemm's fixtures: the ring depths it runs every case at (one `Gpu` each), their
//! labels, and the e4m3 reference values and codes the FP8 cases are held to.

use super::Rng;
use kernels::{Gpu, GpuOptions, Tuning};

/// The skinny GEMMs' ring depths, each on its own `Gpu`, bf16 and FP8 alike: the defaults,
/// the shallowest (2 stages) and the deepest (8). Most test shapes have fewer tiles than
/// two per SM, so they run with `bulk_stages_small` / `fp8_bulk_stages_small`; the largest
/// have more tiles than the persistent grid has blocks, so its blocks loop.
pub fn skinny_gpus() -> Vec<Gpu> {
    let base = GpuOptions::from_env().unwrap();
    let d = base.tuning;
    [
        d,
        Tuning {
            bulk_stages: 2,
            bulk_stages_small: 2,
            bulk_stages_wide: 2,
            fp8_bulk_stages: 2,
            fp8_bulk_stages_small: 2,
            ..d
        },
        Tuning {
            bulk_stages: 8,
            bulk_stages_small: 8,
            bulk_stages_wide: 8,
            fp8_bulk_stages: 8,
            fp8_bulk_stages_small: 8,
            ..d
        },
    ]
    .into_iter()
    .map(|tuning| Gpu::new(&GpuOptions { tuning, ..base.clone() }).expect("GPU with kernels"))
    .collect()
}

/// A label for `g`'s rings: the bf16 and FP8 depths on small grids.
pub fn pipeline(g: &Gpu) -> String {
    let t = g.tuning();
    format!("rings x{}/{}", t.bulk_stages_small, t.fp8_bulk_stages_small)
}

/// e4m3fn code -> value, written out from the format (sign, 4 exponent bits with bias 7,
/// 3 mantissa bits; exponent 0 is subnormal): the reference the FP8 GEMM is held to.
pub fn e4m3_value(c: u8) -> f32 {
    let sign = if c & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((c >> 3) & 0xf) as i32, (c & 7) as f32);
    sign * if e == 0 { m / 8.0 * 2f32.powi(-6) } else { (1.0 + m / 8.0) * 2f32.powi(e - 7) }
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
