//! A speculating native engine's own account of a run: its `/metrics` counters, read once
//! just before the measured requests (after the warm-up) and once after the last, and
//! subtracted, so the numbers cover the timed part only; and its `/v1/engine/info`, which
//! says which tree and draft ran. Whatever cannot be read leaves the accepted length
//! missing with a note; it never fails the run.

use super::prometheus_text::{fetch, samples};
use bench_types::launched::Speculative;
use bench_types::native_speculative::Tree;
use bench_types::spec_decode::{PositionAcceptance, RANDOM_DRAFT_CAVEAT, SpecDecodeResult};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const VERIFY_STEPS: &str = "latlab_spec_verify_steps_total";
const EMITTED_TOKENS: &str = "latlab_spec_emitted_tokens_total";
const ACCEPTED: &str = "latlab_spec_accepted_total";
const PROPOSED: &str = "latlab_spec_proposed_total";
const DRAFT_SECONDS: &str = "latlab_spec_draft_seconds_total";
const VERIFY_SECONDS: &str = "latlab_spec_verify_seconds_total";

/// The engine's cumulative speculation counters at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Row-steps verified: one per speculating row per step.
    pub verify_steps: f64,
    /// Tokens those row-steps emitted, the bonus token included.
    pub emitted_tokens: f64,
    /// By draft depth (1 = the first drafted token).
    pub accepted: BTreeMap<u32, f64>,
    pub proposed: BTreeMap<u32, f64>,
    pub draft_seconds: Option<f64>,
    pub verify_seconds: Option<f64>,
}

/// The speculation counters of a `/metrics` body (read by prometheus_text.rs); an error
/// says what is missing or bad.
pub fn parse_metrics(text: &str) -> Result<Counters, String> {
    let mut c = Counters::default();
    let (mut steps, mut emitted) = (None, None);
    for sample in samples(text)? {
        let name = sample.name.as_str();
        if !name.starts_with("latlab_spec_") {
            continue;
        }
        let value = sample.value;
        if !(value.is_finite() && value >= 0.0) {
            return Err(format!("{name} has the value {value}, not a count"));
        }
        let position = || {
            sample
                .label("position")
                .and_then(|p| p.parse::<u32>().ok())
                .ok_or_else(|| format!("{name} has no numeric position label: {:?}", sample.labels))
        };
        match name {
            VERIFY_STEPS => steps = Some(value),
            EMITTED_TOKENS => emitted = Some(value),
            ACCEPTED => {
                c.accepted.insert(position()?, value);
            }
            PROPOSED => {
                c.proposed.insert(position()?, value);
            }
            DRAFT_SECONDS => c.draft_seconds = Some(value),
            VERIFY_SECONDS => c.verify_seconds = Some(value),
            _ => {}
        }
    }
    match (steps, emitted) {
        (Some(s), Some(e)) => {
            c.verify_steps = s;
            c.emitted_tokens = e;
            Ok(c)
        }
        _ => Err(format!("no {VERIFY_STEPS} and {EMITTED_TOKENS} counters in it")),
    }
}

/// `GET base/metrics`, parsed.
pub async fn scrape(client: &reqwest::Client, base_url: &str) -> Result<Counters, String> {
    let url = format!("{base_url}/metrics");
    let text = fetch(client, &url).await?;
    parse_metrics(&text).map_err(|e| format!("{url}: {e}"))
}

/// The counters' growth from `before` to `after`; an error when one went backwards (the
/// engine restarted, or they are not counters).
pub fn difference(before: &Counters, after: &Counters) -> Result<Counters, String> {
    let d = |name: &str, a: f64, b: f64| {
        if b < a { Err(format!("{name} went down during the run ({a} -> {b})")) } else { Ok(b - a) }
    };
    let by_position = |name: &str, a: &BTreeMap<u32, f64>, b: &BTreeMap<u32, f64>| {
        b.iter()
            .map(|(p, v)| Ok((*p, d(name, a.get(p).copied().unwrap_or(0.0), *v)?)))
            .collect::<Result<BTreeMap<u32, f64>, String>>()
    };
    let opt = |name: &str, a: Option<f64>, b: Option<f64>| -> Result<Option<f64>, String> {
        match (a, b) {
            (Some(a), Some(b)) => d(name, a, b).map(Some),
            _ => Ok(None),
        }
    };
    Ok(Counters {
        verify_steps: d(VERIFY_STEPS, before.verify_steps, after.verify_steps)?,
        emitted_tokens: d(EMITTED_TOKENS, before.emitted_tokens, after.emitted_tokens)?,
        accepted: by_position(ACCEPTED, &before.accepted, &after.accepted)?,
        proposed: by_position(PROPOSED, &before.proposed, &after.proposed)?,
        draft_seconds: opt(DRAFT_SECONDS, before.draft_seconds, after.draft_seconds)?,
        verify_seconds: opt(VERIFY_SECONDS, before.verify_seconds, after.verify_seconds)?,
    })
}

/// What `/v1/engine/info`'s `speculative` says, as far as it says it.
struct Reported {
    algorithm: Option<String>,
    tree: Option<Tree>,
    source: Option<String>,
    random_weights: Option<bool>,
}

fn reported(engine_info: Option<&serde_json::Value>) -> Option<Reported> {
    let s = engine_info?.get("speculative").filter(|s| s.is_object())?;
    let n = |k: &str| s[k].as_u64().and_then(|v| u32::try_from(v).ok());
    let tree = match (n("num_steps"), n("topk"), n("num_draft_tokens")) {
        (Some(num_steps), Some(topk), Some(num_draft_tokens)) => {
            Some(Tree { num_steps, topk, num_draft_tokens })
        }
        _ => None,
    };
    Some(Reported {
        algorithm: s["algorithm"].as_str().map(str::to_string),
        tree,
        source: s["draft"]["source"].as_str().map(str::to_string),
        random_weights: s["draft"]["random_weights"].as_bool(),
    })
}

/// The run's speculation numbers from the two scrapes and the engine's self-description;
/// `requested` fills in what the engine did not say.
pub fn summarize(
    requested: &Speculative,
    engine_info: Option<&serde_json::Value>,
    before: Result<Counters, String>,
    after: Result<Counters, String>,
) -> SpecDecodeResult {
    let mut notes = Vec::new();
    let info = reported(engine_info);
    if info.is_none() {
        notes.push(
            "the engine's /v1/engine/info did not describe its speculation; the tree shown is the one asked for"
                .to_string(),
        );
    }
    let tree_reported = info.as_ref().is_some_and(|i| i.tree.is_some());
    let tree = info.as_ref().and_then(|i| i.tree).unwrap_or_else(|| Tree::of(requested));
    let draft_source =
        info.as_ref().and_then(|i| i.source.clone()).unwrap_or_else(|| requested.draft_model.clone());
    // A random draft is labelled whoever says so: the engine, or the draft's own name.
    let random_weights = info.as_ref().and_then(|i| i.random_weights).unwrap_or(false)
        || draft_source.starts_with("random:")
        || requested.draft_model.starts_with("random:");
    let diff = match (before, after) {
        (Ok(b), Ok(a)) => difference(&b, &a),
        (Err(e), _) => Err(format!("before the measured part, {e}")),
        (_, Err(e)) => Err(format!("after the measured part, {e}")),
    };
    let mut result = SpecDecodeResult {
        algorithm: info.as_ref().and_then(|i| i.algorithm.clone()).unwrap_or_else(|| "EAGLE3".into()),
        tree,
        tree_reported,
        draft_source,
        random_weights,
        mean_accepted_length: None,
        verify_steps: None,
        emitted_tokens: None,
        by_position: Vec::new(),
        draft_seconds: None,
        verify_seconds: None,
        caveat: random_weights.then(|| RANDOM_DRAFT_CAVEAT.to_string()),
        notes: Vec::new(),
        synthetic: None,
    };
    match diff {
        Err(e) => notes.push(format!("accepted length missing: {e}")),
        Ok(d) => {
            result.verify_steps = Some(d.verify_steps);
            result.emitted_tokens = Some(d.emitted_tokens);
            result.by_position = d
                .proposed
                .iter()
                .map(|(&position, &proposed)| PositionAcceptance {
                    position,
                    accepted: d.accepted.get(&position).copied().unwrap_or(0.0),
                    proposed,
                })
                .collect();
            result.draft_seconds = d.draft_seconds;
            result.verify_seconds = d.verify_seconds;
            // Each verified row-step emits between 1 (the bonus alone) and depth + 1 tokens.
            let most = f64::from(tree.num_steps) + 1.0;
            let mean = d.emitted_tokens / d.verify_steps;
            if d.verify_steps == 0.0 {
                notes.push(
                    "accepted length missing: the engine verified no speculative step while measuring".into(),
                );
            } else if !(1.0..=most).contains(&mean) {
                notes.push(format!(
                    "accepted length missing: the counters give {mean:.3} tokens per verify step, outside 1 to {most} for this tree"
                ));
            } else {
                result.mean_accepted_length = Some(mean);
            }
        }
    }
    result.notes = notes;
    result
}

/// The scrapes around one benchmark: `hook` goes into the bench's `before_measuring`,
/// `finish` runs after the last request, while the engine still serves.
#[derive(Clone)]
pub struct SpecScrape {
    client: reqwest::Client,
    base_url: String,
    before: Arc<Mutex<Option<Result<Counters, String>>>>,
}

impl SpecScrape {
    pub fn new(base_url: &str) -> Self {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap_or_default();
        SpecScrape { client, base_url: base_url.trim_end_matches('/').to_string(), before: Arc::default() }
    }

    pub fn hook(&self) -> bench::BeforeMeasuring {
        let me = self.clone();
        Arc::new(move || {
            let me = me.clone();
            Box::pin(async move {
                let counters = scrape(&me.client, &me.base_url).await;
                *me.before.lock().unwrap() = Some(counters);
            })
        })
    }

    pub async fn finish(
        &self,
        requested: &Speculative,
        engine_info: Option<&serde_json::Value>,
    ) -> SpecDecodeResult {
        let after = scrape(&self.client, &self.base_url).await;
        let before =
            self.before.lock().unwrap().take().unwrap_or_else(|| {
                Err("/metrics was not read (the run never reached its measured part)".into())
            });
        summarize(requested, engine_info, before, after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped as latlab-engine writes it (engine-server/src/spec_metrics.rs), with a
    /// timestamp, a label value holding `}` and a family with no samples.
    const TEXT: &str = r#"# HELP latlab_spec_verify_steps_total Row-steps verified.
# TYPE latlab_spec_verify_steps_total counter
latlab_spec_verify_steps_total 100
# TYPE latlab_spec_emitted_tokens_total counter
latlab_spec_emitted_tokens_total 250 1700000000000
# TYPE latlab_spec_accept_length histogram
latlab_spec_accept_length_bucket{le="1"} 20
latlab_spec_accept_length_bucket{le="+Inf"} 100
latlab_spec_accept_length_sum 250
latlab_spec_accept_length_count 100
# TYPE latlab_spec_proposed_total counter
latlab_spec_proposed_total{position="1"} 100
latlab_spec_proposed_total{position="2"} 100
# TYPE latlab_spec_accepted_total counter
latlab_spec_accepted_total{position="1",note=""} 80
latlab_spec_accepted_total{position="2",note="a } in quotes"} 50
# TYPE latlab_spec_draft_seconds_total counter
latlab_spec_draft_seconds_total 1.500000000
# HELP latlab_spec_verify_seconds_total Time in the target's verify forwards.
# TYPE latlab_spec_verify_seconds_total counter
# TYPE other_metric gauge
other_metric{x="y"} NaN
"#;

    #[test]
    fn counters_parse_with_labels_comments_and_timestamps() {
        let c = parse_metrics(TEXT).unwrap();
        assert_eq!((c.verify_steps, c.emitted_tokens), (100.0, 250.0));
        assert_eq!(c.accepted, BTreeMap::from([(1, 80.0), (2, 50.0)]));
        assert_eq!(c.proposed, BTreeMap::from([(1, 100.0), (2, 100.0)]));
        assert_eq!((c.draft_seconds, c.verify_seconds), (Some(1.5), None));
    }

    #[test]
    fn garbled_or_missing_counters_are_errors_that_say_what() {
        assert!(
            parse_metrics("# TYPE other gauge\nother 1\n")
                .unwrap_err()
                .contains("no latlab_spec_verify_steps_total")
        );
        let e = parse_metrics("<html>502 Bad Gateway</html>").unwrap_err();
        assert!(e.contains("not the Prometheus text format"), "{e}");
        let e = parse_metrics("latlab_spec_verify_steps_total abc\n").unwrap_err();
        assert!(e.contains("not the Prometheus text format"), "{e}");
        // Untyped samples are not checked by the parser: a count must still be a count.
        let e = parse_metrics("latlab_spec_verify_steps_total -1\n").unwrap_err();
        assert!(e.contains("latlab_spec_verify_steps_total has the value -1, not a count"), "{e}");
        let e = parse_metrics("# TYPE latlab_spec_verify_steps_total counter\nlatlab_spec_verify_steps_total 1\n# TYPE latlab_spec_emitted_tokens_total counter\nlatlab_spec_emitted_tokens_total 1\n# TYPE latlab_spec_accepted_total counter\nlatlab_spec_accepted_total{depth=\"1\"} 3\n").unwrap_err();
        assert!(e.contains("position"), "{e}");
    }

    fn eagle3() -> Speculative {
        serde_json::from_value(
            serde_json::json!({"algorithm": "eagle3", "draft_model": "random:tiny-eagle3"}),
        )
        .unwrap()
    }

    #[test]
    fn the_mean_is_emitted_over_verified_steps_of_the_timed_part_only() {
        let before = parse_metrics(TEXT).unwrap();
        let after = parse_metrics(&TEXT.replace(" 100\n", " 300\n").replace(" 250 ", " 850 ")).unwrap();
        let info = serde_json::json!({"speculative": {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1,
            "num_draft_tokens": 4, "draft": {"source": "random:tiny-eagle3", "random_weights": true}}});
        let r = summarize(&eagle3(), Some(&info), Ok(before), Ok(after));
        assert_eq!(r.mean_accepted_length, Some(3.0), "(850 - 250) / (300 - 100)");
        assert_eq!(r.caveat.as_deref(), Some(RANDOM_DRAFT_CAVEAT));
        assert!(r.tree_reported && r.notes.is_empty(), "{:?}", r.notes);
        assert_eq!(r.by_position[0].proposed, 200.0);
    }

    #[test]
    fn a_failed_scrape_or_a_restart_leaves_the_length_missing_with_a_note() {
        let ok = parse_metrics(TEXT).unwrap();
        let r = summarize(&eagle3(), None, Err("http://x/metrics answered HTTP 404".into()), Ok(ok.clone()));
        assert_eq!(r.mean_accepted_length, None);
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("before the measured part, http://x/metrics answered HTTP 404"))
        );
        assert!(r.notes.iter().any(|n| n.contains("/v1/engine/info did not describe")));
        assert!(r.random_weights, "a random: draft is labelled even when the engine says nothing");
        let restarted = Counters { verify_steps: 1.0, ..ok.clone() };
        let r = summarize(&eagle3(), None, Ok(ok), Ok(restarted));
        assert!(r.notes.iter().any(|n| n.contains("went down")), "{:?}", r.notes);
    }
}
