//! Metric metadata: names, units and direction, so tables and charts label every number
//! the same way.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    Ttft,
    Tpot,
    Itl,
    E2el,
    TokenItl,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricInfo {
    pub kind: MetricKind,
    /// vLLM's short key (`ttft`, `tpot`, `itl`, `e2el`).
    pub key: &'static str,
    /// vLLM's heading ("Time to First Token").
    pub title: &'static str,
    pub unit: &'static str,
    pub lower_is_better: bool,
}

pub const METRICS: [MetricInfo; 5] = [
    MetricInfo {
        kind: MetricKind::Ttft,
        key: "ttft",
        title: "Time to First Token",
        unit: "ms",
        lower_is_better: true,
    },
    MetricInfo {
        kind: MetricKind::Tpot,
        key: "tpot",
        title: "Time per Output Token (excl. 1st token)",
        unit: "ms",
        lower_is_better: true,
    },
    MetricInfo {
        kind: MetricKind::Itl,
        key: "itl",
        title: "Inter-token Latency",
        unit: "ms",
        lower_is_better: true,
    },
    MetricInfo {
        kind: MetricKind::E2el,
        key: "e2el",
        title: "End-to-end Latency",
        unit: "ms",
        lower_is_better: true,
    },
    MetricInfo {
        kind: MetricKind::TokenItl,
        key: "token_itl",
        title: "Token-level Inter-token Latency",
        unit: "ms",
        lower_is_better: true,
    },
];

impl MetricKind {
    pub fn info(self) -> &'static MetricInfo {
        METRICS.iter().find(|m| m.kind == self).expect("every kind has an entry")
    }

    pub fn stats(self, s: &crate::report::Summary) -> Option<&crate::report::Stats> {
        match self {
            MetricKind::Ttft => Some(&s.ttft),
            MetricKind::Tpot => Some(&s.tpot),
            MetricKind::Itl => Some(&s.itl),
            MetricKind::E2el => Some(&s.e2el),
            MetricKind::TokenItl => s.token_itl.as_ref(),
        }
    }
}
