//! Kill drills with real processes: SIGKILL of `latlab` (serving, with its workers inside)
//! and of an engine mid-run. Either way the run ends with its reason and nothing half
//! stored. (SIGKILL of a `latlab worker`: worker.rs.)

mod common;

use bench_types::{RunStatus, RunView};
use common::fake_openai::fresh_database;
use common::processes::{latlab_command, wait_for_run};
use std::os::unix::fs::PermissionsExt;
use std::process::Child;
use std::time::{Duration, Instant};

/// `latlab <cmd>` on `url`, engines as `nobody` when that user can reach them.
fn latlab(cmd: &str, url: &str, data_dir: &std::path::Path) -> Child {
    let engine = std::path::Path::new(env!("CARGO_BIN_EXE_latlab")).with_file_name("latlab-engine");
    let mut c = latlab_command(cmd, url);
    c.env("LATLAB_ADDR", "127.0.0.1:0").env("LATLAB_SEED", "0").env("LATLAB_DATA_DIR", data_dir);
    if server::unix_user::running_as_root()
        && server::unix_user::unreachable_ancestor(&engine, 65534, 65534).is_some()
    {
        c.env("LATLAB_ENGINE_USER", "root");
    }
    c.spawn().expect("starting latlab")
}

/// How long a run may take to reach what a test waits for (a native engine starts first).
const WAIT: Duration = Duration::from_secs(180);

async fn wait_for(pool: &sqlx::PgPool, id: i64, what: &str, ok: impl Fn(&RunView) -> bool) -> RunView {
    wait_for_run(pool, id, what, WAIT, ok).await
}

/// A native CPU engine on the tiny random model, long enough to be killed mid-run.
fn native_spec(prompts: u32) -> bench_types::RunSpec {
    serde_json::from_value(serde_json::json!({
        "target": {"kind": "native", "model_source": "random:tiny", "device": "cpu"},
        "model": "tiny", "dataset": {"kind": "random", "input_len": 16, "output_len": 48},
        "num_prompts": prompts, "load": {"max_concurrency": [1]}, "sampling": {"ignore_eos": true},
    }))
    .unwrap()
}

fn sigkill(pid: u32) {
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
}

/// The pids of `parent`'s children whose command is `name`.
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // pid (comm) state ppid ...
            let after = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
            let ppid = after.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
            ppid == Some(parent) && stat.contains(&format!("({name})"))
        })
        .collect()
}

#[tokio::test]
async fn sigkill_of_latlab_or_of_its_engine_leaves_nothing_half_stored() {
    let url = fresh_database(&format!("latlab_kill_drills_{}", std::process::id())).await;
    let pool = db::connect(&url, 4).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // The embedded Postgres is not used, but the engines' home is: `nobody` must reach it.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();

    // 1. The engine dies mid-run: the run fails with that reason, no requests stored.
    let run = server::store::create_runs(&pool, native_spec(200)).await.unwrap().run_ids[0];
    let mut serve = latlab("serve", &url, tmp.path());
    wait_for(&pool, run, "measured", |r| {
        r.progress.as_ref().is_some_and(|p| p.phase == "measuring" && p.completed >= 1)
    })
    .await;
    let engines = children_named(serve.id(), "latlab-engine");
    assert_eq!(engines.len(), 1, "one engine under latlab: {engines:?}");
    sigkill(engines[0]);
    let r = wait_for(&pool, run, "ended", |r| r.status.is_terminal()).await;
    assert_eq!(r.status, RunStatus::Failed);
    assert!(r.error.as_deref().unwrap().contains("the engine exited during the run"), "{:?}", r.error);
    assert!(db::requests::list(&pool, run).await.unwrap().is_empty(), "nothing half stored");
    assert!(db::results::extras(&pool, run).await.unwrap().is_none());

    // 2. latlab itself dies mid-run (SIGKILL: no shutdown code runs). Its engine goes with
    //    it (parent-death signal) and the next worker marks the run interrupted.
    let run = server::store::create_runs(&pool, native_spec(200)).await.unwrap().run_ids[0];
    let running = wait_for(&pool, run, "measured", |r| {
        r.progress.as_ref().is_some_and(|p| p.phase == "measuring" && p.completed >= 1)
    })
    .await;
    let engines = children_named(serve.id(), "latlab-engine");
    assert_eq!(engines.len(), 1);
    sigkill(serve.id());
    serve.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{}", engines[0])).exists()
        && !std::fs::read_to_string(format!("/proc/{}/stat", engines[0])).unwrap_or_default().contains(") Z")
    {
        assert!(Instant::now() < deadline, "the engine outlived latlab");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut worker = latlab("worker", &url, tmp.path());
    let r = wait_for(&pool, run, "was interrupted", |r| r.status.is_terminal()).await;
    assert_eq!(r.status, RunStatus::Interrupted, "{:?}", r.error);
    assert!(r.error.as_deref().unwrap().contains(&running.progress.unwrap().worker));
    assert!(db::requests::list(&pool, run).await.unwrap().is_empty(), "nothing half stored");
    unsafe { libc::kill(worker.id() as i32, libc::SIGTERM) };
    worker.wait().unwrap();
    pool.close().await;
}
