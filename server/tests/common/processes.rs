//! Real `latlab` processes for the tests that need a worker or a whole server, and the wait
//! on a run's stored state while they work.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `latlab <cmd>` against the database at `url`, with the fetched assets, short leases (2 s,
/// a heartbeat every 0.3 s) so that a killed process's runs are marked within the tests'
/// waits, and warnings on stderr. The caller adds what its test needs and spawns it.
pub fn latlab_command(cmd: &str, url: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_latlab"));
    c.arg(cmd)
        .env("DATABASE_URL", url)
        .env("LATLAB_ASSETS_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache"))
        .env("LATLAB_LEASE_S", "2")
        .env("LATLAB_HEARTBEAT_S", "0.3")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    c
}

/// The `LATLAB_ENGINE_USER` for a test's worker: root's own when the tests run as root
/// (engines would otherwise run as nobody, who cannot reach the build tree), else unset.
pub fn engine_user() -> &'static str {
    if server::unix_user::running_as_root() { "root" } else { "" }
}

/// Polls run `id` until `ok` holds of it; after `limit` the test fails, naming `what` it
/// waited for and the run as it stands.
pub async fn wait_for_run(
    pool: &sqlx::PgPool,
    id: i64,
    what: &str,
    limit: Duration,
    ok: impl Fn(&bench_types::RunView) -> bool,
) -> bench_types::RunView {
    let deadline = Instant::now() + limit;
    loop {
        let r = db::runs::get(pool, id).await.unwrap().unwrap();
        if ok(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "run {id} never {what}: {r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
