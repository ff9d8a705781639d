use super::StatusBadge;
use crate::format::{f2, when};
use bench_types::RunView;
use bench_types::run_list::{RunListQuery, SortDir, SortKey};
use leptos::prelude::*;

/// One line per run: id, status, label (with tags), target, model, dataset, load,
/// headline numbers. With `select_form`, each row gets a checkbox belonging to that form
/// (named `run`), so runs can be picked and compared, with or without JavaScript. With
/// `sort` (the list's current view), sortable headers are links to the view sorted by
/// them (a second click flips the direction).
#[component]
pub fn RunsTable(
    runs: Vec<RunView>,
    #[prop(optional)] select_form: Option<&'static str>,
    #[prop(optional)] sort: Option<RunListQuery>,
) -> impl IntoView {
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
            let tags = r
                .tags
                .iter()
                .map(|t| {
                    let href = RunListQuery { tag: Some(t.clone()), ..Default::default() }.href();
                    view! { " " <a class="tag" href=href data-tag=t.clone()>{t.clone()}</a> }
                })
                .collect_view();
            let archived = r.archived_at.is_some().then(|| view! { " " <span class="badge mark">"archived"</span> });
            view! {
                <tr data-run-id=r.id>
                    {pick}
                    <td><a href=href>{format!("#{}", r.id)}</a></td>
                    <td><StatusBadge status=r.status/></td>
                    <td><span>{label}</span>{archived}{tags}</td>
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
    let head = move |title: &'static str, key: Option<SortKey>| {
        let Some((q, key)) = sort.as_ref().zip(key) else { return view! { <th>{title}</th> }.into_any() };
        let active = q.sort == key;
        let aria = match (active, q.dir) {
            (false, _) => "none",
            (true, SortDir::Asc) => "ascending",
            (true, SortDir::Desc) => "descending",
        };
        let arrow = match (active, q.dir) {
            (false, _) => "",
            (true, SortDir::Asc) => " ▲",
            (true, SortDir::Desc) => " ▼",
        };
        let href = q.sorted_by(key).href();
        view! { <th aria-sort=aria><a href=href data-sort=key.as_str()>{title}{arrow}</a></th> }.into_any()
    };
    view! {
        <div class="table-wrap">
        <table class="runs">
            <thead>
                <tr>
                    {select_form.map(|_| view! { <th><span class="sr-only">"Select"</span></th> })}
                    {head("Run", Some(SortKey::Created))}{head("Status", Some(SortKey::Status))}
                    {head("Label", None)}{head("Target", Some(SortKey::Engine))}{head("Model", Some(SortKey::Model))}
                    {head("Dataset", None)}{head("Load", None)}{head("Mean TTFT (ms)", Some(SortKey::Ttft))}
                    {head("Mean TPOT (ms)", Some(SortKey::Tpot))}{head("Output tok/s", Some(SortKey::Throughput))}
                    {head("Created", Some(SortKey::Created))}
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        </div>
    }
}
