//! Speculative decoding through the engine thread, with a draft whose proposals are known
//! (the target as its own draft, `spec::self_draft`): greedy output equals plain greedy
//! decoding for every tree shape, batch and miss pattern; acceptance counts are exactly
//! what the draft deserves; stops inside an accepted run end the stream there; sampled
//! output keeps the target's distribution.

use engine::EngineHandle;
use engine::plan::EngineArgs;
use engine::request::{FinishReason, Finished, GenerateRequest, TokenEvent};
use engine::sampling::{Distribution, SamplingParams};
use engine::spec::self_draft::{Miss, SelfDraft};
use engine::spec::{DraftSource, SpecConfig, SpeculativeArgs};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

const TOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3");

fn start(spec: Option<(Miss, SpecConfig)>, args: EngineArgs) -> EngineHandle {
    let speculative = spec.map(|(miss, cfg)| SpeculativeArgs {
        draft: SelfDraft::source(miss),
        cfg,
        synthetic_acceptance: None,
    });
    EngineHandle::start("random:tiny", Some(Path::new(TOK)), &EngineArgs { speculative, ..args }).unwrap()
}

fn greedy(max_tokens: usize) -> SamplingParams {
    SamplingParams { temperature: 0.0, max_tokens: Some(max_tokens), ignore_eos: true, ..Default::default() }
}

/// Every event's tokens, and how the stream ended.
fn collect(mut rx: tokio::sync::mpsc::Receiver<TokenEvent>) -> (Vec<Vec<u32>>, Finished) {
    let mut events = vec![];
    loop {
        match rx.blocking_recv().expect("engine ends every stream with a finished event") {
            TokenEvent::Tokens { ids, finished } => {
                events.push(ids);
                if let Some(f) = finished {
                    return (events, f);
                }
            }
            TokenEvent::Error(e) => panic!("{e}"),
        }
    }
}

fn prompts(n: usize) -> Vec<Vec<u32>> {
    (0..n).map(|i| (0..(5 + 7 * i)).map(|t| (t * 131 + i * 977 + 11) as u32).collect()).collect()
}

/// Generates `max_tokens` for each prompt, all submitted at once; flat token lists.
fn generate(
    h: &EngineHandle,
    prompts: &[Vec<u32>],
    params: &SamplingParams,
) -> Vec<(Vec<Vec<u32>>, Finished)> {
    let rxs: Vec<_> = prompts
        .iter()
        .map(|p| h.submit(GenerateRequest { prompt: p.clone(), params: params.clone() }).unwrap())
        .collect();
    rxs.into_iter().map(collect).collect()
}

fn flat(events: &[Vec<u32>]) -> Vec<u32> {
    events.concat()
}

fn cfg(steps: usize, topk: usize, tokens: usize) -> SpecConfig {
    SpecConfig::new(steps, topk, tokens).unwrap()
}

#[test]
fn greedy_output_is_plain_greedy_for_every_tree_batch_and_miss() {
    let ps = prompts(3);
    let plain = start(None, EngineArgs::default());
    let want: Vec<Vec<u32>> = generate(&plain, &ps, &greedy(20)).iter().map(|(e, _)| flat(e)).collect();
    for tree in [cfg(3, 1, 4), cfg(4, 4, 16), cfg(2, 2, 5), cfg(5, 3, 9)] {
        for miss in [Miss::Never, Miss::AtDepth(2), Miss::Always] {
            let h = start(Some((miss, tree)), EngineArgs::default());
            // Batch 1 (one at a time), then all three together.
            for (p, w) in ps.iter().zip(&want) {
                let (events, end) = generate(&h, std::slice::from_ref(p), &greedy(20)).remove(0);
                assert_eq!(&flat(&events), w, "{tree:?} {miss:?} batch 1");
                assert_eq!(end.completion_tokens, 20);
            }
            let got: Vec<Vec<u32>> = generate(&h, &ps, &greedy(20)).iter().map(|(e, _)| flat(e)).collect();
            assert_eq!(got, want, "{tree:?} {miss:?} batch 3");
        }
    }
}

#[test]
fn accepted_lengths_are_what_the_draft_deserves_and_arrive_as_one_chunk_per_step() {
    // A chain of 3: all right, right until depth 3, always wrong.
    for (miss, per_step) in [(Miss::Never, 4), (Miss::AtDepth(3), 3), (Miss::Always, 1)] {
        let h = start(Some((miss, cfg(3, 1, 4))), EngineArgs::default());
        let (events, _) = generate(&h, &prompts(1), &greedy(1 + 4 * 5)).remove(0);
        // The first token comes from the prefill; each later event is one verify step.
        assert_eq!(events[0].len(), 1);
        let n = events.len();
        assert!(events[1..n - 1].iter().all(|e| e.len() == per_step), "{miss:?}: {events:?}");
        let s = &h.shared().stats.spec;
        let (steps, emitted) = (s.verify_steps.load(Relaxed), s.emitted_tokens.load(Relaxed));
        assert_eq!(emitted, steps * per_step as u64, "{miss:?}");
        assert_eq!(s.accept_length[per_step].load(Relaxed), steps, "{miss:?}");
        // Acceptance per depth: depth d accepted whenever the miss comes later.
        for d in 1..=3 {
            let accepted = s.accepted_at[d - 1].load(Relaxed);
            assert_eq!(accepted, if d < per_step { steps } else { 0 }, "{miss:?} depth {d}");
            assert_eq!(s.proposed_at[d - 1].load(Relaxed), steps);
        }
    }
}

#[test]
fn a_long_generation_with_rollbacks_equals_plain_greedy() {
    // Depth-2 misses under a branching tree: every step throws away drafted KV.
    let p = prompts(1);
    let plain = start(None, EngineArgs::default());
    let want = flat(&generate(&plain, &p, &greedy(150)).remove(0).0);
    let h = start(Some((Miss::AtDepth(2), cfg(4, 2, 8))), EngineArgs::default());
    assert_eq!(flat(&generate(&h, &p, &greedy(150)).remove(0).0), want);
}

#[test]
fn preemption_mid_generation_keeps_the_output() {
    // 17 pages of 4 slots cannot hold four sequences and their trees: rows are preempted,
    // recomputed, and drafted again from position 0.
    let args = EngineArgs {
        block_size: 4,
        kv_pages: Some(17),
        max_model_len: Some(64),
        max_batched_tokens: 7,
        ..Default::default()
    };
    let ps = prompts(4);
    let plain = start(None, args.clone());
    let want: Vec<Vec<u32>> = generate(&plain, &ps, &greedy(24)).iter().map(|(e, _)| flat(e)).collect();
    let h = start(Some((Miss::AtDepth(3), cfg(3, 1, 4))), args);
    let got: Vec<Vec<u32>> = generate(&h, &ps, &greedy(24)).iter().map(|(e, _)| flat(e)).collect();
    assert_eq!(got, want);
    let stats = &h.shared().stats;
    assert!(stats.preemptions.load(Relaxed) > 0, "the pages were meant to run out");
    settled_pages(&h);
}

#[test]
fn stops_and_limits_inside_an_accepted_run_end_the_stream_exactly_there() {
    // Random weights fall into loops: pick a prompt whose greedy run has a token at index
    // 3..8 that it did not produce before, to stop on it.
    let plain = start(None, EngineArgs::default());
    let (p, want, at) = (0..64u32)
        .find_map(|i| {
            let p = vec![i * 7 + 1, i * 13 + 2, i * 5 + 3];
            let want = flat(&generate(&plain, std::slice::from_ref(&p), &greedy(12)).remove(0).0);
            let at = (3..8).find(|&j| !want[..j].contains(&want[j]))?;
            Some((vec![p], want, at))
        })
        .expect("one of 64 prompts runs a fresh token early");
    let h = start(Some((Miss::Never, cfg(4, 1, 5))), EngineArgs::default());
    // max_tokens 7: the second step would emit tokens 2..6 and the third 7..11.
    let (events, end) = generate(&h, &p, &greedy(7)).remove(0);
    assert_eq!(flat(&events), want[..7]);
    assert_eq!(end.reason, FinishReason::Length);
    // The stop id inside a step's run of five.
    let params = SamplingParams { stop_token_ids: vec![want[at]], ..greedy(12) };
    let (events, end) = generate(&h, &p, &params).remove(0);
    assert_eq!(flat(&events), want[..=at], "nothing past the stop");
    assert_eq!((end.reason, end.completion_tokens), (FinishReason::Stop, at + 1));
    assert!(events.iter().any(|e| e.len() > 1), "the stop fell inside an accepted run");
}

#[test]
fn cancel_mid_generation_frees_the_row_and_the_engine_serves_on() {
    let h = start(Some((Miss::Never, cfg(3, 1, 4))), EngineArgs::default());
    let mut rx = h.submit(GenerateRequest { prompt: prompts(1).remove(0), params: greedy(200) }).unwrap();
    let _first = rx.blocking_recv().unwrap();
    drop(rx);
    let (events, _) = generate(&h, &prompts(2)[1..], &greedy(9)).remove(0);
    assert_eq!(flat(&events).len(), 9);
    let stats = &h.shared().stats;
    assert_eq!(stats.cancelled.load(Relaxed), 1);
    settled_pages(&h);
}

/// The engine thread publishes its page count after the step that ended the last
/// stream; wait for that before reading it.
fn settled_pages(h: &EngineHandle) {
    let t0 = std::time::Instant::now();
    while h.shared().stats.kv_pages_used.load(Relaxed) != 0 {
        assert!(t0.elapsed().as_secs() < 5, "pages still used 5 s after the last stream ended");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Sampled speculation keeps the target's distribution: the pair of the first two
/// generated tokens (the second comes out of a verified tree) against the exact joint
/// distribution of plain sampling, by chi-square over 3000 seeded requests.
#[test]
fn sampled_output_keeps_the_targets_joint_distribution() {
    let prompt = vec![11u32, 22, 33];
    let params = SamplingParams {
        temperature: 1.0,
        top_k: 3,
        max_tokens: Some(2),
        ignore_eos: true,
        ..Default::default()
    };
    // Exact p(t1) p(t2 | t1) from the target's logits.
    let cfg0 = engine::presets::preset("tiny").unwrap();
    let w = engine::weights::ModelWeights::random(&cfg0, 0).unwrap();
    let mut target = engine::model::cpu::CpuBackend::new(cfg0, w, 64, 16);
    let first = Distribution::new(target.logits_all_positions(&prompt).unwrap().last().unwrap(), &params);
    let mut exact = std::collections::HashMap::new();
    for (&t1, &q1) in first.ids.iter().zip(&first.probs) {
        let seq: Vec<u32> = prompt.iter().copied().chain([t1]).collect();
        let second = Distribution::new(target.logits_all_positions(&seq).unwrap().last().unwrap(), &params);
        for (&t2, &q2) in second.ids.iter().zip(&second.probs) {
            exact.insert((t1, t2), q1 / first.mass * q2 / second.mass);
        }
    }
    let h = start(Some((Miss::Never, cfg(2, 2, 4))), EngineArgs::default());
    let n = 3000;
    let mut counts = std::collections::HashMap::new();
    for chunk in (0..n).collect::<Vec<u64>>().chunks(8) {
        let rxs: Vec<_> = chunk
            .iter()
            .map(|&seed| {
                let params = SamplingParams { seed: Some(seed), ..params.clone() };
                h.submit(GenerateRequest { prompt: prompt.clone(), params }).unwrap()
            })
            .collect();
        for rx in rxs {
            let toks = flat(&collect(rx).0);
            *counts.entry((toks[0], toks[1])).or_insert(0u64) += 1;
        }
    }
    assert!(counts.keys().all(|k| exact.contains_key(k)), "a pair the target cannot produce: {counts:?}");
    let x2: f64 = exact
        .iter()
        .map(|(k, &q)| {
            let c = *counts.get(k).unwrap_or(&0) as f64;
            (c - n as f64 * q).powi(2) / (n as f64 * q)
        })
        .sum();
    // 9 pairs, 8 degrees of freedom: 26.12 at p = 0.001.
    assert_eq!(exact.len(), 9);
    assert!(x2 < 26.12, "chi-square {x2:.2}: {counts:?} against {exact:?}");
    let s = &h.shared().stats.spec;
    assert!(s.verify_steps.load(Relaxed) >= n, "every request's second token came from a verified tree");
}

/// A random EAGLE-3 draft of the exact architecture (it rarely agrees with its target):
/// whatever it proposes, the output is plain greedy decoding's, and its acceptance is
/// counted.
#[test]
fn a_random_eagle3_draft_changes_no_greedy_token() {
    let ps = prompts(3);
    let plain = start(None, EngineArgs::default());
    let want: Vec<Vec<u32>> = generate(&plain, &ps, &greedy(16)).iter().map(|(e, _)| flat(e)).collect();
    for tree in [cfg(4, 4, 16), cfg(3, 1, 4)] {
        let speculative = Some(SpeculativeArgs {
            draft: DraftSource::Named("random:tiny-eagle3".into()),
            cfg: tree,
            synthetic_acceptance: None,
        });
        let h = EngineHandle::start(
            "random:tiny",
            Some(Path::new(TOK)),
            &EngineArgs { speculative, ..Default::default() },
        )
        .unwrap();
        let got: Vec<Vec<u32>> = generate(&h, &ps, &greedy(16)).iter().map(|(e, _)| flat(e)).collect();
        assert_eq!(got, want, "{tree:?}");
        let info = h.shared().speculative.clone().expect("the engine says it speculates");
        assert!(info.draft.random_weights && info.draft.source == "random:tiny-eagle3", "{info:?}");
        let s = &h.shared().stats.spec;
        assert!(s.verify_steps.load(Relaxed) > 0);
    }
}
