//! Exports of a comparison: `GET /api/comparisons/{slug}/export.csv` (one row per run, the
//! headline numbers; empty cells where the source lacked a number) and `export.json` (the
//! comparison with its runs, as stored), and the chart itself at
//! `GET /c/{slug}/chart.svg?<view>` (the page's view query, same renderer as the page).

use super::ApiError;
use super::query::ApiQuery;
use crate::AppState;
use app::components::charts::facts::{hardware, imported, marks, stat_value};
use app::components::charts::{ChartKind, ChartView, Stat, render};
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use bench_types::{ComparisonView, MetricKind};
use std::collections::HashMap;

async fn load(st: &AppState, slug: &str) -> Result<ComparisonView, ApiError> {
    db::comparisons::get(&st.pool, slug)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no comparison {slug:?}")))
}

fn attachment(name: &str) -> String {
    format!("attachment; filename=\"{}\"", name.replace(['"', '\\'], ""))
}

pub async fn json(
    State(st): State<AppState>,
    Path(slug): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let c = load(&st, &slug).await?;
    let mut v = serde_json::to_value(&c).map_err(|e| ApiError::Internal(e.to_string()))?;
    if let Some(runs) = v["runs"].as_array_mut() {
        for (run, view) in runs.iter_mut().zip(&c.runs) {
            if let Some(t) = imported(view) {
                null_missing(&mut run["summary"], &t.missing);
            }
        }
    }
    let body = serde_json::to_string_pretty(&v).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/json".to_string()),
            (header::CONTENT_DISPOSITION, attachment(&format!("latlab-{slug}.json"))),
        ],
        body,
    ))
}

/// Numbers an imported source lacked become null in the export (the stored summary holds
/// placeholders for them): `e2el` nulls the metric, `e2el.median` one statistic,
/// `e2el.p99` drops that percentile, a field name nulls the field.
pub fn null_missing(summary: &mut serde_json::Value, missing: &[String]) {
    if !summary.is_object() {
        return;
    }
    for m in missing {
        match m.split_once('.') {
            None => summary[m.as_str()] = serde_json::Value::Null,
            Some((metric, stat)) if summary[metric].is_object() => {
                match stat.strip_prefix('p').filter(|p| p.parse::<f64>().is_ok()) {
                    Some(p) => {
                        let p: f64 = p.parse().unwrap_or(f64::NAN);
                        if let Some(list) = summary[metric]["percentiles"].as_array_mut() {
                            list.retain(|e| e[0].as_f64() != Some(p));
                        }
                    }
                    None => summary[metric][format!("{stat}_ms")] = serde_json::Value::Null,
                }
            }
            Some(_) => {}
        }
    }
}

/// RFC 4180 field: quoted when it holds a comma, quote or newline.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

pub fn to_csv(c: &ComparisonView) -> String {
    let metrics = [MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl, MetricKind::E2el];
    let stats = [Stat::Mean, Stat::Median, Stat::P(99.0)];
    let mut head: Vec<String> = [
        "run_id",
        "label",
        "marks",
        "engine",
        "hardware",
        "model",
        "dataset",
        "max_concurrency",
        "status",
        "completed",
        "failed",
        "duration_s",
        "request_throughput",
        "output_throughput",
        "total_token_throughput",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for m in metrics {
        for s in stats {
            // ITL is chunk-level (vLLM's definition); the column says so.
            let key = if m == MetricKind::Itl { "itl_chunk".to_string() } else { m.info().key.to_string() };
            head.push(format!("{key}_{}_ms", s.label()));
        }
    }
    // Speculative decoding: the tree, the mean accepted length (empty when it could not be
    // read or the run did not speculate) and what it is worth.
    head.extend(["spec_tree", "mean_accepted_length", "spec_note"].map(String::from));
    let mut out = head.join(",") + "\n";
    for r in &c.runs {
        let s = r.summary.as_ref();
        let num = |f: &dyn Fn(&bench_types::Summary) -> f64| s.map(|s| f(s).to_string()).unwrap_or_default();
        let mut row: Vec<String> = vec![
            r.id.to_string(),
            field(&r.spec.label),
            field(&marks(r).join(";")),
            field(&imported(r).map(|i| i.engine.clone()).unwrap_or_else(|| r.target_description.clone())),
            field(&hardware(r)),
            field(&r.spec.model),
            r.spec.dataset.name().to_string(),
            r.spec.load.max_concurrency.first().map(|c| c.to_string()).unwrap_or_default(),
            r.status.to_string(),
            num(&|s| s.completed as f64),
            num(&|s| s.failed as f64),
            num(&|s| s.duration_s),
            num(&|s| s.request_throughput),
            num(&|s| s.output_throughput),
            num(&|s| s.total_token_throughput),
        ];
        for m in metrics {
            for st in stats {
                row.push(stat_value(r, m, st).map(|v| v.to_string()).unwrap_or_default());
            }
        }
        let spec = r.speculative.as_ref();
        row.push(
            spec.map(|s| format!("{}/{}/{}", s.tree.num_steps, s.tree.topk, s.tree.num_draft_tokens))
                .unwrap_or_default(),
        );
        row.push(spec.and_then(|s| s.mean_accepted_length).map(|v| v.to_string()).unwrap_or_default());
        row.push(field(&spec.and_then(|s| s.caveat.clone()).unwrap_or_default()));
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

pub async fn csv(
    State(st): State<AppState>,
    Path(slug): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let c = load(&st, &slug).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, attachment(&format!("latlab-{slug}.csv"))),
        ],
        to_csv(&c),
    ))
}

/// Per-request records of `ids` that have any (what the CDF needs), at most 64 runs.
pub async fn records_of(
    pool: &db::PgPool,
    ids: &[i64],
) -> Result<Vec<(i64, Vec<bench_types::RequestRecord>)>, db::DbError> {
    let mut out = Vec::new();
    for &id in ids.iter().take(64) {
        let recs = db::requests::list(pool, id).await?;
        if !recs.is_empty() {
            out.push((id, recs));
        }
    }
    Ok(out)
}

/// `/c/{slug}/chart.svg?chart=..&metric=..&p=..&baseline=..&log=1`.
pub async fn chart_svg(
    State(st): State<AppState>,
    Path(slug): Path<String>,
    ApiQuery(q): ApiQuery<HashMap<String, String>>,
) -> Result<impl IntoResponse, ApiError> {
    let c = load(&st, &slug).await?;
    // A parameter that means nothing is a 400 naming it, not a default chart.
    let view = ChartView::for_comparison(&c, |k| q.get(k).cloned()).map_err(ApiError::Invalid)?;
    let records = if view.kind == ChartKind::Cdf {
        records_of(&st.pool, &c.runs.iter().map(|r| r.id).collect::<Vec<_>>()).await?
    } else {
        Vec::new()
    };
    let svg = render(&c, &view, &records).map_err(ApiError::Internal)?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, format!("inline; filename=\"latlab-{slug}.svg\"")),
        ],
        svg,
    ))
}
