//! EAGLE-3 through real HTTP with SGLang's flags: a draft checkpoint written by
//! `make-model --eagle3` and the `random:<preset>-eagle3` shorthand serve the target's
//! exact greedy text; /v1/engine/info names the draft and tree and labels a random
//! draft's acceptance; /metrics counts what was verified; bad flags are refused by name.

mod common;

use common::{completion_text, greedy_text_and_info, make_model, sse, start_model};
use serde_json::json;
use std::process::Command;

#[tokio::test]
async fn a_draft_checkpoint_with_the_seed_studys_flags_serves_the_targets_greedy_text() {
    let dir = tempfile::tempdir().unwrap();
    make_model(&["--preset", "tiny", "--eagle3"], dir.path());
    assert!(dir.path().join("config.json").exists());
    let draft = dir.path().to_str().unwrap();
    let flags = [
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        draft,
        "--speculative-num-steps",
        "4",
        "--speculative-eagle-topk",
        "4",
        "--speculative-num-draft-tokens",
        "16",
    ];
    let (spec_text, info) = greedy_text_and_info("random:tiny", &flags).await;
    let (plain_text, plain_info) = greedy_text_and_info("random:tiny", &[]).await;
    assert_eq!(spec_text, plain_text);
    let s = &info["speculative"];
    assert_eq!(
        (s["algorithm"].as_str(), s["num_steps"].as_u64(), s["topk"].as_u64()),
        (Some("EAGLE3"), Some(4), Some(4))
    );
    assert_eq!(s["num_draft_tokens"], 16);
    assert_eq!(s["draft"]["source"], draft);
    assert_eq!(s["draft"]["random_weights"], false, "a checkpoint's weights are taken as real");
    assert_eq!(s["draft_device"], "cpu", "where the draft's forward runs");
    assert!(plain_info["speculative"].is_null());
}

#[tokio::test]
async fn the_shorthand_streams_counts_and_labels_a_random_draft() {
    let s = start_model("random:tiny-eagle3", &[]);
    let info: serde_json::Value =
        reqwest::get(format!("{}/v1/engine/info", s.base)).await.unwrap().json().await.unwrap();
    assert_eq!(info["speculative"]["draft"]["source"], "random:tiny-eagle3");
    assert_eq!(info["speculative"]["draft"]["random_weights"], true);
    assert_eq!(info["speculative_note"], "random draft weights: acceptance means nothing");
    let body = json!({"model": "tiny", "prompt": "Once upon a time", "max_tokens": 12, "temperature": 0,
        "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}});
    let events = sse(&s, "/v1/completions", body).await;
    assert_eq!(events.last().unwrap(), "[DONE]");
    let usage: serde_json::Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 12);
    let metrics = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
    let value = |name: &str| -> f64 {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(name) && !l.starts_with('#'))
            .unwrap_or_else(|| panic!("{name} in {metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (steps, emitted) =
        (value("latlab_spec_verify_steps_total "), value("latlab_spec_emitted_tokens_total "));
    // The first token comes from the prefill; the other 11 from verified trees (the last
    // step may emit past what the stream kept).
    assert!(steps >= 1.0 && (11.0..=14.0).contains(&emitted), "steps {steps}, emitted {emitted}");
    assert_eq!(value("latlab_spec_accept_length_count "), steps);
    assert!(metrics.contains("latlab_spec_accepted_total{position=\"3\"}"), "{metrics}");
    // One verify call per step with a row to verify (one request here: one row a step).
    assert_eq!(value("latlab_spec_verify_calls_total "), steps);
    assert!(value("latlab_spec_draft_calls_total ") >= steps, "{metrics}");
}

/// `--speculative-synthetic-acceptance`: the info says so and labels the mode; the same
/// prompt twice gives the same greedy text, the second time through verified rounds.
#[tokio::test]
async fn synthetic_acceptance_is_labelled_and_keeps_the_greedy_text() {
    let s = start_model("random:tiny-eagle3", &["--speculative-synthetic-acceptance", "3"]);
    let info: serde_json::Value =
        reqwest::get(format!("{}/v1/engine/info", s.base)).await.unwrap().json().await.unwrap();
    assert_eq!(info["speculative"]["synthetic_acceptance"], 3.0);
    let note = info["speculative_note"].as_str().unwrap_or_default();
    assert!(note.starts_with("synthetic acceptance:"), "{info}");
    let body = json!({"model": "tiny", "prompt": "Once upon a time", "max_tokens": 24, "temperature": 0,
        "ignore_eos": true});
    // First sight records the prompt; the second speculates on it.
    let (first, second) = (completion_text(&s.base, &body).await, completion_text(&s.base, &body).await);
    assert_eq!(first, second);
    let metrics = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
    let steps = metrics
        .lines()
        .find(|l| l.starts_with("latlab_spec_verify_steps_total "))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(steps > 0.0, "the second request speculated: {metrics}");
    assert!(metrics.contains("\nlatlab_spec_synthetic_acceptance 3\n"), "{metrics}");
    assert!(metrics.contains("# HELP latlab_spec_synthetic_acceptance Synthetic acceptance:"), "{metrics}");
}

#[test]
fn bad_speculative_flags_are_refused_by_name() {
    let refused = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_latlab-engine"))
            .args(["serve", "--model", "random:tiny", "--port", "0"])
            .args(args)
            .env("LATLAB_ASSETS_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let e = refused(&[
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "random:tiny-eagle3",
        "--speculative-num-steps",
        "2",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "8",
    ]);
    assert!(e.contains("--speculative-num-draft-tokens 8"), "{e}");
    let e = refused(&["--speculative-num-steps", "2"]);
    assert!(e.contains("--speculative-algorithm"), "{e}");
    let e = refused(&[
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "/nonexistent/draft",
    ]);
    assert!(e.contains("/nonexistent/draft"), "{e}");
    // A draft for another target shape.
    let e = refused(&[
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "random:tiny-mqa-eagle3",
    ]);
    assert!(e.to_lowercase().contains("hidden") || e.contains("tiny-mqa"), "{e}");
}
