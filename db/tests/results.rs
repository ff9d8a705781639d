//! Storing a whole BenchReport: all or nothing.

mod common;

use bench_types::RunStatus;
use db::{DbError, PgPool, requests, results, runs};

fn ok_end() -> results::RunEnd {
    results::RunEnd { status: RunStatus::Succeeded, note: None }
}

async fn running_run(pool: &PgPool) -> i64 {
    let mut tx = pool.begin().await.unwrap();
    let id = runs::create(&mut tx, &[common::spec(&[2])]).await.unwrap()[0];
    tx.commit().await.unwrap();
    runs::transition(pool, id, RunStatus::Queued, RunStatus::Running, None).await.unwrap();
    id
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_report_is_stored_whole_and_reads_back_exactly(pool: PgPool) {
    let id = running_run(&pool).await;
    // Awkward floats on purpose: they travel as text inside the jagged-array insert.
    let recs = vec![
        common::record(0, vec![0.012_345_678_901_234_5, 0.1 + 0.2, 1.0 / 3.0], Some(vec![1, 3, 2])),
        common::record(1, vec![0.5], None),
        common::record(2, vec![], None),
    ];
    let report = common::report(common::spec(&[2]), recs.clone());
    results::store_report(&pool, id, &report, &ok_end()).await.unwrap();
    let run = runs::get(&pool, id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_eq!(run.summary.as_ref(), Some(&report.summary));
    assert_eq!(requests::list(&pool, id).await.unwrap(), recs);
    let extras = results::extras(&pool, id).await.unwrap().unwrap();
    assert_eq!(extras.notes, vec!["weights: random".to_string()]);
    assert_eq!(extras.target_info["models"]["data"][0]["id"], "m");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_failed_write_leaves_nothing_behind(pool: PgPool) {
    let id = running_run(&pool).await;
    // Two records with the same index violate the primary key halfway through the write.
    let recs = vec![common::record(0, vec![0.1], None), common::record(0, vec![0.2], None)];
    let err = results::store_report(&pool, id, &common::report(common::spec(&[2]), recs), &ok_end())
        .await
        .unwrap_err();
    assert!(matches!(err, DbError::Sql(_)), "{err}");
    let run = runs::get(&pool, id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Running, "status unchanged");
    assert!(run.summary.is_none(), "no summary row");
    assert!(requests::list(&pool, id).await.unwrap().is_empty(), "no request rows");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn only_a_running_run_takes_a_result(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let id = runs::create(&mut tx, &[common::spec(&[1])]).await.unwrap()[0];
    tx.commit().await.unwrap();
    let report = common::report(common::spec(&[1]), vec![common::record(0, vec![0.1], None)]);
    let err = results::store_report(&pool, id, &report, &ok_end()).await.unwrap_err();
    assert!(matches!(err, DbError::WrongStatus { ref status, .. } if status == "queued"), "{err}");
    assert!(requests::list(&pool, id).await.unwrap().is_empty());
    assert!(matches!(
        results::store_report(&pool, 4242, &report, &ok_end()).await,
        Err(DbError::RunNotFound(4242))
    ));
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn many_records_cross_the_batch_boundary(pool: PgPool) {
    let id = running_run(&pool).await;
    let recs: Vec<_> = (0..12_001).map(|i| common::record(i, vec![0.01, 0.02], Some(vec![1, 1]))).collect();
    results::store_report(&pool, id, &common::report(common::spec(&[2]), recs), &ok_end()).await.unwrap();
    let back = requests::list(&pool, id).await.unwrap();
    assert_eq!(back.len(), 12_001);
    assert_eq!(back[12_000].index, 12_000);
}
