//! Property tests ("fuzzing" on stable) for what a checkpoint folder feeds the engine:
//! `config.json` (+ `generation_config.json`) through `ModelConfig::from_json`, its
//! `quantization_config` through `QuantConfig::from_hf`, and the safetensors files (the
//! 8-byte length, the JSON header, the data) and `model.safetensors.index.json` through
//! `ModelWeights::load`. Inputs: random bytes, arbitrary JSON, and valid configs and
//! checkpoints of a micro model after byte edits or structural edits (of the config, of
//! the safetensors header, of the index). Property: no panic; an accepted config
//! round-trips through `to_hf_json` and its sizes multiply without overflow; loaded
//! weights have the shapes the config implies.
//!
//! CI runs 2000 cases per property. Long run (`--show-output` prints how far inputs got):
//! `LATLAB_FUZZ_CASES=1000000 cargo test --profile fuzz -p engine --test fuzz -- --test-threads=1 --show-output`

use engine::config::ModelConfig;
use engine::quant_config::QuantConfig;
use engine::tensor_names::{is_projection, scale_name, tensor_specs};
use engine::weights::ModelWeights;
use fuzz_kit::*;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::TestCaseError;
use safetensors::{Dtype, tensor::TensorView};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::OnceLock;

const KEYS: &str = "architectures model_type vocab_size hidden_size intermediate_size
    num_hidden_layers num_attention_heads num_key_value_heads head_dim rms_norm_eps rope_theta
    max_position_embeddings tie_word_embeddings eos_token_id bos_token_id rope_scaling
    hidden_act attention_bias quantization_config quant_method fmt activation_scheme
    weight_block_size modules_to_not_convert dtype shape data_offsets __metadata__ weight_map
    metadata total_size";

const TEXTS: &str = "qwen3 llama Qwen3ForCausalLM silu gelu fp8 awq e4m3 e5m2 dynamic static
    lm_head model.embed_tokens model.layers.0.mlp BF16 F16 F32 F8_E4M3 F64 I8 U8 BOOL F8_E5M2
    model.safetensors model-00001-of-00002.safetensors model-00002-of-00002.safetensors";

/// A micro Qwen3 (8-token vocabulary, one layer) so that a checkpoint is a few hundred bytes.
fn micro(fp8: bool, tied: bool) -> Value {
    let mut c = json!({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 8,
        "hidden_size": 4, "intermediate_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 2, "tie_word_embeddings": tied, "eos_token_id": [1, 2],
        "bos_token_id": 0, "hidden_act": "silu", "attention_bias": false, "rope_scaling": null,
        "torch_dtype": "bfloat16", "max_position_embeddings": 64, "rms_norm_eps": 1e-6});
    if fp8 {
        c["quantization_config"] = QuantConfig::fp8().to_hf_json();
    }
    c
}

fn config_samples() -> Vec<Value> {
    let mut out = vec![micro(false, true), micro(true, false)];
    for p in ["tiny", "tiny-untied", "qwen3-8b"] {
        let mut c = engine::presets::preset(p).unwrap();
        out.push(c.to_hf_json());
        c.quantization = Some(QuantConfig::fp8());
        out.push(c.to_hf_json());
    }
    out
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

#[test]
fn config_json_never_panics_and_accepted_configs_round_trip() {
    let gen_cfg = prop_oneof![
        Just(None),
        proptest::collection::vec(0u64..10, 0..3).prop_map(|ids| Some(json!({"eos_token_id": ids}))),
        arb_json(words(KEYS)).prop_map(Some),
    ];
    let input = (json_docs(config_samples(), KEYS, TEXTS), gen_cfg);
    fuzz("config.json", ["not JSON", "refused", "accepted"], input, |(doc, g)| {
        let Ok(v) = serde_json::from_str::<Value>(&doc) else {
            return Ok(0);
        };
        let Ok(c) = ModelConfig::from_json(&v, g.as_ref()) else {
            return Ok(1);
        };
        // What loading does first with a config (the memory check counts every tensor).
        let _ = (c.q_dim(), c.kv_dim());
        if c.num_hidden_layers <= 64 {
            engine::model_source::param_count(&c);
        }
        let back = ModelConfig::from_json(&c.to_hf_json(), Some(&c.generation_config_json()));
        // A repeated eos id comes back once (harmless: the engine only asks whether an id is one).
        let (mut want, mut seen) = (c.clone(), vec![]);
        want.eos_token_ids.retain(|id| !seen.contains(id) && (seen.push(*id), true).1);
        let back = back.map_err(fail)?;
        prop_assert_eq!(back, want);
        Ok(2)
    });
}

#[test]
fn quantization_config_never_panics() {
    let other = json!({"quant_method": "fp8", "weight_block_size": [128, 128],
        "modules_to_not_convert": ["lm_head", "model.embed_tokens"]});
    let docs = json_docs(vec![QuantConfig::fp8().to_hf_json(), other], KEYS, TEXTS);
    fuzz("quantization_config", ["not JSON", "refused", "accepted"], docs, |doc| {
        let Ok(v) = serde_json::from_str::<Value>(&doc) else {
            return Ok(0);
        };
        let Ok(q) = QuantConfig::from_hf(Some(&v)) else {
            return Ok(1);
        };
        let back = q.map(|q| QuantConfig::from_hf(Some(&q.to_hf_json())));
        prop_assert!(back.is_none_or(|b| b.ok() == Some(q)));
        Ok(2)
    });
}

/// A valid checkpoint of `micro`: every tensor in `dtype`, or (fp8) the projections in
/// F8_E4M3 with their F32 block scales.
fn checkpoint(fp8: bool, tied: bool, dtype: Dtype) -> Vec<Tensor> {
    let cfg = ModelConfig::from_json(&micro(fp8, tied), None).unwrap();
    let mut out = vec![];
    for s in tensor_specs(&cfg) {
        let (n, name) = (s.numel(), s.name);
        if fp8 && is_projection(&name) {
            let scales = engine::fp8::scale_shape(s.shape[0], s.shape[1]).to_vec();
            out.push((scale_name(&name), Dtype::F32, scales, 0.5f32.to_le_bytes().to_vec()));
            out.push((name, Dtype::F8_E4M3, s.shape, (0..n as u8).collect()));
        } else {
            out.push((name, dtype, s.shape, vec![0x3e; n * dtype.bitsize() / 8]));
        }
    }
    out
}

type Tensor = (String, Dtype, Vec<usize>, Vec<u8>);

fn to_bytes(tensors: &[Tensor]) -> Vec<u8> {
    let views = tensors.iter().map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()));
    safetensors::serialize(views, None).unwrap()
}

/// Checkpoints that safetensors accepts but the config may not: each tensor kept, dropped,
/// stored in another dtype, or given another shape.
fn odd_checkpoint() -> impl Strategy<Value = Vec<u8>> {
    let base = checkpoint(true, false, Dtype::BF16);
    use Dtype::*;
    let choice = (0u8..40, select(vec![BF16, F16, F32, F64, F8_E4M3, U8, BOOL]), any::<Index>());
    proptest::collection::vec(choice, base.len()).prop_map(move |choices| {
        let mut out = vec![];
        for ((name, dtype, shape, _), (op, other, at)) in base.iter().zip(choices) {
            let (mut shape, mut dtype, k) = (shape.clone(), *dtype, at.index(shape.len()));
            match op {
                0 => continue,
                1 => dtype = other,
                2 => shape[k] += 1,
                3 => shape.push(1),
                _ => {}
            }
            let bytes = vec![0x3c; shape.iter().product::<usize>() * dtype.bitsize() / 8];
            out.push((name.clone(), dtype, shape, bytes));
        }
        to_bytes(&out)
    })
}

/// `bytes` with its JSON header edited (and the length prefix rewritten to match).
fn edit_header(bytes: &[u8], edits: &[(Index, ValueEdit)]) -> Vec<u8> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let header = serde_json::to_vec(&apply_value(header, edits)).unwrap();
    let len = (header.len() as u64).to_le_bytes();
    [&len[..], &header, &bytes[8 + n..]].concat()
}

/// Loads the checkpoint in `dir` as `micro(fp8, tied)` and checks the shapes.
fn check_load(dir: &Path, fp8: bool, tied: bool) -> Checked {
    let cfg = ModelConfig::from_json(&micro(fp8, tied), None).unwrap();
    let Ok((w, dtypes)) = ModelWeights::load(&cfg, dir) else {
        return Ok(1);
    };
    prop_assert!(!dtypes.is_empty() && w.layers.len() == 1 && w.lm_head().data.len() == 32);
    prop_assert_eq!(w.has_fp8(), fp8);
    Ok(2)
}

/// A temporary folder in memory where there is one: a million cases on disk spend most of
/// their time in writeback.
fn tmp_dir() -> tempfile::TempDir {
    let shm = tempfile::Builder::new().tempdir_in("/dev/shm");
    shm.or_else(|_| tempfile::tempdir()).unwrap()
}

/// A folder per test, reused by every case.
fn folder(name: &str) -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(tmp_dir);
    let path = dir.path().join(name);
    std::fs::create_dir_all(&path).unwrap();
    Box::leak(path.into_boxed_path())
}

#[test]
fn safetensors_files_never_panic() {
    use Dtype::*;
    let kinds = [(false, true, BF16), (false, false, F32), (false, true, F16), (true, false, BF16)];
    let blobs: Vec<_> = kinds.map(|(f, t, d)| (f, t, to_bytes(&checkpoint(f, t, d)))).to_vec();
    let mut names = words(KEYS);
    names.extend(checkpoint(true, false, BF16).into_iter().map(|t| t.0));
    let texts = [words(TEXTS), names.clone()].concat();
    let dict = tokens(&format!("{KEYS} {TEXTS}"));
    let blob = select(blobs);
    let docs = prop_oneof![
        1 => (any::<bool>(), any::<bool>(), proptest::collection::vec(any::<u8>(), 0..512)),
        4 => (any::<bool>(), any::<bool>(), odd_checkpoint()),
        3 => (blob.clone(), edits(dict.clone())).prop_map(|((f, t, b), e)| (f, t, apply(b, &e))),
        6 => (blob, value_edits(names, texts), prop::option::weighted(0.2, edits(dict)))
            .prop_map(|((f, t, b), v, e)| (f, t, apply(edit_header(&b, &v), &e.unwrap_or_default()))),
    ];
    let dir = folder("single");
    let depths = ["refused by safetensors", "refused by the engine", "loaded"];
    fuzz("safetensors", depths, (docs, any::<bool>()), |((fp8, tied, bytes), flip)| {
        std::fs::write(dir.join("model.safetensors"), &bytes).unwrap();
        if safetensors::SafeTensors::deserialize(&bytes).is_err() {
            prop_assert_eq!(check_load(dir, fp8, tied)?, 1, "loaded what safetensors refuses");
            return Ok(0);
        }
        // Now and then load with the other quantization than the file was made for.
        check_load(dir, fp8 ^ flip, tied)
    });
}

#[test]
fn sharded_checkpoint_index_never_panics() {
    let dir = folder("sharded");
    let tensors = checkpoint(true, false, Dtype::BF16);
    let (a, b) = tensors.split_at(tensors.len() / 2);
    let shards = ["model-00001-of-00002", "model-00002-of-00002"].map(|s| format!("{s}.safetensors"));
    let mut map = serde_json::Map::new();
    for (shard, part) in shards.iter().zip([a, b]) {
        std::fs::write(dir.join(shard), to_bytes(part)).unwrap();
        map.extend(part.iter().map(|t| (t.0.clone(), json!(shard))));
    }
    let index = json!({"metadata": {"total_size": 1234}, "weight_map": map});
    let depths = ["-", "refused", "loaded"];
    fuzz("safetensors index", depths, json_docs(vec![index], KEYS, TEXTS), |doc| {
        // Shard names that leave the folder are refused by the loader, not skipped here.
        std::fs::write(dir.join("model.safetensors.index.json"), &doc).unwrap();
        check_load(dir, true, false)
    });
}
