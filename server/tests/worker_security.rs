//! What a real `latlab worker` refuses to run, read or send, whatever a stored spec says:
//! keys other than the opted-in ones, files outside its folders or that are not regular
//! files, engines with the worker's environment or privileges. Specs are stored straight in
//! the database, as an old or tampered row would be, so the worker's own checks are what
//! is tested (the API's are in security.rs).

mod common;

use bench_types::RunStatus;
use common::fake_openai::{Seen, fresh_database, start as fake_openai};
use common::processes::{engine_user, latlab_command, wait_for_run};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

const TOKEN: &str = "worker-api-token-0123456789abcdef";
const KEY: &str = "sk-opted-in-key-0123456789";

/// A folder everyone may enter (engines run as `nobody` when tests run as root).
fn open_dir(parent: &Path, name: &str) -> std::path::PathBuf {
    let d = parent.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn spec(target: serde_json::Value, model: &str, dataset: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "target": target, "model": model, "dataset": dataset, "num_prompts": 2,
        "load": {"max_concurrency": [1]}, "sampling": {"ignore_eos": true},
    })
}

/// Stores a run exactly as given, skipping the API's validation.
async fn store_raw(pool: &sqlx::PgPool, spec: serde_json::Value) -> i64 {
    sqlx::query_scalar("INSERT INTO runs (spec, target_description) VALUES ($1, 'test') RETURNING id")
        .bind(spec)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn wait_end(pool: &sqlx::PgPool, id: i64, within: Duration) -> bench_types::RunView {
    wait_for_run(pool, id, &format!("ended within {within:?}"), within, |r| r.status.is_terminal()).await
}

#[tokio::test]
async fn a_worker_sends_only_opted_in_keys_reads_only_its_folders_and_starts_engines_bare() {
    let url = fresh_database(&format!("latlab_worker_sec_{}", std::process::id())).await;
    let pool = db::connect(&url, 4).await.unwrap();
    let (fake, seen): (String, Seen) = fake_openai().await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data_dir = open_dir(tmp.path(), "data");
    let root = open_dir(tmp.path(), "root");
    std::fs::write(root.join("ok.jsonl"), "{\"prompt\": \"hello there\", \"output_len\": 8}\n").unwrap();
    let fifo = root.join("fifo.jsonl");
    assert_eq!(
        unsafe { libc::mkfifo(std::ffi::CString::new(fifo.to_str().unwrap()).unwrap().as_ptr(), 0o644) },
        0
    );
    // The host's vLLM: a script that shows who it runs as and what it was given, then fails.
    let bin = open_dir(tmp.path(), "bin");
    let fake_vllm = bin.join("vllm");
    std::fs::write(
        &fake_vllm,
        "#!/bin/sh\necho \"uid=$(id -u) cwd=$(pwd)\"\nenv | sort\necho \"args: $*\"\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake_vllm, std::fs::Permissions::from_mode(0o755)).unwrap();

    let mut worker: Child = latlab_command("worker", &url)
        .env("LATLAB_API_TOKEN", TOKEN)
        .env("LATLAB_KEY_TEST", KEY)
        .env("LATLAB_VLLM_BIN", &fake_vllm)
        .env("LATLAB_FILE_ROOTS", &root)
        .env("LATLAB_DATA_DIR", &data_dir)
        .spawn()
        .expect("starting latlab worker");
    let random = serde_json::json!({"kind": "random", "input_len": 16, "output_len": 8});
    let external =
        |key: Option<&str>| serde_json::json!({"kind": "external", "base_url": fake, "api_key_env": key});

    // An opted-in key is sent; the worker's token is not, even when a stored spec names it.
    let ok = store_raw(&pool, spec(external(Some("LATLAB_KEY_TEST")), "fast", random.clone())).await;
    let r = wait_end(&pool, ok, Duration::from_secs(60)).await;
    assert_eq!(r.status, RunStatus::Succeeded, "{:?}", r.error);
    let stolen = store_raw(&pool, spec(external(Some("LATLAB_API_TOKEN")), "fast", random.clone())).await;
    let r = wait_end(&pool, stolen, Duration::from_secs(30)).await;
    assert_eq!(r.status, RunStatus::Failed);
    assert!(r.error.as_deref().unwrap().contains("no API key named LATLAB_API_TOKEN"), "{:?}", r.error);
    {
        let seen = seen.auth.lock().unwrap();
        assert_eq!(seen.len(), 2, "only the good run's requests: {seen:?}");
        assert!(seen.iter().all(|a| a == &format!("Bearer {KEY}")), "{seen:?}");
    }

    // Files: outside the roots, devices, FIFOs are refused at once; the queue moves on.
    let t0 = Instant::now();
    for (dataset, expected) in [
        (serde_json::json!({"kind": "jsonl", "path": "/dev/zero"}), "outside the folders"),
        (serde_json::json!({"kind": "jsonl", "path": "/etc/passwd"}), "outside the folders"),
        (serde_json::json!({"kind": "jsonl", "path": fifo}), "not a regular file"),
    ] {
        let id = store_raw(&pool, spec(external(None), "fast", dataset.clone())).await;
        let r = wait_end(&pool, id, Duration::from_secs(30)).await;
        assert_eq!(r.status, RunStatus::Failed, "{dataset}");
        assert!(r.error.as_deref().unwrap().contains(expected), "{dataset}: {:?}", r.error);
    }
    let model = store_raw(
        &pool,
        spec(
            serde_json::json!({"kind": "native", "model_source": "/etc", "device": "cpu"}),
            "m",
            random.clone(),
        ),
    )
    .await;
    let r = wait_end(&pool, model, Duration::from_secs(30)).await;
    assert!(r.error.as_deref().unwrap().contains("target.model_source: /etc is outside"), "{:?}", r.error);
    let good = store_raw(
        &pool,
        spec(external(None), "fast", serde_json::json!({"kind": "jsonl", "path": root.join("ok.jsonl")})),
    )
    .await;
    assert_eq!(wait_end(&pool, good, Duration::from_secs(30)).await.status, RunStatus::Succeeded);
    assert!(t0.elapsed() < Duration::from_secs(30), "refusals must be quick: {:?}", t0.elapsed());

    // The launched engine: the host's program, a bare environment, the engine user, its home.
    let launched = store_raw(
        &pool,
        spec(
            serde_json::json!({"kind": "launched", "engine": "vllm", "model": "Qwen/Qwen3-8B"}),
            "Qwen/Qwen3-8B",
            random.clone(),
        ),
    )
    .await;
    let r = wait_end(&pool, launched, Duration::from_secs(30)).await;
    assert_eq!(r.status, RunStatus::Failed);
    let log = db::queue::log(&pool, launched).await.unwrap().unwrap();
    assert!(log.contains(&format!("$ {} serve Qwen/Qwen3-8B", fake_vllm.display())), "{log}");
    let home = std::fs::canonicalize(&data_dir).unwrap().join("engine-home");
    assert!(
        log.contains(&format!("HOME={}", home.display()))
            || log.contains(&format!("HOME={}", data_dir.join("engine-home").display())),
        "{log}"
    );
    assert!(log.contains("PATH="), "{log}");
    for secret in ["LATLAB_API_TOKEN", "DATABASE_URL", "LATLAB_KEY_TEST", TOKEN, KEY, "LATLAB_LEASE_S"] {
        assert!(!log.contains(secret), "{secret} reached the engine: {log}");
    }
    if server::unix_user::running_as_root() {
        assert!(log.contains("uid=65534"), "engines run as nobody when latlab is root: {log}");
    }

    unsafe { libc::kill(worker.id() as i32, libc::SIGTERM) };
    worker.wait().unwrap();
    pool.close().await;
}

/// Leases expire on a task of their own: a run whose worker died is marked interrupted
/// while this worker's only slot is busy with a long run.
#[tokio::test]
async fn a_busy_slot_does_not_hold_up_lease_expiry() {
    let url = fresh_database(&format!("latlab_worker_lease_{}", std::process::id())).await;
    let pool = db::connect(&url, 4).await.unwrap();
    let (fake, _) = fake_openai().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut worker = latlab_command("worker", &url)
        .env("LATLAB_DATA_DIR", tmp.path())
        .env("LATLAB_ENGINE_USER", engine_user())
        .spawn()
        .unwrap();
    let mut slow = spec(
        serde_json::json!({"kind": "external", "base_url": fake}),
        "slow",
        serde_json::json!({"kind": "random", "input_len": 16, "output_len": 8}),
    );
    slow["num_prompts"] = 20.into();
    let busy = store_raw(&pool, slow).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while db::runs::get(&pool, busy).await.unwrap().unwrap().status != RunStatus::Running {
        assert!(Instant::now() < deadline, "the slow run never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A run held by a worker that vanished: its lease ran out a minute ago.
    let ghost: i64 = sqlx::query_scalar(
        "INSERT INTO runs (spec, target_description, status, worker_id, started_at, heartbeat_at, lease_expires_at)
         VALUES ($1, 'ghost', 'running', 'ghost:1#0', now(), now() - interval '61 s', now() - interval '60 s') RETURNING id",
    )
    .bind(spec(serde_json::json!({"kind": "external", "base_url": fake}), "fast", serde_json::json!({"kind": "random", "input_len": 4, "output_len": 4})))
    .fetch_one(&pool)
    .await
    .unwrap();
    let r = wait_end(&pool, ghost, Duration::from_secs(10)).await;
    assert_eq!(r.status, RunStatus::Interrupted);
    assert_eq!(
        db::runs::get(&pool, busy).await.unwrap().unwrap().status,
        RunStatus::Running,
        "expired while the slot was busy"
    );
    unsafe { libc::kill(worker.id() as i32, libc::SIGTERM) };
    worker.wait().unwrap();
    pool.close().await;
}
