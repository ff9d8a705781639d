use crate::run_form::RunForm;
use bench_types::{CreatedRuns, ValidationErrors};
use leptos::prelude::*;

/// Creates the runs a form asks for. Field errors come back as `Ok(Err(..))` so the form
/// can show them beside their inputs; on success the browser is sent to the new run (or
/// to the comparison of a sweep), with or without JavaScript.
#[server(prefix = "/sfn")]
pub async fn create_runs(form: RunForm) -> Result<Result<CreatedRuns, ValidationErrors>, ServerFnError> {
    use crate::store::StoreError;
    let specs = match form.to_specs() {
        Ok(specs) => specs,
        Err(errors) => return Ok(Err(errors)),
    };
    match super::store()?.create_runs(specs).await {
        Ok(created) => {
            leptos_axum::redirect(&form.created_url(&created));
            Ok(Ok(created))
        }
        Err(StoreError::Invalid(errors)) => Ok(Err(errors)),
        Err(e) => Err(super::internal(e)),
    }
}
