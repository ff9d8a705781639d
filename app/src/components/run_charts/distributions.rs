//! The run page's distribution table: mean, std and percentiles of each latency metric,
//! from the stored per-request records, with the load generator's numpy definitions
//! (`bench_types::stats`) so a measured run's numbers match its summary.

use crate::components::charts::cdf::samples_s;
use bench_types::stats::stats_ms;
use bench_types::{MetricKind, RequestRecord, Stats};
use serde::{Deserialize, Serialize};

/// The percentiles of the table's columns.
pub const PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

/// The metrics in table order; ITL twice: by chunk (vLLM's) and by token.
pub const METRICS: [MetricKind; 5] =
    [MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl, MetricKind::TokenItl, MetricKind::E2el];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistRow {
    pub metric: MetricKind,
    /// Samples behind the numbers (requests, or gaps for ITL); 0: none, no numbers.
    pub count: usize,
    /// In milliseconds; percentiles as `PERCENTILES`.
    pub stats: Stats,
}

/// One row per metric of `METRICS`, every number computed here and only here.
pub fn distribution_rows(records: &[RequestRecord]) -> Vec<DistRow> {
    METRICS
        .into_iter()
        .map(|metric| {
            let v = samples_s(records, metric);
            DistRow { metric, count: v.len(), stats: stats_ms(&v, &PERCENTILES) }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(
        index: u32,
        ttft: f64,
        e2el: f64,
        out: u32,
        chunks: &[f64],
        tokens: Option<&[u32]>,
    ) -> RequestRecord {
        RequestRecord {
            index,
            dispatch_offset_s: index as f64,
            success: true,
            error: None,
            input_tokens: 10,
            output_tokens: out,
            ttft_s: Some(ttft),
            e2el_s: Some(e2el),
            chunk_offsets_s: chunks.to_vec(),
            chunk_tokens: tokens.map(<[u32]>::to_vec),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    /// Values worked out by hand (linear interpolation at index (n-1)p/100).
    #[test]
    fn numbers_match_hand_computed_values() {
        let mut failed = rec(3, 5.0, 9.0, 4, &[5.0, 9.0], None);
        failed.success = false;
        let records = vec![
            rec(0, 0.1, 1.0, 10, &[0.1, 0.5, 1.0], Some(&[1, 4, 5])),
            rec(1, 0.2, 1.2, 5, &[0.2, 1.2], None),
            rec(2, 0.4, 0.4, 1, &[0.4], None),
            failed,
        ];
        let rows = distribution_rows(&records);
        let row = |m| rows.iter().find(|r| r.metric == m).unwrap();
        let check = |m, count, mean: f64, std: f64, pcts: [f64; 5]| {
            let r = row(m);
            assert_eq!(r.count, count, "{m:?}");
            assert!(close(r.stats.mean_ms, mean), "{m:?} mean {}", r.stats.mean_ms);
            assert!(close(r.stats.std_ms, std), "{m:?} std {}", r.stats.std_ms);
            for (p, want) in PERCENTILES.into_iter().zip(pcts) {
                let got = r.stats.percentile(p).unwrap();
                assert!(close(got, want), "{m:?} p{p}: {got} != {want}");
            }
        };
        // TTFT 100, 200, 400 ms: p90 at index 1.8 -> 200 + 0.8 * 200.
        let ttft_std =
            ((133.0f64 + 1.0 / 3.0).powi(2) + (33.0f64 + 1.0 / 3.0).powi(2) + (166.0f64 + 2.0 / 3.0).powi(2))
                / 3.0;
        check(MetricKind::Ttft, 3, 700.0 / 3.0, ttft_std.sqrt(), [200.0, 360.0, 380.0, 396.0, 399.6]);
        // TPOT: (1.0 - 0.1) / 9 = 100 ms and (1.2 - 0.2) / 4 = 250 ms; one-token requests have none.
        check(MetricKind::Tpot, 2, 175.0, 75.0, [175.0, 235.0, 242.5, 248.5, 249.85]);
        // Chunk ITL pools the gaps 400, 500 and 1000 ms.
        let itl_std = ((233.0f64 + 1.0 / 3.0).powi(2)
            + (133.0f64 + 1.0 / 3.0).powi(2)
            + (366.0f64 + 2.0 / 3.0).powi(2))
            / 3.0;
        check(MetricKind::Itl, 3, 1900.0 / 3.0, itl_std.sqrt(), [500.0, 900.0, 950.0, 990.0, 999.0]);
        // Token ITL: 400 ms over 4 tokens and 500 ms over 5: nine gaps of 100 ms.
        check(MetricKind::TokenItl, 9, 100.0, 0.0, [100.0; 5]);
        // E2EL 400, 1000, 1200 ms.
        let e2el_std = ((466.0f64 + 2.0 / 3.0).powi(2)
            + (133.0f64 + 1.0 / 3.0).powi(2)
            + (333.0f64 + 1.0 / 3.0).powi(2))
            / 3.0;
        check(MetricKind::E2el, 3, 2600.0 / 3.0, e2el_std.sqrt(), [1000.0, 1160.0, 1180.0, 1196.0, 1199.6]);
    }

    #[test]
    fn no_records_give_empty_rows() {
        let rows = distribution_rows(&[]);
        assert_eq!(rows.len(), 5);
        assert!(rows.iter().all(|r| r.count == 0));
    }
}
