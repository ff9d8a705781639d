//! Which greedy decode steps queue the next step before they return (graph.rs, `Ahead`;
//! `Tuning::run_ahead`, on by default).
//!
//! Queuing ahead hides the host's time between steps (the token's trip, the engine loop's
//! bookkeeping, the next step's metadata) behind the GPU's step. A queued step is lost
//! whenever the engine's next call is not that step: a row stopped on the token the step
//! before it picked (EOS, a stop id), or a new request arrived, whose prefill then waits
//! for the queued step and whose running rows run that step again with the prefill. So:
//! - only rows that cannot stop on a token queue (`RowHint::only_length_ends`: `ignore_eos`
//!   and no stop ids), and only greedy ones (the next step's ids are this step's argmax,
//!   copied on the GPU);
//! - the next step is launched only once this step's tokens have landed, and only if no
//!   request is on its way in (`Arrivals::pending`). The GPU then idles for the tokens'
//!   trip, the host's wake and one launch, but not for the rest; an arrival waits for a
//!   queued step only if it comes in the microseconds between that check and the launch.
//!
//! Launching before the tokens land gained nothing more and made every arrival mid-step
//! wait a whole step; queuing rows that may stop on a token wastes a step at each stop
//! (engine/PERF-LOG.md, steps 40 and 51).

use super::driver_err;
use super::{CudaBackend, meta::HostMeta};
use crate::error::Result;
use crate::model::{Next, RowHint};

/// A decode step queued ahead: the graph slot it was queued on, and its metadata, ids
/// filled with the tokens of the step it was queued after. When the engine's next call is
/// that step, it is already running; when it is not, the queued step still runs first and
/// its work is lost: it wrote each row's K/V at the next position, in the row's own pages,
/// which a real step rewrites or, once a page is freed, its next owner writes before it
/// reads (attention reads only positions below a row's context).
pub(super) struct Ahead {
    slot: usize,
    meta: HostMeta,
}

impl Ahead {
    /// Whether this is the step of `host` on graph slot `slot`.
    pub(super) fn is(&self, slot: usize, host: &HostMeta) -> bool {
        self.slot == slot && self.meta == *host
    }
}

impl CudaBackend {
    /// The end of a greedy decode step of `n` rows (padded metadata `host`) on graph
    /// `slot` with run-ahead on: its tokens' download, then, when every row may continue
    /// (`may_continue`) and its tables cover the next position, the next step's metadata
    /// and ids (this step's tokens, copied on the GPU), and, once the tokens have landed
    /// and no request is on its way in, that step's launch. Returns this step's tokens.
    pub(super) fn tokens_and_next(
        &mut self,
        slot: usize,
        host: &HostMeta,
        n: usize,
        may_continue: bool,
    ) -> Result<Vec<Next>> {
        let block_size = self.cache.block_size;
        let s = self.gpu.stream().clone();
        let g = self.graphs[slot].as_mut().expect("the step ran on it");
        s.memcpy_dtoh(&g.tokens.slice(..n), &mut g.tokens_host).map_err(driver_err("download tokens"))?;
        g.tokens_landed.record(&s).map_err(driver_err("record token event"))?;
        let mut prepared = None;
        if may_continue && let Some(next) = host.advanced(n, block_size) {
            // Harmless if no launch follows: the next call writes its own metadata, and
            // these copies run after this step has read its own.
            g.meta.write_staged(&s, &next, &mut g.staging[g.next_staging])?;
            g.next_staging ^= 1;
            s.memcpy_dtod(&g.tokens.slice(..n), &mut g.meta.ids_mut().slice_mut(..n))
                .map_err(driver_err("feed tokens ahead"))?;
            prepared = Some(next);
        }
        g.tokens_landed.synchronize().map_err(driver_err("wait for tokens"))?;
        let out = g.tokens_host.as_slice().map_err(driver_err("read tokens"))?[..n].to_vec();
        if let Some(mut meta) = prepared
            && !self.arrivals.pending()
        {
            g.replay("graph launch after the tokens")?;
            meta.ids[..n].copy_from_slice(&out);
            self.ahead = Some(Ahead { slot, meta });
        }
        Ok(out.into_iter().map(Next::Token).collect())
    }
}

/// Whether a step whose rows, taken together, are `all` may queue the next one.
pub fn queues(all: &RowHint) -> bool {
    all.greedy && all.may_continue && all.only_length_ends
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(greedy: bool, may_continue: bool, only_length_ends: bool) -> RowHint {
        RowHint { greedy, may_continue, only_length_ends }
    }

    #[test]
    fn only_greedy_rows_that_end_by_length_and_continue_queue() {
        assert!(queues(&hint(true, true, true)));
        assert!(!queues(&hint(true, true, false)), "a row may stop on EOS");
        assert!(!queues(&hint(true, false, true)), "a row ends by length");
        assert!(!queues(&hint(false, true, true)), "a row samples");
    }
}
