//! Building blocks shared by pages.

pub mod charts;
mod result_block;
pub mod run_charts;
mod runs_table;
pub mod spec_decode;
mod status_badge;
pub mod telemetry;

pub use result_block::ResultBlock;
pub use runs_table::RunsTable;
pub use spec_decode::SpecDecodePanel;
pub use status_badge::StatusBadge;
