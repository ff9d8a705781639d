//! The run page's analysis of its per-request records: latency distributions (a table,
//! and a histogram or CDF per metric) and the request timeline, the view held in the URL.

pub mod distributions;
pub mod render;
mod section;
pub mod timeline;
pub mod view;

pub use distributions::{DistRow, distribution_rows};
pub use render::render;
pub use section::RunCharts;
pub use view::{Dist, RunChart, RunChartView};
