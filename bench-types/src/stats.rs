//! numpy-exact summary statistics: `np.mean`, `np.std` (ddof=0), `np.median` and
//! `np.percentile` (default "linear" method), so latlab's numbers equal vLLM's to the last
//! bits, not just to two decimals. numpy sums float64 arrays pairwise (8 accumulators,
//! blocks of 128); a naive left-to-right sum differs in the last ulps, so we do the same.
//! Here rather than in `bench` so that the load generator's summary and the run page's
//! distribution table (in the browser too) share one definition.

use crate::Stats;

/// numpy's `pairwise_sum` for contiguous float64 data.
pub fn np_sum(a: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    let n = a.len();
    if n < 8 {
        // numpy starts this branch from -0.0 so that an all-(-0.0) sum stays -0.0.
        let mut res = -0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= BLOCK {
        let mut r = [a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]];
        let mut i = 8;
        while i < n - (n % 8) {
            for k in 0..8 {
                r[k] += a[i + k];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        np_sum(&a[..n2]) + np_sum(&a[n2..])
    }
}

/// `np.mean(a or 0)`: vLLM passes `0` for an empty list, so empty gives 0.
pub fn np_mean(a: &[f64]) -> f64 {
    if a.is_empty() { 0.0 } else { np_sum(a) / a.len() as f64 }
}

/// `np.std(a or 0)` with numpy's default ddof=0.
pub fn np_std(a: &[f64]) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    let m = np_mean(a);
    let sq: Vec<f64> = a.iter().map(|x| (x - m) * (x - m)).collect();
    (np_sum(&sq) / a.len() as f64).sqrt()
}

/// `np.median` of already sorted data: the mean of the two middle values for even n.
pub fn np_median_sorted(s: &[f64]) -> f64 {
    let n = s.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => s[n / 2],
        _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// `np.percentile(s, p)` of sorted data, method "linear": index (n-1)*p/100, and numpy's
/// `_lerp`, which interpolates from the upper end when the fraction is >= 0.5.
pub fn np_percentile_sorted(s: &[f64], p: f64) -> f64 {
    let n = s.len();
    if n == 0 {
        return 0.0;
    }
    let virtual_index = (n - 1) as f64 * (p / 100.0);
    let lo = virtual_index.floor().clamp(0.0, (n - 1) as f64);
    let t = virtual_index - lo;
    let lo = lo as usize;
    let hi = (lo + 1).min(n - 1);
    let (a, b) = (s[lo], s[hi]);
    let diff = b - a;
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

/// `Stats` in milliseconds from values in seconds, as vLLM reports them
/// (`np.mean(x) * 1000`: the conversion happens after the statistic, as in vLLM).
pub fn stats_ms(values_s: &[f64], percentiles: &[f64]) -> Stats {
    let mut sorted = values_s.to_vec();
    sorted.sort_by(f64::total_cmp);
    Stats {
        mean_ms: np_mean(values_s) * 1000.0,
        median_ms: np_median_sorted(&sorted) * 1000.0,
        std_ms: np_std(values_s) * 1000.0,
        percentiles: percentiles.iter().map(|&p| (p, np_percentile_sorted(&sorted, p) * 1000.0)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values printed by numpy 2.4.6; compared bit for bit.
    #[test]
    fn percentiles_interpolate_linearly_like_numpy() {
        let s = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(np_percentile_sorted(&s, 50.0), 3.0);
        // idx 3.6 -> numpy's _lerp from the top: 10 - 6*0.4, not 4 + 6*0.6 (= 7.6).
        assert_eq!(np_percentile_sorted(&s, 90.0), 7.6000000000000005);
        assert_eq!(np_percentile_sorted(&s, 99.0), 9.76);
        let t = [0.1, 0.2, 0.4, 0.7, 1.3, 2.9];
        assert_eq!(np_percentile_sorted(&t, 33.0), 0.33000000000000007);
        assert_eq!(np_percentile_sorted(&t, 99.9), 2.8920000000000017);
        assert_eq!(np_percentile_sorted(&s, 25.0), 2.0);
        assert_eq!(np_percentile_sorted(&[5.0], 99.0), 5.0);
        assert_eq!(np_percentile_sorted(&[], 99.0), 0.0);
    }

    #[test]
    fn median_mean_std_match_numpy() {
        let v = [4.0, 1.0, 3.0, 2.0];
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        assert_eq!(np_median_sorted(&s), 2.5);
        assert_eq!(np_mean(&v), 2.5);
        assert_eq!(np_std(&v), 1.25f64.sqrt());
        assert_eq!(np_mean(&[]), 0.0);
    }

    #[test]
    fn pairwise_sum_equals_exact_sum_on_representable_data() {
        // 1000 values whose sum is exact in f64: the pairwise split must not lose any.
        let v: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
        assert_eq!(np_sum(&v), 249_750.0);
        // A case where order matters: pairwise keeps the small terms that a naive sum drops.
        let mut w = vec![1e16];
        w.extend(std::iter::repeat_n(1.0, 200));
        let naive: f64 = w.iter().sum();
        assert_eq!(naive, 1e16, "naive sum drops every 1.0");
        assert!(np_sum(&w) > 1e16, "pairwise keeps them in separate accumulators");
    }
}
