//! The launched engines' tests, by what they check: the seed study's commands, typed
//! options rendered as each engine's flags, bad options refused by name. Fixtures shared
//! by all three are here.

mod engine_options;
mod refusals;
mod seed_commands;

use super::*;

pub(super) fn preset(name: &str) -> LaunchedTarget {
    seed_presets().into_iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no preset {name}")).1
}

pub(super) fn errors(t: &LaunchedTarget) -> ValidationErrors {
    let mut e = ValidationErrors::default();
    t.validate_into(&mut e);
    e
}

pub(super) fn message(t: &LaunchedTarget, field: &str) -> String {
    let e = errors(t);
    e.for_field(field).unwrap_or_else(|| panic!("no error for {field}: {e}")).to_string()
}
