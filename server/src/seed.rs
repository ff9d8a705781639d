//! The reference comparison latlab ships: the GPUStack "Qwen3-8B on H100" study, as its
//! importer made it from the document (`data/seed/`, regenerated and checked by
//! `bench-import/tests/seed_data.rs`). Loaded once, on first start, under a stable slug.

use anyhow::Context;
use bench_import::SeedStudy;
use db::PgPool;
use db::imports::NewImportedRun;

/// The seed comparison's permalink: `/c/qwen3-8b-h100-gpustack`.
pub const SEED_SLUG: &str = bench_types::api::REFERENCE_SLUG;

/// Embedded so that users never need the document or `shared/`.
const SEED_JSON: &str = include_str!("../../data/seed/qwen3-8b-h100-gpustack.json");

pub fn study() -> anyhow::Result<SeedStudy> {
    serde_json::from_str(SEED_JSON)
        .context("the bundled seed study does not parse (data/seed/qwen3-8b-h100-gpustack.json)")
}

/// Stores the seed study unless its comparison exists. Returns whether it stored it. Two
/// servers starting at once: the slug is unique, so the second insert fails and its
/// transaction stores nothing; that is reported as "already loaded".
pub async fn load(pool: &PgPool) -> anyhow::Result<bool> {
    if db::imports::comparison_exists(pool, SEED_SLUG).await? {
        return Ok(false);
    }
    let study = study()?;
    let runs: Vec<NewImportedRun> = study
        .runs
        .iter()
        .map(|r| NewImportedRun {
            spec: &r.spec,
            summary: &r.summary,
            requests: &r.requests,
            notes: &r.notes,
        })
        .collect();
    let mut tx = pool.begin().await?;
    let ids = db::imports::insert_runs(&mut tx, &runs).await.context("storing the seed runs")?;
    let id_of = |i: usize| ids.get(i).copied();
    let steps: Vec<serde_json::Value> = study
        .ladder
        .iter()
        .filter_map(|s| {
            Some(serde_json::json!({ "item": s.item, "original": s.original, "published_gain": s.published_gain, "run": id_of(s.run?)?, "section": s.section }))
        })
        .collect();
    let view = serde_json::json!({
        "ladder": { "baseline": id_of(study.ladder_baseline), "steps": steps },
        "source": study.document_title,
        "hardware": study.hardware,
        "bench_command": study.bench_command,
    });
    if let Err(e) = db::imports::insert_comparison(&mut tx, SEED_SLUG, &study.title, &view, &ids).await {
        if db::imports::comparison_exists(pool, SEED_SLUG).await.unwrap_or(false) {
            return Ok(false);
        }
        return Err(e).context("storing the seed comparison");
    }
    tx.commit().await?;
    tracing::info!(runs = ids.len(), slug = SEED_SLUG, "loaded the reference comparison \"{}\"", study.title);
    Ok(true)
}
