//! The charts of the seed study as the page and `chart.svg` draw them: text a viewer
//! without CJK fonts can read and that fits, signs that read as they are, integer
//! concurrency ticks, 1-2-5 log ticks, missing numbers drawn as missing, no server paths.

use super::facts::source_name;
use super::render;
use super::seed_fixture::seed;
use super::view_state::{ChartKind, ChartView, Stat};
use bench_types::MetricKind;

fn view(kind: ChartKind, metric: MetricKind, stat: Stat) -> ChartView {
    ChartView { kind, metric, stat, ..ChartView::default() }
}

fn svg(kind: ChartKind, metric: MetricKind, stat: Stat) -> String {
    render(&seed(), &view(kind, metric, stat), &[]).unwrap()
}

/// Hover titles (`<title>` contents) of `svg`.
fn titles(svg: &str) -> Vec<&str> {
    svg.split("<title>").skip(1).filter_map(|t| t.split("</title>").next()).collect()
}

#[test]
fn ladder_text_is_ascii_english_and_fits() {
    for (m, s) in
        [(MetricKind::Tpot, Stat::P(99.0)), (MetricKind::Ttft, Stat::Mean), (MetricKind::Itl, Stat::Median)]
    {
        let svg = svg(ChartKind::Ladder, m, s);
        let texts = charts::texts(&svg);
        assert!(
            texts.iter().all(|t| t.3.is_ascii()),
            "{:?}",
            texts.iter().filter(|t| !t.3.is_ascii()).collect::<Vec<_>>()
        );
        assert_eq!(charts::texts_outside(&svg), Vec::<String>::new(), "text past the edge");
        assert!(svg.contains("viewBox=\"0 0 "));
        for step in [
            "Baseline: #1 vLLM",
            "Engine choice: #2 SGLang",
            "Quantization: #5 SGLang FP8",
            "Speculative decoding: #8 SGLang FP8 EAGLE3",
        ] {
            assert!(
                texts.iter().any(|t| t.3.starts_with(step)),
                "{step} in {:?}",
                texts.iter().map(|t| &t.3).collect::<Vec<_>>()
            );
        }
        // The source's own name stays in the hover title.
        assert!(
            titles(&svg).iter().any(|t| t.starts_with("Quantization (3. 量子化): #5 SGLang FP8")),
            "{:?}",
            titles(&svg)
        );
    }
}

/// A latency that fell reads "-x% ..., n.nnx faster", never "+131.0% vs previous".
#[test]
fn ladder_notes_read_the_right_way_round() {
    let svg = svg(ChartKind::Ladder, MetricKind::Tpot, Stat::Mean);
    // TPOT mean: vLLM 7.38 ms, SGLang 7.19, FP8 5.65, EAGLE3 3.75 (the study's blocks).
    let texts: Vec<String> = charts::texts(&svg).into_iter().map(|t| t.3).collect();
    let note = |v: &str| {
        texts.iter().find(|t| t.starts_with(v)).cloned().unwrap_or_else(|| panic!("{v} in {texts:?}"))
    };
    assert_eq!(note("5.65"), "5.65 (-21.4% TPOT, 1.27x faster; study: +25.8% speed-up)");
    assert!(!texts.iter().any(|t| t.contains("vs previous")));
    for t in texts.iter().filter(|t| t.contains(" faster")) {
        assert!(t.contains("(-"), "a drop reads as a minus: {t}");
    }
}

#[test]
fn hover_titles_name_files_without_server_paths() {
    for kind in [ChartKind::Bars, ChartKind::Ladder, ChartKind::Sweep] {
        let svg = svg(kind, MetricKind::Ttft, Stat::Mean);
        let t = titles(&svg);
        assert!(!t.is_empty());
        assert!(t.iter().all(|t| !t.contains("shared/") && !t.contains("/seed/")), "{t:?}");
        assert!(t.iter().any(|t| t.contains("imported from qwen3-8b-h100-latency.txt, line 79")), "{t:?}");
    }
    assert_eq!(source_name("/srv/up/x.json"), "x.json");
    assert_eq!(source_name("shared/seed/a.txt, line 3"), "a.txt, line 3");
}

/// The sweep's x axis is max concurrency: ticks at 1, 2, 4, 8 only.
#[test]
fn sweep_ticks_are_the_concurrencies() {
    for log in [false, true] {
        let v = ChartView { log, ..view(ChartKind::Sweep, MetricKind::Ttft, Stat::P(99.0)) };
        let svg = render(&seed(), &v, &[]).unwrap();
        let nums: Vec<f64> = charts::texts(&svg).into_iter().filter_map(|t| t.3.parse().ok()).collect();
        assert!(
            !nums.iter().any(|n| [0.5, 1.5, 2.5, 3.5].contains(n)),
            "fractional concurrency tick: {nums:?}"
        );
        assert!([1.0, 2.0, 4.0, 8.0].iter().all(|c| nums.contains(c)), "{nums:?}");
        if log {
            // y ticks of a log axis are 1-2-5 values.
            assert!(
                nums.iter().filter(|n| ![1.0, 2.0, 4.0, 8.0].contains(*n)).all(|n| {
                    let m = n / 10f64.powf(n.log10().floor());
                    [1.0, 2.0, 5.0].iter().any(|x| (m - x).abs() < 1e-6)
                }),
                "{nums:?}"
            );
        }
        assert_eq!(charts::texts_outside(&svg), Vec::<String>::new());
    }
}

/// Bars and the ladder ignore the log setting: their lengths are their values.
#[test]
fn log_does_not_apply_to_bars() {
    let c = seed();
    for kind in [ChartKind::Bars, ChartKind::Ladder] {
        let lin = render(&c, &view(kind, MetricKind::Ttft, Stat::Mean), &[]).unwrap();
        let log =
            render(&c, &ChartView { log: true, ..view(kind, MetricKind::Ttft, Stat::Mean) }, &[]).unwrap();
        assert_eq!(lin, log);
    }
}

/// A sweep's runs share a label: the chart adds their concurrency.
#[test]
fn a_sweeps_bars_carry_their_concurrency() {
    let mut c = seed();
    for r in &mut c.runs[17..21] {
        r.spec.label = "vLLM sweep".into();
    }
    let svg = render(&c, &view(ChartKind::Bars, MetricKind::Ttft, Stat::Mean), &[]).unwrap();
    for (id, bs) in [(18, 1), (19, 2), (20, 4), (21, 8)] {
        assert!(charts::has_text(&svg, &format!("#{id} vLLM sweep BS={bs}")), "#{id}");
    }
    // A label alone in the set stays as it is.
    assert!(charts::has_text(&svg, "#1 vLLM"));
}

/// E2EL is not in the study: every bar says missing (none is a 0); a sweep run without a
/// result breaks its line and is marked.
#[test]
fn missing_numbers_are_drawn_as_missing() {
    let bars = svg(ChartKind::Bars, MetricKind::E2el, Stat::Mean);
    assert_eq!(bars.matches(">\nmissing\n</text>").count(), 25);
    assert!(!bars.contains("data-value="));
    let sweep = svg_of_sweep_missing();
    assert!(sweep.contains("data-missing=\"true\""), "{sweep}");
    assert!(!sweep.contains("data-y=\"0\""));
    let all_missing = svg(ChartKind::Sweep, MetricKind::E2el, Stat::Mean);
    assert!(all_missing.contains("is missing"), "{all_missing}");
}

/// Writes the seed's charts to $LATLAB_CHART_DUMP (a folder) to look at; a no-op without it.
#[test]
fn dump_for_a_look() {
    let Some(dir) = std::env::var_os("LATLAB_CHART_DUMP") else { return };
    let dir = std::path::PathBuf::from(dir);
    for (name, kind, m, s) in [
        ("bars", ChartKind::Bars, MetricKind::Ttft, Stat::P(99.0)),
        ("ladder", ChartKind::Ladder, MetricKind::Tpot, Stat::P(99.0)),
        ("sweep", ChartKind::Sweep, MetricKind::Ttft, Stat::Mean),
        ("cdf", ChartKind::Cdf, MetricKind::Ttft, Stat::Mean),
    ] {
        std::fs::write(dir.join(format!("{name}.svg")), svg(kind, m, s)).unwrap();
    }
    std::fs::write(dir.join("sweep-missing.svg"), svg_of_sweep_missing()).unwrap();
}

fn svg_of_sweep_missing() -> String {
    let mut c = seed();
    c.runs[19].summary = None;
    render(&c, &view(ChartKind::Sweep, MetricKind::Tpot, Stat::Mean), &[]).unwrap()
}
