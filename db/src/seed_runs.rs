//! Synthetic runs for speed measurements and list tests (`latlab seed-runs`,
//! `scripts/seed-runs.sh`): many runs over several engines, models, hardware, statuses and
//! tags, their results and request records, plus one large run (1,000 requests with their
//! streamed chunks, 600 telemetry samples) for the run page. Generated inside Postgres
//! (`generate_series`), a few statements in all, so 10,000 runs and 1,000,000 records take
//! seconds, not one round trip per row. Deterministic (`setseed`): the same arguments give
//! the same numbers. Appends to whatever the database holds; nothing is deleted.
//!
//! The queries are built at run time against a template summary, so they are not in
//! `.sqlx/`; every value is bound.

use crate::DbError;
use bench_types::Summary;
use sqlx::PgPool;

/// What a seeding stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Seeded {
    /// Ids of the runs, in order (the large run not included).
    pub run_ids: Vec<i64>,
    pub requests: i64,
    /// The run with 1,000 requests and 600 telemetry samples.
    pub large_run: i64,
}

/// Requests, chunks per request and telemetry samples of the large run.
pub const LARGE_RUN_REQUESTS: i64 = 1_000;
pub const LARGE_RUN_CHUNKS: i64 = 128;
pub const LARGE_RUN_SAMPLES: i64 = 600;

/// `n` runs: run `g` (from 1) has engine `g % 6` (vLLM, SGLang, TensorRT-LLM launched;
/// imported vLLM on one of three GPUs; native; external), model `(g / 6) % 4`, a status
/// mostly `succeeded`, tags from `g`'s divisors (`fp8` every 5th, `baseline` every 7th,
/// `regression` every 11th), and every 50th archived.
const RUNS_SQL: &str = r#"
WITH base AS (
    SELECT g, g % 6 AS e,
           (ARRAY['Qwen/Qwen3-8B', 'Qwen/Qwen3-0.6B', 'Qwen/Qwen3-32B', 'meta-llama/Llama-3.1-8B-Instruct'])[(g / 6) % 4 + 1] AS model,
           (ARRAY['1x NVIDIA H100 SXM', '1x NVIDIA H200', '1x NVIDIA A100 80GB'])[(g / 6) % 3 + 1] AS hw,
           CASE WHEN (g * 37) % 100 < 2 THEN 'queued' WHEN (g * 37) % 100 < 3 THEN 'running'
                WHEN (g * 37) % 100 < 83 THEN 'succeeded' WHEN (g * 37) % 100 < 91 THEN 'failed'
                WHEN (g * 37) % 100 < 96 THEN 'cancelled' ELSE 'interrupted' END AS status,
           (ARRAY[1, 2, 4, 8, 16, 32])[(g / 24) % 6 + 1] AS conc,
           now() - make_interval(mins => ($1 - g)::INT) AS created
    FROM generate_series(1, $1::BIGINT) g
), spec AS (
    SELECT b.*,
           CASE e WHEN 0 THEN jsonb_build_object('kind', 'launched', 'engine', 'vllm', 'model', model)
                  WHEN 1 THEN jsonb_build_object('kind', 'launched', 'engine', 'sglang', 'model', model)
                  WHEN 2 THEN jsonb_build_object('kind', 'launched', 'engine', 'trt_llm', 'model', model)
                  WHEN 3 THEN jsonb_build_object('kind', 'imported', 'engine', 'vLLM', 'source', 'seed-runs', 'hardware', hw)
                  WHEN 4 THEN jsonb_build_object('kind', 'native', 'model_source', 'random:qwen3-8b', 'device', 'cuda')
                  ELSE jsonb_build_object('kind', 'external', 'base_url', 'http://10.0.0.5:8000') END AS target,
           CASE e WHEN 0 THEN 'vllm ' || model WHEN 1 THEN 'sglang ' || model WHEN 2 THEN 'trtllm ' || model
                  WHEN 3 THEN 'imported vLLM' WHEN 4 THEN 'native random:qwen3-8b'
                  ELSE 'external http://10.0.0.5:8000' END AS target_description
    FROM base b
)
INSERT INTO runs (spec, status, label, target_description, created_at, started_at, finished_at, error, tags,
                  note, archived_at)
SELECT jsonb_build_object('label', 'seed run ' || g, 'target', target, 'model', model,
                          'dataset', jsonb_build_object('kind', 'sharegpt'), 'num_prompts', 100,
                          'load', jsonb_build_object('max_concurrency', jsonb_build_array(conc))),
       status, 'seed run ' || g, target_description, created,
       CASE WHEN status <> 'queued' THEN created + interval '5 seconds' END,
       CASE WHEN status NOT IN ('queued', 'running') THEN created + interval '65 seconds' END,
       CASE WHEN status IN ('failed', 'interrupted') THEN 'synthetic failure (seed-runs)' END,
       array_remove(ARRAY[CASE WHEN g % 5 = 0 THEN 'fp8' END, CASE WHEN g % 7 = 0 THEN 'baseline' END,
                          CASE WHEN g % 11 = 0 THEN 'regression' END], NULL),
       CASE WHEN g % 13 = 0 THEN 'warm cache, second try' ELSE '' END,
       CASE WHEN g % 50 = 0 THEN now() END
FROM spec ORDER BY g
RETURNING id
"#;

/// A result for every run that ended with one (succeeded, failed, cancelled), its headline
/// numbers both in the summary JSON and in the copies the list sorts on.
const RESULTS_SQL: &str = r#"
INSERT INTO run_results (run_id, summary, target_info, notes, bench_started_at, completed, failed, duration_s,
                         output_throughput, mean_ttft_ms, mean_tpot_ms)
SELECT id,
       $2::JSONB || jsonb_build_object(
           'completed', 100 - failed, 'failed', failed, 'duration_s', dur, 'output_throughput', tput,
           'total_output_tokens', (100 - failed) * 128, 'total_input_tokens', (100 - failed) * 300,
           'request_throughput', (100 - failed) / dur, 'total_token_throughput', tput * 3.3,
           'ttft', ($2::JSONB -> 'ttft') || jsonb_build_object('mean_ms', ttft, 'median_ms', ttft * 0.9),
           'tpot', ($2::JSONB -> 'tpot') || jsonb_build_object('mean_ms', tpot, 'median_ms', tpot * 0.95),
           'e2el', ($2::JSONB -> 'e2el') || jsonb_build_object('mean_ms', ttft + 127 * tpot)),
       '{}', '[]', started_at, 100 - failed, failed, dur, tput, ttft, tpot
FROM (SELECT r.id, r.started_at, CASE r.status WHEN 'succeeded' THEN 0 ELSE 10 + (r.id % 20)::INT END AS failed,
             20 + random() * 400 AS ttft, 5 + random() * 40 AS tpot, 30 + random() * 60 AS dur,
             200 + random() * 3000 AS tput
      FROM runs r WHERE r.id = ANY($1) AND r.status IN ('succeeded', 'failed', 'cancelled')) v
"#;

/// `$2` records spread evenly over the runs with a result, four chunks each.
const RECORDS_SQL: &str = r#"
WITH res AS (
    SELECT run_id, row_number() OVER (ORDER BY run_id) AS i, count(*) OVER () AS n
    FROM run_results WHERE run_id = ANY($1)
)
INSERT INTO request_records (run_id, idx, dispatch_offset_s, success, error, input_tokens, output_tokens, ttft_s,
                             e2el_s, chunk_offsets_s, chunk_tokens)
SELECT run_id, k, k * 0.05, k % 50 <> 7, CASE WHEN k % 50 = 7 THEN 'synthetic error' END,
       200 + (k * 37) % 300, CASE WHEN k % 50 = 7 THEN 0 ELSE 128 END,
       CASE WHEN k % 50 <> 7 THEN t END, CASE WHEN k % 50 <> 7 THEN t + 2.5 END,
       CASE WHEN k % 50 = 7 THEN '{}'::FLOAT8[] ELSE ARRAY[t, t + 0.8, t + 1.6, t + 2.5] END, NULL
FROM res
CROSS JOIN LATERAL generate_series(0, $2::BIGINT / n + CASE WHEN i <= $2::BIGINT % n THEN 1 ELSE 0 END - 1) k
CROSS JOIN LATERAL (SELECT 0.02 + ((run_id * 31 + k * 17) % 200) / 1000.0 AS t) x
"#;

/// The large run: launched vLLM, succeeded, tagged `large`.
const LARGE_RUN_SQL: &str = r#"
INSERT INTO runs (spec, status, label, target_description, created_at, started_at, finished_at, tags)
VALUES (jsonb_build_object('label', 'seed large run', 'target',
                           jsonb_build_object('kind', 'launched', 'engine', 'vllm', 'model', 'Qwen/Qwen3-8B'),
                           'model', 'Qwen/Qwen3-8B', 'dataset', jsonb_build_object('kind', 'sharegpt'),
                           'num_prompts', $1::BIGINT, 'load', jsonb_build_object('max_concurrency', jsonb_build_array(16))),
        'succeeded', 'seed large run', 'vllm Qwen/Qwen3-8B', now(), now(), now() + interval '2 minutes', '{large}')
RETURNING id
"#;

const LARGE_RECORDS_SQL: &str = r#"
INSERT INTO request_records (run_id, idx, dispatch_offset_s, success, error, input_tokens, output_tokens, ttft_s,
                             e2el_s, chunk_offsets_s, chunk_tokens)
SELECT $1, k, k * 0.1, true, NULL, 200 + (k * 37) % 300, $3::INT, t, t + ($3 - 1) * 0.02,
       ARRAY(SELECT t + j * 0.02 FROM generate_series(0, $3 - 1) j), NULL
FROM generate_series(0, $2::INT - 1) k
CROSS JOIN LATERAL (SELECT 0.03 + ((k * 17) % 100) / 1000.0 AS t) x
"#;

/// Four target series, 150 samples each, one a second from the measured start.
const LARGE_TELEMETRY_SQL: &str = r#"
INSERT INTO telemetry_samples (run_id, series, gpu, at, value)
SELECT $1, s.series, s.gpu, now() + make_interval(secs => k), s.base + (k % 17)
FROM generate_series(0, $2::INT / 4 - 1) k
CROSS JOIN (VALUES ('running_requests', NULL::INT, 10.0), ('waiting_requests', NULL, 2.0),
                   ('kv_cache_usage_pct', NULL, 40.0), ('gpu_util_pct', 0, 80.0)) AS s(series, gpu, base)
"#;

/// Stores `runs` runs and `requests` request records (over the runs that have a result),
/// and the large run.
pub async fn seed(pool: &PgPool, runs: i64, requests: i64) -> Result<Seeded, DbError> {
    let template = serde_json::to_value(Summary::default())?;
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT setseed(0.42)").execute(&mut *tx).await?;
    let run_ids: Vec<i64> = sqlx::query_scalar(RUNS_SQL).bind(runs).fetch_all(&mut *tx).await?;
    sqlx::query(RESULTS_SQL).bind(&run_ids).bind(&template).execute(&mut *tx).await?;
    let requests =
        sqlx::query(RECORDS_SQL).bind(&run_ids).bind(requests).execute(&mut *tx).await?.rows_affected()
            as i64;

    let large_run: i64 =
        sqlx::query_scalar(LARGE_RUN_SQL).bind(LARGE_RUN_REQUESTS).fetch_one(&mut *tx).await?;
    sqlx::query(RESULTS_SQL).bind(vec![large_run]).bind(&template).execute(&mut *tx).await?;
    sqlx::query(LARGE_RECORDS_SQL)
        .bind(large_run)
        .bind(LARGE_RUN_REQUESTS as i32)
        .bind(LARGE_RUN_CHUNKS as i32)
        .execute(&mut *tx)
        .await?;
    sqlx::query(LARGE_TELEMETRY_SQL).bind(large_run).bind(LARGE_RUN_SAMPLES as i32).execute(&mut *tx).await?;
    sqlx::query("INSERT INTO run_telemetry (run_id, notes) VALUES ($1, '{}')")
        .bind(large_run)
        .execute(&mut *tx)
        .await?;
    // The measured start at the first sample, so the charts line up.
    sqlx::query("UPDATE run_results SET bench_started_at = now() WHERE run_id = $1")
        .bind(large_run)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    sqlx::query("ANALYZE runs, run_results, request_records, telemetry_samples").execute(pool).await?;
    Ok(Seeded { run_ids, requests, large_run })
}
