//! The seed study as the server stores it (runs 1..=25, the ladder view that
//! `server/src/seed.rs` writes), for chart tests without a database.

use bench_types::{ComparisonView, RunStatus, RunView};

const SEED_JSON: &str = include_str!("../../../../data/seed/qwen3-8b-h100-gpustack.json");

pub fn seed() -> ComparisonView {
    let study: bench_import::SeedStudy = serde_json::from_str(SEED_JSON).unwrap();
    let runs: Vec<RunView> = study
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| RunView {
            id: i as i64 + 1,
            status: RunStatus::Succeeded,
            spec: r.spec.clone(),
            target_description: "imported".into(),
            created_at: Default::default(),
            started_at: None,
            finished_at: None,
            error: None,
            summary: Some(r.summary.clone()),
            progress: None,
            cancel_requested: false,
            speculative: None,
            tags: Vec::new(),
            note: String::new(),
            archived_at: None,
        })
        .collect();
    let steps: Vec<serde_json::Value> = study
        .ladder
        .iter()
        .filter_map(|s| Some(serde_json::json!({ "item": s.item, "published_gain": s.published_gain, "run": s.run? as i64 + 1, "section": s.section })))
        .collect();
    let view =
        serde_json::json!({ "ladder": { "baseline": study.ladder_baseline as i64 + 1, "steps": steps } });
    ComparisonView {
        slug: "qwen3-8b-h100-gpustack".into(),
        title: study.title,
        created_at: Default::default(),
        view,
        runs,
        tags: Vec::new(),
        note: String::new(),
    }
}
