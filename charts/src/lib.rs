//! latlab's charts: data in, SVG string out. Pure (no I/O, no fonts: plotters' SVG backend
//! writes `<text>` and the viewer's fonts draw it), so the server renders permalinks and
//! downloads with exactly the code the browser re-runs on interaction.
//!
//! Every chart adds an invisible hit area with a `<title>` per bar or point, so hovering
//! shows the value in any browser, with JavaScript on or off.

mod bars;
mod lines;

pub use bars::{bar_chart, Bar, BarChart};
pub use lines::{line_chart, LineChart, Series};

/// Default size of every chart, in CSS pixels.
pub const WIDTH: u32 = 860;

/// Series colours (Tableau 10: distinguishable, print well).
pub const PALETTE: [(u8, u8, u8); 10] = [
    (78, 121, 167),
    (242, 142, 43),
    (225, 87, 89),
    (118, 183, 178),
    (89, 161, 79),
    (237, 201, 72),
    (176, 122, 161),
    (255, 157, 167),
    (156, 117, 95),
    (186, 176, 172),
];

/// What went wrong drawing a chart (plotters' backend error, as text).
#[derive(Debug, Clone, PartialEq)]
pub struct ChartError(pub String);

impl std::fmt::Display for ChartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "chart: {}", self.0)
    }
}

impl std::error::Error for ChartError {}

pub(crate) fn err(e: impl std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

/// Text for XML attribute or element content.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Hit areas (rectangles or circles with a `<title>`) appended just before `</svg>`.
pub(crate) fn with_overlay(svg: String, overlay: &str, class: &str) -> String {
    let Some(end) = svg.rfind("</svg>") else { return svg };
    let mut out = String::with_capacity(svg.len() + overlay.len() + 64);
    out.push_str(&svg[..end]);
    out.push_str(&format!("<g class=\"{class}\">{overlay}</g>\n"));
    out.push_str(&svg[end..]);
    out
}

/// "12.3", "0.0123", "12300": enough digits to read, no more.
pub fn fmt_num(v: f64) -> String {
    let s = fmt_digits(v);
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

fn fmt_digits(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// Whether `svg` has a `<text>` element reading exactly `s` (plotters puts the text on its
/// own line); for tests of chart content.
pub fn has_text(svg: &str, s: &str) -> bool {
    svg.contains(&format!(">\n{s}\n</text>"))
}
