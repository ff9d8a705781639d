//! Lines with points: latency CDFs (x = latency, y = fraction of requests, drawn as the
//! steps the builder gives) and a metric against concurrency for sweeps (x = max
//! concurrency, integer ticks). A legend names every series; a value a run lacks breaks
//! its line and is marked on the x axis; a chart with no point says why instead of
//! showing bare axes.

use crate::ticks::{Ticked, int_ticks, linear_ticks, log_axis};
use crate::{ChartError, PALETTE, WIDTH, err, escape, fit, fmt_num, message_chart, with_overlay};
use plotters::prelude::*;

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// One per point, shown on hover; empty: "label: x, y".
    pub tooltips: Vec<String>,
    /// x values where the series has no number, with their hover text: the line breaks
    /// there and a cross on the x axis marks them (never a made-up 0).
    pub missing: Vec<(f64, String)>,
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
    /// x only takes integer values (max concurrency): ticks at integers only.
    pub x_int: bool,
    /// Shown instead of the axes when no series has a point.
    pub empty: String,
}

/// Coordinate range (log10 units on a log axis) and its ticks in the same units.
fn axis(vals: &[f64], log: bool, pad_zero: bool, int: bool) -> (f64, f64, Vec<f64>) {
    let v: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite() && (!log || *v > 0.0)).collect();
    if v.is_empty() {
        return (0.0, 1.0, linear_ticks(0.0, 1.0));
    }
    let (min, max) = (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    if log {
        let (lo, hi, ticks) = log_axis(min, max);
        return (lo.log10(), hi.log10(), ticks.iter().map(|t| t.log10()).collect());
    }
    let (mut lo, mut hi) = (if pad_zero { min.min(0.0) } else { min }, max);
    let pad = ((hi - lo) * 0.08).max(if int { 0.5 } else { 1e-9 });
    hi += pad;
    if !pad_zero {
        lo -= pad;
    }
    (lo, hi, if int { int_ticks(&v) } else { linear_ticks(lo, hi) })
}

/// Renders `c` to an SVG document.
pub fn line_chart(c: &LineChart) -> Result<String, ChartError> {
    let ok = |p: &(f64, f64)| {
        p.0.is_finite() && p.1.is_finite() && (!c.log_x || p.0 > 0.0) && (!c.log_y || p.1 > 0.0)
    };
    if !c.series.iter().flat_map(|s| &s.points).any(ok) {
        return message_chart(&c.title, &c.empty, WIDTH, 260);
    }
    let xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0).chain(s.missing.iter().map(|m| m.0)))
        .collect();
    let ys: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
    let (x0, x1, x_ticks) = axis(&xs, c.log_x, false, c.x_int);
    let (y0, y1, y_ticks) = axis(&ys, c.log_y, true, false);
    let tx = |v: f64| if c.log_x { v.log10() } else { v };
    let ty = |v: f64| if c.log_y { v.log10() } else { v };
    let x_fmt = |v: &f64| if c.log_x { fmt_num(10f64.powf(*v)) } else { fmt_num(*v) };
    let y_fmt = |v: &f64| if c.log_y { fmt_num(10f64.powf(*v)) } else { fmt_num(*v) };
    let any_missing = c.series.iter().any(|s| !s.missing.is_empty());
    let x_desc = if any_missing {
        format!("{} (x on the axis: no number for that run)", c.x_desc)
    } else {
        c.x_desc.clone()
    };
    let height = 420 + 18 * (c.series.len() as u32).min(30);
    let plot_px = (WIDTH - 24 - 64) as f64;
    let mut svg = String::new();
    let mut hits = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(fit(&c.title, WIDTH as f64 - 24.0, 16.0), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64);
        let mut chart = builder
            .build_cartesian_2d(Ticked::new(x0, x1, x_ticks), Ticked::new(y0, y1, y_ticks))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(fit(&x_desc, plot_px, 13.0))
            .y_desc(c.y_desc.as_str())
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(225, 225, 225))
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        for (i, s) in c.series.iter().enumerate() {
            let (r, g, b) = PALETTE[i % PALETTE.len()];
            let color = RGBColor(r, g, b);
            let kept: Vec<(usize, (f64, f64))> =
                s.points.iter().copied().enumerate().filter(|(_, p)| ok(p)).collect();
            // Break the line wherever a missing value lies between two points.
            let mut segments: Vec<Vec<(f64, f64)>> = vec![vec![]];
            for (k, (_, p)) in kept.iter().enumerate() {
                let gap = k > 0 && s.missing.iter().any(|m| m.0 > kept[k - 1].1.0 && m.0 < p.0);
                if gap {
                    segments.push(vec![]);
                }
                segments.last_mut().expect("one segment at least").push((tx(p.0), ty(p.1)));
            }
            let label = fit(&s.label, plot_px * 0.7, 12.0);
            for (k, seg) in segments.into_iter().enumerate() {
                let drawn = chart.draw_series(LineSeries::new(seg, color.stroke_width(2))).map_err(err)?;
                if k == 0 {
                    drawn.label(label.clone()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                    });
                }
            }
            let bottom = if c.log_y { y0 } else { y0.max(0.0).min(y1) };
            for (x, tip) in s.missing.iter().filter(|m| !c.log_x || m.0 > 0.0) {
                let at = (tx(*x), bottom);
                chart.draw_series(std::iter::once(Cross::new(at, 5, color.stroke_width(2)))).map_err(err)?;
                let (px, py) = chart.backend_coord(&at);
                hits.push_str(&format!(
                    "<circle cx=\"{px}\" cy=\"{py}\" r=\"7\" fill=\"transparent\" data-series=\"{}\" data-x=\"{x}\" data-missing=\"true\"><title>{}</title></circle>",
                    escape(&s.label),
                    escape(tip)
                ));
            }
            if c.markers {
                chart
                    .draw_series(kept.iter().map(|(_, p)| Circle::new((tx(p.0), ty(p.1)), 3, color.filled())))
                    .map_err(err)?;
                for (k, raw) in &kept {
                    let (px, py) = chart.backend_coord(&(tx(raw.0), ty(raw.1)));
                    let tip =
                        s.tooltips.get(*k).cloned().unwrap_or_else(|| {
                            format!("{}: {}, {}", s.label, fmt_num(raw.0), fmt_num(raw.1))
                        });
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
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(err)?;
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
            missing: vec![],
        };
        LineChart {
            title: "Mean E2EL against concurrency".into(),
            x_desc: "max concurrency".into(),
            y_desc: "TPOT mean (ms)".into(),
            series: vec![
                s("vLLM baseline", [7.28, 7.37, 7.38, 7.71]),
                s("SGLang optimized", [2.67, 3.04, 3.34, 4.82]),
            ],
            log_x: false,
            log_y: false,
            markers: true,
            x_int: true,
            empty: "no sweep".into(),
        }
    }

    /// Numbers plotters wrote as tick labels (every text that parses as a number).
    fn tick_labels(svg: &str) -> Vec<f64> {
        crate::texts(svg).into_iter().filter_map(|t| t.3.parse::<f64>().ok()).collect()
    }

    /// Snapshot of what matters: both series in the legend, a path per series, a hover
    /// point per value carrying it, axis descriptions, integer concurrency ticks only.
    #[test]
    fn series_legend_axes_and_hover_points() {
        let svg = line_chart(&sweep()).unwrap();
        assert!(crate::has_text(&svg, "vLLM baseline") && crate::has_text(&svg, "SGLang optimized"));
        assert!(crate::has_text(&svg, "max concurrency") && crate::has_text(&svg, "TPOT mean (ms)"));
        assert_eq!(svg.matches("<title>").count(), 8, "a hit area per point");
        assert!(svg.contains("data-series=\"SGLang optimized\" data-x=\"8\" data-y=\"4.82\""));
        assert_eq!(svg.matches("stroke-width=\"2\" points=").count(), 2, "a line per series");
        for t in ["1", "2", "4", "8"] {
            assert!(crate::has_text(&svg, t), "tick {t}");
        }
        assert!(
            !crate::has_text(&svg, "1.5") && !crate::has_text(&svg, "2.5"),
            "no fractional concurrency ticks"
        );
        assert_eq!(crate::texts_outside(&svg), Vec::<String>::new());
    }

    /// A log axis over 34.7..5701 ticks at 1-2-5 values up to 10^4, never 1.58 or 10^6.
    #[test]
    fn log_axis_ticks_are_1_2_5() {
        let mut c = sweep();
        c.log_y = true;
        c.series[0].points = vec![(1.0, 34.7), (2.0, 120.0), (4.0, 900.0), (8.0, 5701.0)];
        let svg = line_chart(&c).unwrap();
        let ticks: Vec<f64> = tick_labels(&svg)
            .into_iter()
            .filter(|t| ![1.0, 2.0, 4.0, 8.0].contains(t) || *t == 2.0)
            .collect();
        assert!(ticks.contains(&100.0) && ticks.contains(&1000.0) && ticks.contains(&10000.0), "{ticks:?}");
        for t in &ticks {
            let m = t / 10f64.powf(t.log10().floor());
            assert!([1.0, 2.0, 5.0].iter().any(|x| (m - x).abs() < 1e-6), "tick {t} is not 1-2-5");
            assert!(*t <= 10000.0, "tick {t} past 10^4 for a maximum of 5701");
        }
    }

    #[test]
    fn an_empty_chart_says_why_instead_of_bare_axes() {
        let mut c = sweep();
        c.series.clear();
        c.empty = "No per-request data for these runs.".into();
        let svg = line_chart(&c).unwrap();
        assert!(crate::has_text(&svg, "No per-request data for these runs."));
        assert!(crate::has_text(&svg, "Mean E2EL against concurrency"));
        assert!(!svg.contains("<line") && !svg.contains("<polyline"), "no axes: {svg}");
        assert!(svg.contains("viewBox="));
    }

    /// A value a run lacks breaks the line there and is marked on the axis with its hover.
    #[test]
    fn a_missing_value_is_a_gap_never_a_zero() {
        let mut c = sweep();
        c.series[0].points.remove(2);
        c.series[0].missing = vec![(4.0, "vLLM baseline BS=4: missing".into())];
        let svg = line_chart(&c).unwrap();
        assert_eq!(
            svg.matches("stroke-width=\"2\" points=").count(),
            3,
            "vLLM's line in two pieces, SGLang's whole"
        );
        assert!(
            svg.contains("data-x=\"4\" data-missing=\"true\"><title>vLLM baseline BS=4: missing</title>")
        );
        assert!(!svg.contains("data-y=\"0\""));
    }
}
