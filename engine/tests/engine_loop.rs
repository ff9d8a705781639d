//! The engine thread end to end on a tiny random model: batched, chunked, paged generation
//! equals plain single-sequence greedy decoding; limits and cancellation behave.

use engine::EngineHandle;
use engine::model::cpu::CpuBackend;
use engine::plan::EngineArgs;
use engine::request::{FinishReason, Finished, GenerateRequest, TokenEvent};
use engine::sampling::{SamplingParams, argmax};
use engine::weights::ModelWeights;
use std::path::Path;

const TOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3");

fn start(args: EngineArgs) -> EngineHandle {
    EngineHandle::start("random:tiny", Some(Path::new(TOK)), &args).unwrap()
}

fn greedy(max_tokens: usize) -> SamplingParams {
    SamplingParams { temperature: 0.0, max_tokens: Some(max_tokens), ignore_eos: true, ..Default::default() }
}

fn collect(mut rx: tokio::sync::mpsc::Receiver<TokenEvent>) -> (Vec<u32>, Finished) {
    let mut toks = vec![];
    loop {
        match rx.blocking_recv().expect("engine ends every stream with a finished token") {
            TokenEvent::Tokens { ids, finished } => {
                toks.extend(ids);
                if let Some(f) = finished {
                    return (toks, f);
                }
            }
            TokenEvent::Error(e) => panic!("{e}"),
        }
    }
}

/// Reference: greedy decoding by re-running the whole sequence each step, no scheduler.
fn reference_greedy(prompt: &[u32], n: usize) -> Vec<u32> {
    let cfg = engine::presets::preset("tiny").unwrap();
    let mut b = CpuBackend::new(cfg.clone(), ModelWeights::random(&cfg, 0).unwrap(), 64, 16);
    let mut toks = prompt.to_vec();
    for _ in 0..n {
        let logits = b.logits_all_positions(&toks).unwrap();
        toks.push(argmax(logits.last().unwrap()));
    }
    toks[prompt.len()..].to_vec()
}

#[test]
fn batched_chunked_generation_equals_reference_greedy() {
    // Small budget and pages force chunked prefill, batching and preemption.
    let h = start(EngineArgs {
        max_batched_tokens: 7,
        block_size: 4,
        kv_pages: Some(16),
        max_model_len: Some(64),
        ..Default::default()
    });
    let prompts: Vec<Vec<u32>> =
        (0..4).map(|i| (0..(10 + 5 * i)).map(|t| (t * 37 + i * 1000) as u32).collect()).collect();
    let rxs: Vec<_> = prompts
        .iter()
        .map(|p| h.submit(GenerateRequest { prompt: p.clone(), params: greedy(12) }).unwrap())
        .collect();
    for (p, rx) in prompts.iter().zip(rxs) {
        let (toks, end) = collect(rx);
        assert_eq!(
            end,
            Finished { reason: FinishReason::Length, prompt_tokens: p.len(), completion_tokens: 12 }
        );
        assert_eq!(toks, reference_greedy(p, 12));
    }
    let stats = &h.shared().stats;
    assert_eq!(stats.kv_pages_used.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert!(
        stats.preemptions.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "16 pages of 4 cannot hold 4 sequences"
    );
}

#[test]
fn limits_stop_ids_and_cancellation() {
    let h = start(EngineArgs { max_model_len: Some(32), ..Default::default() });
    let too_long = h.submit(GenerateRequest { prompt: vec![1; 30], params: greedy(5) });
    assert!(too_long.unwrap_err().to_string().contains("maximum context length"));
    // Stop on the first greedy token when it is a stop id.
    let first = reference_greedy(&[5, 6, 7], 1)[0];
    let params = SamplingParams { stop_token_ids: vec![first], ..greedy(10) };
    let (toks, end) = collect(h.submit(GenerateRequest { prompt: vec![5, 6, 7], params }).unwrap());
    assert_eq!(toks, vec![first]);
    assert!(matches!(end, Finished { reason: FinishReason::Stop, completion_tokens: 1, .. }));
    // No max_tokens: generation runs to the model length.
    let params = SamplingParams { max_tokens: None, ..greedy(1) };
    let (toks, _) = collect(h.submit(GenerateRequest { prompt: vec![1; 20], params }).unwrap());
    assert_eq!(toks.len(), 12);
    // A dropped receiver cancels: the engine frees the pages and keeps serving.
    drop(h.submit(GenerateRequest { prompt: vec![3; 10], params: greedy(20) }).unwrap());
    let (toks, _) = collect(h.submit(GenerateRequest { prompt: vec![4; 10], params: greedy(3) }).unwrap());
    assert_eq!(toks.len(), 3);
    // Seeded sampling is reproducible.
    let sampled = |seed| {
        let params = SamplingParams { temperature: 1.0, seed: Some(seed), ..greedy(8) };
        collect(h.submit(GenerateRequest { prompt: vec![9, 9, 9], params }).unwrap()).0
    };
    assert_eq!(sampled(1), sampled(1));
    assert_ne!(sampled(1), sampled(2));
}

/// `shutdown` refuses while another handle holds the queue (the thread would run on), and
/// on the last handle returns only after the engine thread has ended: its alive flag, which
/// the thread clears as it exits, reads false on a clone taken before.
#[test]
fn shutdown_joins_the_engine_thread() {
    let h = start(EngineArgs::default());
    let (_, f) = collect(h.submit(GenerateRequest { prompt: vec![1, 2, 3], params: greedy(2) }).unwrap());
    assert_eq!(f.reason, FinishReason::Length);
    let other = h.clone();
    let e = h.clone().shutdown().unwrap_err().to_string();
    assert!(e.contains("other engine handles"), "{e}");
    assert!(h.is_alive());
    let watcher = std::sync::Arc::clone(h.shared());
    drop(other);
    h.shutdown().unwrap();
    assert!(!watcher.is_alive());
}
