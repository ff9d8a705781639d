use bench_types::RequestRecord;
use leptos::prelude::*;

/// Per-request records of the runs (those that have any), for the comparison's latency CDF.
#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_run_requests(ids: Vec<i64>) -> Result<Vec<(i64, Vec<RequestRecord>)>, ServerFnError> {
    if ids.len() > 64 {
        return Err(ServerFnError::new("at most 64 runs"));
    }
    super::store()?.run_requests(ids).await.map_err(super::internal)
}
