//! Which greedy decode steps queue the next step before they return (graph.rs, `Ahead`).
//!
//! Queuing ahead hides the host's time between steps behind the GPU's step. A queued step
//! is lost whenever the engine's next call is not that step:
//! - a row stopped on the token the step before it picked (EOS, a stop id);
//! - a new request arrived while the step ran. Its prefill then waits for the queued step
//!   (~4 ms), and so do the running rows, whose step is run again with the prefill.
//!
//! - `late` (the default) queues only rows that cannot stop on a token
//!   (`RowHint::only_length_ends`: `ignore_eos` and no stop ids). It launches the next step
//!   only once this step's tokens have landed, and only if no request is on its way in
//!   (`Arrivals::pending`). The GPU then idles for the tokens' trip, the host's wake and one
//!   launch, but not for the engine loop's bookkeeping and the next step's metadata (which
//!   are done while the step runs); an arrival waits for a queued step only if it comes in
//!   the microseconds between that check and the launch. Measured on the H200 (session 18,
//!   bench ms/step, off -> late): bf16 batch 8 4.38 -> 4.32, batch 1 4.02 -> 4.00, FP8
//!   batch 8 3.26 -> 3.23; HTTP TTFT at concurrency 1 unchanged (10.72 ms bf16).
//! - `sure` takes the same rows but launches the next step before this step's tokens land,
//!   so every arrival mid-step waits a whole step (~4 ms at concurrency above 1). It gains
//!   no more than `late` (session 18, one machine: within 0.01 ms/step at batch 1 and 8);
//! - `always` also queues rows that may stop on a token;
//! - `off` never queues.

use crate::error::{EngineError, Result};
use crate::model::RowHint;

/// `LATLAB_RUN_AHEAD`: `0` / `off`, `sure`, `1` / `always`, `late` (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunAhead {
    /// Never queue ahead.
    Off,
    /// Queue ahead when every row may continue by length and can end only by length.
    Sure,
    /// Queue ahead when every row may continue by length, even if one may stop on its token.
    Always,
    /// As `Sure`, but launch the queued step after this step's tokens land, and only with no
    /// request on its way in.
    #[default]
    Late,
}

impl RunAhead {
    pub const SYNTAX: &'static str = "0 | off | sure | 1 | always | late";

    pub fn parse(s: &str) -> Result<Self> {
        match s.trim() {
            "0" | "off" => Ok(RunAhead::Off),
            "sure" => Ok(RunAhead::Sure),
            "1" | "always" => Ok(RunAhead::Always),
            "late" => Ok(RunAhead::Late),
            other => Err(EngineError::Config {
                field: "LATLAB_RUN_AHEAD".into(),
                msg: format!("`{other}` is not one of {}", Self::SYNTAX),
            }),
        }
    }

    /// The policy from `LATLAB_RUN_AHEAD`; unset means the default.
    pub fn from_env() -> Result<Self> {
        match std::env::var("LATLAB_RUN_AHEAD") {
            Ok(v) => Self::parse(&v),
            Err(_) => Ok(Self::default()),
        }
    }

    /// Whether a step whose rows, taken together, are `all` may queue the next one
    /// (greedy rows only: the next step's ids are this step's argmax, on the GPU).
    pub fn queues(self, all: &RowHint) -> bool {
        all.greedy
            && all.may_continue
            && match self {
                RunAhead::Off => false,
                RunAhead::Sure | RunAhead::Late => all.only_length_ends,
                RunAhead::Always => true,
            }
    }

    /// Whether the queued step waits for this step's tokens and for no arrival (`Late`)
    /// rather than being launched before them.
    pub fn launches_after_tokens(self) -> bool {
        self == RunAhead::Late
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(greedy: bool, may_continue: bool, only_length_ends: bool) -> RowHint {
        RowHint {
            greedy,
            may_continue,
            only_length_ends,
        }
    }

    #[test]
    fn the_default_is_late_and_sure_queues_only_steps_no_stop_can_lose() {
        assert_eq!(RunAhead::default(), RunAhead::Late);
        let p = RunAhead::Sure;
        assert!(p.queues(&hint(true, true, true)));
        assert!(!p.queues(&hint(true, true, false)), "a row may stop on EOS");
        assert!(!p.queues(&hint(true, false, true)), "a row ends by length");
        assert!(!p.queues(&hint(false, true, true)), "a row samples");
    }

    #[test]
    fn late_queues_the_steps_sure_queues_and_only_it_waits_for_the_tokens() {
        for h in [
            hint(true, true, true),
            hint(true, true, false),
            hint(true, false, true),
            hint(false, true, true),
        ] {
            assert_eq!(
                RunAhead::Late.queues(&h),
                RunAhead::Sure.queues(&h),
                "{h:?}"
            );
        }
        assert!(RunAhead::Late.launches_after_tokens());
        for p in [RunAhead::Off, RunAhead::Sure, RunAhead::Always] {
            assert!(!p.launches_after_tokens(), "{p:?}");
        }
    }

    #[test]
    fn always_also_queues_rows_that_may_stop_and_off_never_queues() {
        assert!(RunAhead::Always.queues(&hint(true, true, false)));
        assert!(!RunAhead::Always.queues(&hint(true, false, false)));
        assert!(!RunAhead::Always.queues(&hint(false, true, true)));
        for h in [hint(true, true, true), hint(true, true, false)] {
            assert!(!RunAhead::Off.queues(&h));
        }
    }

    #[test]
    fn the_setting_parses_and_a_bad_one_is_named() {
        for (s, p) in [
            ("0", RunAhead::Off),
            ("off", RunAhead::Off),
            ("sure", RunAhead::Sure),
            (" 1 ", RunAhead::Always),
            ("always", RunAhead::Always),
            ("late", RunAhead::Late),
        ] {
            assert_eq!(RunAhead::parse(s).unwrap(), p, "{s}");
        }
        let e = RunAhead::parse("yes").unwrap_err().to_string();
        assert!(e.contains("LATLAB_RUN_AHEAD") && e.contains("`yes`"), "{e}");
        assert!(e.contains(RunAhead::SYNTAX), "{e}");
    }
}
