//! The form's load and measurement fields beyond concurrency: request rates (one, or a
//! list that sweeps), the arrival process, the reported percentiles and goodput SLOs.

use super::RunForm;
use super::parser::{NUMBER, Parser};
use bench_types::Goodput;
use bench_types::rate_sweep::parse_rates;

/// The form's one rate input feeds `load.request_rate` (one value) or
/// `load.request_rates` (several); its errors are shown under this path.
pub const RATE_FIELD: &str = "load.request_rate";

impl RunForm {
    /// `(request_rate, request_rates)`: one value (or none, `inf`) is the run's rate as
    /// before; several make a sweep, one run per rate.
    pub(super) fn rates(&self, p: &mut Parser) -> (Option<f64>, Vec<Option<f64>>) {
        match parse_rates(&self.request_rate) {
            Ok(mut rates) if rates.len() <= 1 => (rates.pop().flatten(), vec![]),
            Ok(rates) => (None, rates),
            Err(m) => {
                p.errors.push(RATE_FIELD, m);
                (None, vec![])
            }
        }
    }

    /// Poisson arrivals are gamma gaps of shape 1; "gamma" takes the burstiness field, and
    /// a form without the choice (an older client) takes the field as it is.
    pub(super) fn burstiness_value(&self, p: &mut Parser) -> f64 {
        match self.arrival.trim() {
            "poisson" => 1.0,
            "gamma" | "" if !self.burstiness.trim().is_empty() => {
                p.num("load.burstiness", &self.burstiness, NUMBER, 1.0)
            }
            "" => 1.0,
            "gamma" => {
                p.errors.push("load.burstiness", "is required for gamma arrivals (1 is Poisson)");
                1.0
            }
            other => {
                p.errors.push("load.arrival", format!("unknown arrival process {other:?}; poisson or gamma"));
                1.0
            }
        }
    }

    /// `--metric-percentiles`: empty is vLLM's default, 99.
    pub(super) fn percentiles_value(&self, p: &mut Parser) -> Vec<f64> {
        let mut out = Vec::new();
        let mut bad = Vec::new();
        for part in self.percentiles.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()) {
            match part.trim_start_matches('p').parse::<f64>() {
                Ok(v) => out.push(v),
                Err(_) => bad.push(format!("{part:?} is not a number")),
            }
        }
        if !bad.is_empty() {
            p.errors.push("percentiles", format!("{}; use e.g. 50, 90, 99", bad.join("; ")));
        }
        if out.is_empty() { bench_types::spec::default_percentiles() } else { out }
    }

    /// `--goodput` SLOs: each one given counts toward goodput; none given, no goodput.
    pub(super) fn goodput_value(&self, p: &mut Parser) -> Goodput {
        Goodput {
            ttft_ms: p.opt_num("goodput.ttft_ms", &self.goodput_ttft_ms, NUMBER),
            tpot_ms: p.opt_num("goodput.tpot_ms", &self.goodput_tpot_ms, NUMBER),
            e2el_ms: p.opt_num("goodput.e2el_ms", &self.goodput_e2el_ms, NUMBER),
        }
    }

    /// Whether the rate field lists several rates (a sweep).
    pub fn is_rate_sweep(&self) -> bool {
        parse_rates(&self.request_rate).is_ok_and(|r| r.len() > 1)
    }

    /// Whether any goodput SLO is filled in (its section shows open).
    pub fn has_goodput(&self) -> bool {
        [&self.goodput_ttft_ms, &self.goodput_tpot_ms, &self.goodput_e2el_ms]
            .iter()
            .any(|v| !v.trim().is_empty())
    }
}
