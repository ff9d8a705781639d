//! Lines with points: latency CDFs (x = latency, y = fraction of requests) and a metric
//! against concurrency for sweeps (x = max concurrency). A legend names every series.

use crate::{err, escape, fmt_num, with_overlay, ChartError, PALETTE, WIDTH};
use plotters::prelude::*;

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// One per point, shown on hover; empty: "label: x, y".
    pub tooltips: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub series: Vec<Series>,
    pub log_x: bool,
    pub log_y: bool,
    /// Draw a marker (and hit area) at every point; off for dense CDFs.
    pub markers: bool,
}

fn range(vals: impl Iterator<Item = f64>, log: bool, pad_zero: bool) -> (f64, f64) {
    let v: Vec<f64> = vals.filter(|v| v.is_finite() && (!log || *v > 0.0)).map(|v| if log { v.log10() } else { v }).collect();
    if v.is_empty() {
        return (0.0, 1.0);
    }
    let (mut lo, mut hi) = (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
    if log {
        lo = lo.floor();
        hi = hi.ceil();
    } else {
        if pad_zero {
            lo = lo.min(0.0);
        }
        let pad = ((hi - lo) * 0.08).max(1e-9);
        hi += pad;
        if !pad_zero {
            lo -= pad;
        }
    }
    if hi <= lo {
        hi = lo + 1.0;
    }
    (lo, hi)
}

/// Renders `c` to an SVG document.
pub fn line_chart(c: &LineChart) -> Result<String, ChartError> {
    let all = || c.series.iter().flat_map(|s| s.points.iter().copied());
    let (x0, x1) = range(all().map(|p| p.0), c.log_x, false);
    let (y0, y1) = range(all().map(|p| p.1), c.log_y, true);
    let tx = |v: f64| if c.log_x { v.log10() } else { v };
    let ty = |v: f64| if c.log_y { v.log10() } else { v };
    let ok = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite() && (!c.log_x || p.0 > 0.0) && (!c.log_y || p.1 > 0.0);
    let x_fmt = |v: &f64| if c.log_x { fmt_num(10f64.powf(*v)) } else { fmt_num(*v) };
    let y_fmt = |v: &f64| if c.log_y { fmt_num(10f64.powf(*v)) } else { fmt_num(*v) };
    let height = 420 + 18 * (c.series.len() as u32).min(30);
    let mut svg = String::new();
    let mut hits = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(c.x_desc.as_str())
            .y_desc(c.y_desc.as_str())
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        for (i, s) in c.series.iter().enumerate() {
            let (r, g, b) = PALETTE[i % PALETTE.len()];
            let color = RGBColor(r, g, b);
            let pts: Vec<(f64, f64)> = s.points.iter().filter(|p| ok(p)).map(|p| (tx(p.0), ty(p.1))).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(s.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3)));
            if c.markers {
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled()))).map_err(err)?;
                for (k, (raw, p)) in s.points.iter().filter(|p| ok(p)).zip(&pts).enumerate() {
                    let (px, py) = chart.backend_coord(p);
                    let tip = s.tooltips.get(k).cloned().unwrap_or_else(|| format!("{}: {}, {}", s.label, fmt_num(raw.0), fmt_num(raw.1)));
                    hits.push_str(&format!(
                        "<circle cx=\"{px}\" cy=\"{py}\" r=\"7\" fill=\"transparent\" data-series=\"{}\" data-x=\"{}\" data-y=\"{}\"><title>{}</title></circle>",
                        escape(&s.label),
                        raw.0,
                        raw.1,
                        escape(&tip)
                    ));
                }
            }
        }
        if !c.series.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .label_font(("sans-serif", 12))
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(with_overlay(svg, &hits, "hits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep() -> LineChart {
        let s = |label: &str, ys: [f64; 4]| Series {
            label: label.into(),
            points: [1.0, 2.0, 4.0, 8.0].into_iter().zip(ys).collect(),
            tooltips: vec![],
        };
        LineChart {
            title: "Mean E2EL against concurrency".into(),
            x_desc: "max concurrency".into(),
            y_desc: "TPOT mean (ms)".into(),
            series: vec![s("vLLM baseline", [7.28, 7.37, 7.38, 7.71]), s("SGLang optimized", [2.67, 3.04, 3.34, 4.82])],
            log_x: true,
            log_y: false,
            markers: true,
        }
    }

    /// Snapshot of what matters: both series in the legend, a path per series, a hover
    /// point per value carrying it, axis descriptions, log-x tick labels.
    #[test]
    fn series_legend_axes_and_hover_points() {
        let svg = line_chart(&sweep()).unwrap();
        assert!(crate::has_text(&svg, "vLLM baseline") && crate::has_text(&svg, "SGLang optimized"));
        assert!(crate::has_text(&svg, "max concurrency") && crate::has_text(&svg, "TPOT mean (ms)"));
        assert_eq!(svg.matches("<title>").count(), 8, "a hit area per point");
        assert!(svg.contains("data-series=\"SGLang optimized\" data-x=\"8\" data-y=\"4.82\""));
        assert!(svg.contains("<polyline"));
        assert!(crate::has_text(&svg, "1") && crate::has_text(&svg, "10"));
    }

    #[test]
    fn empty_chart_still_renders() {
        let mut c = sweep();
        c.series.clear();
        assert!(line_chart(&c).unwrap().contains("</svg>"));
    }
}
