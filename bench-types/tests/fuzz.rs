//! Property tests ("fuzzing" on stable) for what an outsider can send to bench-types: a
//! `RunSpec` as JSON (`POST /api/runs`, the form) through serde and `validate`, and
//! `text::find_in_json` over arbitrary JSON values. Inputs: random bytes, arbitrary JSON,
//! and valid specs of every kind after byte edits or structural edits (a field's type
//! changed, keys dropped or added, values on and past each bound, deep nesting). Property:
//! no panic; a spec that validates round-trips through serde, expands into valid specs and,
//! for launched engines, renders its command.
//!
//! CI runs 2000 cases per property. Long run (`--show-output` prints how far inputs got):
//! `LATLAB_FUZZ_CASES=1000000 cargo test --profile fuzz -p bench-types --test fuzz -- --test-threads=1 --show-output`

use bench_types::launched::seed_presets;
use bench_types::text::{find_in_json, forbidden_char};
use bench_types::{RunSpec, Target};
use fuzz_kit::*;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};

/// Field names and enum spellings of `RunSpec`.
const KEYS: &str = "label target model tokenizer backend dataset num_prompts load sampling seed
    warmup_requests request_timeout_s percentiles goodput time_limit_s kind base_url api_key_env
    model_source device quantization max_batch cuda_graphs engine model_flag speculative
    attention_backend cuda_graph_max_bs torch_compile extra_args algorithm draft_model num_steps
    topk num_draft_tokens source command missing path output_len input_len range_ratio
    max_concurrency request_rate burstiness extra_body temperature ttft_ms tpot_ms e2el_ms
    external native launched imported sharegpt random jsonl openai openai-chat fp8 none";

/// Strings on and just past what validation accepts.
const TEXTS: &str = r#"random: random:tiny random:a/b /abs/path rel/path ../x a/../b ~x -x x;y
    http:// https://h http:///x http://u@h http://h:1/x LATLAB_KEY_ LATLAB_KEY_A 1abc --flag
    Qwen/Qwen3-8B a/b/c .a a. a..b -O3 -O --max-num-seqs --max-num-seqs=0 --max_num_seqs=8 -tp
    0.5 --compilation-config --comp --cuda-graph-max-bs --mem-fraction-static 0.8 é 🚀 x\u0000"#;

/// Valid specs of every target and dataset kind: each seed study import, each launched preset.
fn samples() -> Vec<Value> {
    let base = json!({
        "label": "sweep", "model": "Qwen/Qwen3-8B", "backend": "openai",
        "target": {"kind": "external", "base_url": "http://127.0.0.1:8000", "api_key_env": "LATLAB_KEY_X"},
        "dataset": {"kind": "random", "input_len": 128, "output_len": 64, "range_ratio": 0.5},
        "num_prompts": 100, "load": {"max_concurrency": [1, 2, 4, 8], "request_rate": 10.5, "burstiness": 0.5},
        "sampling": {"ignore_eos": true, "temperature": 0.7, "extra_body": {"top_k": [1, "x", null], "c": {"e": false}}},
        "seed": 42, "warmup_requests": 3, "request_timeout_s": 30.0, "percentiles": [50, 90, 99.9],
        "goodput": {"ttft_ms": 200.0, "tpot_ms": 20, "e2el_ms": 5000}, "time_limit_s": 3600
    });
    let with = |target: Value, dataset: Value| {
        let mut s = base.clone();
        s["target"] = target;
        s["dataset"] = dataset;
        s
    };
    let native = json!({"kind": "native", "model_source": "random:tiny", "device": "cpu",
        "quantization": "fp8", "max_batch": 16, "cuda_graphs": false});
    let sharegpt = json!({"kind": "sharegpt", "path": "sharegpt/x.json", "output_len": 32});
    let jsonl = json!({"kind": "jsonl", "path": "p.jsonl"});
    let mut out = vec![
        base.clone(),
        with(native, sharegpt),
        with(
            json!({"kind": "native",
        "model_source": "/models/q"}),
            jsonl,
        ),
    ];
    for (_, t) in seed_presets() {
        let t = serde_json::to_value(Target::Launched(t)).unwrap();
        out.push(with(t, base["dataset"].clone()));
    }
    let seed = include_str!("../../data/seed/qwen3-8b-h100-gpustack.json");
    let seed: Value = serde_json::from_str(seed).unwrap();
    out.extend(seed["runs"].as_array().unwrap().iter().map(|r| r["spec"].clone()));
    for s in &out {
        let spec: RunSpec = serde_json::from_value(s.clone()).unwrap();
        assert!(spec.validate().is_ok(), "sample does not validate: {s}");
    }
    out
}

/// Equal, except that floats may move by a few ULPs: without serde_json's `float_roundtrip`
/// feature its float parsing is best-effort, and each print-and-parse can drift by up to 2
/// ULPs (9.117945587241223e-181 comes back as 9.117945587241225e-181).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x.signum() == y.signum() && x.to_bits().abs_diff(y.to_bits()) <= 4)
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn check_runspec(doc: String) -> Checked {
    let Ok(spec) = serde_json::from_str::<RunSpec>(&doc) else {
        return Ok(0);
    };
    // What lists and the UI show of a spec, valid or not.
    let _ = (spec.target_description(), spec.load_label(), spec.dataset.name());
    if spec.validate().is_err() {
        return Ok(1);
    }
    let text = serde_json::to_string(&spec).unwrap();
    let back: RunSpec = serde_json::from_str(&text).map_err(fail)?;
    let (a, b) = (serde_json::to_value(&spec).unwrap(), serde_json::to_value(&back).unwrap());
    prop_assert!(same(&a, &b), "round trip changed the spec:\n{}\n{}", a, b);
    for one in spec.expand().iter().chain([&back]) {
        one.validate().map_err(fail)?;
    }
    if let Target::Launched(l) = &spec.target {
        let cmd = l.command(Some(8000), "/tmp/cfg").map_err(fail)?;
        let _ = (cmd.display(), l.render(None, ""));
    }
    Ok(2)
}

#[test]
fn runspec_json_never_panics_and_valid_specs_round_trip() {
    let depths = ["refused by serde", "refused by validate", "accepted"];
    fuzz("RunSpec JSON", depths, json_docs(samples(), KEYS, TEXTS), check_runspec);
}

/// What `find_in_json` must find: a forbidden character in any key or string.
fn has_forbidden(v: &Value) -> bool {
    match v {
        Value::String(s) => forbidden_char(s).is_some(),
        Value::Array(a) => a.iter().any(has_forbidden),
        Value::Object(m) => m.iter().any(|(k, x)| forbidden_char(k).is_some() || has_forbidden(x)),
        _ => false,
    }
}

#[test]
fn find_in_json_names_a_forbidden_string_exactly_when_there_is_one() {
    // Strings with a forbidden character now and then, nested as deep as serde_json parses.
    let texts = tokens(TEXTS);
    let roots = prop_oneof![Just(String::new()), select(words(KEYS))];
    let input = (arb_json(texts), 0usize..128, roots);
    let depths = ["-", "clean", "with a forbidden character"];
    fuzz("find_in_json", depths, input, |(v, depth, root)| {
        let v = (0..depth).fold(v, |v, i| match i % 2 {
            0 => Value::Array(vec![v]),
            _ => Value::Object([("k".to_string(), v)].into_iter().collect()),
        });
        match find_in_json(&root, &v) {
            Some((path, c)) => {
                prop_assert_eq!(forbidden_char(&c.to_string()), Some(c));
                prop_assert!(path.starts_with(&root));
                Ok(2)
            }
            None => {
                prop_assert!(!has_forbidden(&v));
                Ok(1)
            }
        }
    });
}
