//! The new-run form's goodput SLOs and percentiles (a folded section of its load fields).

use super::{Field, FormCtx};
use crate::run_form::RunForm;
use leptos::prelude::*;

/// Goodput SLOs and the percentiles every latency is reported at.
#[component]
pub(super) fn GoodputFields(ctx: FormCtx) -> AnyView {
    let form = ctx.form;
    let paths = ["percentiles", "goodput.ttft_ms", "goodput.tpot_ms", "goodput.e2el_ms"];
    view! {
        <details class="advanced" data-testid="goodput-fields"
            open=move || form.with(RunForm::has_goodput) || paths.iter().any(|p| ctx.error(p).is_some())>
            <summary>"Percentiles and goodput"</summary>
            <Field ctx label="Percentiles" name="percentiles" path="percentiles"
                get=|f| f.percentiles.clone() set=|f, v| f.percentiles = v placeholder="99"
                hint="--metric-percentiles: e.g. 50, 90, 99; comparisons chart any of them."/>
            <Field ctx label="Goodput SLO: TTFT (ms)" name="goodput_ttft_ms" path="goodput.ttft_ms"
                get=|f| f.goodput_ttft_ms.clone() set=|f, v| f.goodput_ttft_ms = v
                hint="A request is good when it meets every SLO given; goodput is good requests per second. Empty: no SLO on that metric."/>
            <Field ctx label="Goodput SLO: TPOT (ms)" name="goodput_tpot_ms" path="goodput.tpot_ms"
                get=|f| f.goodput_tpot_ms.clone() set=|f, v| f.goodput_tpot_ms = v/>
            <Field ctx label="Goodput SLO: E2EL (ms)" name="goodput_e2el_ms" path="goodput.e2el_ms"
                get=|f| f.goodput_e2el_ms.clone() set=|f, v| f.goodput_e2el_ms = v/>
        </details>
    }
    .into_any()
}
