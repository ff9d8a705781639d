//! A run's request timeline: one horizontal bar per request from dispatch to its last
//! token (the first token marked with a tick), in dispatch order from the top; beneath it,
//! on the same time axis, output throughput per bin and requests in flight. Every bar and
//! bin has a `<title>` hit area. The caller picks the window (`from..to`, zoom) and passes
//! only what lies in it; a window with no request says so.

use crate::ticks::{Ticked, int_ticks, linear_ticks};
use crate::{ChartError, PALETTE, WIDTH, err, escape, fit, fmt_num, message_chart, with_overlay};
use plotters::prelude::*;

#[derive(Debug, Clone, PartialEq)]
pub struct TimelineBar {
    /// Seconds from the run's first dispatch.
    pub start: f64,
    pub first_token: Option<f64>,
    pub end: f64,
    pub failed: bool,
    /// Shown on hover.
    pub tooltip: String,
    /// The request's index in the dataset sample (the hit area's `data-request`).
    pub index: u32,
}

/// Output tokens that arrived in `[lo, hi)`, as a rate.
#[derive(Debug, Clone, PartialEq)]
pub struct RateBin {
    pub lo: f64,
    pub hi: f64,
    pub tokens_per_s: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub title: String,
    pub from: f64,
    pub to: f64,
    pub bars: Vec<TimelineBar>,
    pub throughput: Vec<RateBin>,
    /// Steps of requests in flight: from each time on, this many (the first at `from`).
    pub in_flight: Vec<(f64, u32)>,
    /// Shown instead of the axes when no bar lies in the window.
    pub empty: String,
}

const LABEL_W: u32 = 64;

/// Renders `t` to an SVG document; the root carries `data-from` and `data-to`.
pub fn timeline(t: &Timeline) -> Result<String, ChartError> {
    if t.bars.is_empty() || t.to.partial_cmp(&t.from) != Some(std::cmp::Ordering::Greater) {
        return message_chart(&t.title, &t.empty, WIDTH, 260);
    }
    let n = t.bars.len();
    // Rows thin out with many requests but the panel stops growing at 480 px.
    let gantt_h = (n as u32 * 10).clamp(140, 480) + 40 + 24;
    let (rate_h, flight_h) = (170u32, 190u32);
    let height = gantt_h + rate_h + flight_h;
    let x_ticks = linear_ticks(t.from, t.to);
    let plot_px = (WIDTH - 24 - LABEL_W) as f64;
    let mut svg = String::new();
    let mut hits = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, rest) = root.split_vertically(gantt_h);
        let (mid, bottom) = rest.split_vertically(rate_h);
        let mesh = |desc: &str| {
            let d = fit(desc, plot_px, 13.0);
            move |c: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<Ticked, Ticked>>,
                  y_desc: &str,
                  show_x: bool|
                  -> Result<(), ChartError> {
                let mut m = c.configure_mesh();
                m.y_desc(y_desc)
                    .x_label_formatter(&|v| fmt_num(*v))
                    .y_label_formatter(&|v| fmt_num(*v))
                    .light_line_style(TRANSPARENT)
                    .bold_line_style(RGBColor(225, 225, 225))
                    .label_style(("sans-serif", 12))
                    .axis_desc_style(("sans-serif", 13));
                if show_x {
                    m.x_desc(d.as_str());
                }
                m.draw().map_err(err)
            }
        };
        let draw_mesh = mesh("seconds since the first dispatch");

        // Requests, first dispatched at the top: the y range runs from n down to 0.
        let mut gantt = ChartBuilder::on(&top)
            .caption(fit(&t.title, WIDTH as f64 - 24.0, 16.0), ("sans-serif", 16))
            .margin(12)
            .margin_bottom(0)
            .x_label_area_size(24)
            .y_label_area_size(LABEL_W)
            .build_cartesian_2d(
                Ticked::new(t.from, t.to, x_ticks.clone()),
                Ticked::new(n as f64, 0.0, row_ticks(n)),
            )
            .map_err(err)?;
        draw_mesh(&mut gantt, "request (by dispatch)", false)?;
        let clip = |v: f64| v.clamp(t.from, t.to);
        let (ok_c, bad_c) = (PALETTE[0], PALETTE[2]);
        let pad = if n > 60 { 0.0 } else { 0.15 };
        gantt
            .draw_series(t.bars.iter().enumerate().map(|(i, b)| {
                let (r, g, bl) = if b.failed { bad_c } else { ok_c };
                let y = i as f64;
                Rectangle::new(
                    [(clip(b.start), y + pad), (clip(b.end), y + 1.0 - pad)],
                    RGBColor(r, g, bl).filled(),
                )
            }))
            .map_err(err)?;
        gantt
            .draw_series(t.bars.iter().enumerate().filter_map(|(i, b)| {
                let f = b.first_token.filter(|f| *f >= t.from && *f <= t.to)?;
                let y = i as f64;
                Some(PathElement::new(vec![(f, y), (f, y + 1.0)], BLACK.stroke_width(2)))
            }))
            .map_err(err)?;
        for (i, b) in t.bars.iter().enumerate() {
            let (l, tp) = gantt.backend_coord(&(clip(b.start), i as f64));
            let (r, bt) = gantt.backend_coord(&(clip(b.end), i as f64 + 1.0));
            hits.push_str(&format!(
                "<rect x=\"{l}\" y=\"{tp}\" width=\"{}\" height=\"{}\" fill=\"transparent\" data-request=\"{}\"><title>{}</title></rect>",
                (r - l).max(2),
                (bt - tp).max(1),
                b.index,
                escape(&b.tooltip)
            ));
        }

        let top_rate = t.throughput.iter().map(|b| b.tokens_per_s).fold(0.0, f64::max).max(1.0);
        let mut rate = ChartBuilder::on(&mid)
            .margin(12)
            .margin_top(4)
            .x_label_area_size(24)
            .y_label_area_size(LABEL_W)
            .build_cartesian_2d(
                Ticked::new(t.from, t.to, x_ticks.clone()),
                Ticked::new(0.0, top_rate * 1.08, linear_ticks(0.0, top_rate * 1.08)),
            )
            .map_err(err)?;
        draw_mesh(&mut rate, "output tokens/s", false)?;
        let (r, g, bl) = PALETTE[1];
        rate.draw_series(t.throughput.iter().map(|b| {
            Rectangle::new([(clip(b.lo), 0.0), (clip(b.hi), b.tokens_per_s)], RGBColor(r, g, bl).filled())
        }))
        .map_err(err)?;
        for b in &t.throughput {
            let (l, tp) = rate.backend_coord(&(clip(b.lo), top_rate * 1.08));
            let (rr, bt) = rate.backend_coord(&(clip(b.hi), 0.0));
            hits.push_str(&format!(
                "<rect x=\"{l}\" y=\"{tp}\" width=\"{}\" height=\"{}\" fill=\"transparent\" data-bin=\"{}\"><title>{}-{} s: {} output tokens/s</title></rect>",
                (rr - l).max(1),
                (bt - tp).max(1),
                b.lo,
                fmt_num(b.lo),
                fmt_num(b.hi),
                fmt_num(b.tokens_per_s)
            ));
        }

        let peak = t.in_flight.iter().map(|s| s.1).max().unwrap_or(0).max(1) as f64;
        let mut flight = ChartBuilder::on(&bottom)
            .margin(12)
            .margin_top(4)
            .x_label_area_size(40)
            .y_label_area_size(LABEL_W)
            .build_cartesian_2d(
                Ticked::new(t.from, t.to, x_ticks),
                Ticked::new(0.0, peak * 1.1 + 0.2, int_ticks(&[0.0, peak])),
            )
            .map_err(err)?;
        draw_mesh(&mut flight, "in flight", true)?;
        let mut steps = Vec::with_capacity(2 * t.in_flight.len() + 1);
        for (k, (at, c)) in t.in_flight.iter().enumerate() {
            if k > 0 {
                steps.push((clip(*at), t.in_flight[k - 1].1 as f64));
            }
            steps.push((clip(*at), *c as f64));
        }
        if let Some((_, c)) = t.in_flight.last() {
            steps.push((t.to, *c as f64));
        }
        let (r, g, bl) = PALETTE[4];
        flight.draw_series(LineSeries::new(steps, RGBColor(r, g, bl).stroke_width(2))).map_err(err)?;
        // Hover per step, while there are few enough to hover one by one.
        if t.in_flight.len() <= 2000 {
            for (k, (at, c)) in t.in_flight.iter().enumerate() {
                let until = t.in_flight.get(k + 1).map(|s| s.0).unwrap_or(t.to);
                let (l, tp) = flight.backend_coord(&(clip(*at), peak * 1.1 + 0.2));
                let (rr, bt) = flight.backend_coord(&(clip(until), 0.0));
                hits.push_str(&format!(
                    "<rect x=\"{l}\" y=\"{tp}\" width=\"{}\" height=\"{}\" fill=\"transparent\" data-in-flight=\"{c}\"><title>{}-{} s: {c} in flight</title></rect>",
                    (rr - l).max(1),
                    (bt - tp).max(1),
                    fmt_num(*at),
                    fmt_num(until)
                ));
            }
        }
        root.present().map_err(err)?;
    }
    let svg = svg.replacen("<svg ", &format!("<svg data-from=\"{}\" data-to=\"{}\" ", t.from, t.to), 1);
    Ok(with_overlay(svg, &hits, "hits"))
}

/// Request-number ticks: integers, few enough to read.
fn row_ticks(n: usize) -> Vec<f64> {
    if n <= 12 { (0..=n).map(|i| i as f64).collect() } else { int_ticks(&[0.0, n as f64]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Timeline {
        let bar = |i: u32, start: f64, first: f64, end: f64| TimelineBar {
            start,
            first_token: Some(first),
            end,
            failed: false,
            tooltip: format!("request {i}"),
            index: i,
        };
        Timeline {
            title: "Request timeline".into(),
            from: 0.0,
            to: 3.0,
            bars: vec![bar(0, 0.0, 0.2, 1.5), bar(1, 0.5, 0.9, 2.0), bar(2, 1.0, 1.1, 2.8)],
            throughput: vec![
                RateBin { lo: 0.0, hi: 1.0, tokens_per_s: 10.0 },
                RateBin { lo: 1.0, hi: 2.0, tokens_per_s: 30.0 },
                RateBin { lo: 2.0, hi: 3.0, tokens_per_s: 12.0 },
            ],
            in_flight: vec![(0.0, 1), (0.5, 2), (1.0, 3), (1.5, 2), (2.0, 1), (2.8, 0)],
            empty: "No request in this window.".into(),
        }
    }

    #[test]
    fn a_bar_per_request_with_its_first_token_and_hover() {
        let svg = timeline(&sample()).unwrap();
        assert_eq!(svg.matches("data-request=").count(), 3);
        assert!(svg.contains("data-request=\"1\"><title>request 1</title>"));
        assert_eq!(svg.matches("data-bin=").count(), 3);
        assert!(svg.contains("1-2 s: 30 output tokens/s"));
        assert!(svg.contains("<title>1-1.5 s: 3 in flight</title>"));
        assert!(svg.contains("data-from=\"0\" data-to=\"3\""));
        assert!(svg.contains("viewBox=\"0 0 "));
        for t in ["seconds since the first dispatch", "output tokens/s", "in flight", "request (by dispatch)"]
        {
            assert!(crate::has_text(&svg, t), "{t}");
        }
        assert_eq!(crate::texts_outside(&svg), Vec::<String>::new());
    }

    #[test]
    fn an_empty_window_says_so() {
        let t = Timeline { bars: vec![], ..sample() };
        let svg = timeline(&t).unwrap();
        assert!(crate::has_text(&svg, "No request in this window.") && !svg.contains("<line"));
    }
}
