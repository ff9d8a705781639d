//! What the target says about itself: `GET /v1/models` and, on latlab's engine,
//! `GET /v1/engine/info`. Missing or broken answers are recorded as absent, never fatal.

use bench_types::TargetInfo;
use std::time::Duration;

pub async fn fetch_target_info(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
) -> TargetInfo {
    TargetInfo {
        models: get_json(client, &format!("{base_url}/v1/models"), api_key).await,
        engine_info: get_json(client, &format!("{base_url}/v1/engine/info"), api_key).await,
    }
}

async fn get_json(client: &reqwest::Client, url: &str, api_key: Option<&str>) -> Option<serde_json::Value> {
    let mut req = client.get(url).timeout(Duration::from_secs(10));
    if let Some(k) = api_key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    resp.json().await.ok()
}
