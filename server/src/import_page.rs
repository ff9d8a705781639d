//! `POST /import`: the import page's form (`app::pages::ImportPage`), a plain
//! `multipart/form-data` post that works the same with and without JavaScript (the page's
//! module says why it is not a server function). The fields become the API's own
//! `ImportRequest` and go through `api::imports::store`, so a file the API refuses is
//! refused here with the same message, and nothing is stored. On success: 303 to the run
//! (or to the comparison when the text held several blocks); on failure: the form again,
//! with the error and everything entered but the file (which a browser cannot refill).
//! Auth: the router's `auth::require_for_writes` guards this POST like every write.

use crate::AppState;
use crate::api::imports;
use crate::store::DbStore;
use app::pages::{IMPORT_PATH, ImportFormState};
use app::store::SharedStore;
use axum::body::Body;
use axum::extract::State;
use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use bench_import::{ImportFormat, ImportRequest};
use leptos::prelude::provide_context;
use std::sync::Arc;

/// What the form sent: the state to show again on failure, and the file, if one was chosen.
struct Posted {
    state: ImportFormState,
    file: Option<(String, Vec<u8>)>,
}

pub async fn submit(
    State(st): State<AppState>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Response {
    let posted = match multipart {
        Ok(m) => read_form(m).await,
        Err(e) => Err((e.status(), format!("send the form as multipart/form-data: {}", e.body_text()))),
    };
    let mut posted = match posted {
        Ok(p) => p,
        Err((status, message)) => {
            let state = ImportFormState { error: Some(message), ..Default::default() };
            return render_form(&st, state, status).await;
        }
    };
    let outcome = match to_request(&posted) {
        Ok(req) => imports::store(&st.pool, &req).await.map_err(|e| e.status_and_message()),
        Err(message) => Err((StatusCode::BAD_REQUEST, message)),
    };
    match outcome {
        Ok(created) => {
            let to = match (created.run_ids.as_slice(), &created.comparison_slug) {
                ([id], _) => format!("/runs/{id}"),
                (_, Some(slug)) => format!("/c/{slug}"),
                _ => "/runs".to_string(),
            };
            Redirect::to(&to).into_response()
        }
        Err((status, message)) => {
            posted.state.file_name = posted.file.map(|(name, _)| name);
            posted.state.error = Some(message);
            render_form(&st, posted.state, status).await
        }
    }
}

fn multipart_error(e: MultipartError) -> (StatusCode, String) {
    let status = e.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        (
            status,
            format!(
                "the upload is larger than latlab accepts ({} MiB)",
                crate::router::MAX_IMPORT_BYTES >> 20
            ),
        )
    } else {
        (status, format!("could not read the form: {}", e.body_text()))
    }
}

/// Reads every part; unknown ones are ignored, as a browser may add its own.
async fn read_form(mut m: Multipart) -> Result<Posted, (StatusCode, String)> {
    let mut state = ImportFormState::default();
    let mut file = None;
    let opt = |v: String| Some(v).filter(|v| !v.is_empty());
    while let Some(field) = m.next_field().await.map_err(multipart_error)? {
        let name = field.name().unwrap_or("").to_string();
        if name == "file" {
            let file_name = field.file_name().unwrap_or("").to_string();
            let bytes = field.bytes().await.map_err(multipart_error)?;
            // A file input with nothing chosen still sends an empty, nameless part.
            if !file_name.is_empty() || !bytes.is_empty() {
                file = Some((
                    if file_name.is_empty() { "the file".to_string() } else { file_name },
                    bytes.to_vec(),
                ));
            }
            continue;
        }
        let value = field.text().await.map_err(multipart_error)?;
        if name == "text" {
            state.text = value;
            continue;
        }
        let value = value.trim().to_string();
        let c = &mut state.config;
        match name.as_str() {
            "engine" => c.engine = value,
            "model" => c.model = opt(value),
            "label" => c.label = value,
            "hardware" => c.hardware = opt(value),
            "engine_version" => c.engine_version = opt(value),
            "optimization" => c.optimization = opt(value),
            "variant" => c.variant = opt(value),
            "command" => c.command = opt(value),
            "source" => c.source = opt(value),
            "comparison_title" => state.comparison_title = value,
            _ => {}
        }
    }
    Ok(Posted { state, file })
}

/// The API's request for what was posted: JSON (a `.json` file, or text starting with `{`)
/// is vLLM's `--save-result`; anything else is printed result blocks.
fn to_request(p: &Posted) -> Result<ImportRequest, String> {
    let pasted = !p.state.text.trim().is_empty();
    let (origin, text) = match (&p.file, pasted) {
        (Some(_), true) => return Err("choose a file or paste a result block, not both".into()),
        (None, false) => return Err("choose a file (vLLM --save-result JSON or a .txt with the printed result) or paste a result block".into()),
        (Some((name, bytes)), false) => {
            let text = std::str::from_utf8(bytes).map_err(|_| format!("{name} is not a text file (UTF-8)"))?;
            (name.as_str(), text)
        }
        (None, true) => ("the pasted text", p.state.text.as_str()),
    };
    let json = origin.to_ascii_lowercase().ends_with(".json") || text.trim_start().starts_with('{');
    let (format, content) = if json {
        let v = serde_json::from_str(text).map_err(|e| format!("{origin} is not valid JSON: {e}"))?;
        (ImportFormat::VllmJson, v)
    } else {
        (ImportFormat::Text, serde_json::Value::String(text.to_string()))
    };
    let title = p.state.comparison_title.trim();
    Ok(ImportRequest {
        format,
        content,
        config: p.state.config.clone(),
        comparison_title: (!title.is_empty()).then(|| title.to_string()),
    })
}

/// The import page as `GET /import` renders it, with `state` shown in the form.
async fn render_form(st: &AppState, state: ImportFormState, status: StatusCode) -> Response {
    let store: SharedStore = Arc::new(DbStore { pool: st.pool.clone() });
    let options = st.leptos_options.clone();
    let app_state = st.clone();
    let handler = leptos_axum::render_app_async_with_context(
        move || {
            provide_context(app_state.clone());
            provide_context(store.clone());
            provide_context(state.clone());
        },
        move || app::shell(options.clone()),
    );
    let req = Request::get(IMPORT_PATH).body(Body::empty()).expect("a static request");
    let mut resp = handler(req).await;
    *resp.status_mut() = status;
    resp
}
