//! Reading the form's text fields: numbers (required or optional) whose errors land under
//! the spec's field paths, checkboxes and optional text.

use bench_types::ValidationErrors;

/// Collects parse errors under spec paths; a field that failed to parse is not also
/// reported by `validate`.
pub(super) struct Parser {
    pub(super) errors: ValidationErrors,
}

impl Parser {
    pub(super) fn num<T: std::str::FromStr>(&mut self, field: &str, raw: &str, what: &str, fallback: T) -> T {
        match raw.trim().parse::<T>() {
            Ok(v) => v,
            Err(_) if raw.trim().is_empty() => {
                self.errors.push(field, "is required");
                fallback
            }
            Err(_) => {
                self.errors.push(field, not_a(raw.trim(), what));
                fallback
            }
        }
    }
    pub(super) fn opt_num<T: std::str::FromStr>(&mut self, field: &str, raw: &str, what: &str) -> Option<T> {
        if raw.trim().is_empty() {
            return None;
        }
        match raw.trim().parse::<T>() {
            Ok(v) => Some(v),
            Err(_) => {
                self.errors.push(field, not_a(raw.trim(), what));
                None
            }
        }
    }
}

/// Why `raw` is not `what`: "-5" is a whole number, just a negative one; "99999999999"
/// is one too large for the field; "abc" is no number at all.
pub(super) fn not_a(raw: &str, what: &str) -> String {
    match raw.parse::<i128>() {
        Ok(v) if v < 0 && what == WHOLE => format!("{raw} is negative; use a positive whole number"),
        Ok(_) if what == WHOLE => format!("{raw} is too large"),
        _ => format!("{raw:?} is not {what}"),
    }
}

pub(super) const WHOLE: &str = "a whole number";
pub(super) const NUMBER: &str = "a number";

/// A ticked checkbox posts "on" (the browser) or "true" (a client sending JSON).
pub(super) fn ticked(v: &Option<String>) -> bool {
    v.as_deref().is_some_and(|v| v == "on" || v == "true")
}

pub(super) fn opt_text(s: &str) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}
