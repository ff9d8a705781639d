//! A histogram of one latency metric: equal-width bins whose width is a 1-2-5 value (so
//! edges read 120-140 ms, not 117.3-139.8), one bar per bin with its count and share on
//! hover. A histogram with no sample says why instead of showing bare axes.

use crate::ticks::{Ticked, int_ticks, linear_ticks, step_up};
use crate::{ChartError, PALETTE, WIDTH, err, escape, fit, fmt_num, message_chart, with_overlay};
use plotters::prelude::*;

#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub title: String,
    /// What the x axis measures, with its unit ("TTFT (ms)").
    pub x_desc: String,
    /// What one sample is, plural ("requests", "gaps"): the y axis and the hover text.
    pub noun: String,
    pub values: Vec<f64>,
    /// Shown instead of the axes when there is no finite value.
    pub empty: String,
}

/// One bin: `[lo, hi)`, the last one closed so the maximum is counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Bin {
    pub lo: f64,
    pub hi: f64,
    pub count: usize,
}

/// Equal-width bins over the finite `values`: about sqrt(n) of them (at most `max_bins`),
/// the width rounded up to a 1-2-5 value and the edges at its multiples. Empty for no data.
pub fn bins(values: &[f64], max_bins: usize) -> Vec<Bin> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return vec![];
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let want = ((v.len() as f64).sqrt().ceil() as usize).clamp(1, max_bins.max(1));
    // One distinct value still gets a bin of readable width around it.
    let span = if max > min { max - min } else { min.abs().max(1.0) };
    let mut width = step_up(span / want as f64);
    // Rounding the edges outwards can add a bin; widen until the count fits.
    let count = |w: f64| ((max / w + 1e-9).floor() - (min / w + 1e-9).floor()) as usize + 1;
    while count(width) > max_bins.max(1) {
        width = step_up(width * 1.01);
    }
    let first = (min / width + 1e-9).floor();
    let n = count(width);
    let edge = |k: usize| ((first + k as f64) * width * 1e9).round() / 1e9;
    let mut out: Vec<Bin> = (0..n).map(|k| Bin { lo: edge(k), hi: edge(k + 1), count: 0 }).collect();
    for x in v {
        // The small epsilon keeps 0.3 (0.2999.. / 0.1) in the bin starting at 0.3.
        let k = ((x / width + 1e-9).floor() - first).clamp(0.0, (n - 1) as f64) as usize;
        out[k].count += 1;
    }
    out
}

/// Renders `h` to an SVG document (at most 60 bins).
pub fn histogram(h: &Histogram) -> Result<String, ChartError> {
    let b = bins(&h.values, 60);
    if b.is_empty() {
        return message_chart(&h.title, &h.empty, WIDTH, 260);
    }
    let total: usize = b.iter().map(|b| b.count).sum();
    let (x0, x1) = (b[0].lo, b[b.len() - 1].hi);
    let top = b.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    let y1 = top * 1.08;
    let y_ticks = if top <= 10.0 {
        int_ticks(&(0..=top as u32).map(f64::from).collect::<Vec<_>>())
    } else {
        linear_ticks(0.0, y1).into_iter().filter(|t| t.fract() == 0.0).collect()
    };
    let plot_px = (WIDTH - 24 - 64) as f64;
    let (r, g, bl) = PALETTE[0];
    let mut svg = String::new();
    let mut hits = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(fit(&h.title, WIDTH as f64 - 24.0, 16.0), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(Ticked::new(x0, x1, linear_ticks(x0, x1)), Ticked::new(0.0, y1, y_ticks))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(fit(&h.x_desc, plot_px, 13.0))
            .y_desc(h.noun.as_str())
            .x_label_formatter(&|v| fmt_num(*v))
            .y_label_formatter(&|v| fmt_num(*v))
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(225, 225, 225))
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        let fill = RGBColor(r, g, bl);
        chart
            .draw_series(
                b.iter()
                    .filter(|b| b.count > 0)
                    .map(|b| Rectangle::new([(b.lo, 0.0), (b.hi, b.count as f64)], fill.filled())),
            )
            .map_err(err)?;
        for bin in &b {
            // The hit area spans the full height, so a short bar is as easy to hover.
            let (l, t) = chart.backend_coord(&(bin.lo, y1));
            let (rr, bot) = chart.backend_coord(&(bin.hi, 0.0));
            let share = bin.count as f64 / total as f64 * 100.0;
            let tip =
                format!("{}-{}: {} {} ({share:.1}%)", fmt_num(bin.lo), fmt_num(bin.hi), bin.count, h.noun);
            hits.push_str(&format!(
                "<rect x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{}\" fill=\"transparent\" data-lo=\"{}\" data-hi=\"{}\" data-count=\"{}\"><title>{}</title></rect>",
                (rr - l).max(1),
                (bot - t).max(1),
                bin.lo,
                bin.hi,
                bin.count,
                escape(&tip)
            ));
        }
        root.present().map_err(err)?;
    }
    Ok(with_overlay(svg, &hits, "hits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed: 9 values, so 3 bins wanted over a span of 25 -> width 10 (8.33
    /// rounded up to 1-2-5), edges at multiples of 10 from 10 to 40.
    #[test]
    fn bins_have_round_edges_and_count_every_value_once() {
        let v = [12.0, 15.0, 19.9, 20.0, 21.0, 25.0, 30.0, 33.0, 37.0];
        let b = bins(&v, 60);
        let got: Vec<(f64, f64, usize)> = b.iter().map(|b| (b.lo, b.hi, b.count)).collect();
        assert_eq!(got, [(10.0, 20.0, 3), (20.0, 30.0, 3), (30.0, 40.0, 3)]);
    }

    #[test]
    fn edges_that_are_not_exact_in_binary_still_bin_right() {
        // 0.3 / 0.1 is 2.9999999999999996 in f64: still the bin that starts at 0.3.
        // 16 values want 4 bins over 0.3: width 0.1.
        let v: Vec<f64> = [0.0, 0.1, 0.2, 0.3].repeat(4);
        let b = bins(&v, 60);
        assert_eq!(b.iter().map(|b| b.count).collect::<Vec<_>>(), [4, 4, 4, 4]);
        assert_eq!(b[3].lo, 0.3);
    }

    #[test]
    fn one_value_many_values_and_no_value() {
        let b = bins(&[7.0, 7.0, 7.0], 60);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].count, 3);
        assert!(b[0].lo <= 7.0 && b[0].hi > 7.0);
        let many: Vec<f64> = (0..10_000).map(|i| i as f64 * 0.37).collect();
        let b = bins(&many, 60);
        assert!(b.len() <= 60 && b.len() >= 20, "{}", b.len());
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), 10_000);
        assert!(bins(&[f64::NAN], 60).is_empty());
    }

    #[test]
    fn a_bar_per_bin_with_hover_and_an_empty_one_says_why() {
        let h = Histogram {
            title: "TTFT distribution".into(),
            x_desc: "TTFT (ms)".into(),
            noun: "requests".into(),
            values: vec![12.0, 15.0, 19.9, 20.0, 21.0, 25.0, 30.0, 33.0, 37.0],
            empty: "No TTFT samples.".into(),
        };
        let svg = histogram(&h).unwrap();
        assert_eq!(svg.matches("<title>").count(), 3);
        assert!(svg.contains("<title>10-20: 3 requests (33.3%)</title>"), "{svg}");
        assert!(svg.contains("viewBox=\"0 0 "));
        assert_eq!(crate::texts_outside(&svg), Vec::<String>::new());
        let svg = histogram(&Histogram { values: vec![], ..h }).unwrap();
        assert!(crate::has_text(&svg, "No TTFT samples.") && !svg.contains("<line"));
    }
}
