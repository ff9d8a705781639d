use super::config::DraftConfig;
use super::weights::D2T;
use super::writer::write_random_draft;
use super::*;
use crate::presets::preset;
use std::collections::HashSet;

fn tiny() -> ModelConfig {
    preset("tiny").unwrap()
}

/// A stand-in for the target's embedding: cheap, deterministic, O(1) values.
fn embedding(c: &ModelConfig) -> Mat {
    let data = (0..c.vocab_size * c.hidden_size)
        .map(|i| {
            ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect();
    Mat::new(data, c.vocab_size, c.hidden_size)
}

/// Aux rows for positions `from..to` of a fake target: each position's rows are the same in
/// every call, as the target's would be.
fn aux(width: usize, from: usize, to: usize) -> Vec<f32> {
    (from * width..to * width).map(|i| ((i * 7919 % 1009) as f32 / 504.5 - 1.0) * 2.0).collect()
}

fn tokens(n: usize) -> Vec<u32> {
    (0..n).map(|i| (i as u32 * 40_503 + 17) % 151_936).collect()
}

/// A published-style draft config (AngelSlim/Qwen3-8B_eagle3's fields).
fn qwen3_8b_draft_json() -> serde_json::Value {
    serde_json::json!({
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 12288, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_hidden_layers": 1, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "max_position_embeddings": 40960, "vocab_size": 151936,
        "draft_vocab_size": 32000, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    })
}

#[test]
fn a_published_style_config_parses_and_fits_qwen3_8b() {
    let c = DraftConfig::from_json(&qwen3_8b_draft_json()).unwrap();
    assert_eq!((c.head_dim, c.draft_vocab_size, c.target_hidden_size), (128, 32_000, 4096));
    let target = preset("qwen3-8b").unwrap();
    c.check_target(&target).unwrap();
    // SGLang's default for 36 layers: the inputs of layers 2, 18 and 33.
    assert_eq!(c.aux_layers(36).unwrap(), vec![2, 18, 33]);
    // Named ids are layer outputs: captured as the next layer's input, nested or top-level.
    let mut v = qwen3_8b_draft_json();
    v["eagle_config"] = serde_json::json!({ "eagle_aux_hidden_state_layer_ids": [1, 17, 32] });
    assert_eq!(DraftConfig::from_json(&v).unwrap().aux_layers(36).unwrap(), vec![2, 18, 33]);
    let mut v = qwen3_8b_draft_json();
    v["eagle_aux_hidden_state_layer_ids"] = serde_json::json!([0, 5, 35]);
    let e = DraftConfig::from_json(&v).unwrap().aux_layers(36).unwrap_err().to_string();
    assert!(e.contains("eagle_aux_hidden_state_layer_ids") && e.contains("36"), "{e}");
}

#[test]
fn config_errors_name_the_field() {
    for (field, value) in [
        ("architectures", serde_json::json!(["LlamaForCausalLM"])),
        ("hidden_size", serde_json::json!(0)),
        ("num_key_value_heads", serde_json::json!(7)),
        ("draft_vocab_size", serde_json::json!(200_000)),
        ("rope_scaling", serde_json::json!({ "rope_type": "llama3" })),
        ("num_hidden_layers", serde_json::json!(2)),
        ("eagle_aux_hidden_state_layer_ids", serde_json::json!([1, 2])),
        ("hidden_act", serde_json::json!("gelu")),
        ("attention_bias", serde_json::json!(true)),
    ] {
        let mut v = qwen3_8b_draft_json();
        v[field] = value;
        let e = DraftConfig::from_json(&v).unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
    let mut v = qwen3_8b_draft_json();
    v.as_object_mut().unwrap().remove("intermediate_size");
    let e = DraftConfig::from_json(&v).unwrap_err().to_string();
    assert!(e.contains("intermediate_size") && e.contains("missing"), "{e}");
    let mut v = qwen3_8b_draft_json();
    v["eagle_config"] = serde_json::json!({ "eagle_aux_hidden_state_layer_ids": "x" });
    let e = DraftConfig::from_json(&v).unwrap_err().to_string();
    assert!(e.contains("eagle_config.eagle_aux_hidden_state_layer_ids"), "{e}");
}

#[test]
fn a_draft_for_another_target_is_refused_naming_the_field() {
    let c = DraftConfig::from_json(&qwen3_8b_draft_json()).unwrap();
    let small = preset("qwen3-0.6b").unwrap();
    let e = c.check_target(&small).unwrap_err().to_string();
    assert!(e.contains("target_hidden_size") && e.contains("1024"), "{e}");
    let mut v = qwen3_8b_draft_json();
    v["target_hidden_size"] = 1024.into();
    let e = DraftConfig::from_json(&v).unwrap().check_target(&small).unwrap_err().to_string();
    assert!(e.contains("`hidden_size`") && e.contains("shares its embedding"), "{e}");
    let big = preset("qwen3-8b").unwrap();
    let other_vocab = ModelConfig { vocab_size: 128_256, ..big };
    let e = c.check_target(&other_vocab).unwrap_err().to_string();
    assert!(e.contains("vocab_size"), "{e}");
}

#[test]
fn random_drafts_fit_every_preset() {
    for name in crate::presets::PRESET_NAMES {
        let target = preset(name).unwrap();
        let c = DraftConfig::for_target(&target, default_draft_vocab(&target));
        c.check_target(&target).unwrap();
        let back = DraftConfig::from_json(&c.to_hf_json()).unwrap();
        assert_eq!(back, c, "{name}");
    }
    // A 2-layer target cannot take SGLang's default: the config names layer 0's output.
    assert_eq!(DraftConfig::for_target(&tiny(), 1024).aux_layers(2).unwrap(), vec![1, 1, 1]);
    let untied = preset("tiny-untied").unwrap();
    assert_eq!(DraftConfig::for_target(&untied, 1024).aux_layers(3).unwrap(), vec![2, 1, 0]);
    assert_eq!(default_draft_vocab(&preset("qwen3-8b").unwrap()), 32_000);
    assert_eq!(default_draft_vocab(&tiny()), 1024);
    for bad in [0, 151_937] {
        let e = Eagle3Draft::random(&tiny(), bad, 0, 1, 16).unwrap_err().to_string();
        assert!(e.contains("draft_vocab_size"), "{bad}: {e}");
    }
}

#[test]
fn random_sources_name_a_target_preset() {
    assert_eq!(eagle3_target_preset("random:tiny-eagle3"), Some("tiny"));
    assert_eq!(eagle3_target_preset("random:qwen3-8b-eagle3"), Some("qwen3-8b"));
    for not in ["random:tiny", "random:nope-eagle3", "/ckpt/tiny-eagle3", "tiny-eagle3"] {
        assert_eq!(eagle3_target_preset(not), None, "{not}");
    }
    let d = load_draft("random:tiny-eagle3", &tiny(), 4, 16).unwrap();
    let info = d.describe();
    assert_eq!(info.source, "random:tiny-eagle3");
    assert!(info.random_weights);
    assert_eq!((info.draft_vocab_size, info.aux_layers), (1024, vec![1, 1, 1]));
    assert_eq!(d.aux_width(), 3 * 64);
    let e = load_draft("random:tiny-mqa-eagle3", &tiny(), 4, 16).unwrap_err().to_string();
    assert!(e.contains("hidden_size"), "{e}");
    let e = load_draft("random:nope-eagle3", &tiny(), 4, 16).unwrap_err().to_string();
    assert!(e.contains("tiny-untied"), "{e}");
}

/// Rewrite `dir/model.safetensors` through `edit`, which may drop or replace tensors.
fn rewrite(dir: &Path, edit: impl Fn(&str) -> Option<Option<(safetensors::Dtype, Vec<usize>, Vec<u8>)>>) {
    use safetensors::tensor::TensorView;
    let path = dir.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut owned = vec![];
    for (name, t) in st.tensors() {
        match edit(&name) {
            None => owned.push((name, t.dtype(), t.shape().to_vec(), t.data().to_vec())),
            Some(None) => {}
            Some(Some((dt, shape, data))) => owned.push((name, dt, shape, data)),
        }
    }
    let views: Vec<(String, TensorView<'_>)> =
        owned.iter().map(|(n, dt, s, d)| (n.clone(), TensorView::new(*dt, s.clone(), d).unwrap())).collect();
    safetensors::serialize_to_file(views, None, &path).unwrap();
}

#[test]
fn missing_and_misshaped_tensors_are_named() {
    let target = tiny();
    let load = |dir: &Path| Eagle3Draft::load(dir, &target, 2, 16).err().map(|e| e.to_string());
    let fresh = || {
        let dir = tempfile::tempdir().unwrap();
        write_random_draft(&target, 1024, 1, dir.path()).unwrap();
        dir
    };
    for name in [
        "fc.weight",
        "midlayer.hidden_norm.weight",
        "midlayer.self_attn.k_proj.weight",
        "lm_head.weight",
        D2T,
    ] {
        let dir = fresh();
        rewrite(dir.path(), |n| (n == name).then_some(None));
        let e = load(dir.path()).expect("refused");
        assert!(e.contains(&format!("`{name}`")) && e.contains("missing"), "{name}: {e}");
    }
    // A shape the config does not imply names the tensor and both shapes.
    let dir = fresh();
    rewrite(dir.path(), |n| {
        (n == "midlayer.self_attn.q_proj.weight")
            .then(|| Some((safetensors::Dtype::BF16, vec![64, 64], vec![0; 64 * 64 * 2])))
    });
    let e = load(dir.path()).expect("refused");
    assert!(
        e.contains("`midlayer.self_attn.q_proj.weight`") && e.contains("[64, 64]") && e.contains("[64, 128]"),
        "{e}"
    );
    // A config that disagrees with the tensors: the first tensor it reshapes is named.
    let dir = fresh();
    let mut c = DraftConfig::from_dir(dir.path()).unwrap().to_hf_json();
    c["draft_vocab_size"] = 1000.into();
    std::fs::write(dir.path().join("config.json"), c.to_string()).unwrap();
    let e = load(dir.path()).expect("refused");
    assert!(e.contains("`d2t`") && e.contains("[1024]") && e.contains("[1000]"), "{e}");
    // A d2t entry that leaves the target vocabulary names the draft id.
    let dir = fresh();
    rewrite(dir.path(), |n| {
        (n == D2T).then(|| {
            let mut v = vec![0i64; 1024];
            v[5] = 151_936;
            Some((safetensors::Dtype::I64, vec![1024], v.iter().flat_map(|x| x.to_le_bytes()).collect()))
        })
    });
    let e = load(dir.path()).expect("refused");
    assert!(e.contains("`d2t`") && e.contains("draft id 5"), "{e}");
    // t2d is optional, but not for another vocabulary.
    let dir = fresh();
    rewrite(dir.path(), |n| (n == "t2d").then_some(None));
    assert_eq!(load(dir.path()), None);
    rewrite(dir.path(), |n| (n == "midlayer.mlp.up_proj.weight").then_some(None));
    let e = load(dir.path()).expect("refused");
    assert!(e.contains("`midlayer.mlp.up_proj.weight`"), "{e}");
}

/// Writing then loading gives the in-memory random draft exactly (its values are bf16
/// already), hence the same proposals.
#[test]
fn written_draft_loads_back_as_the_random_one() {
    let target = tiny();
    let dir = tempfile::tempdir().unwrap();
    write_random_draft(&target, 1024, 9, dir.path()).unwrap();
    let mut loaded = Eagle3Draft::load(dir.path(), &target, 4, 16).unwrap();
    let mut mem = Eagle3Draft::random(&target, 1024, 9, 4, 16).unwrap();
    assert_eq!(loaded.config(), mem.config());
    let (a, b) = (loaded.weights(), mem.weights());
    assert_eq!(a.draft_to_target, b.draft_to_target);
    for (x, y) in
        [(&a.fc, &b.fc), (&a.q_proj, &b.q_proj), (&a.down_proj, &b.down_proj), (&a.lm_head, &b.lm_head)]
    {
        assert_eq!(x.data, y.data);
    }
    assert_eq!((&a.hidden_norm, &a.final_norm), (&b.hidden_norm, &b.final_norm));
    assert!(!loaded.describe().random_weights && mem.describe().random_weights);
    let embed = embedding(&target);
    let toks = tokens(6);
    let aux = aux(loaded.aux_width(), 0, 5);
    let row = DraftRow { tokens: &toks, draft_from: 0, aux: &aux, block_table: &[1] };
    let cfg = SpecConfig::new(3, 2, 6).unwrap();
    let t1 = loaded.propose(std::slice::from_ref(&row), &cfg, &embed).unwrap();
    let t2 = mem.propose(&[row], &cfg, &embed).unwrap();
    assert_eq!(t1, t2);
}

/// Proposals are valid trees of target ids the draft can name, whatever way the draft KV
/// was extended: one position per call gives what one call over all of them gives, and a
/// batch gives what its rows give alone.
#[test]
fn proposals_do_not_depend_on_how_the_kv_was_extended() {
    let target = tiny();
    let embed = embedding(&target);
    let new = || Eagle3Draft::random(&target, 1024, 5, 8, 4).unwrap();
    let image: HashSet<u32> = new().weights().draft_to_target.iter().copied().collect();
    let width = new().aux_width();
    let toks = tokens(5);
    let cfg = SpecConfig::new(4, 4, 16).unwrap();
    let table = [3u32, 6];

    let mut once = new();
    let all = aux(width, 0, 4);
    let row = DraftRow { tokens: &toks, draft_from: 0, aux: &all, block_table: &table };
    let tree = once.propose(&[row], &cfg, &embed).unwrap().remove(0);
    tree.check().unwrap();
    assert_eq!(tree.tokens.len(), 15);
    assert!(tree.tokens.iter().all(|t| image.contains(t)), "{:?}", tree.tokens);
    // A random draft's ids are spread over the target vocabulary: not the identity.
    assert!(tree.tokens.iter().any(|&t| t >= 1024), "{:?}", tree.tokens);
    assert!(tree.chunk_depths().iter().any(|&d| d >= 2));

    let mut stepwise = new();
    let mut last = None;
    for n in 2..=5 {
        let a = aux(width, n - 2, n - 1);
        let row = DraftRow { tokens: &toks[..n], draft_from: n - 2, aux: &a, block_table: &table };
        last = Some(stepwise.propose(&[row], &cfg, &embed).unwrap().remove(0));
    }
    assert_eq!(last.unwrap(), tree);

    // Two rows in one call (on other pages) propose what each proposes alone.
    let small = SpecConfig::new(3, 2, 5).unwrap();
    let other = tokens(9);
    let other = &other[6..9];
    let (a1, a2) = (aux(width, 0, 2), aux(width, 5, 7));
    let rows = [
        DraftRow { tokens: &toks[..3], draft_from: 0, aux: &a1, block_table: &[0] },
        DraftRow { tokens: other, draft_from: 0, aux: &a2, block_table: &[1] },
    ];
    let together = new().propose(&rows, &small, &embed).unwrap();
    let alone: Vec<DraftTree> = rows
        .iter()
        .map(|r| new().propose(std::slice::from_ref(r), &small, &embed).unwrap().remove(0))
        .collect();
    assert_eq!(together, alone);
    assert_ne!(together[0], together[1]);
}

#[test]
fn bad_rows_fail_before_touching_the_kv() {
    let target = tiny();
    let embed = embedding(&target);
    let mut d = Eagle3Draft::random(&target, 1024, 5, 2, 4).unwrap();
    let w = d.aux_width();
    let cfg = SpecConfig::new(2, 2, 3).unwrap();
    let toks = tokens(6);
    let a = aux(w, 0, 5);
    let cases: [(DraftRow<'_>, &str); 4] = [
        (DraftRow { tokens: &toks, draft_from: 0, aux: &a[..w], block_table: &[0, 1] }, "aux floats"),
        (DraftRow { tokens: &toks, draft_from: 5, aux: &[], block_table: &[0, 1] }, "empty"),
        (DraftRow { tokens: &toks, draft_from: 0, aux: &a, block_table: &[0] }, "block table"),
        (DraftRow { tokens: &toks, draft_from: 0, aux: &a, block_table: &[0, 2] }, "block table"),
    ];
    for (row, what) in cases {
        let e = d.propose(&[row], &cfg, &embed).unwrap_err().to_string();
        assert!(e.contains(what), "{what}: {e}");
    }
    let wrong = Mat::new(vec![0.0; 10 * 64], 10, 64);
    let row = DraftRow { tokens: &toks, draft_from: 0, aux: &a, block_table: &[0, 1] };
    let e = d.propose(&[row], &cfg, &wrong).unwrap_err().to_string();
    assert!(e.contains("embedding"), "{e}");
}
