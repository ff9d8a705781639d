//! Sign-in sessions (see the `sessions` migration): random ids, stored hashed, with an
//! expiry, revocable, bound to the token they were signed in with.

use crate::DbError;
use sqlx::PgPool;

/// Stores a new session that ends after `ttl_s` seconds.
pub async fn create(
    pool: &PgPool,
    id_hash: &[u8],
    token_fp: &[u8],
    ttl_s: f64,
    client: &str,
) -> Result<(), DbError> {
    sqlx::query!(
        "INSERT INTO sessions (id_hash, token_fp, expires_at, client) VALUES ($1, $2, now() + make_interval(secs => $3), $4)",
        id_hash,
        token_fp,
        ttl_s,
        client
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Whether a session is live: signed in with the current token, not expired, not revoked.
pub async fn is_live(pool: &PgPool, id_hash: &[u8], token_fp: &[u8]) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM sessions WHERE id_hash = $1 AND token_fp = $2
                          AND revoked_at IS NULL AND expires_at > now()) AS "live!""#,
        id_hash,
        token_fp
    )
    .fetch_one(pool)
    .await?)
}

/// Ends one session (sign-out).
pub async fn revoke(pool: &PgPool, id_hash: &[u8]) -> Result<(), DbError> {
    sqlx::query!("UPDATE sessions SET revoked_at = now() WHERE id_hash = $1 AND revoked_at IS NULL", id_hash)
        .execute(pool)
        .await?;
    Ok(())
}

/// Ends every live session; returns how many there were.
pub async fn revoke_all(pool: &PgPool) -> Result<u64, DbError> {
    Ok(sqlx::query!("UPDATE sessions SET revoked_at = now() WHERE revoked_at IS NULL AND expires_at > now()")
        .execute(pool)
        .await?
        .rows_affected())
}

/// Deletes sessions that can no longer be used (expired, revoked, or of another token)
/// and are older than a day, so the table stays small.
pub async fn purge(pool: &PgPool, token_fp: &[u8]) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        "DELETE FROM sessions WHERE (expires_at < now() OR revoked_at IS NOT NULL OR token_fp <> $1)
                                AND created_at < now() - interval '1 day'",
        token_fp
    )
    .execute(pool)
    .await?
    .rows_affected())
}
