//! The engine thread: the only code that touches the model backend. It takes requests from
//! a bounded command channel, runs scheduler steps, samples, and sends token events to each
//! request's own bounded channel. A closed event channel (client gone) cancels the request.

mod speculate;
mod stats;

pub use stats::{EngineStats, SpecStats};

use crate::arrivals::Arrivals;
use crate::block_manager::BlockManager;
use crate::error::Result;
use crate::model::{Backend, Next, RowHint, SeqChunk};
use crate::plan::Plan;
use crate::request::{FinishReason, Finished, GenerateRequest, TokenEvent};
use crate::sampling::{Rng, SamplingParams, sample};
use crate::scheduler::{Chunk, Scheduler, SchedulerConfig, Seq, SeqId};
use crate::spec::{DraftTree, SpecConfig};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, mpsc};
use tokio::sync::mpsc as tmpsc;

/// Whether a sequence of `total` tokens (`prompt_len` of them the prompt) is done by its
/// length: on_token's rule, which the run-ahead hint (`RowHint::may_continue`) predicts.
fn ends_by_length(p: &SamplingParams, total: usize, prompt_len: usize, max_model_len: usize) -> bool {
    p.max_tokens.is_some_and(|m| total - prompt_len >= m) || total >= max_model_len
}

/// What the backend may know of a row whose sequence holds `total` tokens once this step's
/// pick is in (`RowHint`): how it picks, whether it may go on, whether only length ends it.
fn row_hint(p: &SamplingParams, total: usize, prompt_len: usize, max_model_len: usize) -> RowHint {
    RowHint {
        greedy: p.is_greedy(),
        may_continue: !ends_by_length(p, total, prompt_len, max_model_len),
        only_length_ends: p.ignore_eos && p.stop_token_ids.is_empty(),
    }
}

pub(crate) struct Command {
    pub id: SeqId,
    pub req: GenerateRequest,
    pub events: tmpsc::Sender<TokenEvent>,
}

struct Active {
    params: SamplingParams,
    rng: Rng,
    events: tmpsc::Sender<TokenEvent>,
    prompt_len: usize,
    /// Speculating rows: the tree drafted for the next step (None before the first pick,
    /// or after a preemption until the row picks again).
    draft: Option<DraftTree>,
    /// The first draft position the draft has not run (spec/mod.rs).
    draft_from: usize,
    /// Under synthetic acceptance, what the drafted round accepts (spec/synthetic.rs).
    shaped: Option<crate::spec::synthetic::Shaped>,
    /// Whether the row drafts: with a draft, always, except under synthetic acceptance,
    /// where only greedy rows whose prompt has a recorded continuation do.
    speculates: bool,
}

/// Runs `f`, turning a panic inside the backend (a bug) into an error for this step's
/// requests instead of the end of the server.
fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(crate::error::EngineError::Backend("panicked during forward".into())))
}

pub(crate) struct EngineLoop {
    backend: Box<dyn Backend>,
    sched: Scheduler,
    active: HashMap<SeqId, Active>,
    eos: Vec<u32>,
    max_model_len: usize,
    /// The backend's speculative tree shape, when it runs a draft.
    spec: Option<SpecConfig>,
    /// Measurement-only proposals (spec/synthetic.rs), when asked for.
    synthetic: Option<crate::spec::synthetic::Synthetic>,
    /// Commands sent and not yet accepted (arrivals.rs); `accept` takes each.
    arrivals: Arrivals,
    pub seed: u64,
    pub stats: Arc<EngineStats>,
}

impl EngineLoop {
    pub fn new(
        mut backend: Box<dyn Backend>,
        plan: &Plan,
        eos: Vec<u32>,
        seed: u64,
        stats: Arc<EngineStats>,
        arrivals: Arrivals,
    ) -> Self {
        backend.watch_arrivals(arrivals.clone());
        let spec = backend.spec();
        let sched = Scheduler::new(
            SchedulerConfig {
                max_batch: plan.max_batch,
                max_batched_tokens: plan.max_batched_tokens,
                lookahead: spec.map_or(0, |s| s.lookahead()),
            },
            BlockManager::new(plan.kv_pages, plan.block_size),
        );
        stats.kv_pages_total.store(plan.kv_pages as u64, Relaxed);
        EngineLoop {
            backend,
            sched,
            active: HashMap::new(),
            eos,
            max_model_len: plan.max_model_len,
            spec,
            synthetic: None,
            arrivals,
            seed,
            stats,
        }
    }

    /// Speculates with recorded proposals (spec/synthetic.rs) instead of the draft's own.
    pub fn with_synthetic(self, synthetic: Option<crate::spec::synthetic::Synthetic>) -> Self {
        EngineLoop { synthetic, ..self }
    }

    /// Runs until every handle is dropped and no work is left.
    pub fn run(mut self, rx: mpsc::Receiver<Command>) {
        loop {
            if self.sched.is_idle() {
                match rx.recv() {
                    Ok(cmd) => self.accept(cmd),
                    Err(_) => return,
                }
            }
            while let Ok(cmd) = rx.try_recv() {
                self.accept(cmd);
            }
            self.drop_cancelled();
            if !self.sched.is_idle() {
                self.step();
            }
            self.publish();
        }
    }

    fn accept(&mut self, cmd: Command) {
        self.arrivals.taken();
        // Unseeded requests draw from the engine seed and their id: reproducible per server run.
        let seed = cmd.req.params.seed.unwrap_or(self.seed ^ cmd.id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let prompt_len = cmd.req.prompt.len();
        let speculates = self.spec.is_some()
            && self
                .synthetic
                .as_ref()
                .is_none_or(|s| cmd.req.params.is_greedy() && s.recordings.get(&cmd.req.prompt).is_some());
        self.active.insert(
            cmd.id,
            Active {
                params: cmd.req.params,
                rng: Rng::new(seed),
                events: cmd.events,
                prompt_len,
                draft: None,
                draft_from: 0,
                shaped: None,
                speculates,
            },
        );
        self.sched.add(Seq::new(cmd.id, cmd.req.prompt));
    }

    fn drop_cancelled(&mut self) {
        let gone: Vec<SeqId> =
            self.active.iter().filter(|(_, a)| a.events.is_closed()).map(|(&id, _)| id).collect();
        for id in gone {
            self.sched.remove(id);
            self.active.remove(&id);
            self.stats.cancelled.fetch_add(1, Relaxed);
        }
    }

    fn step(&mut self) {
        let chunks = self.sched.schedule();
        if chunks.is_empty() {
            // Nothing fits right now (cannot happen with a valid Plan); do not spin hot.
            std::thread::sleep(std::time::Duration::from_millis(1));
            return;
        }
        // A chunk from position 0 is a (re)prefill: a preempted row's draft state is gone.
        for c in chunks.iter().filter(|c| c.start == 0) {
            if let Some(a) = self.active.get_mut(&c.seq_id) {
                a.draft = None;
                a.draft_from = 0;
                a.shaped = None;
            }
        }
        // Decode rows with a drafted tree verify it; every other chunk runs as usual.
        let (verify, plain): (Vec<Chunk>, Vec<Chunk>) = chunks.iter().cloned().partition(|c| {
            c.sample && c.len == 1 && self.active.get(&c.seq_id).is_some_and(|a| a.draft.is_some())
        });
        let plain_out = if plain.is_empty() { Ok(vec![]) } else { self.run_plain(&plain) };
        let verify_out = if verify.is_empty() { Ok(vec![]) } else { self.run_verify(&verify) };
        self.stats.steps.fetch_add(1, Relaxed);
        let (plain_out, verify_out) = match (plain_out, verify_out) {
            (Ok(p), Ok(v)) => (p, v),
            (Err(e), _) | (_, Err(e)) => {
                // The step failed: end the requests in it, keep serving the others.
                tracing::error!("forward failed: {e}");
                for c in &chunks {
                    self.finish_with(c.seq_id, TokenEvent::Error(e.to_string()));
                }
                return;
            }
        };
        self.sched.commit(&chunks);
        let prefill: usize = chunks.iter().filter(|c| !c.sample || c.len > 1).map(|c| c.len).sum();
        self.stats.prefill_tokens.fetch_add(prefill as u64, Relaxed);
        let mut drafting = vec![];
        for (c, next) in plain.iter().filter(|c| c.sample).zip(plain_out) {
            let tok = self.pick(c.seq_id, next);
            if self.emit(c.seq_id, &[tok]) && self.active.get(&c.seq_id).is_some_and(|a| a.speculates) {
                drafting.push(c.seq_id);
            }
        }
        for (c, logits) in verify.iter().zip(verify_out) {
            if let Some(id) = self.accept_tree(c, &logits) {
                drafting.push(id);
            }
        }
        if !drafting.is_empty() {
            self.draft(&drafting);
        }
    }

    /// The backend's forward over ordinary chunks; a panic inside it (a bug) fails this
    /// step's requests, not the server.
    fn run_plain(&mut self, chunks: &[Chunk]) -> Result<Vec<Next>> {
        let inputs: Vec<SeqChunk<'_>> = chunks
            .iter()
            .map(|c| {
                let s = self.sched.get(c.seq_id).expect("scheduled sequences exist");
                SeqChunk {
                    tokens: &s.tokens[c.start..c.start + c.len],
                    start_pos: c.start,
                    block_table: &s.block_table,
                    want_logits: c.sample,
                }
            })
            .collect();
        let hints: Vec<RowHint> = chunks
            .iter()
            .map(|c| {
                let Some(a) = self.active.get(&c.seq_id) else {
                    return RowHint::default();
                };
                // The sequence holds this step's tokens; the one it picks comes next.
                let total = self.sched.get(c.seq_id).map_or(0, |s| s.tokens.len()) + 1;
                row_hint(&a.params, total, a.prompt_len, self.max_model_len)
            })
            .collect();
        let backend = &mut self.backend;
        guarded(|| backend.forward_next(&inputs, &hints))
    }

    fn pick(&mut self, id: SeqId, next: Next) -> u32 {
        let a = self.active.get_mut(&id).expect("active while scheduled");
        match next {
            Next::Token(t) => t,
            Next::Logits(l) => sample(&l, &a.params, &mut a.rng),
        }
    }

    /// Appends `toks` to the sequence up to the first that ends it, and sends them as one
    /// event. Returns whether the request goes on.
    fn emit(&mut self, id: SeqId, toks: &[u32]) -> bool {
        let a = self.active.get_mut(&id).expect("active while scheduled");
        let seq = self.sched.get_mut(id).expect("scheduled");
        let mut reason = None;
        let mut sent = vec![];
        for &tok in toks {
            seq.tokens.push(tok);
            sent.push(tok);
            let total = seq.tokens.len();
            reason = if (!a.params.ignore_eos && self.eos.contains(&tok))
                || a.params.stop_token_ids.contains(&tok)
            {
                Some(FinishReason::Stop)
            } else if ends_by_length(&a.params, total, a.prompt_len, self.max_model_len) {
                Some(FinishReason::Length)
            } else {
                None
            };
            if reason.is_some() {
                break;
            }
        }
        self.stats.generated_tokens.fetch_add(sent.len() as u64, Relaxed);
        let finished = reason.map(|reason| Finished {
            reason,
            prompt_tokens: a.prompt_len,
            completion_tokens: seq.tokens.len() - a.prompt_len,
        });
        // Capacity is max_tokens + 2, so try_send only fails when the receiver is gone.
        let gone = a.events.try_send(TokenEvent::Tokens { ids: sent, finished }).is_err();
        if gone {
            self.stats.cancelled.fetch_add(1, Relaxed);
        }
        if let (Some(_), Some(s)) = (finished, self.synthetic.as_mut())
            && !a.speculates
            && a.params.is_greedy()
        {
            s.recordings.record(&seq.tokens[..a.prompt_len], &seq.tokens[a.prompt_len..]);
        }
        if gone || finished.is_some() {
            self.sched.remove(id);
            self.active.remove(&id);
            return false;
        }
        true
    }

    fn finish_with(&mut self, id: SeqId, ev: TokenEvent) {
        if let Some(a) = self.active.remove(&id) {
            let _ = a.events.try_send(ev);
        }
        self.sched.remove(id);
    }

    fn publish(&self) {
        let s = &self.stats;
        s.running.store(self.sched.num_running() as u64, Relaxed);
        s.waiting.store(self.sched.num_waiting() as u64, Relaxed);
        s.kv_pages_used.store(self.sched.block_manager().used_pages() as u64, Relaxed);
        s.preemptions.store(self.sched.preemptions(), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::{Command, EngineLoop, EngineStats, ends_by_length, row_hint};
    use crate::arrivals::Arrivals;
    use crate::error::Result;
    use crate::model::{Backend, SeqChunk};
    use crate::plan::Plan;
    use crate::request::{GenerateRequest, TokenEvent};
    use crate::sampling::SamplingParams;
    use std::sync::{Arc, Mutex, mpsc};
    use tokio::sync::mpsc as tmpsc;

    /// A three-token model that always picks token 1 and notes, at every step, whether
    /// the engine's count said a request was on its way in.
    struct Watching {
        arrivals: Option<Arrivals>,
        seen: Arc<Mutex<Vec<bool>>>,
    }

    impl Backend for Watching {
        fn name(&self) -> &'static str {
            "watching"
        }
        fn forward(&mut self, chunks: &[SeqChunk<'_>]) -> Result<Vec<Vec<f32>>> {
            let a = self.arrivals.as_ref().expect("the engine hands its count over");
            self.seen.lock().unwrap().push(a.pending());
            Ok(chunks.iter().filter(|c| c.want_logits).map(|_| vec![0.0, 1.0, 0.0]).collect())
        }
        fn watch_arrivals(&mut self, arrivals: Arrivals) {
            self.arrivals = Some(arrivals);
        }
    }

    /// Two requests of three tokens through the engine loop; `in_flight`: one more
    /// request counted as on its way in that never arrives. Returns what each step saw.
    fn steps_seeing_arrivals(in_flight: bool) -> Vec<bool> {
        let plan = Plan {
            backend: "cpu",
            block_size: 16,
            kv_pages: 16,
            kv_bytes_per_token: 0,
            kv_cache_bytes: 0,
            max_batch: 8,
            max_model_len: 64,
            max_batched_tokens: 256,
            decode_graphs: Vec::new(),
            weight_params: 0,
            compute_dtype: "f32",
            threads: 1,
            gpu: None,
            fp8_prefill: None,
            cuda: None,
        };
        let seen = Arc::new(Mutex::new(vec![]));
        let backend = Watching { arrivals: None, seen: seen.clone() };
        let arrivals = Arrivals::default();
        let engine = EngineLoop::new(
            Box::new(backend),
            &plan,
            vec![],
            0,
            Arc::new(EngineStats::default()),
            arrivals.clone(),
        );
        let (tx, rx) = mpsc::sync_channel(4);
        let mut events = vec![];
        for id in 1..=2 {
            let (etx, erx) = tmpsc::channel(8);
            arrivals.sent();
            tx.send(Command {
                id,
                req: GenerateRequest {
                    prompt: vec![2, 0, 2],
                    params: SamplingParams {
                        temperature: 0.0,
                        max_tokens: Some(3),
                        ..SamplingParams::default()
                    },
                },
                events: etx,
            })
            .unwrap();
            events.push(erx);
        }
        if in_flight {
            arrivals.sent();
        }
        drop(tx);
        engine.run(rx);
        for mut erx in events {
            let mut n = 0;
            while let Ok(TokenEvent::Tokens { ids, .. }) = erx.try_recv() {
                assert_eq!(ids, [1]);
                n += 1;
            }
            assert_eq!(n, 3, "every request got its tokens");
        }
        assert_eq!(arrivals.pending(), in_flight, "accepted requests are taken off");
        let seen = seen.lock().unwrap().clone();
        assert!(!seen.is_empty());
        seen
    }

    #[test]
    fn the_backend_sees_requests_on_their_way_in_until_the_loop_accepts_them() {
        // Both requests are accepted before the first step, so no step sees one coming.
        assert!(steps_seeing_arrivals(false).iter().all(|p| !p));
        // A request counted but not yet in the queue (a submit in progress) is seen.
        assert!(steps_seeing_arrivals(true).iter().all(|p| *p));
    }

    /// The run-ahead hint predicts on_token's length rule: a sequence of `total` tokens
    /// ends when its completion reaches max_tokens or the whole reaches max_model_len.
    #[test]
    fn a_sequence_ends_by_length_at_max_tokens_or_the_model_length() {
        let p = SamplingParams { max_tokens: Some(3), ..SamplingParams::default() };
        // Prompt of 10: completions of 2 and 3 tokens.
        assert!(!ends_by_length(&p, 12, 10, 100));
        assert!(ends_by_length(&p, 13, 10, 100));
        let open = SamplingParams { max_tokens: None, ..SamplingParams::default() };
        assert!(!ends_by_length(&open, 99, 10, 100));
        assert!(ends_by_length(&open, 100, 10, 100));
    }

    #[test]
    fn only_a_row_that_ignores_eos_and_has_no_stop_ids_ends_only_by_length() {
        let bench = SamplingParams {
            temperature: 0.0,
            max_tokens: Some(3),
            ignore_eos: true,
            ..SamplingParams::default()
        };
        let h = row_hint(&bench, 12, 10, 100);
        assert!(h.greedy && h.may_continue && h.only_length_ends, "{h:?}");
        assert!(!row_hint(&bench, 13, 10, 100).may_continue);
        let eos = SamplingParams { ignore_eos: false, ..bench.clone() };
        assert!(!row_hint(&eos, 12, 10, 100).only_length_ends);
        let stop_ids = SamplingParams { stop_token_ids: vec![7], ..bench.clone() };
        assert!(!row_hint(&stop_ids, 12, 10, 100).only_length_ends);
        let sampled = SamplingParams { temperature: 0.7, ..bench };
        assert!(!row_hint(&sampled, 12, 10, 100).greedy);
    }
}
