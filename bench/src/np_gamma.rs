//! numpy's legacy `RandomState.gamma` (what `np.random.seed(s); np.random.gamma(k, theta)`
//! runs): Marsaglia-Tsang for shape > 1 with the polar-method Gaussian (which caches its
//! second value), Johnk-style rejection for shape < 1, `-log(1-U)` for shape == 1.
//! vLLM draws its request-rate gaps this way, so the same seed gives the same schedule.

use crate::mt19937::Mt19937;

pub struct LegacyRandomState {
    mt: Mt19937,
    cached_gauss: Option<f64>,
}

impl LegacyRandomState {
    /// `np.random.seed(seed)` for an integer seed (must fit in 32 bits, as numpy demands).
    pub fn seeded(seed: u32) -> Self {
        LegacyRandomState { mt: Mt19937::new_genrand(seed), cached_gauss: None }
    }

    fn double(&mut self) -> f64 {
        self.mt.next_f64()
    }

    fn gauss(&mut self) -> f64 {
        if let Some(g) = self.cached_gauss.take() {
            return g;
        }
        loop {
            let x1 = 2.0 * self.double() - 1.0;
            let x2 = 2.0 * self.double() - 1.0;
            let r2 = x1 * x1 + x2 * x2;
            if r2 < 1.0 && r2 != 0.0 {
                let f = (-2.0 * r2.ln() / r2).sqrt();
                self.cached_gauss = Some(f * x1);
                return f * x2;
            }
        }
    }

    fn standard_exponential(&mut self) -> f64 {
        -(1.0 - self.double()).ln()
    }

    fn standard_gamma(&mut self, shape: f64) -> f64 {
        if shape == 1.0 {
            return self.standard_exponential();
        }
        if shape == 0.0 {
            return 0.0;
        }
        if shape < 1.0 {
            loop {
                let u = self.double();
                let v = self.standard_exponential();
                if u <= 1.0 - shape {
                    let x = u.powf(1.0 / shape);
                    if x <= v {
                        return x;
                    }
                } else {
                    let y = -((1.0 - u) / shape).ln();
                    let x = (1.0 - shape + shape * y).powf(1.0 / shape);
                    if x <= v + y {
                        return x;
                    }
                }
            }
        }
        let b = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * b).sqrt();
        loop {
            let (mut x, mut v);
            loop {
                x = self.gauss();
                v = 1.0 + c * x;
                if v > 0.0 {
                    break;
                }
            }
            v = v * v * v;
            let u = self.double();
            if u < 1.0 - 0.0331 * (x * x) * (x * x) {
                return b * v;
            }
            if u.ln() < 0.5 * x * x + b * (1.0 - v + v.ln()) {
                return b * v;
            }
        }
    }

    /// `np.random.gamma(shape, scale)`.
    pub fn gamma(&mut self, shape: f64, scale: f64) -> f64 {
        scale * self.standard_gamma(shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Golden values printed by numpy 2.4.6 (`np.random.seed(s); np.random.gamma(k, theta)`),
    // covering the three branches: shape == 1, > 1 (Gaussian with cache), < 1.
    #[test]
    fn matches_numpy_legacy_gamma() {
        let cases: [(u32, f64, f64, [f64; 3]); 3] = [
            (0, 1.0, 0.5, [0.397937254081555, 0.6279653814829189, 0.4616115729020344]),
            (0, 2.5, 0.1, [0.593870070324508, 0.281066964168471, 0.6242122324898662]),
            (3, 0.5, 1.0, [0.3064370912697103, 0.0846255671220083, 1.6145306258960375]),
        ];
        for (seed, shape, scale, want) in cases {
            let mut rs = LegacyRandomState::seeded(seed);
            let got: Vec<f64> = (0..3).map(|_| rs.gamma(shape, scale)).collect();
            // Within 1 ulp-ish: libm's log/pow may differ from glibc's in the last bit.
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).abs() <= 4.0 * f64::EPSILON * w.abs(),
                    "seed {seed} shape {shape}: {got:?} vs {want:?}"
                );
            }
        }
    }
}
