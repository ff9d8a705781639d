use super::StatusBadge;
use crate::format::{f2, when};
use bench_types::RunView;
use leptos::prelude::*;

/// One line per run: id, status, label, target, model, dataset, load, headline numbers.
/// With `select_form`, each row gets a checkbox belonging to that form (named `run`), so
/// runs can be picked and compared, with or without JavaScript.
#[component]
pub fn RunsTable(runs: Vec<RunView>, #[prop(optional)] select_form: Option<&'static str>) -> impl IntoView {
    let rows = runs
        .into_iter()
        .map(|r| {
            let pick = select_form.map(|form| {
                view! { <td><input type="checkbox" name="run" value=r.id form=form aria-label=format!("select run {}", r.id)/></td> }
            });
            let href = format!("/runs/{}", r.id);
            let label = if r.spec.label.is_empty() { format!("run {}", r.id) } else { r.spec.label.clone() };
            let (ttft, tpot, tput) = match &r.summary {
                Some(s) => (f2(s.ttft.mean_ms), f2(s.tpot.mean_ms), f2(s.output_throughput)),
                None => ("–".into(), "–".into(), "–".into()),
            };
            view! {
                <tr data-run-id=r.id>
                    {pick}
                    <td><a href=href>{format!("#{}", r.id)}</a></td>
                    <td><StatusBadge status=r.status/></td>
                    <td>{label}</td>
                    <td class="mono">{r.target_description.clone()}</td>
                    <td class="mono">{r.spec.model.clone()}</td>
                    <td>{format!("{} × {}", r.spec.dataset.name(), r.spec.num_prompts)}</td>
                    <td>{r.spec.load_label()}</td>
                    <td class="num">{ttft}</td>
                    <td class="num">{tpot}</td>
                    <td class="num">{tput}</td>
                    <td class="muted">{when(&r.created_at)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
        <table class="runs">
            <thead>
                <tr>
                    {select_form.map(|_| view! { <th><span class="sr-only">"Select"</span></th> })}
                    <th>"Run"</th><th>"Status"</th><th>"Label"</th><th>"Target"</th><th>"Model"</th>
                    <th>"Dataset"</th><th>"Load"</th><th>"Mean TTFT (ms)"</th><th>"Mean TPOT (ms)"</th>
                    <th>"Output tok/s"</th><th>"Created"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        </div>
    }
}
