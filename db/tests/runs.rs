//! The runs table against a real Postgres (each test gets its own database).

mod common;

use bench_types::RunStatus;
use db::{DbError, PgPool, runs};

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn created_runs_read_back_with_their_spec(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let ids = runs::create(&mut tx, &[common::spec(&[1]), common::spec(&[4])]).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(ids.len(), 2);
    let r = runs::get(&pool, ids[1]).await.unwrap().unwrap();
    assert_eq!(r.status, RunStatus::Queued);
    assert_eq!(r.spec, common::spec(&[4]));
    assert_eq!(r.target_description, "external http://127.0.0.1:8000");
    assert!(r.summary.is_none() && r.started_at.is_none());
    assert!(runs::get(&pool, 9_999).await.unwrap().is_none());
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn list_is_newest_first_and_pages(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let ids = runs::create(&mut tx, &vec![common::spec(&[1]); 5]).await.unwrap();
    tx.commit().await.unwrap();
    let page: Vec<i64> = runs::list(&pool, 2, None).await.unwrap().iter().map(|r| r.id).collect();
    assert_eq!(page, vec![ids[4], ids[3]]);
    let next: Vec<i64> = runs::list(&pool, 10, Some(ids[3])).await.unwrap().iter().map(|r| r.id).collect();
    assert_eq!(next, vec![ids[2], ids[1], ids[0]]);
    let many: Vec<i64> =
        runs::get_many(&pool, &[ids[2], ids[0], 12345]).await.unwrap().iter().map(|r| r.id).collect();
    assert_eq!(many, vec![ids[2], ids[0]], "order kept, unknown ids skipped");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn transitions_refuse_the_wrong_starting_state(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let id = runs::create(&mut tx, &[common::spec(&[1])]).await.unwrap()[0];
    tx.commit().await.unwrap();
    runs::transition(&pool, id, RunStatus::Queued, RunStatus::Running, None).await.unwrap();
    let r = runs::get(&pool, id).await.unwrap().unwrap();
    assert_eq!(r.status, RunStatus::Running);
    assert!(r.started_at.is_some() && r.finished_at.is_none());
    // A second claim of the same run must fail and change nothing.
    let err = runs::transition(&pool, id, RunStatus::Queued, RunStatus::Running, None).await.unwrap_err();
    assert!(matches!(err, DbError::WrongStatus { ref status, .. } if status == "running"), "{err}");
    runs::transition(&pool, id, RunStatus::Running, RunStatus::Failed, Some("engine exited with code 1"))
        .await
        .unwrap();
    let r = runs::get(&pool, id).await.unwrap().unwrap();
    assert_eq!((r.status, r.error.as_deref()), (RunStatus::Failed, Some("engine exited with code 1")));
    assert!(r.finished_at.is_some());
    assert!(matches!(
        runs::transition(&pool, 777, RunStatus::Queued, RunStatus::Running, None).await,
        Err(DbError::RunNotFound(777))
    ));
    let counts = runs::count_by_status(&pool).await.unwrap();
    assert_eq!(counts, vec![(RunStatus::Failed, 1)]);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_status_column_refuses_unknown_values(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let id = runs::create(&mut tx, &[common::spec(&[1])]).await.unwrap()[0];
    tx.commit().await.unwrap();
    let r = sqlx::query("UPDATE runs SET status = 'done' WHERE id = $1").bind(id).execute(&pool).await;
    assert!(r.is_err(), "CHECK constraint must reject unknown statuses");
}
