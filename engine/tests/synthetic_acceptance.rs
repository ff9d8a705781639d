//! Synthetic acceptance (spec/synthetic.rs), through the engine thread on the CPU with a
//! random EAGLE-3 draft: a prompt's first greedy request decodes plainly and is recorded;
//! the same prompt again speculates, keeps the target's greedy output token for token, and
//! accepts the chosen mean length per round; sampled requests never speculate; a mean out
//! of range is refused naming the flag.

use engine::EngineHandle;
use engine::plan::EngineArgs;
use engine::request::{GenerateRequest, TokenEvent};
use engine::sampling::SamplingParams;
use engine::spec::{DraftSource, SpecConfig, SpeculativeArgs};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

const TOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3");

fn start(mean: f64) -> engine::error::Result<EngineHandle> {
    let speculative = SpeculativeArgs {
        draft: DraftSource::Named("random:tiny-eagle3".into()),
        cfg: SpecConfig::new(3, 1, 4).unwrap(),
        synthetic_acceptance: Some(mean),
    };
    let args = EngineArgs { speculative: Some(speculative), ..Default::default() };
    EngineHandle::start("random:tiny", Some(Path::new(TOK)), &args)
}

fn params(temperature: f32, max_tokens: usize) -> SamplingParams {
    SamplingParams { temperature, max_tokens: Some(max_tokens), ignore_eos: true, ..Default::default() }
}

/// The request's generated tokens.
fn generate(h: &EngineHandle, prompt: &[u32], p: SamplingParams) -> Vec<u32> {
    let mut rx = h.submit(GenerateRequest { prompt: prompt.to_vec(), params: p }).unwrap();
    let mut out = vec![];
    loop {
        match rx.blocking_recv().expect("every stream ends with a finished event") {
            TokenEvent::Tokens { ids, finished } => {
                out.extend(ids);
                if finished.is_some() {
                    return out;
                }
            }
            TokenEvent::Error(e) => panic!("{e}"),
        }
    }
}

/// (verified row-steps, tokens they emitted) so far.
fn counts(h: &EngineHandle) -> (u64, u64) {
    let s = &h.shared().stats.spec;
    (s.verify_steps.load(Relaxed), s.emitted_tokens.load(Relaxed))
}

#[test]
fn a_recorded_prompt_speculates_at_the_chosen_acceptance_and_keeps_the_greedy_output() {
    let prompt: Vec<u32> = (0..12).map(|t| t * 37 + 5).collect();
    for mean in [1.0, 2.5, 4.0] {
        let h = start(mean).unwrap();
        let info = h.shared().speculative.clone().expect("speculating");
        assert_eq!(info.synthetic_acceptance, Some(mean));
        // First sight: plain greedy decoding, recorded.
        let plain = generate(&h, &prompt, params(0.0, 49));
        assert_eq!(counts(&h), (0, 0), "mean {mean}: a prompt's first request does not speculate");
        // Second sight: the same tokens, through verified rounds.
        let spec = generate(&h, &prompt, params(0.0, 49));
        assert_eq!(spec, plain, "mean {mean}: speculation changed the greedy output");
        let (steps, emitted) = counts(&h);
        assert!(steps > 0, "mean {mean}: the recorded prompt did not speculate");
        let got = emitted as f64 / steps as f64;
        eprintln!("mean {mean}: {steps} rounds accepted {got:.3} tokens each");
        // 48 tokens after the prefill's: the last round may be cut short by max_tokens (the
        // rounds take the recording's tokens, so nothing else moves the mean).
        assert!(
            (got - mean).abs() <= 0.1,
            "mean {mean}: rounds accepted {got} on average ({emitted} / {steps})"
        );
        // A sampled request never speculates here, recorded prompt or not.
        generate(&h, &prompt, params(0.8, 10));
        assert_eq!(counts(&h).0, steps, "mean {mean}: a sampled request speculated");
        h.shutdown().unwrap();
    }
}

#[test]
fn a_mean_past_what_the_tree_can_accept_is_refused_naming_the_flag() {
    for bad in [0.5, 4.5] {
        let e = start(bad).err().expect("refused").to_string();
        assert!(e.contains("--speculative-synthetic-acceptance"), "{e}");
    }
}
