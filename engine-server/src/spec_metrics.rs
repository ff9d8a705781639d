//! Speculative decoding on /metrics (Prometheus text). Mean accepted length, as SGLang
//! reports it (the bonus token included, so 1.0 means nothing drafted was accepted), is
//! `latlab_spec_emitted_tokens_total / latlab_spec_verify_steps_total` between two scrapes.

use engine::engine_loop::SpecStats;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

pub fn render(o: &mut String, s: &SpecStats, num_steps: usize) {
    let steps = s.verify_steps.load(Relaxed);
    let emitted = s.emitted_tokens.load(Relaxed);
    let mut line = |name: &str, kind: &str, help: &str, rows: &[(String, String)]| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(o, "{name}{labels} {v}");
        }
    };
    line(
        "latlab_spec_verify_steps_total",
        "counter",
        "Row-steps verified: one per speculating row per step.",
        &[(String::new(), steps.to_string())],
    );
    line(
        "latlab_spec_emitted_tokens_total",
        "counter",
        "Tokens those row-steps emitted, the bonus token included.",
        &[(String::new(), emitted.to_string())],
    );
    // The histogram of tokens emitted per row-step: buckets 1..=num_steps + 1, cumulative.
    let name = "latlab_spec_accept_length";
    let mut rows = vec![];
    let mut cum = 0;
    for n in 1..=num_steps + 1 {
        cum += s.accept_length.get(n).map_or(0, |c| c.load(Relaxed));
        rows.push((format!("_bucket{{le=\"{n}\"}}"), cum.to_string()));
    }
    rows.push(("_bucket{le=\"+Inf\"}".into(), steps.to_string()));
    rows.push(("_sum".into(), emitted.to_string()));
    rows.push(("_count".into(), steps.to_string()));
    line(name, "histogram", "Tokens emitted per verified row-step (accepted + bonus).", &rows);
    let per_depth = |v: &[std::sync::atomic::AtomicU64]| -> Vec<(String, String)> {
        (1..=num_steps.min(v.len()))
            .map(|d| (format!("{{position=\"{d}\"}}"), v[d - 1].load(Relaxed).to_string()))
            .collect()
    };
    line(
        "latlab_spec_proposed_total",
        "counter",
        "Row-steps whose tree reached this draft depth.",
        &per_depth(&s.proposed_at),
    );
    line(
        "latlab_spec_accepted_total",
        "counter",
        "Row-steps that accepted a drafted token at this depth.",
        &per_depth(&s.accepted_at),
    );
    let secs = |n: &std::sync::atomic::AtomicU64| format!("{:.9}", n.load(Relaxed) as f64 * 1e-9);
    line(
        "latlab_spec_draft_seconds_total",
        "counter",
        "Time in the draft (extend + tree).",
        &[(String::new(), secs(&s.draft_nanos))],
    );
    line(
        "latlab_spec_verify_seconds_total",
        "counter",
        "Time in the target's verify forwards.",
        &[(String::new(), secs(&s.verify_nanos))],
    );
    let count = |n: &std::sync::atomic::AtomicU64| n.load(Relaxed).to_string();
    line(
        "latlab_spec_draft_calls_total",
        "counter",
        "Draft calls (one per step that drafts, for all its rows): seconds / calls is a round's draft time.",
        &[(String::new(), count(&s.draft_calls))],
    );
    line(
        "latlab_spec_verify_calls_total",
        "counter",
        "Verify forwards (one per step, for all its rows).",
        &[(String::new(), count(&s.verify_calls))],
    );
}

/// Measurement-only proposals (`--speculative-synthetic-acceptance`): the mean accepted
/// length asked for, so that a scrape of this engine never passes for a draft's quality.
pub fn render_synthetic(o: &mut String, mean_accepted: f64) {
    let name = "latlab_spec_synthetic_acceptance";
    let _ = writeln!(
        o,
        "# HELP {name} Synthetic acceptance: proposals are recorded greedy continuations made to accept this \
         many tokens per round on average; speed measurement, not a draft's quality.\n# TYPE {name} gauge\n{name} \
         {mean_accepted}"
    );
}
