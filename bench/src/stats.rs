//! numpy-exact statistics: the definitions live in `bench_types::stats`, where the web
//! pages reach them too; re-exported here for the summary and its callers.

pub use bench_types::stats::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousand_values_match_numpy_bit_for_bit() {
        // CPython: random.seed(1); v = [random.random() for _ in range(1000)]
        let mut mt = crate::mt19937::Mt19937::python_seeded(1);
        let v: Vec<f64> = (0..1000).map(|_| mt.next_f64()).collect();
        let mut s = v.clone();
        s.sort_by(f64::total_cmp);
        assert_eq!(np_mean(&v), 0.5141370278623856); // a naive sum gives ...858
        assert_eq!(np_std(&v), 0.28938631766851325);
        assert_eq!(np_median_sorted(&s), 0.5210080450928655);
        assert_eq!(np_percentile_sorted(&s, 99.0), 0.9880318364421102);
        assert_eq!(np_percentile_sorted(&s, 37.3), 0.39441373520011574);
    }
}
