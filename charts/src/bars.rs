//! Horizontal bars, one per run (or per ladder step): long run labels read left of the
//! bars, the value and an optional note ("+25.8%", "baseline") right of them. A run the
//! source has no number for shows "missing" instead of a zero-length bar.

use crate::{err, escape, fmt_num, with_overlay, ChartError, PALETTE, WIDTH};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    /// `None`: the run has no such number (drawn as "missing", never as 0).
    pub value: Option<f64>,
    /// Shown on hover.
    pub tooltip: String,
    /// Drawn after the value, e.g. "+4.9% vs prev" or "baseline".
    pub note: Option<String>,
    /// The baseline bar, drawn in the second colour.
    pub highlight: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    /// Value axis description, e.g. "TTFT p99 (ms)".
    pub axis: String,
    pub bars: Vec<Bar>,
    /// log10 value axis (every value must be > 0 to be drawn).
    pub log: bool,
}

fn usable(v: Option<f64>, log: bool) -> Option<f64> {
    v.filter(|v| v.is_finite() && (*v > 0.0 || (!log && *v >= 0.0)))
}

/// Renders `c` to an SVG document.
pub fn bar_chart(c: &BarChart) -> Result<String, ChartError> {
    let n = c.bars.len().max(1);
    let height = (90 + 26 * n) as u32;
    let values: Vec<f64> = c.bars.iter().filter_map(|b| usable(b.value, c.log)).collect();
    let max = values.iter().copied().fold(0.0_f64, f64::max);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    // Room left of the plot for the longest label, right of the bars for the longest
    // value + note (sans-serif 12px averages under 7px a character).
    let longest = c.bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(4);
    let label_area = (12 + 7 * longest).clamp(60, 640) as u32;
    let width = WIDTH.max(label_area + 560);
    let note_px = c.bars.iter().map(|b| 10 + 7 * (8 + b.note.as_ref().map_or(0, |n| n.chars().count()))).max().unwrap_or(60) as f64;
    let plot_px = (width - label_area - 40) as f64;
    let room = (plot_px / (plot_px - note_px).max(plot_px * 0.3)).max(1.1);
    let (lo, hi) = if c.log {
        let (a, b) = if values.is_empty() { (0.0, 1.0) } else { (min.log10().floor(), max.log10().ceil()) };
        let b = if b > a { b } else { a + 1.0 };
        (a, a + (b - a) * room)
    } else {
        (0.0, if max > 0.0 { max * room } else { 1.0 })
    };
    let to_x = |v: f64| if c.log { v.log10() } else { v };
    // Top bar first: plotters counts y upwards, so bar i sits in segment n-1-i.
    let labels: Vec<String> = c.bars.iter().rev().map(|b| b.label.clone()).collect();
    let y_fmt = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(k) => labels.get(*k).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    let x_fmt = |v: &f64| if c.log { fmt_num(10f64.powf(*v)) } else { fmt_num(*v) };
    let mut svg = String::new();
    let mut hits = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(label_area)
            .build_cartesian_2d(lo..hi, (0..n).into_segmented())
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&y_fmt)
            .x_label_formatter(&x_fmt)
            .x_desc(c.axis.as_str())
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        for (i, b) in c.bars.iter().enumerate() {
            let k = n - 1 - i;
            let Some(v) = usable(b.value, c.log) else {
                chart
                    .draw_series(std::iter::once(Text::new("missing", (lo, SegmentValue::CenterOf(k)), ("sans-serif", 12).into_font().color(&RGBColor(120, 120, 120)))))
                    .map_err(err)?;
                continue;
            };
            let (r, g, bl) = if b.highlight { PALETTE[1] } else { PALETTE[0] };
            let x1 = to_x(v).max(lo);
            let mut rect = Rectangle::new([(lo, SegmentValue::Exact(k)), (x1, SegmentValue::Exact(k + 1))], RGBColor(r, g, bl).filled());
            rect.set_margin(4, 4, 0, 0);
            chart.draw_series(std::iter::once(rect)).map_err(err)?;
            let text = match &b.note {
                Some(note) => format!(" {} {note}", fmt_num(v)),
                None => format!(" {}", fmt_num(v)),
            };
            chart.draw_series(std::iter::once(Text::new(text, (x1, SegmentValue::CenterOf(k)), ("sans-serif", 12)))).map_err(err)?;
            let (x0p, y0p) = chart.backend_coord(&(lo, SegmentValue::Exact(k)));
            let (x1p, y1p) = chart.backend_coord(&(x1, SegmentValue::Exact(k + 1)));
            hits.push_str(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"transparent\" data-label=\"{}\" data-value=\"{}\"><title>{}</title></rect>",
                x0p.min(x1p),
                y0p.min(y1p),
                (x1p - x0p).abs().max(2),
                (y1p - y0p).abs(),
                escape(&b.label),
                v,
                escape(&b.tooltip)
            ));
        }
        root.present().map_err(err)?;
    }
    Ok(with_overlay(svg, &hits, "hits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, v: Option<f64>) -> Bar {
        Bar { label: label.into(), value: v, tooltip: format!("{label}: {v:?} ms"), note: None, highlight: false }
    }

    fn chart(log: bool) -> BarChart {
        BarChart {
            title: "TTFT p99 (ms)".into(),
            axis: "TTFT p99 (ms), lower is better".into(),
            bars: vec![bar("vLLM", Some(98.59)), bar("SGLang <fast>", Some(43.35)), bar("imported", None)],
            log,
        }
    }

    /// Snapshot of what matters: one hit area per drawn bar with its value, the run labels
    /// on the axis (escaped), the axis description and title, "missing" for no number.
    #[test]
    fn bars_have_labels_values_axis_and_hover() {
        let svg = bar_chart(&chart(false)).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(crate::has_text(&svg, "TTFT p99 (ms)"));
        assert!(svg.contains("TTFT p99 (ms), lower is better"));
        assert!(crate::has_text(&svg, "vLLM") && crate::has_text(&svg, "SGLang &lt;fast&gt;"));
        assert_eq!(svg.matches("<title>").count(), 2);
        assert!(svg.contains("data-value=\"98.59\"") && svg.contains("data-value=\"43.35\""));
        assert!(crate::has_text(&svg, "missing"));
        assert!(crate::has_text(&svg, " 98.6"));
        // vLLM (first) is drawn above SGLang: its hit area has the smaller y.
        let y = |label: &str| -> i32 {
            let at = svg.find(&format!("data-label=\"{label}\"")).unwrap();
            let rect = &svg[svg[..at].rfind("<rect").unwrap()..at];
            rect.split("y=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap()
        };
        assert!(y("vLLM") < y("SGLang &lt;fast&gt;"));
    }

    #[test]
    fn log_axis_labels_powers_of_ten() {
        let svg = bar_chart(&chart(true)).unwrap();
        assert!(crate::has_text(&svg, "10") && crate::has_text(&svg, "100"), "{svg}");
    }
}
