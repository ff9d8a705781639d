//! `latlab-engine serve` flags for a native target: structured options in, argv out.

use bench_types::native_speculative::Tree;
use bench_types::spec::{Device, NativeTarget, Quantization};

/// The argv (after the program) that serves `target` under the name `served_model` on a
/// port the engine picks (it prints "listening on http://..." once ready).
pub fn engine_args(target: &NativeTarget, served_model: &str) -> Vec<String> {
    let device = match target.device {
        Device::Auto => "auto",
        Device::Cpu => "cpu",
        Device::Cuda => "cuda",
    };
    let mut args: Vec<String> = vec![
        "serve".into(),
        "--model".into(),
        target.model_source.clone(),
        "--served-model-name".into(),
        served_model.to_string(),
        "--host".into(),
        "127.0.0.1".into(),
        "--port".into(),
        "0".into(),
        "--device".into(),
        device.into(),
    ];
    // No flag: the engine's own default (64 on CUDA, its largest captured decode graph).
    if let Some(b) = target.max_batch {
        args.extend(["--max-batch".into(), b.to_string()]);
    }
    // `None` passes no flag: the engine then serves the weights as stored, so an FP8
    // checkpoint (quantization_config in its config.json) still runs in FP8. `Fp8` quantizes a
    // bf16 checkpoint or random preset at load.
    match target.quantization {
        Quantization::None => {}
        Quantization::Fp8 => args.extend(["--quantization".into(), "fp8".into()]),
    }
    // SGLang's flag names; every number spelled out (the defaults filled in) so the engine's
    // log says exactly which tree ran.
    if let Some(s) = &target.speculative {
        let t = Tree::of(s);
        args.extend([
            "--speculative-algorithm".into(),
            "EAGLE3".into(),
            "--speculative-draft-model-path".into(),
            s.draft_model.clone(),
            "--speculative-num-steps".into(),
            t.num_steps.to_string(),
            "--speculative-eagle-topk".into(),
            t.topk.to_string(),
            "--speculative-num-draft-tokens".into(),
            t.num_draft_tokens.to_string(),
        ]);
        if let Some(l) = target.synthetic_acceptance {
            args.extend(["--speculative-synthetic-acceptance".into(), l.to_string()]);
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_structured_options_as_separate_arguments() {
        let t = NativeTarget {
            model_source: "random:tiny".into(),
            device: Device::Cpu,
            quantization: Quantization::None,
            max_batch: Some(4),
            cuda_graphs: true,
            speculative: None,
            synthetic_acceptance: None,
        };
        let args = engine_args(&t, "Qwen/Qwen3-8B; rm -rf /");
        assert_eq!(
            args.join(" "),
            "serve --model random:tiny --served-model-name Qwen/Qwen3-8B; rm -rf / --host 127.0.0.1 --port 0 --device cpu --max-batch 4"
        );
        // Each value is one argv element: no shell ever splits or interprets it.
        assert_eq!(args[4], "Qwen/Qwen3-8B; rm -rf /");
        let fp8 = NativeTarget { quantization: Quantization::Fp8, ..t.clone() };
        let args = engine_args(&fp8, "m");
        assert_eq!(args[args.len() - 2..], ["--quantization", "fp8"]);
        let default_batch = NativeTarget { max_batch: None, ..t };
        let args = engine_args(&default_batch, "m");
        assert!(!args.contains(&"--max-batch".to_string()), "the engine's default: {args:?}");
    }

    #[test]
    fn speculation_passes_sglangs_flags_with_the_defaults_spelled_out() {
        use bench_types::launched::{Speculative, SpeculativeAlgorithm};
        let t = NativeTarget {
            model_source: "random:tiny".into(),
            device: Device::Cpu,
            quantization: Quantization::Fp8,
            max_batch: Some(4),
            cuda_graphs: true,
            speculative: Some(Speculative {
                algorithm: SpeculativeAlgorithm::Eagle3,
                draft_model: "random:tiny-eagle3".into(),
                num_steps: None,
                topk: None,
                num_draft_tokens: None,
            }),
            synthetic_acceptance: None,
        };
        let args = engine_args(&t, "tiny").join(" ");
        assert!(
            args.ends_with(
                "--quantization fp8 --speculative-algorithm EAGLE3 --speculative-draft-model-path random:tiny-eagle3 \
                 --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
            ),
            "{args}"
        );
        let synthetic = NativeTarget { synthetic_acceptance: Some(3.3), ..t };
        let args = engine_args(&synthetic, "tiny");
        assert_eq!(args[args.len() - 2..], ["--speculative-synthetic-acceptance", "3.3"]);
    }
}
