//! `--speculative-*`: SGLang's flag names, so the seed study's commands carry over.

use engine::spec::{DraftSource, SpecConfig, SpeculativeArgs};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// EAGLE-3 (SGLang `--speculative-algorithm EAGLE3`).
    #[value(name = "EAGLE3", alias = "eagle3")]
    Eagle3,
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct SpeculativeFlags {
    /// Speculative decoding with a draft model (CPU backend). `--model random:<preset>-eagle3`
    /// turns it on with that preset's random draft.
    #[arg(long, value_enum)]
    pub speculative_algorithm: Option<Algorithm>,
    /// The draft: an EAGLE-3 checkpoint folder (config.json + safetensors, as the public
    /// Qwen3 drafts) or `random:<preset>-eagle3` (random weights: acceptance means nothing).
    #[arg(long)]
    pub speculative_draft_model_path: Option<String>,
    /// Draft levels per step (default 3).
    #[arg(long)]
    pub speculative_num_steps: Option<usize>,
    /// Branches per node and level; 1 is a chain (default 1).
    #[arg(long)]
    pub speculative_eagle_topk: Option<usize>,
    /// Tree nodes verified per step, the root included (default num_steps + 1 for a chain).
    #[arg(long)]
    pub speculative_num_draft_tokens: Option<usize>,
    /// Measurement only (latlab's own flag): the draft still runs, but its proposals come
    /// from the target's greedy continuation of the same prompt, recorded the last time it
    /// was served without speculation, made to reach this mean accepted length per round
    /// (the bonus included). Greedy requests only; a prompt's first request records.
    #[arg(long)]
    pub speculative_synthetic_acceptance: Option<f64>,
}

/// The target model and the speculative args `--model` and the flags ask for; errors
/// name the flag.
pub fn resolve(model: &str, f: &SpeculativeFlags) -> anyhow::Result<(String, Option<SpeculativeArgs>)> {
    let shorthand = engine::spec::draft::eagle3_target_preset(model);
    let target = shorthand.map_or_else(|| model.to_string(), |p| format!("random:{p}"));
    let tree_flags = f.speculative_draft_model_path.is_some()
        || f.speculative_synthetic_acceptance.is_some()
        || f.speculative_num_steps.is_some()
        || f.speculative_eagle_topk.is_some()
        || f.speculative_num_draft_tokens.is_some();
    if f.speculative_algorithm.is_none() && shorthand.is_none() {
        if tree_flags {
            anyhow::bail!("--speculative-* flags need --speculative-algorithm EAGLE3");
        }
        return Ok((target, None));
    }
    let draft = match (&f.speculative_draft_model_path, shorthand) {
        (Some(d), _) => d.clone(),
        (None, Some(_)) => model.to_string(),
        (None, None) => anyhow::bail!(
            "--speculative-algorithm EAGLE3 needs --speculative-draft-model-path (a checkpoint folder or \
             random:<preset>-eagle3)"
        ),
    };
    let steps = f.speculative_num_steps.unwrap_or(3);
    let topk = f.speculative_eagle_topk.unwrap_or(1);
    let tokens =
        f.speculative_num_draft_tokens.unwrap_or(if topk == 1 { steps + 1 } else { steps * topk + 1 });
    let cfg = SpecConfig::new(steps, topk, tokens)?;
    let synthetic_acceptance = f.speculative_synthetic_acceptance;
    Ok((target, Some(SpeculativeArgs { draft: DraftSource::Named(draft), cfg, synthetic_acceptance })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(
        alg: bool,
        draft: Option<&str>,
        tree: (Option<usize>, Option<usize>, Option<usize>),
    ) -> SpeculativeFlags {
        SpeculativeFlags {
            speculative_algorithm: alg.then_some(Algorithm::Eagle3),
            speculative_draft_model_path: draft.map(String::from),
            speculative_num_steps: tree.0,
            speculative_eagle_topk: tree.1,
            speculative_num_draft_tokens: tree.2,
            speculative_synthetic_acceptance: None,
        }
    }

    #[test]
    fn synthetic_acceptance_rides_along_and_needs_a_draft() {
        let f = SpeculativeFlags { speculative_synthetic_acceptance: Some(3.3), ..Default::default() };
        let (_, s) = resolve("random:tiny-eagle3", &f).unwrap();
        assert_eq!(s.unwrap().synthetic_acceptance, Some(3.3));
        let e = resolve("random:tiny", &f).unwrap_err().to_string();
        assert!(e.contains("--speculative-algorithm EAGLE3"), "{e}");
    }

    #[test]
    fn the_shorthand_the_seed_flags_and_the_errors() {
        let (t, s) = resolve("random:tiny-eagle3", &SpeculativeFlags::default()).unwrap();
        let s = s.unwrap();
        assert_eq!(t, "random:tiny");
        assert_eq!(s.cfg, SpecConfig::new(3, 1, 4).unwrap());
        assert!(matches!(s.draft, DraftSource::Named(ref d) if d == "random:tiny-eagle3"));
        // The seed study's SGLang flags.
        let f = flags(true, Some("/models/qwen3_8b_eagle3"), (Some(4), Some(4), Some(16)));
        let (t, s) = resolve("/models/Qwen3-8B-FP8", &f).unwrap();
        assert_eq!(t, "/models/Qwen3-8B-FP8");
        assert_eq!(s.unwrap().cfg, SpecConfig::new(4, 4, 16).unwrap());
        assert!(resolve("random:tiny", &SpeculativeFlags::default()).unwrap().1.is_none());
        let e = resolve("random:tiny", &flags(false, None, (Some(4), None, None))).unwrap_err().to_string();
        assert!(e.contains("--speculative-algorithm"), "{e}");
        let e = resolve("random:tiny", &flags(true, None, (None, None, None))).unwrap_err().to_string();
        assert!(e.contains("--speculative-draft-model-path"), "{e}");
        let e = resolve("random:tiny-eagle3", &flags(true, None, (Some(3), Some(1), Some(9))))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--speculative-num-draft-tokens 9"), "{e}");
    }
}
