-- The target's own state while a run went (bench_types::telemetry): its Prometheus
-- /metrics and the worker's GPUs (NVML), sampled about once a second, under normalised
-- series names. Wall-clock times, so that a page can place them against the measured
-- start (run_results.bench_started_at) and the request timeline.
CREATE TABLE telemetry_samples (
    run_id  BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    series  TEXT NOT NULL,
    -- NVML's device index for GPU series; NULL for what the target itself reported.
    gpu     INTEGER,
    at      TIMESTAMPTZ NOT NULL,
    value   DOUBLE PRECISION NOT NULL
);
CREATE INDEX telemetry_samples_by_run ON telemetry_samples (run_id, series, at);

-- One row per run that was sampled at all, with what could not be (a target without
-- /metrics, a host without NVML). No row: the run predates telemetry, or was imported.
CREATE TABLE run_telemetry (
    run_id  BIGINT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    notes   TEXT[] NOT NULL DEFAULT '{}'
);
