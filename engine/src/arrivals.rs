//! Requests sent to the engine thread and not yet taken in. `EngineHandle::submit` counts
//! one up before it queues a command (and down again if the queue refuses it); the engine
//! loop counts one down as it accepts the command. A backend that would start the next
//! decode step before the engine loop asks for it (CUDA run-ahead, `late`) asks `pending`
//! first: a step started early would hold a new request's prefill behind it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The count of commands on their way to the engine loop (cheap to clone: one shared
/// counter).
#[derive(Debug, Clone, Default)]
pub struct Arrivals(Arc<AtomicU64>);

impl Arrivals {
    /// Whether a command has been sent that the engine loop has not accepted yet.
    pub fn pending(&self) -> bool {
        self.0.load(Ordering::Acquire) > 0
    }

    /// A command is about to be queued.
    pub fn sent(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// A command was accepted by the engine loop, or refused by the queue.
    pub fn taken(&self) {
        // Never below zero, even if a bug took one twice: a wrapped count would read as
        // "pending" for ever and silently turn run-ahead off.
        let _ = self.0.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::Arrivals;

    #[test]
    fn a_command_is_pending_from_sent_until_taken_and_clones_share_the_count() {
        let a = Arrivals::default();
        let seen = a.clone();
        assert!(!seen.pending());
        a.sent();
        a.sent();
        assert!(seen.pending());
        a.taken();
        assert!(seen.pending(), "one of two is still on its way");
        a.taken();
        assert!(!seen.pending());
        a.taken();
        assert!(!seen.pending(), "an extra take does not wrap the count");
        a.sent();
        assert!(seen.pending());
    }
}
