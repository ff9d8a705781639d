//! The arrival schedule, drawn up front from the seed as vLLM's `get_request` does:
//! rate `inf` releases every request at t=0; a finite rate draws gaps from
//! Gamma(shape=burstiness, scale=1/(rate*burstiness)) with numpy's legacy generator
//! seeded by `--seed`, sums them, then rescales all offsets so the last one lands exactly
//! at `num_requests / rate` ("vLLM's rescaling": it closes the 1-2 % gap a raw gamma sum
//! leaves, so throughput does not wobble with the seed). The first request also waits its
//! own gap, as in vLLM.
//!
//! With a ramp-up (`--ramp-up-strategy`) request i of n asks for its own rate, linear or
//! exponential from start to end over i / (n - 1); its gap is drawn with that rate and the
//! offsets are the plain cumulative sum (vLLM rescales only a fixed rate).

use crate::np_gamma::LegacyRandomState;
use bench_types::{RampUp, RampUpStrategy};

/// Offsets in seconds from the start of the run at which each request is released.
pub fn arrival_offsets(n: usize, request_rate: Option<f64>, burstiness: f64, seed: u64) -> Vec<f64> {
    let rate = match request_rate {
        Some(r) if r.is_finite() && r > 0.0 => r,
        _ => return vec![0.0; n],
    };
    // numpy refuses seeds above 2^32-1; vLLM's default seed 0 is well inside.
    let mut rs = LegacyRandomState::seeded(seed as u32);
    let theta = 1.0 / (rate * burstiness);
    let mut offsets = Vec::with_capacity(n);
    let mut acc = 0.0;
    for _ in 0..n {
        acc += rs.gamma(burstiness, theta);
        offsets.push(acc);
    }
    if let Some(&last) = offsets.last()
        && last != 0.0
    {
        let factor = (n as f64 / rate) / last;
        for o in &mut offsets {
            *o *= factor;
        }
    }
    offsets
}

/// The rate each of `n` requests asks for under `ramp` (vLLM's `_get_current_request_rate`).
pub fn ramp_rates(n: usize, ramp: &RampUp) -> Vec<f64> {
    let (start, end) = (f64::from(ramp.start_rps), f64::from(ramp.end_rps));
    (0..n)
        .map(|i| {
            let progress = i as f64 / (n.saturating_sub(1).max(1)) as f64;
            match ramp.strategy {
                RampUpStrategy::Linear => start + (end - start) * progress,
                RampUpStrategy::Exponential => start * (end / start).powf(progress),
            }
        })
        .collect()
}

/// Offsets of `n` requests ramping up as `ramp` says, gaps drawn with `seed`.
pub fn ramp_offsets(n: usize, ramp: &RampUp, burstiness: f64, seed: u64) -> Vec<f64> {
    let mut rs = LegacyRandomState::seeded(seed as u32);
    let mut acc = 0.0;
    ramp_rates(n, ramp)
        .into_iter()
        .map(|rate| {
            acc += rs.gamma(burstiness, 1.0 / (rate * burstiness));
            acc
        })
        .collect()
}

/// The offsets a spec's load asks for: its ramp-up when it has one, else its fixed rate.
pub fn offsets_for(n: usize, spec: &bench_types::RunSpec) -> Vec<f64> {
    match &spec.ramp_up {
        Some(r) => ramp_offsets(n, r, spec.load.burstiness, spec.seed),
        None => arrival_offsets(n, spec.load.request_rate, spec.load.burstiness, spec.seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_follow_vllms_rate_formulas_without_rescaling() {
        let lin = RampUp { strategy: RampUpStrategy::Linear, start_rps: 1, end_rps: 9 };
        assert_eq!(ramp_rates(5, &lin), vec![1.0, 3.0, 5.0, 7.0, 9.0]);
        let exp = RampUp { strategy: RampUpStrategy::Exponential, start_rps: 1, end_rps: 16 };
        let r = ramp_rates(5, &exp);
        for (got, want) in r.iter().zip([1.0, 2.0, 4.0, 8.0, 16.0]) {
            assert!((got - want).abs() < 1e-12, "{r:?}");
        }
        assert_eq!(ramp_rates(1, &lin), vec![1.0], "one request asks for the start rate");
        // Gaps are gamma draws with each request's own rate, summed as drawn.
        let o = ramp_offsets(5, &lin, 1.0, 0);
        let mut rs = LegacyRandomState::seeded(0);
        let mut acc = 0.0;
        for (i, rate) in [1.0, 3.0, 5.0, 7.0, 9.0].into_iter().enumerate() {
            acc += rs.gamma(1.0, 1.0 / rate);
            assert_eq!(o[i], acc);
        }
    }

    #[test]
    fn infinite_rate_releases_everything_at_once() {
        assert_eq!(arrival_offsets(3, None, 1.0, 0), vec![0.0; 3]);
    }

    #[test]
    fn finite_rate_is_rescaled_to_n_over_rate_and_increasing() {
        for burstiness in [0.5, 1.0, 3.0] {
            let o = arrival_offsets(200, Some(4.0), burstiness, 0);
            assert!((o[199] - 50.0).abs() < 1e-9, "last offset {}", o[199]);
            assert!(o.windows(2).all(|w| w[1] >= w[0]));
            assert!(o[0] > 0.0, "the first request waits its own gap, as in vLLM");
        }
        assert_eq!(arrival_offsets(50, Some(2.0), 1.0, 7), arrival_offsets(50, Some(2.0), 1.0, 7));
        assert_ne!(arrival_offsets(50, Some(2.0), 1.0, 7), arrival_offsets(50, Some(2.0), 1.0, 8));
    }
}
