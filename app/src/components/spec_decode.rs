//! Speculative decoding's numbers where a run has them: the mean accepted length with the
//! tree and draft that produced it, missing shown as missing, and a random draft's numbers
//! labelled for what they are (a random draft proposes noise, so its acceptance says
//! nothing about a trained draft's speed-up; no page presents it as a speed result).

use bench_types::launched::Speculative;
use bench_types::native_speculative::Tree;
use bench_types::spec_decode::RANDOM_DRAFT_CAVEAT;
use bench_types::{RunView, SpecDecodeResult, Target};
use leptos::prelude::*;

/// The EAGLE-3 options a run asked for, when its target is a speculating native engine.
pub fn requested(r: &RunView) -> Option<&Speculative> {
    match &r.spec.target {
        Target::Native(n) => n.speculative.as_ref(),
        _ => None,
    }
}

/// "EAGLE-3, draft random:tiny-eagle3, 3 steps × topk 1, 4 draft tokens (a chain)".
pub fn describe_request(s: &Speculative) -> String {
    format!("EAGLE-3, draft {}, {}", s.draft_model, Tree::of(s).describe())
}

/// The caveat a run's accepted length carries: the stored one, else (no numbers stored)
/// the random-draft label when the draft asked for was a random preset.
fn caveat(requested: &Speculative, result: Option<&SpecDecodeResult>) -> Option<String> {
    match result {
        Some(r) => r.caveat.clone(),
        None => requested.draft_model.starts_with("random:").then(|| RANDOM_DRAFT_CAVEAT.to_string()),
    }
}

/// The run page's section: accepted length, tree, draft, acceptance by depth, notes.
#[component]
pub fn SpecDecodePanel(requested: Speculative, result: Option<SpecDecodeResult>) -> impl IntoView {
    let caveat = caveat(&requested, result.as_ref());
    let length =
        result.as_ref().map(SpecDecodeResult::accepted_length_text).unwrap_or_else(|| "missing".into());
    let tree = match &result {
        Some(r) if r.tree_reported => format!("{}, as the engine reported it", r.tree.describe()),
        Some(r) => format!("{}, as asked (the engine did not report its tree)", r.tree.describe()),
        None => format!("{}, as asked", Tree::of(&requested).describe()),
    };
    let draft = match &result {
        Some(r) if r.random_weights => format!("{} (random weights)", r.draft_source),
        Some(r) => r.draft_source.clone(),
        None => requested.draft_model.clone(),
    };
    let by_depth = result.as_ref().map(SpecDecodeResult::acceptance_by_depth_text).filter(|t| !t.is_empty());
    // Synthetic acceptance: what was asked and the first pass's numbers (speculation off).
    let synthetic = result.as_ref().and_then(|r| r.synthetic.as_ref()).map(|p| {
        let b = &p.baseline;
        format!(
            "Synthetic acceptance: {} tokens per round asked. Speculation off (the first pass over the same prompts): TPOT mean {:.2} ms, TTFT mean {:.2} ms, {:.1} output tok/s; this run's own numbers are the second pass's.",
            p.requested, b.tpot.mean_ms, b.ttft.mean_ms, b.output_throughput
        )
    });
    let mut notes = result.as_ref().map(|r| r.notes.clone()).unwrap_or_default();
    if result.is_none() {
        notes.push("no speculation numbers were stored for this run".into());
    }
    view! {
        <div class="spec-decode" data-testid="spec-decode">
            <h3>"Speculative decoding"</h3>
            <p>
                <span>"Mean accepted length: "</span>
                <strong data-testid="accepted-length">{length}</strong>
                <span class="muted">" tokens per verify step (the bonus token included; 1.00 = no drafted token accepted)"</span>
                {caveat.map(|c| view! { <span class="badge mark caveat" data-testid="spec-caveat">{c}</span> })}
            </p>
            <p class="muted">{format!("Tree: {tree}. Draft: {draft}.")}</p>
            {by_depth.map(|t| view! { <p class="muted">{format!("Acceptance by draft depth: {t}")}</p> })}
            {synthetic.map(|t| view! { <p data-testid="spec-synthetic">{t}</p> })}
            {(!notes.is_empty()).then(|| view! {
                <ul class="warning-note spec-notes">{notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}</ul>
            })}
        </div>
    }
}

/// The comparison table's cell: the accepted length and tree ("2.41 · 3/1/4"), "missing"
/// when a speculating run has none, "–" for runs that did not speculate.
pub fn accepted_length_cell(r: &RunView) -> AnyView {
    let Some(req) = requested(r) else {
        return view! { <td class="num muted">"–"</td> }.into_any();
    };
    let result = r.speculative.as_ref();
    let tree = result.map(|x| x.tree).unwrap_or_else(|| Tree::of(req));
    let shape = format!(" · {}/{}/{}", tree.num_steps, tree.topk, tree.num_draft_tokens);
    let (text, missing) = match result.and_then(|x| x.mean_accepted_length) {
        Some(v) => (format!("{v:.2}"), false),
        // Not yet finished: nothing to call missing.
        None if r.summary.is_none() => ("–".to_string(), false),
        None => ("missing".to_string(), true),
    };
    let why = result.map(|x| x.notes.join("; ")).unwrap_or_default();
    view! {
        <td class="num accepted-length" class:missing=missing title=why>
            <span>{text}</span><span class="muted">{shape}</span>
            {caveat(req, result).map(|c| view! { <span class="badge mark caveat">{c}</span> })}
        </td>
    }
    .into_any()
}
