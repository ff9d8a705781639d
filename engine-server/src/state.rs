//! Shared state of the HTTP handlers: the engine handle, the served name, metrics.

use crate::metrics::Metrics;
use engine::EngineHandle;
use std::sync::Arc;

#[derive(Clone)]
pub struct AppState {
    pub engine: EngineHandle,
    pub model_name: Arc<str>,
    pub metrics: Arc<Metrics>,
    /// Unix seconds at start: the `created` of /v1/models.
    pub created: u64,
    pub response_counter: Arc<std::sync::atomic::AtomicU64>,
}

impl AppState {
    pub fn new(engine: EngineHandle, model_name: String) -> Self {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        AppState {
            engine,
            model_name: model_name.into(),
            metrics: Arc::new(Metrics::default()),
            created,
            response_counter: Default::default(),
        }
    }
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
