//! Axis ranges and tick values a reader can read: 1-2-5 steps on log axes (never 1.58 or
//! 6.31, which plotters' evenly spaced ticks in log units would give), and only integers
//! on integer axes such as max concurrency.

/// The 1-2-5 value at or below (`up = false`) or at or above (`up = true`) `v` (> 0).
fn step_125(v: f64, up: bool) -> f64 {
    let d = v.log10().floor() as i32;
    let cands = (d - 1..=d + 1).flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)));
    // Tolerance: 10^log10(x) round trips are off in the last bits.
    let tol = 1e-9 * v;
    if up {
        cands.filter(|c| *c >= v - tol).fold(f64::INFINITY, f64::min)
    } else {
        cands.filter(|c| *c <= v + tol).fold(0.0, f64::max)
    }
}

/// The smallest 1-2-5 value at or above `v` (> 0): a round step or bin width.
pub fn step_up(v: f64) -> f64 {
    if v > 0.0 && v.is_finite() { step_125(v, true) } else { 1.0 }
}

/// A log axis over positive values `min..=max`: its ends (1-2-5 values around the data) and
/// ticks in data units: every 1-2-5 value when it spans up to three decades, else the
/// powers of ten.
pub fn log_axis(min: f64, max: f64) -> (f64, f64, Vec<f64>) {
    if !(min > 0.0 && max >= min && max.is_finite()) {
        return (1.0, 10.0, vec![1.0, 2.0, 5.0, 10.0]);
    }
    let mut lo = step_125(min, false);
    let mut hi = step_125(max, true);
    if hi <= lo * (1.0 + 1e-9) {
        // One value: the 1-2-5 steps either side of it.
        lo = step_125(lo * 0.99, false);
        hi = step_125(hi * 1.01, true);
    }
    let decades = (hi / lo).log10();
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let mut ticks = Vec::new();
    for d in first..=last {
        let mantissas: &[f64] = if decades <= 3.0 + 1e-9 { &[1.0, 2.0, 5.0] } else { &[1.0] };
        for m in mantissas {
            let t = m * 10f64.powi(d);
            if t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9) {
                ticks.push(t);
            }
        }
    }
    (lo, hi, ticks)
}

/// Integer ticks over `xs`: the values themselves when there are few (a sweep's 1, 2, 4,
/// 8), else multiples of a 1-2-5 step.
pub fn int_ticks(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).map(f64::round).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    if v.len() <= 12 {
        return v;
    }
    let (lo, hi) = (v[0], v[v.len() - 1]);
    let step = step_125(((hi - lo) / 8.0).max(1.0), true).round().max(1.0);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi {
        out.push(t);
        t += step;
    }
    out
}

/// About six to ten ticks over `lo..=hi` at multiples of a 1-2-5 step.
pub fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(hi > lo && lo.is_finite() && hi.is_finite()) {
        return vec![];
    }
    let step = step_125((hi - lo) / 8.0, true);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    // Multiplying the integer by the step keeps 0.1 * 3 from reading 0.30000000000000004.
    (first..=last).map(|k| (k as f64 * step * 1e9).round() / 1e9).collect()
}

/// A linear coordinate (in log10 units for a log axis) with the ticks chosen here.
/// (plotters' `with_key_points` drops the default formatting that the mesh needs.)
pub(crate) struct Ticked {
    inner: plotters::coord::types::RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    pub(crate) fn new(lo: f64, hi: f64, ticks: Vec<f64>) -> Ticked {
        Ticked { inner: (lo..hi).into(), ticks }
    }
}

impl plotters::coord::ranged1d::Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(v, limit)
    }
    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, _: H) -> Vec<f64> {
        self.ticks.clone()
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_125(t: f64) -> bool {
        let m = t / 10f64.powf(t.log10().floor());
        [1.0, 2.0, 5.0, 10.0].iter().any(|x| (m - x).abs() < 1e-6)
    }

    #[test]
    fn log_ticks_are_1_2_5_and_end_near_the_data() {
        // A TTFT p99 maximum of 5701 ms over a minimum of 34.7 ms.
        let (lo, hi, t) = log_axis(34.7, 5701.0);
        assert_eq!((lo, hi), (20.0, 10000.0));
        assert!(t.iter().all(|x| is_125(*x)), "{t:?}");
        assert!(t.contains(&100.0) && t.contains(&1000.0) && t.contains(&5000.0), "{t:?}");
        assert!(!t.iter().any(|x| *x > 10000.0), "no ticks to 10^6 for a maximum of 5701: {t:?}");
        // Wide ranges: powers of ten only.
        let (_, hi, t) = log_axis(0.5, 5701.0);
        assert_eq!(hi, 10000.0);
        assert_eq!(t, [1.0, 10.0, 100.0, 1000.0, 10000.0]);
        let (lo, hi, t) = log_axis(7.28, 7.28);
        assert!(lo < 7.28 && hi > 7.28 && t.iter().all(|x| is_125(*x)), "{lo} {hi} {t:?}");
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(linear_ticks(0.0, 8.3), [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(linear_ticks(0.0, 1.08), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
    }

    #[test]
    fn integer_ticks_are_integers() {
        assert_eq!(int_ticks(&[1.0, 2.0, 4.0, 8.0, 4.0]), [1.0, 2.0, 4.0, 8.0]);
        let many: Vec<f64> = (1..=100).map(f64::from).collect();
        let t = int_ticks(&many);
        assert!(t.len() >= 4 && t.iter().all(|x| x.fract() == 0.0), "{t:?}");
    }
}
