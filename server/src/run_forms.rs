//! The plain forms of the run and comparison pages (tags and note, archive, delete), so
//! they work without JavaScript: each posts here, and the answer is a redirect, to the page
//! again (with `annotations_error=` when the input was refused) or, after a delete, to the
//! runs or comparisons list. Deleting asks first: `/runs/{id}/delete` and `/c/{slug}/delete`
//! (GET) are the confirmation pages, and only their forms post the delete. Auth: the router's `auth::require_for_writes` and
//! `request_guard` check these POSTs like every write.

use crate::AppState;
use crate::run_admin;
use axum::Form;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use bench_types::Annotations;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct AnnotationsForm {
    #[serde(default)]
    tags: String,
    #[serde(default)]
    note: String,
}

fn with_error(path: &str, key: &str, message: &str) -> Response {
    let q = serde_urlencoded::to_string([(key, message)]).unwrap_or_default();
    Redirect::to(&format!("{path}?{q}")).into_response()
}

fn run_id(s: &str) -> Option<i64> {
    s.parse::<i64>().ok()
}

/// A comparison slug as they are made (base62 from `db::comparisons::new_slug`; words and
/// dashes for the reference study's), so that it can go back into a redirect's Location
/// unescaped; anything else names no comparison.
fn slug(s: &str) -> Option<&str> {
    let ok = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    (!s.is_empty() && s.len() <= 64 && s.bytes().all(ok)).then_some(s)
}

pub async fn annotate_run(
    State(st): State<AppState>,
    Path(id): Path<String>,
    Form(f): Form<AnnotationsForm>,
) -> Response {
    let Some(id) = run_id(&id) else { return Redirect::to("/runs").into_response() };
    let path = format!("/runs/{id}");
    match run_admin::annotate_run(&st.pool, id, &Annotations::from_form(&f.tags, &f.note)).await {
        Ok(_) => Redirect::to(&path).into_response(),
        Err(e) => with_error(&path, "annotations_error", &run_admin::message(e)),
    }
}

pub async fn annotate_comparison(
    State(st): State<AppState>,
    Path(slug): Path<String>,
    Form(f): Form<AnnotationsForm>,
) -> Response {
    let Some(slug) = self::slug(&slug) else { return Redirect::to("/comparisons").into_response() };
    let path = format!("/c/{slug}");
    match run_admin::annotate_comparison(&st.pool, slug, &Annotations::from_form(&f.tags, &f.note)).await {
        Ok(_) => Redirect::to(&path).into_response(),
        Err(e) => with_error(&path, "annotations_error", &run_admin::message(e)),
    }
}

#[derive(Debug, Deserialize)]
pub struct ArchiveForm {
    /// `true` archives, `false` un-archives.
    archived: bool,
}

pub async fn archive(
    State(st): State<AppState>,
    Path(id): Path<String>,
    Form(f): Form<ArchiveForm>,
) -> Response {
    let Some(id) = run_id(&id) else { return Redirect::to("/runs").into_response() };
    let path = format!("/runs/{id}");
    match run_admin::set_archived(&st.pool, id, f.archived).await {
        Ok(()) => Redirect::to(&path).into_response(),
        Err(e) => with_error(&path, "annotations_error", &run_admin::message(e)),
    }
}

/// The confirmation page's "Delete" button. A refusal goes back to that page with the
/// reason; success to the runs list, which says what was deleted.
pub async fn delete(State(st): State<AppState>, Path(id): Path<String>) -> Response {
    let Some(id) = run_id(&id) else { return Redirect::to("/runs").into_response() };
    match run_admin::delete_run(&st.pool, id).await {
        Ok(()) => Redirect::to(&format!("/runs?deleted={id}")).into_response(),
        Err(e) => with_error(&format!("/runs/{id}/delete"), "error", &run_admin::message(e)),
    }
}

/// The comparison confirmation page's "Delete" button: to the comparisons list, which says
/// what was deleted, or back to that page with the reason.
pub async fn delete_comparison(State(st): State<AppState>, Path(slug): Path<String>) -> Response {
    let Some(slug) = self::slug(&slug) else { return Redirect::to("/comparisons").into_response() };
    match run_admin::delete_comparison(&st.pool, slug).await {
        Ok(()) => Redirect::to(&format!("/comparisons?deleted={slug}")).into_response(),
        Err(e) => with_error(&format!("/c/{slug}/delete"), "error", &run_admin::message(e)),
    }
}
