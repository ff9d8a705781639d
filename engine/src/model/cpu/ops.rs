//! f32 building blocks of the CPU reference forward: linear layers, RMSNorm, RoPE, SwiGLU.

use crate::weights::Mat;
use rayon::prelude::*;

/// y[t, :] = x[t, :] @ w^T for `t in 0..rows`; `w` is [out, in] (HF layout).
/// Few rows (decode) use a row-parallel dot-product GEMV that streams each weight row once;
/// many rows (prefill) use matrixmultiply's packed, threaded SGEMM.
pub fn linear(x: &[f32], rows: usize, w: &Mat) -> Vec<f32> {
    let (n, k) = (w.rows, w.cols);
    debug_assert_eq!(x.len(), rows * k);
    let mut y = vec![0f32; rows * n];
    if rows == 0 {
        return y;
    }
    if rows <= 4 {
        // Output-major layout while computing, so each task owns a contiguous slice.
        let mut yt = vec![0f32; n * rows];
        yt.par_chunks_mut(rows * 256).enumerate().for_each(|(chunk, out)| {
            for (jj, o) in out.chunks_mut(rows).enumerate() {
                let wrow = &w.data[(chunk * 256 + jj) * k..][..k];
                for (t, dst) in o.iter_mut().enumerate() {
                    *dst = dot(wrow, &x[t * k..(t + 1) * k]);
                }
            }
        });
        for j in 0..n {
            for t in 0..rows {
                y[t * n + j] = yt[j * rows + t];
            }
        }
    } else {
        // SAFETY: the slices cover exactly the strided ranges described to sgemm.
        unsafe {
            matrixmultiply::sgemm(
                rows,
                k,
                n,
                1.0,
                x.as_ptr(),
                k as isize,
                1,
                w.data.as_ptr(),
                1,
                k as isize,
                0.0,
                y.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    }
    y
}

/// Dot product with 8 independent accumulators so LLVM vectorizes it.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// RMSNorm of each `dim`-sized row of `x` in place: x * rsqrt(mean(x^2) + eps) * w.
pub fn rms_norm(x: &mut [f32], w: &[f32], eps: f32) {
    let dim = w.len();
    for row in x.chunks_exact_mut(dim) {
        let ms = row.iter().map(|v| v * v).sum::<f32>() / dim as f32;
        let r = 1.0 / (ms + eps).sqrt();
        for (v, g) in row.iter_mut().zip(w) {
            *v = *v * r * g;
        }
    }
}

/// RoPE in HF's rotate-half convention on one head vector at `pos`. inv_freq and angle are
/// computed in f32 the way transformers does, so positions far out round the same way.
pub fn rope(head: &mut [f32], pos: usize, theta: f32) {
    let d = head.len();
    let half = d / 2;
    for i in 0..half {
        let inv_freq = 1.0 / theta.powf((2 * i) as f32 / d as f32);
        let angle = pos as f32 * inv_freq;
        let (sin, cos) = angle.sin_cos();
        let (a, b) = (head[i], head[i + half]);
        head[i] = a * cos - b * sin;
        head[i + half] = b * cos + a * sin;
    }
}

/// gate <- silu(gate) * up, elementwise.
pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + (-*g).exp()) * u;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f32], rows: usize, w: &Mat) -> Vec<f32> {
        let mut y = vec![0f32; rows * w.rows];
        for t in 0..rows {
            for j in 0..w.rows {
                y[t * w.rows + j] = (0..w.cols)
                    .map(|i| (x[t * w.cols + i] as f64) * (w.data[j * w.cols + i] as f64))
                    .sum::<f64>() as f32;
            }
        }
        y
    }

    #[test]
    fn linear_paths_agree_with_naive() {
        let w = Mat {
            rows: 300,
            cols: 37,
            data: (0..300 * 37).map(|i| ((i * 7919) % 101) as f32 / 50.0 - 1.0).collect(),
            fp8: None,
        };
        for rows in [0, 1, 3, 4, 5, 9] {
            let x: Vec<f32> = (0..rows * 37).map(|i| ((i * 31) % 17) as f32 / 8.0 - 1.0).collect();
            let (a, b) = (linear(&x, rows, &w), naive(&x, rows, &w));
            for (p, q) in a.iter().zip(&b) {
                assert!((p - q).abs() < 1e-4, "rows {rows}: {p} vs {q}");
            }
        }
    }

    #[test]
    fn rope_rotates_pairs_and_keeps_norm() {
        let mut h = vec![1.0, 2.0, 3.0, 4.0];
        rope(&mut h, 0, 10000.0);
        assert_eq!(h, vec![1.0, 2.0, 3.0, 4.0]);
        rope(&mut h, 5, 10000.0);
        // pair (0, 2) rotates by 5 rad: (1, 3) -> (cos5 - 3 sin5, 3 cos5 + sin5)
        assert!((h[0] - (5f32.cos() - 3.0 * 5f32.sin())).abs() < 1e-5);
        let n: f32 = h.iter().map(|v| v * v).sum();
        assert!((n - 30.0).abs() < 1e-4);
    }
}
