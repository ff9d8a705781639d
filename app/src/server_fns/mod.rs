//! Server functions: run on the server, called over HTTP from the hydrated pages.
//! One per file.

mod cancel_run;
mod create_runs;
mod get_comparison;
mod get_run;
mod get_run_charts;
mod get_run_comparisons;
mod get_run_log;
mod get_run_requests;
mod get_telemetry;
mod list_comparisons;
mod list_runs;
mod query_runs;

pub use cancel_run::*;
pub use create_runs::*;
pub use get_comparison::*;
pub use get_run::*;
pub use get_run_charts::*;
pub use get_run_comparisons::*;
pub use get_run_log::*;
pub use get_run_requests::*;
pub use get_telemetry::*;
pub use list_comparisons::*;
pub use list_runs::*;
pub use query_runs::*;

#[cfg(feature = "ssr")]
pub(crate) fn store() -> Result<crate::store::SharedStore, leptos::prelude::ServerFnError> {
    leptos::prelude::use_context::<crate::store::SharedStore>()
        .ok_or_else(|| leptos::prelude::ServerFnError::new("store missing from context"))
}

#[cfg(feature = "ssr")]
pub(crate) fn internal(e: crate::store::StoreError) -> leptos::prelude::ServerFnError {
    leptos::prelude::ServerFnError::new(e.to_string())
}
