//! f32 -> bf16 rounding to nearest, ties to even: the bits of half's `bf16::from_f32`,
//! without its data-dependent branch. On values whose low 16 bits are random (every
//! `random:` weight before rounding, every dequantized FP8 weight) that branch mispredicts
//! half the time; generating a random model took almost 4x as long with it
//! (engine/PERF-LOG.md step 87).

use half::bf16;

/// `x` rounded to the nearest bf16, ties to even; NaN stays NaN (quiet), as half gives it.
#[inline]
pub fn round_bf16(x: f32) -> bf16 {
    let b = x.to_bits();
    if x.is_nan() {
        // Never taken for weights, so never mispredicted; half's NaN bits.
        return bf16::from_bits(((b >> 16) | 0x0040) as u16);
    }
    // Adding 0x7fff rounds up exactly when the dropped half is above 0x8000; the kept
    // half's lowest bit breaks the tie at 0x8000 toward even. Overflow past the largest
    // finite value carries into the exponent and gives infinity, as it should.
    bf16::from_bits((b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16)
}

#[cfg(test)]
mod tests {
    use super::round_bf16;
    use half::bf16;

    /// The same bits as half's conversion: every exponent and sign with the dropped half's
    /// edge patterns (ties with either kept parity, just below and above them, zero, all
    /// ones), infinities and NaNs, and a stride through every other bit pattern.
    #[test]
    fn gives_halfs_bits_everywhere() {
        let lows = [0x0000u32, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff];
        let mut checked = 0u64;
        let mut check = |b: u32| {
            let x = f32::from_bits(b);
            assert_eq!(round_bf16(x).to_bits(), bf16::from_f32(x).to_bits(), "{b:#010x}");
            checked += 1;
        };
        for high in 0..=0xffffu32 {
            for &low in &lows {
                check(high << 16 | low);
            }
        }
        for b in (0..=u32::MAX).step_by(65_521) {
            check(b);
        }
        assert!(checked > 450_000);
    }
}
