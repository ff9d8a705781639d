//! What a speculating engine said about the measured part of a run: the tree it ran, its
//! draft, and how many tokens each verify step emitted. The worker builds it from the
//! engine's `/metrics` counters (scraped after the warm-up and at the end, and
//! subtracted) and `/v1/engine/info`; it is stored beside the run's latency.

use crate::native_speculative::Tree;
use serde::{Deserialize, Serialize};

/// The label every accepted length of a random draft carries: a random draft proposes
/// noise, so what the target accepts says nothing about a trained draft's speed-up.
pub const RANDOM_DRAFT_CAVEAT: &str = "random draft weights: acceptance means nothing";

/// The label of a run under synthetic acceptance, wherever its accepted length shows.
pub const SYNTHETIC_CAVEAT: &str = "synthetic acceptance: proposals from recorded greedy continuations, accepted as asked; a speed measurement, not a draft's quality";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeResult {
    /// As the engine names it, e.g. `EAGLE3`.
    pub algorithm: String,
    /// The tree the engine reported running, else the one the spec asked for
    /// (`tree_reported` says which).
    pub tree: Tree,
    #[serde(default)]
    pub tree_reported: bool,
    /// `random:<preset>-eagle3` or the checkpoint folder the draft came from.
    pub draft_source: String,
    /// The draft's weights are random (the engine said so, or the draft is a random preset).
    pub random_weights: bool,
    /// Tokens emitted per verified row-step over the timed part, the bonus token included
    /// (SGLang's "accept length": 1.0 means no drafted token was accepted). `None` when
    /// the counters could not be read; `notes` says why.
    pub mean_accepted_length: Option<f64>,
    /// `latlab_spec_verify_steps_total` over the timed part.
    #[serde(default)]
    pub verify_steps: Option<f64>,
    /// `latlab_spec_emitted_tokens_total` over the timed part.
    #[serde(default)]
    pub emitted_tokens: Option<f64>,
    /// Acceptance at each draft depth (1 = the first drafted token), over the timed part.
    #[serde(default)]
    pub by_position: Vec<PositionAcceptance>,
    /// Seconds the engine spent drafting / verifying over the timed part.
    #[serde(default)]
    pub draft_seconds: Option<f64>,
    #[serde(default)]
    pub verify_seconds: Option<f64>,
    /// Shown beside the accepted length wherever it appears: `RANDOM_DRAFT_CAVEAT` for a
    /// random draft.
    #[serde(default)]
    pub caveat: Option<String>,
    /// Why a number is missing, or what else to know about it.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Under synthetic acceptance: what was asked, and the first pass (speculation off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<SyntheticPass>,
}

/// A synthetic-acceptance run's two passes over one engine: the first decoded plainly
/// (each prompt's first sight, recorded), the second speculated; the run's own summary is
/// the second's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticPass {
    /// Tokens per round asked for, the bonus included.
    pub requested: f64,
    /// The first pass's summary: the same workload with speculation off.
    pub baseline: crate::report::Summary,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionAcceptance {
    pub position: u32,
    pub accepted: f64,
    pub proposed: f64,
}

impl PositionAcceptance {
    /// Accepted over proposed; `None` when nothing was proposed at this depth.
    pub fn rate(&self) -> Option<f64> {
        (self.proposed > 0.0).then(|| self.accepted / self.proposed)
    }
}

impl SpecDecodeResult {
    /// "2.41", or "missing" when the counters could not be read.
    pub fn accepted_length_text(&self) -> String {
        match self.mean_accepted_length {
            Some(v) => format!("{v:.2}"),
            None => "missing".into(),
        }
    }

    /// "1: 62%, 2: 40%, 3: 21%" (depths with proposals only); empty when unknown.
    pub fn acceptance_by_depth_text(&self) -> String {
        let parts: Vec<String> = self
            .by_position
            .iter()
            .filter_map(|p| p.rate().map(|r| format!("{}: {:.0}%", p.position, 100.0 * r)))
            .collect();
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_length_reads_as_missing_and_rates_skip_empty_depths() {
        let r = SpecDecodeResult {
            algorithm: "EAGLE3".into(),
            tree: Tree { num_steps: 3, topk: 1, num_draft_tokens: 4 },
            tree_reported: true,
            draft_source: "random:tiny-eagle3".into(),
            random_weights: true,
            mean_accepted_length: None,
            verify_steps: None,
            emitted_tokens: None,
            by_position: vec![
                PositionAcceptance { position: 1, accepted: 5.0, proposed: 8.0 },
                PositionAcceptance { position: 2, accepted: 0.0, proposed: 0.0 },
            ],
            draft_seconds: None,
            verify_seconds: None,
            caveat: Some(RANDOM_DRAFT_CAVEAT.into()),
            notes: vec![],
            synthetic: None,
        };
        assert_eq!(r.accepted_length_text(), "missing");
        assert_eq!(r.acceptance_by_depth_text(), "1: 62%");
        let back: SpecDecodeResult = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
