//! Horizontal bars, one per run (or per ladder step): long run labels read left of the
//! bars, the value and an optional note ("-52.1%, 2.09x faster", "baseline") right of
//! them. A run the source has no number for shows "missing" instead of a zero-length bar.
//! The value axis is always linear from 0: a bar's length is its value (a log axis would
//! make lengths lie). Room for the labels and notes comes from their estimated widths, so
//! none is cut off.

use crate::{ChartError, PALETTE, WIDTH, err, escape, fit, fmt_num, text_px, with_overlay};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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
}

fn usable(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v >= 0.0)
}

/// Font sizes (plotters' units) and the widest label column.
const LABEL: f64 = 12.0;
const MAX_LABEL_PX: f64 = 520.0;
const MARGIN: u32 = 12;

/// Renders `c` to an SVG document.
pub fn bar_chart(c: &BarChart) -> Result<String, ChartError> {
    let n = c.bars.len().max(1);
    let height = (90 + 26 * n) as u32;
    let max = c.bars.iter().filter_map(|b| usable(b.value)).fold(0.0_f64, f64::max);
    let labels: Vec<String> = c.bars.iter().map(|b| fit(&b.label, MAX_LABEL_PX, LABEL)).collect();
    let texts: Vec<String> = c
        .bars
        .iter()
        .map(|b| match (usable(b.value), &b.note) {
            (Some(v), Some(note)) => format!(" {} {note}", fmt_num(v)),
            (Some(v), None) => format!(" {}", fmt_num(v)),
            (None, _) => " missing".to_string(),
        })
        .collect();
    // Left: the longest label, plus plotters' tick and gap. Right: the plot is wide enough
    // that the longest value text takes at most 55% of it.
    let label_area = (labels.iter().map(|l| text_px(l, LABEL)).fold(40.0, f64::max) + 18.0).ceil() as u32;
    let widest_text = texts.iter().map(|t| text_px(t, LABEL)).fold(0.0, f64::max);
    let plot_px = (WIDTH - 2 * MARGIN - label_area).max(560).max((widest_text / 0.55).ceil() as u32);
    let width = 2 * MARGIN + label_area + plot_px;
    // The axis runs far enough that every bar's text ends inside the chart: a bar of value v
    // ends at v / hi of the plot, its text needs `w` px after that (plus the right margin).
    let plot = plot_px as f64;
    let hi = c
        .bars
        .iter()
        .zip(&texts)
        .filter_map(|(b, t)| {
            usable(b.value).map(|v| v * plot / (plot + MARGIN as f64 - 4.0 - text_px(t, LABEL)))
        })
        .fold(max * 1.02, f64::max);
    let hi = if hi > 0.0 { hi } else { 1.0 };
    // Top bar first: plotters counts y upwards, so bar i sits in segment n-1-i.
    let rev: Vec<String> = labels.iter().rev().cloned().collect();
    let y_fmt = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(k) => rev.get(*k).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    let x_fmt = |v: &f64| fmt_num(*v);
    let title = fit(&c.title, width as f64 - 2.0 * MARGIN as f64, 16.0);
    let left_mid = Pos::new(HPos::Left, VPos::Center);
    let mut svg = String::new();
    let mut hits = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&title, ("sans-serif", 16))
            .margin(MARGIN)
            .x_label_area_size(40)
            .y_label_area_size(label_area)
            // Integer ranges are inclusive in plotters: 0..n-1 is n segments, one a bar.
            .build_cartesian_2d(0.0..hi, (0..n - 1).into_segmented())
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(225, 225, 225))
            .y_labels(n)
            .y_label_formatter(&y_fmt)
            .x_label_formatter(&x_fmt)
            .x_desc(fit(&c.axis, plot, 13.0))
            .label_style(("sans-serif", LABEL))
            .axis_desc_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        for (i, (b, text)) in c.bars.iter().zip(&texts).enumerate() {
            let k = n - 1 - i;
            let Some(v) = usable(b.value) else {
                let style = ("sans-serif", LABEL).into_font().color(&RGBColor(120, 120, 120)).pos(left_mid);
                chart
                    .draw_series(std::iter::once(Text::new(
                        text.trim_start().to_string(),
                        (0.0, SegmentValue::CenterOf(k)),
                        style,
                    )))
                    .map_err(err)?;
                let (x0p, y0p) = chart.backend_coord(&(0.0, SegmentValue::Exact(k)));
                let (_, y1p) = chart.backend_coord(&(0.0, SegmentValue::Exact(k + 1)));
                hits.push_str(&format!(
                    "<rect x=\"{x0p}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"transparent\" data-label=\"{}\" data-missing=\"true\"><title>{}</title></rect>",
                    y0p.min(y1p),
                    text_px(text, LABEL).ceil(),
                    (y1p - y0p).abs(),
                    escape(&b.label),
                    escape(&b.tooltip)
                ));
                continue;
            };
            let (r, g, bl) = if b.highlight { PALETTE[1] } else { PALETTE[0] };
            let mut rect = Rectangle::new(
                [(0.0, SegmentValue::Exact(k)), (v, SegmentValue::Exact(k + 1))],
                RGBColor(r, g, bl).filled(),
            );
            rect.set_margin(4, 4, 0, 0);
            chart.draw_series(std::iter::once(rect)).map_err(err)?;
            let style = ("sans-serif", LABEL).into_font().color(&BLACK).pos(left_mid);
            chart
                .draw_series(std::iter::once(Text::new(text.clone(), (v, SegmentValue::CenterOf(k)), style)))
                .map_err(err)?;
            let (x0p, y0p) = chart.backend_coord(&(0.0, SegmentValue::Exact(k)));
            let (x1p, y1p) = chart.backend_coord(&(v, SegmentValue::Exact(k + 1)));
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
        Bar {
            label: label.into(),
            value: v,
            tooltip: format!("{label}: {v:?} ms"),
            note: None,
            highlight: false,
        }
    }

    fn chart() -> BarChart {
        BarChart {
            title: "TTFT p99 (ms)".into(),
            axis: "TTFT p99 (ms), lower is better".into(),
            bars: vec![bar("vLLM", Some(98.59)), bar("SGLang <fast>", Some(43.35)), bar("imported", None)],
        }
    }

    /// Snapshot of what matters: one hit area per bar with its value, the run labels on the
    /// axis (escaped), the axis description and title, "missing" (with its own hover) for
    /// no number.
    #[test]
    fn bars_have_labels_values_axis_and_hover() {
        let svg = bar_chart(&chart()).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(crate::has_text(&svg, "TTFT p99 (ms)"));
        assert!(svg.contains("TTFT p99 (ms), lower is better"));
        assert!(crate::has_text(&svg, "vLLM") && crate::has_text(&svg, "SGLang &lt;fast&gt;"));
        assert_eq!(svg.matches("<title>").count(), 3);
        assert!(svg.contains("data-value=\"98.59\"") && svg.contains("data-value=\"43.35\""));
        assert!(crate::has_text(&svg, "missing"));
        assert!(
            svg.contains("data-label=\"imported\" data-missing=\"true\"><title>imported: None ms</title>")
        );
        assert!(crate::has_text(&svg, " 98.6"));
        // vLLM (first) is drawn above SGLang: its hit area has the smaller y.
        let y = |label: &str| -> i32 {
            let at = svg.find(&format!("data-label=\"{label}\"")).unwrap();
            let rect = &svg[svg[..at].rfind("<rect").unwrap()..at];
            rect.split("y=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap()
        };
        assert!(y("vLLM") < y("SGLang &lt;fast&gt;"));
    }

    /// The root scales (viewBox of its own size), and the longest label, the longest note
    /// on the longest bar, and the title all end inside it.
    #[test]
    fn every_text_fits_inside_the_svg() {
        let mut c = chart();
        c.title = "Optimization ladder: TPOT p99 (ms) - a comparison with a rather long title that goes on and on and on".into();
        c.bars[0].label = "Speculative decoding: #8 SGLang FP8 EAGLE3 draft=Tengyunw steps=4 topk=4 draft-tokens=16 optimized BS=4".into();
        c.bars[0].note = Some("-52.1% TPOT, 2.09x faster (study: +66.2% speed-up)".into());
        c.bars[1].note = Some("+131.0% TPOT, 2.31x slower".into());
        let svg = bar_chart(&c).unwrap();
        let w = crate::svg_width(&svg).unwrap();
        assert!(svg.contains(&format!("viewBox=\"0 0 {w} ")), "{}", &svg[..200]);
        assert_eq!(crate::texts_outside(&svg), Vec::<String>::new());
        assert!(crate::texts(&svg).iter().any(|t| t.3.starts_with("98.6 -52.1% TPOT, 2.09x faster")));
    }

    /// Bars start at 0 and are as long as their values, whatever the values span.
    #[test]
    fn bar_lengths_are_proportional() {
        let c = BarChart {
            title: "t".into(),
            axis: "a".into(),
            bars: vec![bar("a", Some(5701.0)), bar("b", Some(570.1))],
        };
        let svg = bar_chart(&c).unwrap();
        let width = |label: &str| -> f64 {
            let at = svg.find(&format!("data-label=\"{label}\"")).unwrap();
            let rect = &svg[svg[..at].rfind("<rect").unwrap()..at];
            rect.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap()
        };
        let ratio = width("a") / width("b");
        assert!((ratio - 10.0).abs() < 0.5, "{ratio}");
    }
}
