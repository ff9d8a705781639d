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

/// `y` rounded to the nearest integer, ties to even, for 0 <= y < 2^22: adding 2^23 leaves no
/// bits for a fraction, so the FPU's own round-to-nearest-even does the rounding, and taking
/// 2^23 away again is exact. (`f32::round_ties_even` is a libm call on baseline x86-64 and
/// was most of `encode`'s cost.)
fn round_small(y: f32) -> f32 {
    debug_assert!((0.0..4_194_304.0).contains(&y));
    (y + 8_388_608.0) - 8_388_608.0
}

/// All 256 decoded values, so that bulk decoding is a table lookup.
pub fn decode_table() -> [f32; 256] {
    std::array::from_fn(|i| decode(i as u8))
}

/// Nearest e4m3fn code to `x`, ties to even mantissa; magnitudes beyond 448 (infinities
/// included) saturate to +-448 rather than becoming NaN, because a scaled weight that rounds
/// past the range is a rounding artefact, not a missing value. NaN encodes to 0x7f.
///
/// Straight-line code (both roundings computed, the answer selected) so that the loops of
/// `encode_with_scales` vectorize: the branching form cost ~8 ns a value.
#[inline]
pub fn encode(x: f32) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 24) & 0x80) as u8;
    let a = f32::from_bits(bits & 0x7fff_ffff);
    // A normal result (a >= 2^-6): round a's 23-bit mantissa to 3 bits, ties to even, with
    // one integer add (a carry moves into the exponent by itself); the code is then the top
    // bits with the exponent rebiased from f32's 127 to e4m3's 7: (exp - 120) << 3 | mant.
    let ab = a.to_bits();
    let normal = (ab.wrapping_add(0x7_ffff + ((ab >> 20) & 1)) >> 20) as i32 - (120 << 3);
    // A subnormal result (a < 2^-6): the spacing is 2^-9 throughout, so the code is
    // round(a 2^9) in [0, 8], 8 being the smallest normal. (Clamped so that the rounding
    // stays exact where the other branch is the answer.)
    let subnormal = round_small((a * 512.0).min(16.0)) as i32;
    let code = if a >= MIN_NORMAL { normal } else { subnormal };
    // Past 448 the code would reach 0x7f (NaN) and beyond: saturate.
    let code = code.min(MAX_CODE as i32) as u8;
    if x.is_nan() { NAN_CODE } else { sign | code }
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
                // A group at a time, finiteness and magnitude in passes without early exits
                // (they vectorize); the error path finds the value it names.
                for (m, g) in amax.iter_mut().zip(row.chunks(BLOCK)) {
                    if g.iter().fold(false, |bad, w| bad | !w.is_finite()) {
                        let (j, w) = row.iter().enumerate().find(|(_, w)| !w.is_finite()).expect("one is");
                        return Err(format!("non-finite value {w} at [{}, {j}]", bi * BLOCK + r));
                    }
                    *m = g.iter().fold(*m, |m, w| if w.abs() > m { w.abs() } else { m });
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
                // A 128-column group at a time, its scale fixed: the loop vectorizes.
                for ((qg, wg), &scale) in qrow.chunks_mut(BLOCK).zip(wrow.chunks(BLOCK)).zip(scales) {
                    for (q, &w) in qg.iter_mut().zip(wg) {
                        *q = encode(w / scale);
                    }
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
                for ((og, qg), &scale) in orow.chunks_mut(BLOCK).zip(qrow.chunks(BLOCK)).zip(scales) {
                    for (o, &q) in og.iter_mut().zip(qg) {
                        *o = table[q as usize] * scale;
                    }
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
