-- Managing many runs: tags and a note on runs and comparisons, archiving, and the columns
-- the runs list filters and sorts on.

-- Tags (short words, bench_types::annotations checks them) and a free-text note.
ALTER TABLE runs
    ADD COLUMN tags TEXT[] NOT NULL DEFAULT '{}',
    ADD COLUMN note TEXT NOT NULL DEFAULT '',
    -- Archived runs leave the runs list (a filter shows them) but stay everywhere else:
    -- their pages, their comparisons, the API by id.
    ADD COLUMN archived_at TIMESTAMPTZ,
    -- What the list filters on, derived from the spec so that no writer has to keep them
    -- in step. engine: the launched/imported engine as the list names it (vllm, sglang,
    -- trtllm; imports in lower case, so launched and imported vLLM filter together), else
    -- the target kind (external, native).
    ADD COLUMN engine TEXT GENERATED ALWAYS AS (
        CASE spec->'target'->>'kind'
            WHEN 'launched' THEN replace(spec->'target'->>'engine', '_', '')
            WHEN 'imported' THEN lower(spec->'target'->>'engine')
            ELSE spec->'target'->>'kind'
        END) STORED,
    ADD COLUMN model TEXT GENERATED ALWAYS AS (spec->>'model') STORED,
    -- Only imports say what they ran on; a native run says its device. NULL: unknown.
    ADD COLUMN hardware TEXT GENERATED ALWAYS AS (
        CASE spec->'target'->>'kind'
            WHEN 'imported' THEN spec->'target'->>'hardware'
            WHEN 'native' THEN 'this host (' || COALESCE(spec->'target'->>'device', 'auto') || ')'
        END) STORED;

ALTER TABLE comparisons
    ADD COLUMN tags TEXT[] NOT NULL DEFAULT '{}',
    ADD COLUMN note TEXT NOT NULL DEFAULT '';

-- The list's default view is the unarchived runs, newest first; the filters narrow it.
CREATE INDEX runs_unarchived_id ON runs (id DESC) WHERE archived_at IS NULL;
CREATE INDEX runs_engine ON runs (engine, id DESC);
CREATE INDEX runs_status_id ON runs (status, id DESC);
CREATE INDEX runs_tags ON runs USING GIN (tags);
CREATE INDEX comparison_runs_run ON comparison_runs (run_id);
