//! latlab's charts: data in, SVG string out. Pure (no I/O, no fonts: plotters' SVG backend
//! writes `<text>` and the viewer's fonts draw it), so the server renders permalinks and
//! downloads with exactly the code the browser re-runs on interaction.
//!
//! Every chart adds an invisible hit area with a `<title>` per bar or point, so hovering
//! shows the value in any browser, with JavaScript on or off.
//!
//! The root `<svg>` has a `viewBox` beside its width and height: a page scales it to its
//! container (CSS `width: 100%`), a downloaded file keeps its own size. Layouts reserve
//! room for their text from `text_px`, so no label runs past the edge.

mod bars;
mod histogram;
mod lines;
pub mod ticks;
mod timeline;

pub use bars::{Bar, BarChart, bar_chart};
pub use histogram::{Bin, Histogram, bins, histogram};
pub use lines::{LineChart, Series, line_chart};
pub use timeline::{RateBin, Timeline, TimelineBar, timeline};

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

/// Estimated width in pixels of `s` drawn at plotters font size `size` (the SVG says
/// `size / 1.24` px). Per-glyph widths are DejaVu Sans' rounded up, the widest common
/// sans-serif, so the estimate errs wide for other fonts; glyphs outside ASCII count a
/// full em.
pub fn text_px(s: &str, size: f64) -> f64 {
    let em = size / 1.24;
    let w: f64 = s
        .chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | 'I' => 0.32,
            ' ' | '(' | ')' | '[' | ']' | 'f' | 't' | 'r' | '-' | '/' => 0.42,
            'm' | 'w' | 'M' | 'W' | '@' | '%' => 1.0,
            c if c.is_ascii_uppercase() => 0.78,
            c if c.is_ascii() => 0.66,
            _ => 1.0,
        })
        .sum();
    w * em
}

/// `s`, cut with "..." to at most `max_px` wide at font size `size`.
pub fn fit(s: &str, max_px: f64, size: f64) -> String {
    if text_px(s, size) <= max_px {
        return s.to_string();
    }
    let mut t: String = s.to_string();
    while !t.is_empty() && text_px(&format!("{t}..."), size) > max_px {
        t.pop();
    }
    format!("{}...", t.trim_end())
}

/// A chart with nothing to draw: its title and a sentence saying why, instead of bare axes.
pub fn message_chart(title: &str, message: &str, width: u32, height: u32) -> Result<String, ChartError> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let w = width as f64 - 24.0;
        let area = root.titled(&fit(title, w, 16.0), ("sans-serif", 16)).map_err(err)?;
        let style = ("sans-serif", 14)
            .into_font()
            .color(&RGBColor(90, 90, 90))
            .pos(Pos::new(HPos::Center, VPos::Center));
        let (aw, ah) = area.dim_in_pixel();
        area.draw_text(&fit(message, w, 14.0), &style, ((aw / 2) as i32, (ah / 2) as i32)).map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg.replacen("<svg ", "<svg class=\"chart-empty\" ", 1))
}

/// Whether `svg` has a `<text>` element reading exactly `s` (plotters puts the text on its
/// own line); for tests of chart content.
pub fn has_text(svg: &str, s: &str) -> bool {
    svg.contains(&format!(">\n{s}\n</text>"))
}

/// Every horizontal `<text>` of `svg` as (x, anchor, font size in plotters' units,
/// content with entities decoded), for tests that check text stays inside.
pub fn texts(svg: &str) -> Vec<(f64, String, f64, String)> {
    svg.split("<text ")
        .skip(1)
        .filter(|t| !t.split_once('>').is_some_and(|(attrs, _)| attrs.contains("transform=")))
        .filter_map(|t| {
            let (attrs, rest) = t.split_once('>')?;
            let attr = |name: &str| {
                format!(" {attrs}")
                    .split(&format!(" {name}=\""))
                    .nth(1)?
                    .split('"')
                    .next()
                    .map(str::to_string)
            };
            let content = rest.split("</text>").next()?.trim();
            let content = content
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&");
            let size = attr("font-size")?.parse::<f64>().ok()? * 1.24;
            Some((attr("x")?.parse().ok()?, attr("text-anchor").unwrap_or_default(), size, content))
        })
        .collect()
}

/// The width attribute of `svg`'s root.
pub fn svg_width(svg: &str) -> Option<f64> {
    svg.split_once("<svg")?.1.split(" width=\"").nth(1)?.split('"').next()?.parse().ok()
}

/// Texts of `svg` whose estimated extent leaves `0..width`, for tests.
pub fn texts_outside(svg: &str) -> Vec<String> {
    let width = svg_width(svg).unwrap_or(0.0);
    texts(svg)
        .into_iter()
        .filter(|(x, anchor, size, s)| {
            let w = text_px(s, *size);
            let (l, r) = match anchor.as_str() {
                "end" => (x - w, *x),
                "middle" => (x - w / 2.0, x + w / 2.0),
                _ => (*x, x + w),
            };
            l < 0.0 || r > width
        })
        .map(|t| t.3)
        .collect()
}
