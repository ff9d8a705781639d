//! The zero-configuration default: latlab starts, reuses and stops its own cluster.

use server::embedded_pg::EmbeddedPostgres;
use std::os::unix::fs::PermissionsExt;

/// A data dir the `postgres` user can reach when the tests run as root.
fn data_dir() -> tempfile::TempDir {
    let d = tempfile::Builder::new().prefix("latlab-embedded-").tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

#[tokio::test]
async fn starts_keeps_data_across_restarts_and_stops() {
    let dir = data_dir();
    let pg = EmbeddedPostgres::new(dir.path(), None).unwrap();
    let url = pg.start().await.unwrap();
    assert!(url.starts_with("postgres://latlab@localhost/latlab?host=%2Ftmp%2Flatlab-embedded-"), "{url}");
    let pool = db::connect(&url, 2).await.unwrap();
    sqlx::query("INSERT INTO runs (spec, target_description) VALUES ('{}', 'kept')")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    pg.stop().unwrap();
    assert!(!dir.path().join("postgres/postmaster.pid").exists(), "server still running after stop");
    assert!(db::connect(&url, 1).await.is_err(), "nothing listens after stop");

    // Second start: no initdb, same data.
    let url2 = pg.start().await.unwrap();
    let pool = db::connect(&url2, 2).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM runs WHERE target_description = 'kept'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
    pool.close().await;
    // A latlab that died without stopping its cluster: the next start adopts it.
    let again = pg.start().await.unwrap();
    assert_eq!(again, url2);
    pg.stop().unwrap();
}

#[test]
fn a_folder_without_postgres_binaries_is_named() {
    let dir = data_dir();
    let err = EmbeddedPostgres::new(dir.path(), Some(std::path::Path::new("/usr/bin/nothing-here")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/usr/bin/nothing-here") && err.contains("LATLAB_PG_BIN"), "{err}");
}
