//! The comparison page's charts: view state in the URL, data from the comparison, SVG from
//! the `charts` crate.

pub mod build;
pub mod cdf;
#[cfg(test)]
mod chart_tests;
pub mod config_diff;
pub mod controls;
pub mod curve;
pub mod facts;
pub mod ladder;
#[cfg(test)]
mod seed_fixture;
pub mod view_state;

pub use build::render;
pub use config_diff::ConfigDiff;
pub use controls::{ChartControls, view_url};
pub use ladder::LadderTable;
pub use view_state::{ChartKind, ChartView, CurveX, Stat};
