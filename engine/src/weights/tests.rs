//! Loading checkpoints of every dtype and layout, and the errors for broken ones.

use super::*;
use safetensors::tensor::TensorView;

/// f32 and f16 checkpoints load too (make-model writes bf16). Random values are
/// bf16-representable, hence exact in f32, and exact in f16 down to its normal range
/// (6.1e-5), so f16 is compared with 1e-6 absolute slack.
#[test]
fn loads_f32_and_f16_checkpoints() {
    let cfg = crate::presets::preset("tiny-mqa").unwrap();
    let mem = ModelWeights::random(&cfg, 11).unwrap();
    for dtype in [Dtype::F32, Dtype::F16] {
        let dir = tempfile::tempdir().unwrap();
        let tensors: Vec<(String, Vec<usize>, Vec<u8>)> = tensor_specs(&cfg)
            .iter()
            .map(|s| {
                let v = crate::random_weights::random_tensor_f32(s, 11);
                let bytes = match dtype {
                    Dtype::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    _ => v.iter().flat_map(|x| half::f16::from_f32(*x).to_le_bytes()).collect(),
                };
                (s.name.clone(), s.shape.clone(), bytes)
            })
            .collect();
        let views = tensors
            .iter()
            .map(|(n, shape, b)| (n.clone(), TensorView::new(dtype, shape.clone(), b).unwrap()));
        safetensors::serialize_to_file(views, None, &dir.path().join("model.safetensors")).unwrap();
        let (w, name) = ModelWeights::load(&cfg, dir.path()).unwrap();
        assert_eq!(name, format!("{dtype:?}").to_lowercase());
        let diff = w.layers[1]
            .gate_proj
            .data
            .iter()
            .zip(&mem.layers[1].gate_proj.data)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff <= 1e-6, "{dtype:?}: {diff}");
        assert_eq!(w.embed.data.len(), mem.embed.data.len());
    }
}

/// A stored tensor: name, dtype, shape, bytes.
type Stored = (String, Dtype, Vec<usize>, Vec<u8>);
/// A way to break a checkpoint's tensor list.
type Breaker = Box<dyn Fn(&mut Vec<Stored>)>;

/// The tensors of random FP8 `tiny` in Qwen3-8B-FP8's layout, for hand-broken checkpoints.
fn fp8_tensors(cfg: &ModelConfig) -> Vec<Stored> {
    let mut out = vec![];
    for s in tensor_specs(cfg) {
        let v = random_tensor_f32(&s, 3);
        if is_projection(&s.name) {
            let q = crate::fp8::quantize(&v, s.shape[0], s.shape[1]).unwrap();
            let scales = q.scale_inv.iter().flat_map(|x| x.to_le_bytes()).collect();
            let sshape = crate::fp8::scale_shape(s.shape[0], s.shape[1]).to_vec();
            out.push((scale_name(&s.name), Dtype::F32, sshape, scales));
            out.push((s.name, Dtype::F8_E4M3, s.shape, q.bits));
        } else {
            let b = v.iter().flat_map(|x| half::bf16::from_f32(*x).to_le_bytes()).collect();
            out.push((s.name, Dtype::BF16, s.shape, b));
        }
    }
    out
}

fn write(dir: &Path, tensors: &[Stored]) {
    let views =
        tensors.iter().map(|(n, d, shape, b)| (n.clone(), TensorView::new(*d, shape.clone(), b).unwrap()));
    safetensors::serialize_to_file(views, None, &dir.join("model.safetensors")).unwrap();
}

/// Broken FP8 checkpoints fail with the tensor named: a missing or misshapen scale
/// tensor, an FP8 embedding. bf16 scales (some exporters write them) load.
#[test]
fn fp8_tensor_errors_name_the_tensor() {
    let cfg = ModelConfig {
        quantization: Some(crate::quant_config::QuantConfig::fp8()),
        ..crate::presets::preset("tiny").unwrap()
    };
    let good = fp8_tensors(&cfg);
    let scale = "model.layers.1.mlp.down_proj.weight_scale_inv";
    let cases: [(&str, Breaker, &[&str]); 3] = [
        ("missing scale", Box::new(move |t| t.retain(|x| x.0 != scale)), &[scale, "missing"]),
        (
            "scale shape",
            Box::new(move |t| {
                let x = t.iter_mut().find(|x| x.0 == scale).unwrap();
                x.2 = vec![1, 1, 1];
            }),
            &[scale, "[1, 1, 1]", "[1, 1]"],
        ),
        (
            "fp8 embedding",
            Box::new(|t| {
                let x = t.iter_mut().find(|x| x.0 == "model.embed_tokens.weight").unwrap();
                x.1 = Dtype::F8_E4M3;
                x.3.truncate(x.3.len() / 2);
            }),
            &["model.embed_tokens.weight", "only the linear projections"],
        ),
    ];
    for (what, breakit, words) in cases {
        let mut t = good.clone();
        breakit(&mut t);
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &t);
        let err = ModelWeights::load(&cfg, dir.path()).unwrap_err().to_string();
        assert!(words.iter().all(|w| err.contains(w)), "{what}: {err}");
    }
    // bf16 scales: the values are bf16-rounded, so compare against those.
    let mut t = good.clone();
    for x in t.iter_mut().filter(|x| x.0.ends_with("_scale_inv")) {
        x.1 = Dtype::BF16;
        x.3 = x
            .3
            .chunks_exact(4)
            .flat_map(|b| half::bf16::from_f32(f32::from_le_bytes([b[0], b[1], b[2], b[3]])).to_le_bytes())
            .collect();
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &t);
    let (w, dtype) = ModelWeights::load(&cfg, dir.path()).unwrap();
    assert_eq!(dtype, "bf16+f8_e4m3");
    let m = &w.layers[0].up_proj;
    let f = m.fp8.as_ref().unwrap();
    assert_eq!(m.data[0], crate::fp8::decode(f.bits[0]) * f.scale_inv[0]);
    assert_eq!(f.scale_inv[0], half::bf16::from_f32(f.scale_inv[0]).to_f32());
}

#[test]
fn missing_tensor_is_named() {
    let cfg = crate::presets::preset("tiny").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = vec![0u8; 4 * 64];
    let view = TensorView::new(Dtype::F32, vec![64], &data).unwrap();
    safetensors::serialize_to_file(
        [("model.norm.weight", view)],
        None,
        &dir.path().join("model.safetensors"),
    )
    .unwrap();
    let err = ModelWeights::load(&cfg, dir.path()).unwrap_err().to_string();
    assert!(err.contains("model.embed_tokens.weight") && err.contains("missing"), "{err}");
}

/// An index may only name shards beside it: never a path elsewhere, never a FIFO.
#[test]
fn index_shards_are_plain_files_in_the_checkpoint_folder() {
    let cfg = crate::presets::preset("tiny").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.safetensors");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for shard in ["/etc/passwd", "../model.safetensors", "sub/x.safetensors", "x.bin", "pipe.safetensors"] {
        let index = serde_json::json!({"weight_map": {"model.norm.weight": shard}});
        std::fs::write(dir.path().join("model.safetensors.index.json"), index.to_string()).unwrap();
        let t = std::time::Instant::now();
        let err = ModelWeights::load(&cfg, dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("not a .safetensors file name") || err.contains("not a regular file"),
            "{shard}: {err}"
        );
        assert!(t.elapsed().as_secs() < 2, "{shard}: must not block");
    }
}

#[test]
fn has_fp8_says_whether_the_projections_are_quantized() {
    let cfg = crate::presets::preset("tiny").unwrap();
    let mut w = ModelWeights::random(&cfg, 3).unwrap();
    assert!(!w.has_fp8());
    w.quantize_fp8().unwrap();
    assert!(w.has_fp8());
    let fp8 = ModelConfig { quantization: Some(crate::quant_config::QuantConfig::fp8()), ..cfg };
    assert!(ModelWeights::random(&fp8, 3).unwrap().has_fp8());
}
