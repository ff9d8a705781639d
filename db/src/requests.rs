//! The `request_records` table: every measured request of a run.

use crate::DbError;
use bench_types::RequestRecord;
use sqlx::{PgPool, Postgres, Transaction};

/// Postgres array literal for a jagged list: UNNEST cannot carry arrays of arrays of
/// different lengths, so each row's chunk offsets travel as text and are cast back in SQL.
/// Rust's `Display` for f64 prints the shortest string that parses back to the same value.
fn array_literal<T: std::fmt::Display>(xs: &[T]) -> String {
    let parts: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    format!("{{{}}}", parts.join(","))
}

/// Inserts all records with one statement per 5,000 rows (bounded message size).
pub async fn insert_all(
    tx: &mut Transaction<'_, Postgres>,
    run_id: i64,
    records: &[RequestRecord],
) -> Result<(), DbError> {
    for chunk in records.chunks(5_000) {
        let idx: Vec<i32> = chunk.iter().map(|r| r.index as i32).collect();
        let offset: Vec<f64> = chunk.iter().map(|r| r.dispatch_offset_s).collect();
        let success: Vec<bool> = chunk.iter().map(|r| r.success).collect();
        let error: Vec<Option<String>> = chunk.iter().map(|r| r.error.clone()).collect();
        let input: Vec<i32> = chunk.iter().map(|r| r.input_tokens as i32).collect();
        let output: Vec<i32> = chunk.iter().map(|r| r.output_tokens as i32).collect();
        let ttft: Vec<Option<f64>> = chunk.iter().map(|r| r.ttft_s).collect();
        let e2el: Vec<Option<f64>> = chunk.iter().map(|r| r.e2el_s).collect();
        let chunks: Vec<String> = chunk.iter().map(|r| array_literal(&r.chunk_offsets_s)).collect();
        let tokens: Vec<Option<String>> =
            chunk.iter().map(|r| r.chunk_tokens.as_deref().map(array_literal)).collect();
        sqlx::query!(
            r#"INSERT INTO request_records (run_id, idx, dispatch_offset_s, success, error, input_tokens,
                                            output_tokens, ttft_s, e2el_s, chunk_offsets_s, chunk_tokens)
               SELECT $1, t.idx, t.off, t.ok, t.err, t.inp, t.outp, t.ttft, t.e2el, t.chunks::FLOAT8[], t.toks::INT4[]
               FROM UNNEST($2::INT4[], $3::FLOAT8[], $4::BOOL[], $5::TEXT[], $6::INT4[], $7::INT4[],
                           $8::FLOAT8[], $9::FLOAT8[], $10::TEXT[], $11::TEXT[])
                    AS t(idx, off, ok, err, inp, outp, ttft, e2el, chunks, toks)"#,
            run_id,
            &idx,
            &offset,
            &success,
            &error as &[Option<String>],
            &input,
            &output,
            &ttft as &[Option<f64>],
            &e2el as &[Option<f64>],
            &chunks,
            &tokens as &[Option<String>],
        )
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Every record of a run, in dispatch order.
pub async fn list(pool: &PgPool, run_id: i64) -> Result<Vec<RequestRecord>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT idx, dispatch_offset_s, success, error, input_tokens, output_tokens, ttft_s, e2el_s,
                  chunk_offsets_s, chunk_tokens
           FROM request_records WHERE run_id = $1 ORDER BY dispatch_offset_s, idx"#,
        run_id
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| RequestRecord {
            index: r.idx as u32,
            dispatch_offset_s: r.dispatch_offset_s,
            success: r.success,
            error: r.error,
            input_tokens: r.input_tokens as u32,
            output_tokens: r.output_tokens as u32,
            ttft_s: r.ttft_s,
            e2el_s: r.e2el_s,
            chunk_offsets_s: r.chunk_offsets_s,
            chunk_tokens: r.chunk_tokens.map(|v| v.into_iter().map(|x| x as u32).collect()),
        })
        .collect())
}
