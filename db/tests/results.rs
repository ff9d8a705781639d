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

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_speculating_runs_accepted_length_is_stored_beside_its_latency(pool: PgPool) {
    use bench_types::native_speculative::Tree;
    use bench_types::spec_decode::{PositionAcceptance, RANDOM_DRAFT_CAVEAT, SpecDecodeResult};
    let spec_decode = |mean: Option<f64>| SpecDecodeResult {
        algorithm: "EAGLE3".into(),
        tree: Tree { num_steps: 3, topk: 1, num_draft_tokens: 4 },
        tree_reported: true,
        draft_source: "random:tiny-eagle3".into(),
        random_weights: true,
        mean_accepted_length: mean,
        verify_steps: mean.map(|_| 200.0),
        emitted_tokens: mean.map(|m| 200.0 * m),
        by_position: vec![PositionAcceptance { position: 1, accepted: 1.0 / 3.0, proposed: 200.0 }],
        draft_seconds: Some(0.25),
        verify_seconds: None,
        caveat: Some(RANDOM_DRAFT_CAVEAT.into()),
        notes: if mean.is_none() { vec!["accepted length missing: no counters".into()] } else { vec![] },
        synthetic: None,
    };
    for mean in [Some(1.0 + 1.0 / 7.0), None] {
        let id = running_run(&pool).await;
        let mut report = common::report(common::spec(&[2]), vec![common::record(0, vec![0.5], None)]);
        report.speculative = Some(spec_decode(mean));
        results::store_report(&pool, id, &report, &ok_end()).await.unwrap();
        let run = runs::get(&pool, id).await.unwrap().unwrap();
        assert_eq!(run.speculative, report.speculative, "read back exactly");
        let listed = runs::get_many(&pool, &[id]).await.unwrap();
        assert_eq!(listed[0].speculative, report.speculative);
        let column: Option<f64> =
            sqlx::query_scalar("SELECT mean_accepted_length FROM run_results WHERE run_id = $1")
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(column, mean, "the headline copy is NULL when the length is missing");
    }
    // Runs without speculation read as before.
    let id = running_run(&pool).await;
    results::store_report(&pool, id, &common::report(common::spec(&[2]), vec![]), &ok_end()).await.unwrap();
    assert_eq!(runs::get(&pool, id).await.unwrap().unwrap().speculative, None);
}
