//! The arrival schedule, drawn up front from the seed as vLLM's `get_request` does:
//! rate `inf` releases every request at t=0; a finite rate draws gaps from
//! Gamma(shape=burstiness, scale=1/(rate*burstiness)) with numpy's legacy generator
//! seeded by `--seed`, sums them, then rescales all offsets so the last one lands exactly
//! at `num_requests / rate` ("vLLM's rescaling": it closes the 1-2 % gap a raw gamma sum
//! leaves, so throughput does not wobble with the seed). The first request also waits its
//! own gap, as in vLLM.

use crate::np_gamma::LegacyRandomState;

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

#[cfg(test)]
mod tests {
    use super::*;

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
