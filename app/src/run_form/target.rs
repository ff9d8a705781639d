//! The form's target fields as a `Target`: an external URL, the native engine (with its
//! EAGLE-3 options), or launched engines from named presets.

use super::RunForm;
use super::parser::{NUMBER, Parser, WHOLE, opt_text, ticked};
use bench_types::launched::{LaunchedTarget, Speculative, SpeculativeAlgorithm, seed_presets};
use bench_types::native_speculative::random_draft_for;
use bench_types::{Device, NativeTarget, Quantization, Target};

impl RunForm {
    /// The named presets, in order; an error names the first unknown one.
    pub fn launched_targets(&self) -> Result<Vec<(&'static str, LaunchedTarget)>, String> {
        let presets = seed_presets();
        let mut out = Vec::new();
        for name in self.presets.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match presets.iter().find(|(n, _)| *n == name) {
                Some((n, t)) if !out.iter().any(|(m, _)| m == n) => out.push((*n, t.clone())),
                Some(_) => return Err(format!("{name:?} is listed twice")),
                None => {
                    let known: Vec<&str> = presets.iter().map(|(n, _)| *n).collect();
                    return Err(format!("unknown preset {name:?}; known: {}", known.join(", ")));
                }
            }
        }
        if out.is_empty() {
            return Err("name at least one preset, e.g. vllm-bf16".into());
        }
        Ok(out)
    }

    /// The exact commands the presets will run (shown under the field).
    pub fn launch_preview(&self) -> Vec<String> {
        self.launched_targets()
            .map(|ts| {
                ts.iter().map(|(n, t)| format!("{n}: {}", t.render(None, "<run dir>").display())).collect()
            })
            .unwrap_or_default()
    }

    pub(super) fn target(&self, p: &mut Parser) -> Target {
        let placeholder = || Target::External { base_url: "http://127.0.0.1".into(), api_key_env: None };
        match self.target_kind.as_str() {
            "external" => Target::External {
                base_url: self.base_url.trim().to_string(),
                api_key_env: opt_text(&self.api_key_env),
            },
            "native" => Target::Native(self.native_target(p)),
            "launched" => match self.launched_targets() {
                Ok(mut targets) => Target::Launched(targets.remove(0).1),
                Err(msg) => {
                    p.errors.push("target.presets", msg);
                    placeholder()
                }
            },
            other => {
                p.errors.push(
                    "target.kind",
                    format!("unknown target {other:?}; choose external, native or launched"),
                );
                placeholder()
            }
        }
    }

    fn native_target(&self, p: &mut Parser) -> NativeTarget {
        NativeTarget {
            model_source: self.model_source.trim().to_string(),
            device: match self.device.as_str() {
                "cpu" => Device::Cpu,
                "cuda" => Device::Cuda,
                _ => Device::Auto,
            },
            quantization: match self.quantization.trim() {
                "" | "none" => Quantization::None,
                "fp8" => Quantization::Fp8,
                other => {
                    p.errors.push(
                        "target.quantization",
                        format!("unknown weights {other:?}; choose none or fp8"),
                    );
                    Quantization::None
                }
            },
            max_batch: p.opt_num("target.max_batch", &self.max_batch, WHOLE),
            cuda_graphs: true,
            speculative: self.speculative(p),
            synthetic_acceptance: p.opt_num("target.synthetic_acceptance", &self.spec_synthetic, NUMBER),
        }
    }

    /// EAGLE-3 options when the box is ticked; the draft defaults to the random model's own.
    fn speculative(&self, p: &mut Parser) -> Option<Speculative> {
        if !ticked(&self.speculative) {
            return None;
        }
        let draft_model = match self.draft_model.trim() {
            "" => random_draft_for(self.model_source.trim()).unwrap_or_default(),
            d => d.to_string(),
        };
        Some(Speculative {
            algorithm: SpeculativeAlgorithm::Eagle3,
            draft_model,
            num_steps: p.opt_num("target.speculative.num_steps", &self.spec_num_steps, WHOLE),
            topk: p.opt_num("target.speculative.topk", &self.spec_topk, WHOLE),
            num_draft_tokens: p.opt_num(
                "target.speculative.num_draft_tokens",
                &self.spec_num_draft_tokens,
                WHOLE,
            ),
        })
    }

    /// The native engine serves whatever name requests use; left at the form's default
    /// (a real checkpoint's id), it is named after what it serves instead.
    pub(super) fn served_model(&self, target: &Target) -> String {
        match target {
            Target::Native(n)
                if self.model.trim().is_empty() || self.model.trim() == RunForm::default().model =>
            {
                n.model_source.trim_end_matches('/').rsplit('/').next().unwrap_or(&n.model_source).to_string()
            }
            _ => self.model.trim().to_string(),
        }
    }
}
