//! Comparisons: ordered runs under a permalink.

mod common;

use bench_types::NewComparison;
use db::{DbError, PgPool, comparisons, runs};

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_comparison_keeps_its_runs_in_order(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let ids =
        runs::create(&mut tx, &[common::spec(&[1]), common::spec(&[2]), common::spec(&[4])]).await.unwrap();
    let new = NewComparison {
        title: "  BS sweep ".into(),
        run_ids: vec![ids[2], ids[0], ids[1]],
        view: serde_json::json!({"metric": "tpot"}),
    };
    let slug = comparisons::create(&mut tx, &new).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(slug.len(), 10);
    let c = comparisons::get(&pool, &slug).await.unwrap().unwrap();
    assert_eq!(c.title, "BS sweep");
    assert_eq!(c.view["metric"], "tpot");
    assert_eq!(c.runs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![ids[2], ids[0], ids[1]]);
    assert!(comparisons::get(&pool, "nope").await.unwrap().is_none());
    let listed = comparisons::list(&pool, 10, None, None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].slug.as_str(), listed[0].title.as_str(), listed[0].runs, listed[0].live),
        (slug.as_str(), "BS sweep", 3, 3)
    );
    assert_eq!(listed[0].engines.len(), 1, "three runs of one target: {:?}", listed[0].engines);
    assert!(comparisons::list(&pool, 10, Some(&slug), None).await.unwrap().is_empty(), "nothing older");
    assert_eq!(comparisons::list(&pool, 10, None, Some(&slug)).await.unwrap().len(), 1);
    assert!(comparisons::list(&pool, 10, None, Some("nope")).await.unwrap().is_empty());
    let of = comparisons::of_run(&pool, ids[1]).await.unwrap();
    assert_eq!(of.iter().map(|c| c.slug.as_str()).collect::<Vec<_>>(), vec![slug.as_str()]);
    assert!(comparisons::of_run(&pool, 999_999).await.unwrap().is_empty());
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
    assert!(comparisons::list(&pool, 10, None, None).await.unwrap().is_empty());
}

#[test]
fn slugs_are_base62_and_differ() {
    let a = comparisons::new_slug();
    let b = comparisons::new_slug();
    assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(a, b);
}
