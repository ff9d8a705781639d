-- Browser sessions of people who signed in with the API token. The cookie carries a random
-- id; only its SHA-256 is stored, so a copy of this table cannot be replayed as a cookie.
-- A session ends at expires_at, when revoked (sign-out, `latlab revoke-sessions`), or when
-- the token it was signed in with is replaced (token_fp no longer matches).
CREATE TABLE sessions (
    id_hash    BYTEA PRIMARY KEY,
    token_fp   BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ,
    -- Who signed in, for the operator: client address and user agent (truncated).
    client     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX sessions_expires_at ON sessions (expires_at);

-- latlab no longer lets a request choose the program a worker runs: launched targets lost
-- their `executable` field. Stored specs drop it so they still read; the program that ran
-- stays on the first line of the run's engine log ("$ program args").
UPDATE runs SET spec = spec #- '{target,executable}'
WHERE spec->'target'->>'kind' = 'launched' AND spec->'target' ? 'executable';
