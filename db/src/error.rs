//! Errors of the storage layer.

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot connect to Postgres: {0}")]
    Connect(String),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("stored JSON does not match the current types: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("no run with id {0}")]
    RunNotFound(i64),
    #[error("run {id} is {status}; expected {expected}")]
    WrongStatus { id: i64, status: String, expected: &'static str },
}
