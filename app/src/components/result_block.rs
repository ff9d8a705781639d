use bench_types::result_block::serving_result;
use bench_types::{MetricKind, Summary};
use leptos::prelude::*;

/// A run's summary laid out exactly like vLLM's "Serving Benchmark Result" block.
#[component]
pub fn ResultBlock(summary: Summary) -> impl IntoView {
    let text = serving_result(
        &summary,
        &[MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl, MetricKind::E2el, MetricKind::TokenItl],
    );
    view! { <pre class="result-block" data-testid="result-block">{text}</pre> }
}
