//! The runs list: filters, sort and page (`bench_types::RunListQuery`) as one query, plus
//! the count of every matching run. Built at run time (which filters apply varies), so it
//! is not checked against `.sqlx/`; every value is bound, and only fixed column names from
//! `sort_column` are written into the SQL.

use crate::DbError;
use crate::runs::RunRow;
use bench_types::RunListQuery;
use bench_types::run_list::{Archived, RunListPage, SortDir, SortKey};
use sqlx::{PgPool, Postgres, QueryBuilder};

/// The SQL expression a key sorts on (a fixed string: never from the request).
fn sort_column(key: SortKey) -> &'static str {
    match key {
        SortKey::Created => "r.id",
        SortKey::Status => "r.status",
        SortKey::Engine => "r.engine",
        SortKey::Model => "r.model",
        SortKey::Ttft => "res.mean_ttft_ms",
        SortKey::Tpot => "res.mean_tpot_ms",
        SortKey::Throughput => "res.output_throughput",
        SortKey::Completed => "res.completed",
        SortKey::Failed => "res.failed",
        SortKey::Duration => "res.duration_s",
        SortKey::Accepted => "res.mean_accepted_length",
    }
}

/// `%text%` for ILIKE, with the pattern characters in `text` matched literally.
fn contains_pattern(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

/// A free-text query that names a run: `#123` or `123`.
fn run_id_of(q: &str) -> Option<i64> {
    q.strip_prefix('#').unwrap_or(q).parse::<i64>().ok().filter(|id| *id > 0)
}

fn push_filters(b: &mut QueryBuilder<'_, Postgres>, q: &RunListQuery) {
    b.push(" WHERE TRUE");
    match q.archived {
        Archived::Hide => b.push(" AND r.archived_at IS NULL"),
        Archived::Only => b.push(" AND r.archived_at IS NOT NULL"),
        Archived::Include => b,
    };
    if let Some(engine) = &q.engine {
        b.push(" AND r.engine = ").push_bind(engine.clone());
    }
    if let Some(model) = &q.model {
        b.push(" AND r.model ILIKE ").push_bind(contains_pattern(model));
    }
    if let Some(hw) = &q.hardware {
        b.push(" AND r.hardware ILIKE ").push_bind(contains_pattern(hw));
    }
    if let Some(status) = q.status {
        b.push(" AND r.status = ").push_bind(status.as_str());
    }
    if let Some(tag) = &q.tag {
        // `@>` so that the GIN index on tags serves it.
        b.push(" AND r.tags @> ARRAY[").push_bind(tag.clone()).push("]::TEXT[]");
    }
    if let Some(text) = &q.q {
        let p = contains_pattern(text);
        b.push(" AND (");
        if let Some(id) = run_id_of(text) {
            b.push("r.id = ").push_bind(id).push(" OR ");
        }
        b.push("r.label ILIKE ").push_bind(p.clone());
        b.push(" OR r.target_description ILIKE ").push_bind(p.clone());
        b.push(" OR r.model ILIKE ").push_bind(p.clone());
        b.push(" OR r.note ILIKE ").push_bind(p.clone());
        b.push(" OR array_to_string(r.tags, ' ') ILIKE ").push_bind(p);
        b.push(")");
    }
    if let Some(before) = q.before {
        b.push(" AND r.id < ").push_bind(before);
    }
}

/// The page `q` asks for, and the number of runs matching its filters.
pub async fn list(pool: &PgPool, q: &RunListQuery) -> Result<RunListPage, DbError> {
    let mut count = QueryBuilder::<Postgres>::new("SELECT COUNT(*) FROM runs r");
    push_filters(&mut count, q);
    let total: i64 = count.build_query_scalar().fetch_one(pool).await?;

    let mut b = QueryBuilder::<Postgres>::new(
        "SELECT r.id, r.spec, r.status, r.target_description, r.created_at, r.started_at, r.finished_at,
                r.error, res.summary, r.progress, r.cancel_requested, res.speculative,
                r.tags, r.note, r.archived_at
         FROM runs r LEFT JOIN run_results res ON res.run_id = r.id",
    );
    push_filters(&mut b, q);
    let dir = match q.dir {
        SortDir::Asc => "ASC",
        SortDir::Desc => "DESC",
    };
    b.push(" ORDER BY ").push(sort_column(q.sort)).push(" ").push(dir);
    if q.sort != SortKey::Created {
        // Runs without a result (or a value) last in either direction; ties newest first,
        // so pages never overlap.
        b.push(" NULLS LAST, r.id DESC");
    }
    b.push(" LIMIT ").push_bind(i64::from(q.per_page)).push(" OFFSET ").push_bind(q.offset());
    let rows: Vec<RunRow> = b.build_query_as().fetch_all(pool).await?;
    let runs = rows.into_iter().map(RunRow::into_view).collect::<Result<_, _>>()?;
    Ok(RunListPage { runs, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_their_text_literally() {
        assert_eq!(contains_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
        assert_eq!(run_id_of("#12"), Some(12));
        assert_eq!(run_id_of("12"), Some(12));
        assert_eq!(run_id_of("qwen"), None);
        assert_eq!(run_id_of("-3"), None);
    }

    #[test]
    fn every_filter_is_bound_and_never_written_into_the_sql() {
        let q = RunListQuery {
            engine: Some("x'; DROP TABLE runs; --".into()),
            tag: Some("t".into()),
            q: Some("#5".into()),
            ..Default::default()
        };
        let mut b = QueryBuilder::<Postgres>::new("SELECT 1 FROM runs r");
        push_filters(&mut b, &q);
        let sql = b.sql();
        assert!(!sql.contains("DROP"), "{sql}");
        assert!(
            sql.contains("r.engine = $1") && sql.contains("r.tags @> ARRAY[$2]") && sql.contains("r.id = $3")
        );
    }
}
