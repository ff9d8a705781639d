//! A run's telemetry: stored in batches while it goes, read back in seconds since the
//! measured start.

mod common;

use bench_types::RunStatus;
use bench_types::telemetry::{RunTelemetry, Series, TelemetryPoint};
use db::telemetry::{NewSample, append, begin, for_run, series_of_runs, set_notes};
use db::{PgPool, results, runs};

async fn finished_run(pool: &PgPool) -> (i64, bench_types::BenchReport) {
    let mut tx = pool.begin().await.unwrap();
    let id = runs::create(&mut tx, &[common::spec(&[2])]).await.unwrap()[0];
    tx.commit().await.unwrap();
    runs::transition(pool, id, RunStatus::Queued, RunStatus::Running, None).await.unwrap();
    let report = common::report(common::spec(&[2]), vec![common::record(0, vec![0.5], None)]);
    let end = results::RunEnd { status: RunStatus::Succeeded, note: None };
    results::store_report(pool, id, &report, &end).await.unwrap();
    (id, report)
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn samples_read_back_in_seconds_since_the_measured_start(pool: PgPool) {
    let (id, report) = finished_run(&pool).await;
    let at = |ms: i64| report.started_at + chrono::Duration::milliseconds(ms);
    let samples = [
        NewSample { series: Series::RunningRequests, gpu: None, at: at(1_000), value: 3.0 },
        NewSample { series: Series::RunningRequests, gpu: None, at: at(-500), value: 0.0 },
        NewSample { series: Series::GpuPowerW, gpu: Some(1), at: at(2_250), value: 412.5 },
    ];
    let notes = vec!["no NVML on this host".to_string()];
    begin(&pool, id).await.unwrap();
    append(&pool, id, &samples[..1]).await.unwrap();
    // A batch is readable before sampling ends (a worker that dies here leaves it).
    let t = for_run(&pool, id).await.unwrap();
    assert!(t.collected && t.notes.is_empty());
    assert_eq!(
        t.points,
        vec![TelemetryPoint { series: Series::RunningRequests, gpu: None, t_s: 1.0, value: 3.0 }]
    );
    append(&pool, id, &samples[1..]).await.unwrap();
    set_notes(&pool, id, &notes).await.unwrap();
    let t = for_run(&pool, id).await.unwrap();
    assert!(t.collected);
    assert_eq!(t.notes, notes);
    let p = |series, gpu, t_s, value| TelemetryPoint { series, gpu, t_s, value };
    assert_eq!(
        t.points,
        vec![
            p(Series::GpuPowerW, Some(1), 2.25, 412.5),
            p(Series::RunningRequests, None, -0.5, 0.0),
            p(Series::RunningRequests, None, 1.0, 3.0),
        ]
    );
    let overlay = series_of_runs(&pool, &[id, id + 1000], Series::RunningRequests).await.unwrap();
    assert_eq!(overlay.len(), 1);
    assert_eq!(overlay[0].1.len(), 2);

    // Beginning again replaces, so a retried run never doubles the samples.
    begin(&pool, id).await.unwrap();
    append(&pool, id, &samples[..1]).await.unwrap();
    let t = for_run(&pool, id).await.unwrap();
    assert_eq!((t.points.len(), t.notes.len()), (1, 0));
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_run_never_sampled_says_so(pool: PgPool) {
    let (id, _) = finished_run(&pool).await;
    assert_eq!(for_run(&pool, id).await.unwrap(), RunTelemetry::default());
    begin(&pool, id).await.unwrap();
    set_notes(&pool, id, &["the target has no /metrics".into()]).await.unwrap();
    let t = for_run(&pool, id).await.unwrap();
    assert!(t.collected && t.points.is_empty());
}
