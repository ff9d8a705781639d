//! Building blocks shared by pages.

pub mod annotations;
pub mod charts;
mod result_block;
pub mod run_charts;
pub mod run_manage;
mod runs_table;
pub mod server_svg;
pub mod spec_decode;
mod status_badge;
pub mod telemetry;

pub use annotations::AnnotationsPanel;
pub use result_block::ResultBlock;
pub use run_manage::RunManage;
pub use runs_table::RunsTable;
pub use server_svg::ServerSvg;
pub use spec_decode::SpecDecodePanel;
pub use status_badge::StatusBadge;
