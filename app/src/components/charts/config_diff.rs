//! Configuration diff of two runs: every setting (the stored `RunSpec`, flattened to
//! dotted paths) whose value differs, side by side.

use super::facts::run_label;
use bench_types::RunView;
use leptos::prelude::*;
use serde_json::Value;

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            flatten(&if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") }, x, out)
        }),
        Value::Null => {}
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// `(setting, value in a, value in b)` for every setting that differs; "—" where unset.
pub fn diff(a: &RunView, b: &RunView) -> Vec<(String, String, String)> {
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    flatten("", &serde_json::to_value(&a.spec).unwrap_or_default(), &mut fa);
    flatten("", &serde_json::to_value(&b.spec).unwrap_or_default(), &mut fb);
    let mut keys: Vec<&String> = fa.iter().chain(&fb).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let get = |f: &[(String, String)], k: &str| {
        f.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone()).unwrap_or_else(|| "—".into())
    };
    keys.into_iter()
        .filter(|k| !k.ends_with("source") && *k != "label")
        .map(|k| (k.clone(), get(&fa, k), get(&fb, k)))
        .filter(|(_, x, y)| x != y)
        .collect()
}

#[component]
pub fn ConfigDiff(a: RunView, b: RunView) -> impl IntoView {
    let rows = diff(&a, &b)
        .into_iter()
        .map(|(k, x, y)| view! { <tr><td><code>{k}</code></td><td>{x}</td><td>{y}</td></tr> })
        .collect_view();
    view! {
        <section class="config-diff">
            <h2>"Configuration diff"</h2>
            <table class="runs">
                <thead><tr><th>"setting"</th><th>{run_label(&a)}</th><th>{run_label(&b)}</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </section>
    }
}
