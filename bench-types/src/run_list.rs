//! Which runs the runs list shows: filters, sort and page, as one typed value that the page
//! (`/runs?...`), its links and the JSON API (`GET /api/runs?...`) share, so a list is a
//! permalink and reads the same with and without JavaScript.

use crate::status::RunStatus;
use crate::validate::ValidationErrors;
use serde::{Deserialize, Serialize};

/// Longest filter value, in characters.
pub const MAX_FILTER_CHARS: usize = 200;
/// Most runs one page may hold.
pub const MAX_PER_PAGE: u32 = 500;
pub const DEFAULT_PER_PAGE: u32 = 50;
/// Far beyond any real list; keeps OFFSET bounded.
pub const MAX_PAGE: u32 = 100_000;

/// A column the list sorts on: the run's own columns, or the copies of headline numbers
/// `run_results` keeps for this (runs without a result sort last either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    #[default]
    Created,
    Status,
    Engine,
    Model,
    Ttft,
    Tpot,
    Throughput,
    Completed,
    Failed,
    Duration,
    Accepted,
}

impl SortKey {
    pub const ALL: [SortKey; 11] = [
        SortKey::Created,
        SortKey::Status,
        SortKey::Engine,
        SortKey::Model,
        SortKey::Ttft,
        SortKey::Tpot,
        SortKey::Throughput,
        SortKey::Completed,
        SortKey::Failed,
        SortKey::Duration,
        SortKey::Accepted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::Created => "created",
            SortKey::Status => "status",
            SortKey::Engine => "engine",
            SortKey::Model => "model",
            SortKey::Ttft => "ttft",
            SortKey::Tpot => "tpot",
            SortKey::Throughput => "throughput",
            SortKey::Completed => "completed",
            SortKey::Failed => "failed",
            SortKey::Duration => "duration",
            SortKey::Accepted => "accepted",
        }
    }

    pub fn parse(s: &str) -> Option<SortKey> {
        SortKey::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The direction a first click sorts in: newest, fastest, most first.
    pub fn natural_dir(self) -> SortDir {
        match self {
            SortKey::Created | SortKey::Throughput | SortKey::Completed | SortKey::Accepted => SortDir::Desc,
            _ => SortDir::Asc,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortDir {
    Asc,
    Desc,
}

impl SortDir {
    pub fn as_str(self) -> &'static str {
        match self {
            SortDir::Asc => "asc",
            SortDir::Desc => "desc",
        }
    }
    pub fn flip(self) -> SortDir {
        match self {
            SortDir::Asc => SortDir::Desc,
            SortDir::Desc => SortDir::Asc,
        }
    }
}

/// Archived runs: hidden (the default), shown with the rest, or shown alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Archived {
    #[default]
    Hide,
    Include,
    Only,
}

impl Archived {
    pub fn as_str(self) -> &'static str {
        match self {
            Archived::Hide => "hide",
            Archived::Include => "include",
            Archived::Only => "only",
        }
    }
}

/// One view of the runs list. Text filters are trimmed and `None` when empty (a form
/// submitted with blank fields means "no filter").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunListQuery {
    /// Exact engine: `vllm`, `sglang`, `trtllm` (launched or imported), `native`, `external`.
    pub engine: Option<String>,
    /// Part of the model name, any case.
    pub model: Option<String>,
    /// Part of the hardware (imports say it; native runs say their device), any case.
    pub hardware: Option<String>,
    pub status: Option<RunStatus>,
    /// Exact tag (tags are stored lower case).
    pub tag: Option<String>,
    /// Free text: part of the label, target, model, note or a tag, or `#123` / `123` for a run id.
    pub q: Option<String>,
    pub archived: Archived,
    pub sort: SortKey,
    pub dir: SortDir,
    /// From 1.
    pub page: u32,
    pub per_page: u32,
    /// Only runs with a smaller id (the API's older `before=` paging).
    pub before: Option<i64>,
}

impl Default for RunListQuery {
    fn default() -> Self {
        RunListQuery {
            engine: None,
            model: None,
            hardware: None,
            status: None,
            tag: None,
            q: None,
            archived: Archived::Hide,
            sort: SortKey::Created,
            dir: SortDir::Desc,
            page: 1,
            per_page: DEFAULT_PER_PAGE,
            before: None,
        }
    }
}

fn text(e: &mut ValidationErrors, field: &str, v: &str) -> Option<String> {
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    if v.chars().count() > MAX_FILTER_CHARS {
        e.push(field, format!("must be at most {MAX_FILTER_CHARS} characters"));
    } else if v.chars().any(char::is_control) {
        e.push(field, "must not contain control characters");
    } else {
        crate::text::check_chars(e, field, v);
    }
    Some(v.to_string())
}

fn number<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    e: &mut ValidationErrors,
    field: &str,
    v: &str,
    min: T,
    max: T,
) -> Option<T> {
    match v.trim().parse::<T>() {
        Ok(n) if n >= min && n <= max => Some(n),
        _ => {
            e.push(field, format!("must be a whole number from {min} to {max}, not {v:?}"));
            None
        }
    }
}

impl RunListQuery {
    /// Reads a query string's pairs. `strict` (the API) refuses parameters it does not
    /// know; the page ignores them (it carries its own messages in the URL).
    pub fn parse(pairs: &[(String, String)], strict: bool) -> Result<RunListQuery, ValidationErrors> {
        let mut q = RunListQuery::default();
        let mut e = ValidationErrors::default();
        let mut dir = None;
        for (k, v) in pairs {
            match k.as_str() {
                "engine" => q.engine = text(&mut e, k, v).map(|s| s.to_lowercase()),
                "model" => q.model = text(&mut e, k, v),
                "hardware" => q.hardware = text(&mut e, k, v),
                "tag" => q.tag = text(&mut e, k, v).map(|s| s.to_lowercase()),
                "q" => q.q = text(&mut e, k, v),
                "status" if v.trim().is_empty() => {}
                "status" => match v.trim().parse::<RunStatus>() {
                    Ok(s) => q.status = Some(s),
                    Err(_) => {
                        let all: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
                        e.push(k, format!("unknown status {v:?}; one of {}", all.join(", ")));
                    }
                },
                "archived" => match v.trim() {
                    "" | "hide" => q.archived = Archived::Hide,
                    "include" => q.archived = Archived::Include,
                    "only" => q.archived = Archived::Only,
                    _ => e.push(k, format!("{v:?} is not hide, include or only")),
                },
                "sort" if v.trim().is_empty() => {}
                "sort" => match SortKey::parse(v.trim()) {
                    Some(s) => q.sort = s,
                    None => {
                        let all: Vec<&str> = SortKey::ALL.iter().map(|s| s.as_str()).collect();
                        e.push(k, format!("cannot sort by {v:?}; sort by one of {}", all.join(", ")));
                    }
                },
                "dir" => match v.trim() {
                    "" => {}
                    "asc" => dir = Some(SortDir::Asc),
                    "desc" => dir = Some(SortDir::Desc),
                    _ => e.push(k, format!("{v:?} is not asc or desc")),
                },
                "page" => q.page = number(&mut e, k, v, 1, MAX_PAGE).unwrap_or(1),
                "per_page" | "limit" => {
                    q.per_page = number(&mut e, k, v, 1, MAX_PER_PAGE).unwrap_or(DEFAULT_PER_PAGE)
                }
                "before" => q.before = number(&mut e, k, v, 1, i64::MAX),
                _ if strict => e.push(k, "unknown parameter"),
                _ => {}
            }
        }
        q.dir = dir.unwrap_or(q.sort.natural_dir());
        e.into_result().map(|_| q)
    }

    /// The query string of this view without its defaults (`engine=vllm&sort=ttft`), empty
    /// for the default view.
    pub fn to_query(&self) -> String {
        let mut p: Vec<(&str, String)> = Vec::new();
        let mut put = |k, v: &Option<String>| {
            if let Some(v) = v {
                p.push((k, v.clone()));
            }
        };
        put("engine", &self.engine);
        put("model", &self.model);
        put("hardware", &self.hardware);
        put("tag", &self.tag);
        put("q", &self.q);
        if let Some(s) = self.status {
            p.push(("status", s.as_str().into()));
        }
        if self.archived != Archived::Hide {
            p.push(("archived", self.archived.as_str().into()));
        }
        if self.sort != SortKey::Created {
            p.push(("sort", self.sort.as_str().into()));
        }
        if self.dir != self.sort.natural_dir() {
            p.push(("dir", self.dir.as_str().into()));
        }
        if self.per_page != DEFAULT_PER_PAGE {
            p.push(("per_page", self.per_page.to_string()));
        }
        if let Some(b) = self.before {
            p.push(("before", b.to_string()));
        }
        if self.page != 1 {
            p.push(("page", self.page.to_string()));
        }
        p.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect::<Vec<_>>().join("&")
    }

    /// `/runs` with this view's query.
    pub fn href(&self) -> String {
        let q = self.to_query();
        if q.is_empty() { "/runs".into() } else { format!("/runs?{q}") }
    }

    /// This view on another page.
    pub fn with_page(&self, page: u32) -> RunListQuery {
        RunListQuery { page, ..self.clone() }
    }

    /// This view sorted by `key`: its natural direction first, the other on a second click.
    /// Back to page 1, since the rows change.
    pub fn sorted_by(&self, key: SortKey) -> RunListQuery {
        let dir = if self.sort == key { self.dir.flip() } else { key.natural_dir() };
        RunListQuery { sort: key, dir, page: 1, ..self.clone() }
    }

    /// Rows to skip.
    pub fn offset(&self) -> i64 {
        (i64::from(self.page) - 1) * i64::from(self.per_page)
    }
}

/// One page of the list and how many runs match its filters in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunListPage {
    pub runs: Vec<crate::api::RunView>,
    pub total: i64,
}

impl RunListPage {
    /// Pages the matching runs fill (at least 1).
    pub fn pages(&self, q: &RunListQuery) -> u32 {
        let per = i64::from(q.per_page.max(1));
        ((self.total + per - 1) / per).clamp(1, i64::from(MAX_PAGE)) as u32
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(s: &[(&str, &str)]) -> Vec<(String, String)> {
        s.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_view_round_trips_through_its_query_string() {
        let q = RunListQuery::parse(
            &pairs(&[
                ("engine", "VLLM"),
                ("model", " qwen3 "),
                ("tag", "FP8"),
                ("q", "a&b c"),
                ("status", "succeeded"),
                ("archived", "include"),
                ("sort", "ttft"),
                ("dir", "desc"),
                ("page", "3"),
                ("per_page", "20"),
                ("hardware", ""),
            ]),
            true,
        )
        .unwrap();
        assert_eq!(q.engine.as_deref(), Some("vllm"));
        assert_eq!(q.model.as_deref(), Some("qwen3"));
        assert_eq!(q.tag.as_deref(), Some("fp8"));
        assert_eq!(q.hardware, None);
        assert_eq!(
            (q.sort, q.dir, q.page, q.per_page, q.offset()),
            (SortKey::Ttft, SortDir::Desc, 3, 20, 40)
        );
        let s = q.to_query();
        assert!(s.contains("q=a%26b%20c"), "{s}");
        let back: Vec<(String, String)> = s
            .split('&')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                let v = v.replace("%26", "&").replace("%20", " ");
                (k.to_string(), v)
            })
            .collect();
        assert_eq!(RunListQuery::parse(&back, true).unwrap(), q);
        assert_eq!(RunListQuery::default().href(), "/runs");
        assert_eq!(q.sorted_by(SortKey::Ttft).dir, SortDir::Asc);
        assert_eq!(q.sorted_by(SortKey::Throughput).page, 1, "a new sort starts at page 1");
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = RunListQuery::parse(&pairs(&[("sort", "colour"), ("page", "0"), ("status", "done")]), true)
            .unwrap_err();
        let fields: Vec<&str> = e.0.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["sort", "page", "status"]);
        assert!(e.for_field("sort").unwrap().contains("ttft"), "{e}");
        assert!(RunListQuery::parse(&pairs(&[("colour", "red")]), true).is_err());
        assert!(RunListQuery::parse(&pairs(&[("colour", "red")]), false).is_ok());
        assert!(RunListQuery::parse(&pairs(&[("q", "x\u{0}")]), true).is_err());
    }
}
