use super::*;

/// Positive finite codes in increasing order: 0x00..=0x7e.
fn finite_codes() -> impl Iterator<Item = u8> {
    0u8..=MAX_CODE
}

/// Encoding by exhaustive search: the nearest finite code, ties to the even code (even
/// mantissa), magnitudes past 448 saturate. Independent of `encode`'s bit arithmetic.
fn brute_force(x: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs() as f64;
    let mut best = 0u8;
    for c in finite_codes() {
        let (d, db) = ((decode(c) as f64 - a).abs(), (decode(best) as f64 - a).abs());
        if d < db || (d == db && c % 2 == 0) {
            best = c;
        }
    }
    sign | best
}

#[test]
fn decodes_known_values() {
    let cases: [(u8, f32); 12] = [
        (0x00, 0.0),
        (0x01, 2f32.powi(-9)),
        (0x07, 7.0 * 2f32.powi(-9)),
        (0x08, 2f32.powi(-6)),
        (0x30, 0.5),
        (0x38, 1.0),
        (0x39, 1.125),
        (0x40, 2.0),
        (0x77, 240.0),
        (0x7e, 448.0),
        (0xb8, -1.0),
        (0xfe, -448.0),
    ];
    for (code, v) in cases {
        assert_eq!(decode(code), v, "{code:#04x}");
    }
    assert!(decode(0x7f).is_nan() && decode(0xff).is_nan());
    assert!(decode(0x80) == 0.0 && decode(0x80).is_sign_negative());
    // Every other 0x.f pattern (exponent field 15) is a normal number, unlike IEEE e4m3.
    assert_eq!(decode(0x78), 256.0);
}

#[test]
fn every_code_round_trips() {
    for c in 0..=255u8 {
        if c & 0x7f == NAN_CODE {
            continue;
        }
        assert_eq!(encode(decode(c)), c, "{c:#04x} = {}", decode(c));
    }
    assert_eq!(encode(f32::NAN), NAN_CODE);
    assert_eq!(encode(-f32::NAN), NAN_CODE);
}

#[test]
fn positive_codes_are_strictly_increasing() {
    let v: Vec<f32> = finite_codes().map(decode).collect();
    assert!(v.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(v.len(), 127);
}

/// Midpoints between neighbours round to the even code; one f32 ulp either side rounds to
/// the nearer one. Covers subnormals, the subnormal/normal seam and every binade.
#[test]
fn midpoints_round_to_even() {
    for c in 0..MAX_CODE {
        let (lo, hi) = (decode(c), decode(c + 1));
        // Both have at most 4 significant bits, so the midpoint is exact in f32.
        let mid = (lo + hi) / 2.0;
        let even = if c % 2 == 0 { c } else { c + 1 };
        for sign in [0u8, 0x80] {
            let s = if sign == 0 { 1.0 } else { -1.0 };
            assert_eq!(encode(s * mid), sign | even, "mid of {c:#04x}: {mid}");
            assert_eq!(encode(s * mid.next_up()), sign | (c + 1), "above {mid}");
            assert_eq!(encode(s * mid.next_down()), sign | c, "below {mid}");
        }
    }
}

#[test]
fn saturates_at_448() {
    for x in [448.0, 448.5, 463.9, 464.0, 464.1, 480.0, 1e9, f32::MAX, f32::INFINITY] {
        assert_eq!(encode(x), 0x7e, "{x}");
        assert_eq!(encode(-x), 0xfe, "-{x}");
    }
    assert_eq!(encode(447.0), 0x7e);
    assert_eq!(encode(431.0), 0x7d); // 416 .. 448: midpoint 432
}

#[test]
fn subnormals() {
    let q = 2f32.powi(-9);
    assert_eq!(encode(q), 0x01);
    assert_eq!(encode(q / 2.0), 0x00); // tie with 0: even
    assert_eq!(encode((q / 2.0).next_up()), 0x01);
    assert_eq!(encode(1.5 * q), 0x02); // tie between 1 and 2: even
    assert_eq!(encode(2.5 * q), 0x02); // tie between 2 and 3: even
    assert_eq!(encode(7.5 * q), 0x08); // tie between 7 and the smallest normal
    assert_eq!(encode(f32::from_bits(1)), 0x00); // f32 subnormals underflow to zero
    assert_eq!(encode(-f32::from_bits(1)), 0x80);
    assert_eq!(encode(-3.0 * q), 0x83);
}

/// Pseudo-random values over every binade e4m3 touches (and beyond) agree with exhaustive
/// search.
#[test]
fn matches_brute_force_on_random_values() {
    let mut s = 0x1234_5678_9abc_def0u64;
    for _ in 0..100_000 {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mant = ((s >> 40) as f32) / (1u64 << 24) as f32 + 1.0;
        let exp = ((s >> 20) % 26) as i32 - 14; // 2^-14 .. 2^11
        let neg = (s >> 10) & 1 == 1;
        let x = if neg { -1.0 } else { 1.0 } * mant * 2f32.powi(exp);
        assert_eq!(encode(x), brute_force(x), "{x}");
    }
}

/// A matrix with partial blocks on both edges, an all-zero block and a large outlier.
fn test_matrix(rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols)
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            if r < 128 && (128..256).contains(&c) {
                0.0 // block (0, 1) is all zero
            } else if r == 200 && c == 5 {
                37.0
            } else {
                (((i * 7919) % 1009) as f32 / 504.5 - 1.0) * 0.05
            }
        })
        .collect()
}

#[test]
fn block_quantization_layout_and_error() {
    let (rows, cols) = (300, 260);
    let w = test_matrix(rows, cols);
    let q = quantize(&w, rows, cols).unwrap();
    assert_eq!(scale_shape(rows, cols), [3, 3]);
    assert_eq!(q.scale_inv.len(), 9);
    assert_eq!(q.block, (128, 128));
    assert_eq!(q.scale_inv[1], 1.0, "all-zero block gets scale 1");
    assert_eq!(q.scale_inv[3], 37.0 / 448.0, "outlier sets its block's scale");
    for (i, (&x, &code)) in w.iter().zip(&q.bits).enumerate() {
        let s = q.scale_inv[(i / cols / 128) * 3 + (i % cols) / 128];
        assert_eq!(code, encode(x / s), "element {i}");
    }
    // The block maximum maps to +-448 exactly.
    assert_eq!(q.bits[200 * cols + 5], 0x7e);
    let d = dequantize(&q, rows, cols);
    for (i, (&x, &y)) in w.iter().zip(&d).enumerate() {
        let s = q.scale_inv[(i / cols / 128) * 3 + (i % cols) / 128];
        // Half a unit in the last place: 2^-4 relative for normals, 2^-10 * scale below.
        let bound = (x.abs() / 16.0).max(s * 2f32.powi(-10)) * (1.0 + 1e-6);
        assert!((x - y).abs() <= bound, "element {i}: {x} -> {y}");
    }
}

#[test]
fn non_finite_weights_are_an_error() {
    let mut w = vec![0.5f32; 4 * 4];
    w[6] = f32::NAN;
    let err = quantize(&w, 4, 4).unwrap_err();
    assert!(err.contains("[1, 2]"), "{err}");
    w[6] = f32::INFINITY;
    assert!(quantize(&w, 4, 4).is_err());
}

#[test]
fn dequantize_is_decode_times_scale() {
    let (rows, cols) = (130, 129);
    let w = test_matrix(rows, cols);
    let q = quantize(&w, rows, cols).unwrap();
    let d = dequantize(&q, rows, cols);
    for i in [0, 128, 129, 128 * cols, rows * cols - 1] {
        let s = q.scale_inv[(i / cols / 128) * 2 + (i % cols) / 128];
        assert_eq!(d[i], decode(q.bits[i]) * s);
    }
    // Re-quantizing the dequantized matrix reproduces the codes: each block's maximum is
    // 448 * scale again, and d / scale lands within an f32 ulp or two of a code's value,
    // far from any rounding midpoint.
    assert_eq!(quantize(&d, rows, cols).unwrap().bits, q.bits);
}

#[test]
fn activations_round_per_row_and_group_of_128() {
    let (rows, cols) = (3, 300);
    let x = test_matrix(rows, cols);
    let mut y = x.clone();
    round_activations(&mut y, cols);
    for (r, (xr, yr)) in x.chunks(cols).zip(y.chunks(cols)).enumerate() {
        for (g, (xg, yg)) in xr.chunks(BLOCK).zip(yr.chunks(BLOCK)).enumerate() {
            let amax = xg.iter().fold(0f32, |m, v| m.max(v.abs()));
            if amax == 0.0 {
                assert!(yg.iter().all(|&v| v == 0.0), "row {r} group {g}: zeros stay");
                continue;
            }
            let s = amax / E4M3_MAX;
            // The group's largest value is 448 * scale: exact, give or take the division.
            let i = xg.iter().position(|v| v.abs() == amax).unwrap();
            assert!((yg[i] - xg[i]).abs() <= amax * 1e-6, "row {r} group {g}");
            for (j, (&a, &b)) in xg.iter().zip(yg).enumerate() {
                // Half an ulp of e4m3 (1/16 relative), or of its subnormal spacing.
                let bound = (a.abs() / 16.0).max(s * 2f32.powi(-10)) * (1.0 + 1e-5);
                assert!((a - b).abs() <= bound, "row {r} group {g} [{j}]: {a} -> {b}");
                assert_eq!(b, decode(encode(a / s)) * s, "row {r} group {g} [{j}]");
            }
        }
    }
    // Each group has its own scale: a huge value in one leaves its neighbours' precision.
    let mut z = vec![0.01f32; 2 * BLOCK];
    z[0] = 1e6;
    round_activations(&mut z, 2 * BLOCK);
    assert!((z[BLOCK + 1] - 0.01).abs() <= 0.01 * 1e-6, "{}", z[BLOCK + 1]);
    // ... while the first group's 0.01s fall below its smallest step (1e6 / 448 * 2^-9).
    assert_eq!(z[1], 0.0);
    // Zero groups stay zero.
    let mut zeros = vec![0f32; BLOCK];
    round_activations(&mut zeros, BLOCK);
    assert!(zeros.iter().all(|&v| v == 0.0));
}
