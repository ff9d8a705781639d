//! Checks of single fields that several specs share: one-line text, paths, model sources,
//! token counts, API key variable names and base URLs.

use super::{ValidationErrors, limits};

/// A one-line text field: no control characters (line breaks included) and nothing
/// `text::forbidden_char` refuses.
pub(crate) fn check_text(e: &mut ValidationErrors, field: &str, s: &str, may_be_empty: bool) {
    if !may_be_empty && s.trim().is_empty() {
        e.push(field, "is required");
    } else if s.len() > limits::MAX_TEXT {
        e.push(field, format!("must be at most {} characters", limits::MAX_TEXT));
    } else if let Some(c) = crate::text::forbidden_char(s) {
        e.push(field, format!("must not contain {}", crate::text::describe(c)));
    } else if s.chars().any(char::is_control) {
        e.push(field, "must not contain control characters (line breaks or tabs)");
    }
}

/// Paths reach the worker's file system and, for launched engines, an argv: no control
/// characters, no shell metacharacters, nothing that could be read as a flag, and no `..`
/// or `~` (the worker reads files only under its configured roots, and a path must say
/// plainly where it points). Relative paths are relative to the worker's assets folder.
pub(super) fn check_path(e: &mut ValidationErrors, field: &str, p: &str) {
    if let Some(problem) = path_problem(p) {
        e.push(field, problem);
    }
}

/// What is wrong with `p` as a path a request may name, if anything.
pub fn path_problem(p: &str) -> Option<String> {
    if p.trim().is_empty() {
        Some("must not be empty".into())
    } else if p.len() > limits::MAX_TEXT {
        Some(format!("must be at most {} characters", limits::MAX_TEXT))
    } else if p.starts_with('-') {
        Some("must not start with '-'".into())
    } else if let Some(c) = crate::text::forbidden_char(p) {
        Some(format!("must not contain {}", crate::text::describe(c)))
    } else if let Some(c) = p.chars().find(|c| c.is_control() || "`$;|&<>\"'\\*?!{}".contains(*c)) {
        Some(format!("must not contain {c:?}"))
    } else if p.starts_with('~') {
        Some("must not start with '~' (name the folder itself)".into())
    } else if p.split('/').any(|part| part == "..") {
        Some("must not contain '..' (files are read only under the worker's configured folders)".into())
    } else {
        None
    }
}

pub(super) fn check_model_source(e: &mut ValidationErrors, field: &str, s: &str) {
    match s.strip_prefix("random:") {
        Some("") => e.push(field, "random: needs a preset name, e.g. random:tiny"),
        Some(preset)
            if !preset.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_') =>
        {
            e.push(field, "preset names use letters, digits, '-', '_' and '.'")
        }
        Some(_) => {}
        None => check_path(e, field, s),
    }
}

pub(super) fn check_tokens(e: &mut ValidationErrors, field: &str, n: u32) {
    if n == 0 || n > limits::MAX_TOKENS {
        e.push(field, format!("must be between 1 and {} tokens", limits::MAX_TOKENS));
    }
}

/// Prefix of the environment variables a worker's operator opts in as API keys that runs
/// may send to their targets. Nothing else in a worker's environment can be named: not
/// its API token, not `DATABASE_URL`, not whatever else the host happens to export.
pub const API_KEY_ENV_PREFIX: &str = "LATLAB_KEY_";

pub(super) fn check_env_name(e: &mut ValidationErrors, field: &str, name: &str) {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        e.push(field, "must be an environment variable name (letters, digits, '_'), not the key itself");
    } else if !name.starts_with(API_KEY_ENV_PREFIX) || name.len() == API_KEY_ENV_PREFIX.len() {
        e.push(
            field,
            format!("must name a key the worker's operator opted in: a variable whose name starts with {API_KEY_ENV_PREFIX} (e.g. {API_KEY_ENV_PREFIX}OPENAI)"),
        );
    }
}

pub(super) fn check_base_url(e: &mut ValidationErrors, field: &str, url: &str) {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    match rest {
        None => e.push(field, "must start with http:// or https://"),
        Some(r) if r.is_empty() || r.starts_with('/') => e.push(field, "must name a host"),
        Some(_) if url.len() > limits::MAX_TEXT => e.push(field, "is too long"),
        Some(r) if r.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            e.push(field, "must not contain spaces")
        }
        Some(r) if r.contains('@') => e.push(field, "must not carry credentials; use api_key_env"),
        Some(_) => {}
    }
}
