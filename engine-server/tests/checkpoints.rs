//! End to end through real HTTP: checkpoints written by `latlab-engine make-model` (bf16
//! sharded, and FP8) serve as the same model as the random preset they came from.

mod common;

use common::{greedy_text_and_info, make_model};
use serde_json::{Value, json};
use std::process::Command;

/// `make-model` writes a sharded checkpoint that `serve --model DIR` loads, and it is the same
/// model as `random:tiny` with the same seed: identical greedy text.
#[tokio::test]
async fn make_model_checkpoint_serves_like_the_random_preset() {
    let dir = tempfile::tempdir().unwrap();
    make_model(&["--preset", "tiny", "--seed", "5", "--max-shard-bytes", "8000000"], dir.path());
    for f in [
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "model.safetensors.index.json",
    ] {
        assert!(dir.path().join(f).exists(), "{f}");
    }
    let (ckpt_text, ckpt_info) = greedy_text_and_info(dir.path().to_str().unwrap(), &["--seed", "5"]).await;
    let (rand_text, rand_info) = greedy_text_and_info("random:tiny", &["--seed", "5"]).await;
    assert_eq!(ckpt_text, rand_text);
    assert_eq!(ckpt_info["weights"], "checkpoint");
    assert_eq!(rand_info["weights"], "random");
}

/// `make-model --quantization fp8` writes an FP8 checkpoint that serves without a flag, as
/// the same model as `random:tiny --quantization fp8`; info says fp8 and where weights came
/// from; `--quantization none` on it is refused at start.
#[tokio::test]
async fn fp8_checkpoint_serves_like_the_random_preset_quantized_at_load() {
    let dir = tempfile::tempdir().unwrap();
    make_model(&["--preset", "tiny", "--seed", "5", "--quantization", "fp8"], dir.path());
    let path = dir.path().to_str().unwrap();
    let mut seen = vec![];
    for (model, extra) in
        [(path, vec!["--seed", "5"]), ("random:tiny", vec!["--seed", "5", "--quantization", "fp8"])]
    {
        let (text, info) = greedy_text_and_info(model, &extra).await;
        assert_eq!(info["quantization"], "fp8", "{model}");
        assert_eq!(info["config"]["quantization"]["weight_block_size"], json!([128, 128]));
        // Prefill's bf16 copies are a CUDA matter: the CPU plan has none.
        assert_eq!(info["plan"]["fp8_prefill"], Value::Null, "{model}");
        seen.push((text, info["weights"].clone()));
    }
    assert_eq!(seen[0].0, seen[1].0);
    assert_eq!(seen[0].1, "checkpoint");
    assert_eq!(seen[1].1, "random");

    let err = refused_serve(path, &["--quantization", "none"]);
    assert!(err.contains("quantization") && err.contains("fp8"), "{err}");

    // A bad --fp8-prefill-weights names the flag and its values.
    let err = refused_serve(path, &["--fp8-prefill-weights", "fp16"]);
    assert!(
        err.contains("--fp8-prefill-weights") && err.contains("bf16-copy") && err.contains("dequant"),
        "{err}"
    );
}

/// `latlab-engine serve --model model extra..`, which must fail: its stderr.
fn refused_serve(model: &str, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_latlab-engine"))
        .args(["serve", "--model", model, "--port", "0"])
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "serve {extra:?} started: {err}");
    err
}
