-- Run queue: workers claim queued runs (FOR UPDATE SKIP LOCKED), renew a lease with
-- heartbeats, publish live progress, and keep the engine's log where every web server
-- can show it (workers may run on other hosts).
ALTER TABLE runs
    ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN progress JSONB;

CREATE INDEX runs_running_lease ON runs (lease_expires_at) WHERE status = 'running';

-- The tail of the engine's output (stdout + stderr), kept after the run ends.
CREATE TABLE run_logs (
    run_id     BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    log        TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
