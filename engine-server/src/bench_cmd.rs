//! `latlab-engine bench`: engine speed without HTTP. Submits `batch` identical-length greedy
//! requests with ignore_eos and reports the batch's time to first token and its decode time
//! per step; with several batch sizes, each round runs them in turn over the one load.
//!
//! What the numbers mean: every prompt is prefilled in the first step (main.rs sizes the
//! step's token budget for it), so all sequences then decode in lockstep and the decode
//! window holds decode steps only. (With a 512-token budget, batch 8 of 232-token prompts
//! prefilled over four steps, the later ones inside the first sequence's decode window:
//! ~0.3 ms per step of prefill time counted as decode.) Each sequence's events are
//! timestamped as they arrive, by a thread per sequence.
//!
//! With a draft (`--speculative-*`), "ms/step" is the decode time per generated token (a
//! step emits several), and a second line gives what speculation cost and bought over the
//! batch's run: the draft's and the verify's mean time per call (each call serves every
//! row of one step) and the mean accepted length (tokens per row-step, bonus included).
//! With `--speculative-synthetic-acceptance` (spec/synthetic.rs) a prompt's first request
//! decodes plainly and is recorded, so round 0 is the speculation-off baseline and the later
//! rounds speculate at the chosen acceptance, over the same prompts.

use crate::cli::BenchArgs;
use engine::engine_loop::SpecStats;
use engine::request::{GenerateRequest, TokenEvent};
use engine::sampling::SamplingParams;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;
use tokio::sync::mpsc::Receiver;

/// One sequence's stream: when its first and last tokens arrived, and how many there were.
struct Arrivals {
    first: Instant,
    last: Instant,
    tokens: usize,
}

fn drain(mut rx: Receiver<TokenEvent>) -> anyhow::Result<Arrivals> {
    let mut first = None;
    let mut tokens = 0usize;
    while let Some(ev) = rx.blocking_recv() {
        match ev {
            TokenEvent::Tokens { ids, finished } => {
                let now = Instant::now();
                tokens += ids.len();
                let first = *first.get_or_insert(now);
                if finished.is_some() {
                    return Ok(Arrivals { first, last: now, tokens });
                }
            }
            TokenEvent::Error(e) => anyhow::bail!(e),
        }
    }
    anyhow::bail!("the engine closed a stream before its last token")
}

pub fn run(a: BenchArgs, handle: &engine::EngineHandle) -> anyhow::Result<()> {
    for round in 0..a.rounds {
        for &batch in &a.batch {
            one_batch(&a, handle, round, batch as usize)?;
        }
    }
    Ok(())
}

/// One round of one batch size: submit, drain, print the line.
fn one_batch(a: &BenchArgs, handle: &engine::EngineHandle, round: usize, batch: usize) -> anyhow::Result<()> {
    let vocab = 151_000u32.min(handle.shared().config.vocab_size as u32);
    let spec_before = SpecCounters::of(&handle.shared().stats.spec);
    let t0 = Instant::now();
    let rxs: Vec<_> = (0..batch)
        .map(|b| {
            // Distinct per row and per batch size, the same in every round: under synthetic
            // acceptance round 0 records each prompt and the later rounds speculate on it.
            let prompt = (0..a.prompt_len)
                .map(|i| ((i * 7919 + b * 104_729 + batch * 15_485_863 + 11) % vocab as usize) as u32)
                .collect();
            let params = SamplingParams {
                temperature: 0.0,
                max_tokens: Some(a.gen_len),
                ignore_eos: true,
                ..Default::default()
            };
            handle.submit(GenerateRequest { prompt, params })
        })
        .collect::<Result<_, _>>()?;
    let seqs = std::thread::scope(|s| {
        let joins: Vec<_> = rxs.into_iter().map(|rx| s.spawn(|| drain(rx))).collect();
        joins
            .into_iter()
            .map(|j| j.join().expect("bench reader thread panicked"))
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    // The batch's first token: when every sequence has one. Decode: from there to the
    // last token of all, gen_len - 1 steps.
    let first = seqs.iter().map(|s| s.first).max().unwrap_or(t0);
    let end = seqs.iter().map(|s| s.last).max().unwrap_or(first);
    let tokens: usize = seqs.iter().map(|s| s.tokens).sum();
    let ttft = (first - t0).as_secs_f64();
    let decode = (end - first).as_secs_f64();
    let decode_tokens = tokens.saturating_sub(batch);
    let steps = a.gen_len.saturating_sub(1).max(1);
    // Three decimals: the changes measured are often 10-30 us a step.
    println!(
        "round {round}: batch {batch} prompt {} gen {}: TTFT {:.3} s, decode {} tokens in {:.3} s = {:.2} tok/s ({:.3} ms/step)",
        a.prompt_len,
        a.gen_len,
        ttft,
        decode_tokens,
        decode,
        decode_tokens as f64 / decode,
        decode * 1e3 / steps as f64
    );
    if handle.shared().speculative.is_some() {
        let d = SpecCounters::of(&handle.shared().stats.spec).since(&spec_before);
        let synthetic =
            handle.shared().speculative.as_ref().is_some_and(|s| s.synthetic_acceptance.is_some());
        if synthetic && d.verify_calls == 0 {
            println!(
                "round {round}: batch {batch} spec: no verified rounds (first sight of these prompts: recorded)"
            );
            return Ok(());
        }
        println!(
            "round {round}: batch {batch} spec: {} verify calls, {:.3} ms each; {} draft calls, {:.3} ms each; mean accepted length {:.2}",
            d.verify_calls,
            d.verify_nanos as f64 / 1e6 / d.verify_calls.max(1) as f64,
            d.draft_calls,
            d.draft_nanos as f64 / 1e6 / d.draft_calls.max(1) as f64,
            d.emitted as f64 / d.verify_steps.max(1) as f64,
        );
    }
    Ok(())
}

/// The speculation counters a batch's line is computed from, read before and after it.
#[derive(Clone, Copy)]
struct SpecCounters {
    verify_steps: u64,
    emitted: u64,
    draft_nanos: u64,
    draft_calls: u64,
    verify_nanos: u64,
    verify_calls: u64,
}

impl SpecCounters {
    fn of(s: &SpecStats) -> Self {
        SpecCounters {
            verify_steps: s.verify_steps.load(Relaxed),
            emitted: s.emitted_tokens.load(Relaxed),
            draft_nanos: s.draft_nanos.load(Relaxed),
            draft_calls: s.draft_calls.load(Relaxed),
            verify_nanos: s.verify_nanos.load(Relaxed),
            verify_calls: s.verify_calls.load(Relaxed),
        }
    }

    fn since(&self, before: &Self) -> Self {
        SpecCounters {
            verify_steps: self.verify_steps - before.verify_steps,
            emitted: self.emitted - before.emitted,
            draft_nanos: self.draft_nanos - before.draft_nanos,
            draft_calls: self.draft_calls - before.draft_calls,
            verify_nanos: self.verify_nanos - before.verify_nanos,
            verify_calls: self.verify_calls - before.verify_calls,
        }
    }
}
