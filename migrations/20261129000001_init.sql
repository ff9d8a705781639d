-- latlab's store: runs (what was asked), their results (summary + every request), and
-- comparisons (ordered sets of runs shared by permalink).

CREATE TABLE runs (
    id                 BIGSERIAL PRIMARY KEY,
    -- The RunSpec exactly as validated (bench-types), so every number traces to its settings.
    spec               JSONB NOT NULL,
    status             TEXT NOT NULL DEFAULT 'queued'
                       CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted')),
    label              TEXT NOT NULL DEFAULT '',
    target_description TEXT NOT NULL,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    started_at         TIMESTAMPTZ,
    finished_at        TIMESTAMPTZ,
    error              TEXT,
    -- Worker lease (filled by the run queue): who holds the run and until when.
    worker_id          TEXT,
    heartbeat_at       TIMESTAMPTZ,
    lease_expires_at   TIMESTAMPTZ
);
CREATE INDEX runs_created_at ON runs (created_at DESC, id DESC);
CREATE INDEX runs_queued ON runs (created_at, id) WHERE status = 'queued';

-- One row per finished run; written in the same transaction as its request records.
CREATE TABLE run_results (
    run_id            BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    summary           JSONB NOT NULL,
    target_info       JSONB NOT NULL,
    notes             JSONB NOT NULL DEFAULT '[]',
    bench_started_at  TIMESTAMPTZ NOT NULL,
    -- Copies of headline numbers for sorting and ad-hoc SQL; the JSON is the source.
    completed         INTEGER NOT NULL,
    failed            INTEGER NOT NULL,
    duration_s        DOUBLE PRECISION NOT NULL,
    output_throughput DOUBLE PRECISION NOT NULL,
    mean_ttft_ms      DOUBLE PRECISION NOT NULL,
    mean_tpot_ms      DOUBLE PRECISION NOT NULL,
    stored_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Every measured request, as the client saw it (seconds on the client's monotonic clock).
CREATE TABLE request_records (
    run_id            BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx               INTEGER NOT NULL,
    dispatch_offset_s DOUBLE PRECISION NOT NULL,
    success           BOOLEAN NOT NULL,
    error             TEXT,
    input_tokens      INTEGER NOT NULL,
    output_tokens     INTEGER NOT NULL,
    ttft_s            DOUBLE PRECISION,
    e2el_s            DOUBLE PRECISION,
    chunk_offsets_s   DOUBLE PRECISION[] NOT NULL,
    chunk_tokens      INTEGER[],
    PRIMARY KEY (run_id, idx)
);

CREATE TABLE comparisons (
    id         BIGSERIAL PRIMARY KEY,
    slug       TEXT NOT NULL UNIQUE,
    title      TEXT NOT NULL,
    -- Chart/table settings (metric, percentile, baseline...) kept for the permalink.
    view       JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Ordered membership; a run in a comparison cannot be deleted from under it.
CREATE TABLE comparison_runs (
    comparison_id BIGINT NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    run_id        BIGINT NOT NULL REFERENCES runs (id) ON DELETE RESTRICT,
    PRIMARY KEY (comparison_id, position),
    UNIQUE (comparison_id, run_id)
);
