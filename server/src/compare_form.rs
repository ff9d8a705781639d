//! `POST /compare`: the runs list's "compare selected" form (a plain form, so it works
//! without JavaScript). Makes a comparison of the picked runs, in the order listed, and
//! sends the browser to it; a refusal goes back to the list with the reason.

use crate::AppState;
use axum::Form;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use bench_types::NewComparison;

fn back(message: &str) -> Response {
    let q = serde_urlencoded::to_string([("compare_error", message)]).unwrap_or_default();
    Redirect::to(&format!("/runs?{q}")).into_response()
}

pub async fn submit(State(st): State<AppState>, Form(fields): Form<Vec<(String, String)>>) -> Response {
    let mut run_ids = Vec::new();
    let mut title = String::new();
    for (k, v) in fields {
        match k.as_str() {
            "run" => match v.parse::<i64>() {
                Ok(id) if !run_ids.contains(&id) => run_ids.push(id),
                Ok(_) => {}
                Err(_) => return back(&format!("{v:?} is not a run id")),
            },
            "title" => title = v.trim().to_string(),
            _ => {}
        }
    }
    if run_ids.len() < 2 {
        return back("Pick at least two runs to compare.");
    }
    if title.is_empty() {
        let ids: Vec<String> = run_ids.iter().map(|id| format!("#{id}")).collect();
        title = format!("Runs {}", ids.join(", "));
    }
    let title: String = title.chars().take(200).collect();
    match crate::store::create_comparison(
        &st.pool,
        NewComparison { title, run_ids, view: serde_json::json!({}) },
    )
    .await
    {
        Ok(slug) => Redirect::to(&format!("/c/{slug}")).into_response(),
        Err(app::store::StoreError::Invalid(e)) => back(&e.to_string()),
        Err(e) => back(&e.to_string()),
    }
}
