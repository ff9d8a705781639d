//! EAGLE-3 speculative decoding on latlab's native engine: the same `Speculative` options
//! the launched engines take, checked against what `latlab-engine serve` accepts, and the
//! defaults it runs with when a number is left empty.
//!
//! The tree follows SGLang: `num_steps` draft levels, `topk` branches kept per level, and
//! `num_draft_tokens` nodes verified per step, the root (the row's last token) included.

use crate::launched::{Speculative, SpeculativeAlgorithm};
use crate::validate::ValidationErrors;
use serde::{Deserialize, Serialize};

/// The engine's own bounds (`engine/src/spec`): far beyond what pays at batch 1-8, tight
/// enough to catch a typo.
pub mod limits {
    pub const MAX_STEPS: u32 = 32;
    pub const MAX_TOPK: u32 = 16;
    pub const MAX_DRAFT_TOKENS: u32 = 256;
}

/// Used when a number is left empty: a chain of three drafted tokens, verified with the
/// root as four.
pub const DEFAULT_NUM_STEPS: u32 = 3;
pub const DEFAULT_TOPK: u32 = 1;
pub const DEFAULT_NUM_DRAFT_TOKENS: u32 = 4;

/// The draft a random preset pairs with: `random:tiny` drafts with `random:tiny-eagle3`.
pub const RANDOM_DRAFT_SUFFIX: &str = "-eagle3";

/// The tree a native engine runs: every number filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tree {
    pub num_steps: u32,
    pub topk: u32,
    pub num_draft_tokens: u32,
}

impl Tree {
    /// `s`'s numbers, the defaults where it left one empty.
    pub fn of(s: &Speculative) -> Tree {
        Tree {
            num_steps: s.num_steps.unwrap_or(DEFAULT_NUM_STEPS),
            topk: s.topk.unwrap_or(DEFAULT_TOPK),
            num_draft_tokens: s.num_draft_tokens.unwrap_or(DEFAULT_NUM_DRAFT_TOKENS),
        }
    }

    /// "3 steps × topk 1, 4 draft tokens (a chain)" for pages.
    pub fn describe(&self) -> String {
        let shape = if self.topk == 1 { " (a chain)" } else { " (a tree)" };
        format!(
            "{} steps × topk {}, {} draft tokens{shape}",
            self.num_steps, self.topk, self.num_draft_tokens
        )
    }
}

/// Nodes a draft of `num_steps` levels and `topk` branches can propose, the root
/// included: topk at the first level, then topk children of each of the topk best nodes
/// of the level above (SGLang's expansion), so 1 + topk + (num_steps - 1) * topk^2.
pub fn tree_capacity(num_steps: u32, topk: u32) -> u64 {
    let (n, k) = (u64::from(num_steps), u64::from(topk));
    1 + k + n.saturating_sub(1) * k * k
}

/// The random draft matching a random target preset: `random:qwen3-8b` ->
/// `random:qwen3-8b-eagle3`; `None` for a checkpoint.
pub fn random_draft_for(model_source: &str) -> Option<String> {
    model_source.strip_prefix("random:").map(|p| format!("random:{p}{RANDOM_DRAFT_SUFFIX}"))
}

/// Checks `s` for a native target serving `model_source`; each problem is reported under
/// `target.speculative.<field>`.
pub fn validate_into(s: &Speculative, model_source: &str, e: &mut ValidationErrors) {
    use limits::*;
    if s.algorithm == SpeculativeAlgorithm::Eagle {
        e.push(
            "target.speculative.algorithm",
            "latlab's engine runs EAGLE-3 drafts only (eagle3); EAGLE-1 drafts read other hidden states",
        );
    }
    check_draft(e, &s.draft_model, model_source);
    let in_range = |v: Option<u32>, lo: u32, hi: u32| v.is_none_or(|v| (lo..=hi).contains(&v));
    if !in_range(s.num_steps, 1, MAX_STEPS) {
        e.push("target.speculative.num_steps", format!("must be between 1 and {MAX_STEPS}"));
    }
    if !in_range(s.topk, 1, MAX_TOPK) {
        e.push("target.speculative.topk", format!("must be between 1 and {MAX_TOPK}"));
    }
    if !in_range(s.num_draft_tokens, 2, MAX_DRAFT_TOKENS) {
        e.push(
            "target.speculative.num_draft_tokens",
            format!(
                "must be between 2 and {MAX_DRAFT_TOKENS}: the root and at least one drafted token are verified"
            ),
        );
    } else if e.for_field("target.speculative.num_steps").is_none()
        && e.for_field("target.speculative.topk").is_none()
    {
        let t = Tree::of(s);
        let cap = tree_capacity(t.num_steps, t.topk);
        if u64::from(t.num_draft_tokens) > cap {
            e.push(
                "target.speculative.num_draft_tokens",
                format!(
                    "{} is more than a tree of {} steps and topk {} holds ({cap}, the root included: 1 + topk + (steps - 1) × topk²)",
                    t.num_draft_tokens, t.num_steps, t.topk
                ),
            );
        }
    }
}

/// `synthetic_acceptance` needs speculative decoding on, and lies in 1..=num_steps + 1
/// (tokens per round, the bonus included: a round can take at most every level).
pub fn validate_synthetic(t: &crate::spec::NativeTarget, e: &mut ValidationErrors) {
    const FIELD: &str = "target.synthetic_acceptance";
    let Some(l) = t.synthetic_acceptance else { return };
    let Some(s) = &t.speculative else {
        e.push(FIELD, "needs speculative decoding on: it shapes the draft's proposals");
        return;
    };
    let most = Tree::of(s).num_steps + 1;
    if !(l.is_finite() && (1.0..=f64::from(most)).contains(&l)) {
        e.push(
            FIELD,
            format!(
                "must be between 1 and {most} tokens per round (the bonus included, with {} steps)",
                most - 1
            ),
        );
    }
}

/// A draft is `random:<preset>-eagle3` (random weights of the target preset's shape) or a
/// checkpoint folder, named as the model source is (under the worker's file roots).
fn check_draft(e: &mut ValidationErrors, d: &str, model_source: &str) {
    const FIELD: &str = "target.speculative.draft_model";
    let Some(preset) = d.strip_prefix("random:") else {
        if let Some(problem) = crate::validate::path_problem(d) {
            e.push(FIELD, problem);
        }
        return;
    };
    let named_ok = preset.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    match random_draft_for(model_source) {
        _ if !named_ok || !preset.ends_with(RANDOM_DRAFT_SUFFIX) || preset == RANDOM_DRAFT_SUFFIX => {
            let example = random_draft_for(model_source).unwrap_or_else(|| "random:qwen3-8b-eagle3".into());
            e.push(FIELD, format!("a random draft is random:<preset>{RANDOM_DRAFT_SUFFIX}, e.g. {example}"));
        }
        // A random draft must have its target's shape: the engine builds both from one preset.
        Some(want) if want != d => {
            e.push(FIELD, format!("the model source {model_source} drafts with {want}, not {d}"))
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{NativeTarget, Target};

    fn spec_with(s: Speculative) -> crate::RunSpec {
        let mut spec: crate::RunSpec = serde_json::from_value(serde_json::json!({
            "target": {"kind": "native", "model_source": "random:tiny"}, "model": "tiny",
            "dataset": {"kind": "random", "input_len": 4, "output_len": 4}, "num_prompts": 1, "load": {}
        }))
        .unwrap();
        spec.target = Target::Native(NativeTarget {
            model_source: "random:tiny".into(),
            device: Default::default(),
            quantization: Default::default(),
            max_batch: None,
            cuda_graphs: true,
            speculative: Some(s),
            synthetic_acceptance: None,
        });
        spec
    }

    /// Synthetic acceptance: only with speculation, within 1..=steps + 1 (the default tree
    /// has 3 steps), named by its field.
    #[test]
    fn synthetic_acceptance_needs_speculation_and_a_reachable_mean() {
        let with = |l: f64, spec: bool| {
            let mut s = spec_with(eagle3("random:tiny-eagle3", None, None, None));
            let Target::Native(n) = &mut s.target else { unreachable!() };
            n.synthetic_acceptance = Some(l);
            if !spec {
                n.speculative = None;
            }
            s.validate().err().and_then(|e| e.for_field("target.synthetic_acceptance").map(String::from))
        };
        assert_eq!(with(3.3, true), None);
        assert_eq!(with(1.0, true), None);
        assert_eq!(with(4.0, true), None);
        assert!(with(4.5, true).unwrap().contains("between 1 and 4"));
        assert!(with(0.5, true).is_some());
        assert!(with(f64::NAN, true).is_some());
        assert!(with(2.0, false).unwrap().contains("needs speculative decoding"));
    }

    fn eagle3(draft: &str, steps: Option<u32>, topk: Option<u32>, tokens: Option<u32>) -> Speculative {
        Speculative {
            algorithm: SpeculativeAlgorithm::Eagle3,
            draft_model: draft.into(),
            num_steps: steps,
            topk,
            num_draft_tokens: tokens,
        }
    }

    fn error(s: Speculative, field: &str) -> String {
        let e = spec_with(s).validate().unwrap_err();
        assert_eq!(e.0.len(), 1, "{e}");
        e.for_field(&format!("target.speculative.{field}"))
            .unwrap_or_else(|| panic!("no {field}: {e}"))
            .into()
    }

    #[test]
    fn empty_numbers_take_the_chain_defaults() {
        let s = eagle3("random:tiny-eagle3", None, None, None);
        spec_with(s.clone()).validate().unwrap();
        assert_eq!(Tree::of(&s), Tree { num_steps: 3, topk: 1, num_draft_tokens: 4 });
        assert_eq!(Tree::of(&s).describe(), "3 steps × topk 1, 4 draft tokens (a chain)");
    }

    #[test]
    fn the_capacity_counts_the_root() {
        assert_eq!(tree_capacity(3, 1), 4);
        assert_eq!(tree_capacity(4, 4), 1 + 4 + 3 * 16);
        assert_eq!(tree_capacity(1, 8), 9);
        spec_with(eagle3("random:tiny-eagle3", Some(4), Some(4), Some(16))).validate().unwrap();
        spec_with(eagle3("random:tiny-eagle3", Some(3), Some(1), Some(4))).validate().unwrap();
    }

    #[test]
    fn each_bad_number_names_its_field() {
        let d = "random:tiny-eagle3";
        assert!(error(eagle3(d, Some(0), None, None), "num_steps").contains("between 1 and 32"));
        assert!(error(eagle3(d, Some(33), None, None), "num_steps").contains("between 1 and 32"));
        assert!(error(eagle3(d, None, Some(0), None), "topk").contains("between 1 and 16"));
        assert!(error(eagle3(d, None, Some(17), None), "topk").contains("between 1 and 16"));
        let one = error(eagle3(d, None, None, Some(1)), "num_draft_tokens");
        assert!(one.contains("between 2 and 256") && one.contains("root"), "{one}");
        assert!(error(eagle3(d, None, None, Some(257)), "num_draft_tokens").contains("256"));
        // The defaults' chain of 3 holds 4 nodes with its root: 5 does not fit.
        let over = error(eagle3(d, None, None, Some(5)), "num_draft_tokens");
        assert_eq!(
            over,
            "5 is more than a tree of 3 steps and topk 1 holds (4, the root included: 1 + topk + (steps - 1) × topk²)"
        );
        let over = error(eagle3(d, Some(2), Some(2), Some(8)), "num_draft_tokens");
        assert!(over.starts_with("8 is more than a tree of 2 steps and topk 2 holds (7,"), "{over}");
    }

    #[test]
    fn eagle1_is_refused_by_name() {
        let s = Speculative {
            algorithm: SpeculativeAlgorithm::Eagle,
            ..eagle3("random:tiny-eagle3", None, None, None)
        };
        assert!(error(s, "algorithm").contains("EAGLE-3"));
    }

    #[test]
    fn drafts_are_a_matching_random_preset_or_a_checkpoint_path() {
        for ok in ["random:tiny-eagle3", "/srv/models/qwen3_8b_eagle3", "drafts/qwen3-8b-eagle3"] {
            spec_with(eagle3(ok, None, None, None)).validate().unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        assert_eq!(
            error(eagle3("random:qwen3-8b-eagle3", None, None, None), "draft_model"),
            "the model source random:tiny drafts with random:tiny-eagle3, not random:qwen3-8b-eagle3"
        );
        for bad in ["random:tiny", "random:-eagle3", "random:ti ny-eagle3"] {
            let m = error(eagle3(bad, None, None, None), "draft_model");
            assert!(m.contains("random:tiny-eagle3"), "{bad}: {m}");
        }
        for bad in ["../drafts/x", "/srv/a;b", "--help", ""] {
            error(eagle3(bad, None, None, None), "draft_model");
        }
        assert_eq!(random_draft_for("random:qwen3-8b").as_deref(), Some("random:qwen3-8b-eagle3"));
        assert_eq!(random_draft_for("/srv/models/Qwen3-8B"), None);
    }

    #[test]
    fn every_bad_field_is_named_at_once() {
        let s = Speculative {
            algorithm: SpeculativeAlgorithm::Eagle,
            draft_model: "random:tiny".into(),
            num_steps: Some(0),
            topk: Some(99),
            num_draft_tokens: Some(0),
        };
        let e = spec_with(s).validate().unwrap_err();
        for f in ["algorithm", "draft_model", "num_steps", "topk", "num_draft_tokens"] {
            assert!(e.for_field(&format!("target.speculative.{f}")).is_some(), "{f}: {e}");
        }
    }

    #[test]
    fn native_specs_stored_before_speculation_read_and_write_the_same() {
        let old = serde_json::json!({"kind": "native", "model_source": "random:tiny", "max_batch": 4});
        let t: Target = serde_json::from_value(old.clone()).unwrap();
        let Target::Native(n) = &t else { panic!() };
        assert_eq!(n.speculative, None);
        let back = serde_json::to_value(&t).unwrap();
        assert!(back.get("speculative").is_none(), "{back}");
        let with = serde_json::json!({"kind": "native", "model_source": "random:tiny",
            "speculative": {"algorithm": "eagle3", "draft_model": "random:tiny-eagle3", "num_steps": 4}});
        let Target::Native(n) = serde_json::from_value::<Target>(with).unwrap() else { panic!() };
        assert_eq!(n.speculative.unwrap().num_steps, Some(4));
    }
}
