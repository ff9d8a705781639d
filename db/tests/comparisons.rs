//! Comparisons: ordered runs under a permalink.

mod common;

use bench_types::NewComparison;
use db::{comparisons, runs, DbError, PgPool};

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_comparison_keeps_its_runs_in_order(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let ids = runs::create(&mut tx, &[common::spec(&[1]), common::spec(&[2]), common::spec(&[4])]).await.unwrap();
    let new = NewComparison { title: "  BS sweep ".into(), run_ids: vec![ids[2], ids[0], ids[1]], view: serde_json::json!({"metric": "tpot"}) };
    let slug = comparisons::create(&mut tx, &new).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(slug.len(), 10);
    let c = comparisons::get(&pool, &slug).await.unwrap().unwrap();
    assert_eq!(c.title, "BS sweep");
    assert_eq!(c.view["metric"], "tpot");
    assert_eq!(c.runs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![ids[2], ids[0], ids[1]]);
    assert!(comparisons::get(&pool, "nope").await.unwrap().is_none());
    assert_eq!(comparisons::list(&pool, 10).await.unwrap(), vec![(slug, "BS sweep".to_string(), 3)]);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn an_unknown_run_is_named_and_nothing_is_stored(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let ids = runs::create(&mut tx, &[common::spec(&[1])]).await.unwrap();
    tx.commit().await.unwrap();
    let mut tx = pool.begin().await.unwrap();
    let new = NewComparison { title: "x".into(), run_ids: vec![ids[0], 999], view: serde_json::Value::Null };
    assert!(matches!(comparisons::create(&mut tx, &new).await, Err(DbError::RunNotFound(999))));
    drop(tx);
    assert!(comparisons::list(&pool, 10).await.unwrap().is_empty());
}

#[test]
fn slugs_are_base62_and_differ() {
    let a = comparisons::new_slug();
    let b = comparisons::new_slug();
    assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(a, b);
}
