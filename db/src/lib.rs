//! Every SQL statement latlab runs, one module per table. Queries are checked at compile
//! time against the schema in `../migrations` (offline data in `.sqlx/`).

pub mod annotations;
pub mod comparisons;
pub mod error;
pub mod imports;
pub mod queue;
pub mod requests;
pub mod results;
pub mod run_list;
pub mod run_removal;
pub mod runs;
pub mod seed_runs;
pub mod sessions;
pub mod telemetry;

pub use error::DbError;
pub use sqlx::PgPool;

/// The schema, embedded in the binary; applied at start-up.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Connects to `url` and applies pending migrations.
pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool, DbError> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(std::time::Duration::from_secs(10))
        .connect(url)
        .await
        .map_err(|e| DbError::Connect(e.to_string()))?;
    MIGRATOR.run(&pool).await?;
    Ok(pool)
}

/// Creates `name` on the server at `admin_url` unless it exists (used by the embedded
/// cluster, whose superuser we are).
pub async fn ensure_database(admin_url: &str, name: &str) -> Result<(), DbError> {
    use sqlx::Connection;
    let mut conn =
        sqlx::PgConnection::connect(admin_url).await.map_err(|e| DbError::Connect(e.to_string()))?;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(&mut conn)
        .await?;
    if !exists {
        // Identifiers cannot be bound as parameters; quote it.
        sqlx::query(&format!("CREATE DATABASE \"{}\"", name.replace('"', "\"\""))).execute(&mut conn).await?;
    }
    conn.close().await?;
    Ok(())
}
