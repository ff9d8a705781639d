//! The comparison page's charts: view state in the URL, data from the comparison, SVG from
//! the `charts` crate.

pub mod build;
pub mod cdf;
pub mod config_diff;
pub mod controls;
pub mod facts;
pub mod view_state;

pub use build::render;
pub use view_state::{ChartKind, ChartView, Stat};
pub use config_diff::ConfigDiff;
pub use controls::{view_url, ChartControls};
