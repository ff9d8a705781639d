//! How a run ends, decided from what the bench returned: a run in which every request
//! failed is `failed` (a dead target is not a success), one with some failed requests says
//! how many, and a run stopped partway keeps the requests that finished.

use bench::BenchError;
use bench_types::{BenchReport, RunStatus};
use db::results::RunEnd;

/// Why `run_target` produced no complete report: the message the run page shows, and the
/// requests that finished before it stopped, if any.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub partial: Option<Box<BenchReport>>,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure { message, partial: None }
    }
}

impl From<BenchError> for Failure {
    fn from(e: BenchError) -> Self {
        let message = e.to_string();
        match e {
            BenchError::CancelledPartway(report) => Failure { message, partial: Some(report) },
            _ => Failure { message, partial: None },
        }
    }
}

/// The distinct errors of the first failed requests, for a message.
fn first_errors(report: &BenchReport, n: usize) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for r in report.requests.iter().filter(|r| !r.success) {
        let e = r.error.as_deref().unwrap_or("no error message");
        if !seen.contains(&e) {
            seen.push(e);
        }
        if seen.len() == n {
            break;
        }
    }
    seen.iter().map(|e| e.chars().take(300).collect::<String>()).collect::<Vec<_>>().join(" | ")
}

/// How a complete report ends its run.
pub fn end_of(report: &BenchReport) -> RunEnd {
    let s = &report.summary;
    let total = s.completed + s.failed;
    if s.failed > 0 && s.completed == 0 {
        return RunEnd {
            status: RunStatus::Failed,
            note: Some(format!(
                "every request failed ({} of {total}); first errors: {}",
                s.failed,
                first_errors(report, 3)
            )),
        };
    }
    let note = (s.failed > 0).then(|| {
        format!("{} of {total} requests failed; first errors: {}", s.failed, first_errors(report, 3))
    });
    RunEnd { status: RunStatus::Succeeded, note }
}

/// How a run stopped partway (cancel, time limit, shutdown) ends, keeping `partial`.
pub fn end_partway(status: RunStatus, why: &str, partial: &BenchReport) -> RunEnd {
    let n = partial.requests.len();
    RunEnd {
        status,
        note: Some(format!("{why}; partial: the {n} requests that finished before it stopped are kept")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_types::RequestRecord;

    fn report(errors: &[Option<&str>]) -> BenchReport {
        let requests: Vec<RequestRecord> = errors
            .iter()
            .enumerate()
            .map(|(i, e)| RequestRecord {
                index: i as u32,
                dispatch_offset_s: 0.0,
                success: e.is_none(),
                error: e.map(str::to_string),
                input_tokens: 1,
                output_tokens: 1,
                ttft_s: None,
                e2el_s: None,
                chunk_offsets_s: vec![],
                chunk_tokens: None,
            })
            .collect();
        let mut summary = bench_types::Summary::default();
        summary.completed = errors.iter().filter(|e| e.is_none()).count() as u32;
        summary.failed = errors.len() as u32 - summary.completed;
        let spec: bench_types::RunSpec = serde_json::from_value(serde_json::json!({
            "target": {"kind": "external", "base_url": "http://127.0.0.1:9"}, "model": "m",
            "dataset": {"kind": "random", "input_len": 1, "output_len": 1}, "num_prompts": 3, "load": {}
        }))
        .unwrap();
        BenchReport {
            spec,
            target_info: Default::default(),
            started_at: chrono::Utc::now(),
            summary,
            requests,
            notes: vec![],
            speculative: None,
        }
    }

    #[test]
    fn a_dead_target_fails_the_run_and_names_its_errors() {
        let refused = Some("Connection refused (os error 111)");
        let end = end_of(&report(&[refused, refused, Some("timeout")]));
        assert_eq!(end.status, RunStatus::Failed);
        assert_eq!(
            end.note.unwrap(),
            "every request failed (3 of 3); first errors: Connection refused (os error 111) | timeout"
        );
    }

    #[test]
    fn some_failures_are_counted_and_a_clean_run_has_no_note() {
        let end = end_of(&report(&[None, Some("HTTP 500"), None]));
        assert_eq!(end.status, RunStatus::Succeeded);
        assert_eq!(end.note.unwrap(), "1 of 3 requests failed; first errors: HTTP 500");
        assert_eq!(end_of(&report(&[None, None])).note, None);
        let p = end_partway(RunStatus::Cancelled, "cancelled on request", &report(&[None]));
        assert_eq!(
            p.note.unwrap(),
            "cancelled on request; partial: the 1 requests that finished before it stopped are kept"
        );
    }
}
