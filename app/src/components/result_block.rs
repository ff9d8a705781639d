use bench_types::result_block::serving_result_marking;
use bench_types::{MetricKind, Summary};
use leptos::prelude::*;

/// A run's summary laid out exactly like vLLM's "Serving Benchmark Result" block; numbers
/// the source lacked (`missing`, for imported results) print as "n/a", never as 0.
#[component]
pub fn ResultBlock(summary: Summary, #[prop(optional)] missing: Vec<String>) -> impl IntoView {
    let lacks = |k: &str| missing.iter().any(|m| m == k);
    let text = serving_result_marking(
        &summary,
        &[MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl, MetricKind::E2el, MetricKind::TokenItl],
        &lacks,
    );
    view! { <pre class="result-block" data-testid="result-block">{text}</pre> }
}
