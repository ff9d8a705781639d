use leptos::prelude::*;

/// Cancels a queued run, or asks a running one's worker to stop.
#[server(prefix = "/sfn")]
pub async fn cancel_run(id: i64) -> Result<String, ServerFnError> {
    super::store()?.cancel_run(id).await.map_err(super::internal)
}
