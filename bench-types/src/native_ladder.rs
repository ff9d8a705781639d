//! The native ladder: one model on latlab's engine, each rung adding one optimization, so
//! that a comparison of the rungs shows what each bought. It follows the seed study's
//! ladder (`launched::seed_presets`): bf16, then FP8, then FP8 with EAGLE-3 on the
//! study's tree (4 steps, topk 4, 16 draft tokens), then FP8 with an EAGLE-3 chain
//! (3 steps, topk 1, 4 draft tokens: the engine's default).

use crate::launched::{Speculative, SpeculativeAlgorithm};
use crate::native_speculative::random_draft_for;
use crate::spec::{NativeTarget, Quantization};

/// One rung: a short name (the run's label) and the target it runs.
pub struct Rung {
    pub name: &'static str,
    pub target: NativeTarget,
}

/// The rungs for `base` (its model source, device and batch; its own quantization and
/// speculation are replaced). `draft` is the EAGLE-3 draft; empty takes the random draft
/// matching a random model (`random:<preset>-eagle3`). A checkpoint needs a draft named.
pub fn native_ladder(base: &NativeTarget, draft: Option<&str>) -> Result<Vec<Rung>, String> {
    let draft = match draft.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => d.to_string(),
        None => random_draft_for(&base.model_source).ok_or_else(|| {
            "name the EAGLE-3 draft checkpoint for this model (random models take random:<preset>-eagle3)"
                .to_string()
        })?,
    };
    let eagle3 = |steps, topk, tokens| {
        Some(Speculative {
            algorithm: SpeculativeAlgorithm::Eagle3,
            draft_model: draft.clone(),
            num_steps: Some(steps),
            topk: Some(topk),
            num_draft_tokens: Some(tokens),
        })
    };
    let rung = |name, quantization, speculative| Rung {
        name,
        target: NativeTarget { quantization, speculative, ..base.clone() },
    };
    Ok(vec![
        rung("bf16", Quantization::None, None),
        rung("FP8", Quantization::Fp8, None),
        rung("FP8 + EAGLE-3 tree 4/4/16", Quantization::Fp8, eagle3(4, 4, 16)),
        rung("FP8 + EAGLE-3 chain 3/1/4", Quantization::Fp8, eagle3(3, 1, 4)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native_speculative::Tree;

    fn base(source: &str) -> NativeTarget {
        serde_json::from_value(serde_json::json!({"model_source": source, "max_batch": 4})).unwrap()
    }

    #[test]
    fn each_rung_adds_one_step_and_random_models_draft_with_their_random_draft() {
        let rungs = native_ladder(&base("random:qwen3-8b"), None).unwrap();
        let names: Vec<&str> = rungs.iter().map(|r| r.name).collect();
        assert_eq!(names, ["bf16", "FP8", "FP8 + EAGLE-3 tree 4/4/16", "FP8 + EAGLE-3 chain 3/1/4"]);
        assert_eq!(rungs[0].target.quantization, Quantization::None);
        assert!(rungs[1..].iter().all(|r| r.target.quantization == Quantization::Fp8));
        assert!(rungs[..2].iter().all(|r| r.target.speculative.is_none()));
        let tree = |i: usize| Tree::of(rungs[i].target.speculative.as_ref().unwrap());
        assert_eq!(tree(2), Tree { num_steps: 4, topk: 4, num_draft_tokens: 16 });
        assert_eq!(tree(3), Tree { num_steps: 3, topk: 1, num_draft_tokens: 4 });
        for r in &rungs[2..] {
            assert_eq!(r.target.speculative.as_ref().unwrap().draft_model, "random:qwen3-8b-eagle3");
            assert_eq!(r.target.max_batch, Some(4));
        }
    }

    #[test]
    fn a_checkpoint_needs_its_draft_named() {
        let err = native_ladder(&base("/srv/models/Qwen3-8B"), Some(" ")).err().unwrap();
        assert!(err.contains("name the EAGLE-3 draft"), "{err}");
        let rungs = native_ladder(&base("/srv/models/Qwen3-8B"), Some("/srv/models/eagle3")).unwrap();
        assert_eq!(rungs[3].target.speculative.as_ref().unwrap().draft_model, "/srv/models/eagle3");
    }
}
