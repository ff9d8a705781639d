//! The engine loop's speculative steps (spec/mod.rs has the order): verify the drafted
//! trees in one target forward, accept per row, keep the accepted KV, draft again.

use super::{EngineLoop, guarded};
use crate::model::{KeepRow, Next, ProposeRow, VerifyRow};
use crate::request::TokenEvent;
use crate::scheduler::{Chunk, SeqId};
use crate::spec::accept::{Accepted, accept};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

impl EngineLoop {
    /// One target forward over every verifying row's tree; logits per node.
    pub(super) fn run_verify(&mut self, chunks: &[Chunk]) -> crate::error::Result<Vec<Vec<Next>>> {
        let trees: Vec<(Vec<u32>, Vec<usize>)> = chunks
            .iter()
            .map(|c| {
                let tree = self.active[&c.seq_id].draft.as_ref().expect("verifying rows have a tree");
                let s = self.sched.get(c.seq_id).expect("scheduled sequences exist");
                let root = s.tokens[c.start];
                (std::iter::once(root).chain(tree.tokens.iter().copied()).collect(), tree.chunk_parents())
            })
            .collect();
        let rows: Vec<VerifyRow<'_>> = chunks
            .iter()
            .zip(&trees)
            .map(|(c, (tokens, parents))| VerifyRow {
                tokens,
                parents,
                start_pos: c.start,
                block_table: &self.sched.get(c.seq_id).expect("scheduled").block_table,
            })
            .collect();
        let greedy: Vec<bool> = chunks.iter().map(|c| self.active[&c.seq_id].params.is_greedy()).collect();
        let t0 = Instant::now();
        let backend = &mut self.backend;
        let out = guarded(|| backend.verify_next(&rows, &greedy));
        self.stats.spec.verify_nanos.fetch_add(t0.elapsed().as_nanos() as u64, Relaxed);
        self.stats.spec.verify_calls.fetch_add(1, Relaxed);
        out
    }

    /// Accepts the longest agreeing path of a verified row, keeps its KV, emits its
    /// tokens. Returns the row's id when it goes on (and so needs a new tree).
    pub(super) fn accept_tree(&mut self, c: &Chunk, logits: &[Next]) -> Option<SeqId> {
        let id = c.seq_id;
        let a = self.active.get_mut(&id)?;
        let tree = a.draft.take().expect("verifying rows have a tree");
        let root = self.sched.get(id)?.tokens[c.start];
        let tokens: Vec<u32> = std::iter::once(root).chain(tree.tokens.iter().copied()).collect();
        let got = match a.shaped.take() {
            // Synthetic acceptance: the recorded path and token (spec/synthetic.rs says why).
            Some(s) => Accepted { path: s.path, bonus: s.bonus },
            None => accept(&tokens, &tree.chunk_parents(), logits, &a.params, &mut a.rng),
        };
        let depth = tree.chunk_depths().into_iter().max().unwrap_or(0);
        self.count(got.path.len(), depth);
        let kept = {
            let s = self.sched.get(id)?;
            let row = KeepRow { path: &got.path, start_pos: c.start, block_table: &s.block_table };
            guarded(|| self.backend.keep_path(std::slice::from_ref(&row)))
        };
        if let Err(e) = kept {
            self.finish_with(id, TokenEvent::Error(e.to_string()));
            return None;
        }
        // The root's KV was committed with the chunk; the accepted nodes' now sit after it.
        self.sched.advance(id, got.path.len());
        let emitted: Vec<u32> = got.path.iter().map(|&n| tokens[n]).chain([got.bonus]).collect();
        self.emit(id, &emitted).then_some(id)
    }

    fn count(&self, accepted: usize, depth: usize) {
        let s = &self.stats.spec;
        s.verify_steps.fetch_add(1, Relaxed);
        s.emitted_tokens.fetch_add(accepted as u64 + 1, Relaxed);
        s.accept_length[(accepted + 1).min(s.accept_length.len() - 1)].fetch_add(1, Relaxed);
        for d in 0..depth.min(s.proposed_at.len()) {
            s.proposed_at[d].fetch_add(1, Relaxed);
            if d < accepted {
                s.accepted_at[d].fetch_add(1, Relaxed);
            }
        }
    }

    /// The draft's next tree for each row that goes on; a row whose draft fails ends with
    /// the error.
    pub(super) fn draft(&mut self, ids: &[SeqId]) {
        let t0 = Instant::now();
        let out = {
            let rows: Vec<ProposeRow<'_>> = ids
                .iter()
                .map(|id| {
                    let s = self.sched.get(*id).expect("going rows are scheduled");
                    ProposeRow {
                        tokens: &s.tokens,
                        draft_from: self.active[id].draft_from,
                        block_table: &s.block_table,
                    }
                })
                .collect();
            let backend = &mut self.backend;
            guarded(|| backend.propose(&rows))
        };
        self.stats.spec.draft_nanos.fetch_add(t0.elapsed().as_nanos() as u64, Relaxed);
        self.stats.spec.draft_calls.fetch_add(1, Relaxed);
        match out {
            Ok(trees) => {
                for (id, mut tree) in ids.iter().zip(trees) {
                    let n = self.sched.get(*id).map_or(0, |s| s.tokens.len());
                    let a = self.active.get_mut(id).expect("going rows are active");
                    if let Some(syn) = self.synthetic.as_mut() {
                        // The recorded continuation from the token after the root on.
                        let s = self.sched.get(*id).expect("going rows are scheduled");
                        let prompt = &s.tokens[..a.prompt_len];
                        let next =
                            syn.recordings.get(prompt).map(|r| r.get(n - a.prompt_len..).unwrap_or(&[]));
                        let next = next.map(<[u32]>::to_vec).unwrap_or_default();
                        a.shaped = syn.shape(&mut tree, &next);
                    }
                    a.draft = Some(tree);
                    a.draft_from = n - 1;
                }
            }
            Err(e) => {
                tracing::error!("draft failed: {e}");
                for &id in ids {
                    self.finish_with(id, TokenEvent::Error(e.to_string()));
                }
            }
        }
    }
}
