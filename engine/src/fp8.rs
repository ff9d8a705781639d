//! float8_e4m3fn numbers and 128x128 block quantization of weight matrices, in the format of
//! DeepSeek-V3 and Qwen/Qwen3-8B-FP8.
//!
//! e4m3fn: 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, one NaN
//! pattern per sign (S.1111.111), so the largest finite value is 1.75 * 2^8 = 448. Exponent
//! field 0 holds subnormals m * 2^-9 (m = 1..7).
//!
//! Block format: a [rows, cols] matrix is cut into 128x128 blocks (the last ones partial);
//! block (i, j) stores `scale = amax / 448` (1.0 for an all-zero block) and every weight as
//! `q = e4m3(w / scale)`. The checkpoint calls the per-block tensor `weight_scale_inv`, but
//! it holds `scale` itself: dequantization is `w ~= decode(q) * weight_scale_inv[i, j]`, as
//! HF transformers' and vLLM's block-fp8 loaders compute it.

use rayon::prelude::*;

/// The largest finite e4m3fn value.
pub const E4M3_MAX: f32 = 448.0;
/// Positive code of the largest finite value (S.1111.110).
const MAX_CODE: u8 = 0x7e;
/// The code a NaN encodes to (positive NaN, as `torch.float8_e4m3fn` writes it).
pub const NAN_CODE: u8 = 0x7f;
/// The only block shape we read and write (Qwen3-8B-FP8's `weight_block_size`).
pub const BLOCK: usize = 128;

/// An FP8 weight matrix as the GPU consumes it: codes plus per-block scales.
#[derive(Debug, Clone, PartialEq)]
pub struct Fp8Weight {
    /// [rows, cols] row-major e4m3fn codes.
    pub bits: Vec<u8>,
    /// [ceil(rows / block.0), ceil(cols / block.1)] row-major; `w ~= decode(q) * scale_inv`.
    pub scale_inv: Vec<f32>,
    /// (rows, cols) of one block: always (128, 128) today.
    pub block: (usize, usize),
}

/// Exact value of one e4m3fn code (NaN for 0x7f / 0xff).
pub fn decode(code: u8) -> f32 {
    let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = ((code >> 3) & 0x0f) as i32;
    let man = (code & 0x07) as f32;
    let mag = match exp {
        0 => man * (-9f32).exp2(),
        15 if code & 0x07 == 7 => return f32::NAN,
        _ => (8.0 + man) * ((exp - 10) as f32).exp2(),
    };
    sign * mag
}

/// The smallest normal e4m3fn value, 2^-6.
const MIN_NORMAL: f32 = 0.015625;

/// 2^k for small k, built from its bits (libm's exp2f was most of the cost of quantizing).
fn pow2(k: i32) -> f32 {
    debug_assert!((-126..=127).contains(&k));
    f32::from_bits(((127 + k) as u32) << 23)
}

/// All 256 decoded values, so that bulk decoding is a table lookup.
pub fn decode_table() -> [f32; 256] {
    std::array::from_fn(|i| decode(i as u8))
}

/// Nearest e4m3fn code to `x`, ties to even mantissa; magnitudes beyond 448 (infinities
/// included) saturate to +-448 rather than becoming NaN, because a scaled weight that rounds
/// past the range is a rounding artefact, not a missing value. NaN encodes to 0x7f.
pub fn encode(x: f32) -> u8 {
    if x.is_nan() {
        return NAN_CODE;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs();
    if a >= E4M3_MAX {
        return sign | MAX_CODE;
    }
    // Binade of `a`: 2^e <= a < 2^(e+1). Below 2^-6 the spacing stays 2^-9 (subnormals).
    let e = if a >= MIN_NORMAL { ((a.to_bits() >> 23) & 0xff) as i32 - 127 } else { -6 };
    // a / spacing is exact (a power-of-two scaling of an f32 far from its limits), so the
    // only rounding is this one, to an integer q in [0, 16]: the mantissa with its hidden bit.
    let q = (a * pow2(3 - e)).round_ties_even() as i32;
    // For normals q is in [8, 16] and the code is (e + 7) << 3 | (q - 8); q == 16 carries
    // into the next binade by itself. For subnormals (e = -6, q in [0, 8]) the same formula
    // gives q itself: mantissa q with exponent field 0, and q == 8 is the smallest normal.
    // Past 448 the formula would reach 0x7f (NaN): clamp.
    let code = ((e + 7) << 3) + q - 8;
    sign | (code as u8).min(MAX_CODE)
}

/// Block scales of a [rows, cols] matrix: amax / 448 per block, 1.0 for all-zero blocks.
/// Errors on a non-finite value (a broken checkpoint: its block could not be scaled).
pub fn block_scales(data: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>, String> {
    assert_eq!(data.len(), rows * cols, "block_scales: data is not rows * cols");
    if data.is_empty() {
        return Ok(vec![]); // a zero-sized dimension has no blocks
    }
    let bc = cols.div_ceil(BLOCK);
    let per_block_row: Vec<Result<Vec<f32>, String>> = data
        .par_chunks(BLOCK * cols)
        .enumerate()
        .map(|(bi, chunk)| {
            let mut amax = vec![0f32; bc];
            for (r, row) in chunk.chunks(cols).enumerate() {
                for (j, &w) in row.iter().enumerate() {
                    if !w.is_finite() {
                        return Err(format!("non-finite value {w} at [{}, {j}]", bi * BLOCK + r));
                    }
                    let m = &mut amax[j / BLOCK];
                    *m = m.max(w.abs());
                }
            }
            Ok(amax.into_iter().map(|m| if m == 0.0 { 1.0 } else { m / E4M3_MAX }).collect())
        })
        .collect();
    let mut out = Vec::with_capacity(rows.div_ceil(BLOCK) * bc);
    for r in per_block_row {
        out.extend(r?);
    }
    Ok(out)
}

/// x [rows, cols] taken through e4m3 in place, each row's 128-column groups with their own
/// scale (amax / 448; an all-zero or non-finite group is left as it is): the values that
/// the activation quantization of vLLM and SGLang for block-FP8 checkpoints (W8A8,
/// dynamic per-token-group scales) feeds their FP8 GEMMs. The engine's GEMMs take bf16 x;
/// tests/fp8_accuracy.rs measures what this would cost in accuracy.
pub fn round_activations(x: &mut [f32], cols: usize) {
    assert!(cols > 0 && x.len().is_multiple_of(cols), "round_activations: x is not rows * cols");
    for group in x.chunks_mut(cols).flat_map(|row| row.chunks_mut(BLOCK)) {
        let amax = group.iter().fold(0f32, |m, v| m.max(v.abs()));
        if amax == 0.0 || !amax.is_finite() {
            continue;
        }
        let scale = amax / E4M3_MAX;
        for v in group {
            *v = decode(encode(*v / scale)) * scale;
        }
    }
}

/// Quantize a [rows, cols] matrix into 128x128-block FP8.
pub fn quantize(data: &[f32], rows: usize, cols: usize) -> Result<Fp8Weight, String> {
    let scale_inv = block_scales(data, rows, cols)?;
    let mut bits = vec![0u8; data.len()];
    encode_with_scales(data, cols, &scale_inv, &mut bits);
    Ok(Fp8Weight { bits, scale_inv, block: (BLOCK, BLOCK) })
}

/// `out[i] = encode(data[i] / scale[block of i])`, parallel over block rows.
pub fn encode_with_scales(data: &[f32], cols: usize, scale_inv: &[f32], out: &mut [u8]) {
    if data.is_empty() {
        return;
    }
    let bc = cols.div_ceil(BLOCK);
    let stride = BLOCK * cols;
    out.par_chunks_mut(stride).zip(data.par_chunks(stride)).zip(scale_inv.par_chunks(bc)).for_each(
        |((q, w), scales)| {
            for (qrow, wrow) in q.chunks_mut(cols).zip(w.chunks(cols)) {
                for (j, (q, &w)) in qrow.iter_mut().zip(wrow).enumerate() {
                    *q = encode(w / scales[j / BLOCK]);
                }
            }
        },
    );
}

/// `out = decode(bits) * scale_inv[block]` in f32 (the reference dequantization).
pub fn dequantize_into(w: &Fp8Weight, rows: usize, cols: usize, out: &mut [f32]) {
    assert_eq!(w.block, (BLOCK, BLOCK), "only 128x128 blocks are supported");
    assert_eq!(w.bits.len(), rows * cols, "dequantize: bits is not rows * cols");
    assert_eq!(out.len(), rows * cols, "dequantize: out is not rows * cols");
    if out.is_empty() {
        return;
    }
    let table = decode_table();
    let bc = cols.div_ceil(BLOCK);
    let stride = BLOCK * cols;
    out.par_chunks_mut(stride).zip(w.bits.par_chunks(stride)).zip(w.scale_inv.par_chunks(bc)).for_each(
        |((o, q), scales)| {
            for (orow, qrow) in o.chunks_mut(cols).zip(q.chunks(cols)) {
                for (j, (o, &q)) in orow.iter_mut().zip(qrow).enumerate() {
                    *o = table[q as usize] * scales[j / BLOCK];
                }
            }
        },
    );
}

pub fn dequantize(w: &Fp8Weight, rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0f32; rows * cols];
    dequantize_into(w, rows, cols, &mut out);
    out
}

/// Shape of the scale tensor of a [rows, cols] weight.
pub fn scale_shape(rows: usize, cols: usize) -> [usize; 2] {
    [rows.div_ceil(BLOCK), cols.div_ceil(BLOCK)]
}

#[cfg(test)]
mod tests;
