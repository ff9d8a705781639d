//! An EAGLE-3 draft's tensors: names and shapes (one list drives loading, random init and
//! writing), loaded from safetensors into f32 or generated from a seed.
//!
//! Checkpoint names have no `model.` prefix (SGLang's `LlamaForCausalLMEagle3.load_weights`
//! in python/sglang/srt/models/llama_eagle3.py adds it; vLLM's vllm/model_executor/models/
//! llama_eagle3.py maps `midlayer.` to `layers.0.`). `d2t` is int64 [draft_vocab] with
//! target id = draft id + d2t[draft id]; `t2d` is bool [vocab] and neither engine reads it.
//! An `embed_tokens.weight` some checkpoints carry is ignored: both engines give the draft
//! the target's embedding (SGLang's eagle_worker.py `set_embed`).

use super::config::{AUX_LAYERS, DraftConfig};
use crate::error::{EngineError, Result};
use crate::random_weights::random_tensor_f32;
use crate::tensor_names::{Kind, TensorSpec};
use crate::weights::{CheckpointFiles, Mat};
use safetensors::Dtype;
use std::path::Path;

pub const D2T: &str = "d2t";
pub const T2D: &str = "t2d";

#[derive(Debug)]
pub struct DraftWeights {
    /// [hidden, 3 x target hidden]: fuses the three captured target states.
    pub fc: Mat,
    /// Applied to the token embedding.
    pub input_norm: Vec<f32>,
    /// Applied to the hidden input (fc's output, or the draft's own output in the tree).
    pub hidden_norm: Vec<f32>,
    /// q/k/v read [normed embedding, normed hidden]: 2 x hidden columns.
    pub q_proj: Mat,
    pub k_proj: Mat,
    pub v_proj: Mat,
    pub o_proj: Mat,
    pub post_norm: Vec<f32>,
    pub gate_proj: Mat,
    pub up_proj: Mat,
    pub down_proj: Mat,
    pub final_norm: Vec<f32>,
    /// [draft_vocab, hidden].
    pub lm_head: Mat,
    /// Target id of each draft id.
    pub draft_to_target: Vec<u32>,
}

/// Every float tensor the draft reads, in a stable order (`d2t` and `t2d` are integer and
/// bool tensors outside this list).
pub fn draft_tensor_specs(c: &DraftConfig) -> Vec<TensorSpec> {
    let m = |name: &str, rows: usize, cols: usize| TensorSpec {
        name: name.into(),
        shape: vec![rows, cols],
        kind: Kind::Matrix,
    };
    let n = |name: &str, len: usize| TensorSpec { name: name.into(), shape: vec![len], kind: Kind::Norm };
    let (h, i, q, kv) = (c.hidden_size, c.intermediate_size, c.q_dim(), c.kv_dim());
    vec![
        m("fc.weight", h, AUX_LAYERS * c.target_hidden_size),
        n("midlayer.input_layernorm.weight", h),
        n("midlayer.hidden_norm.weight", h),
        m("midlayer.self_attn.q_proj.weight", q, 2 * h),
        m("midlayer.self_attn.k_proj.weight", kv, 2 * h),
        m("midlayer.self_attn.v_proj.weight", kv, 2 * h),
        m("midlayer.self_attn.o_proj.weight", h, q),
        n("midlayer.post_attention_layernorm.weight", h),
        m("midlayer.mlp.gate_proj.weight", i, h),
        m("midlayer.mlp.up_proj.weight", i, h),
        m("midlayer.mlp.down_proj.weight", h, i),
        n("norm.weight", h),
        m("lm_head.weight", c.draft_vocab_size, h),
    ]
}

/// The draft ids' target ids of a random draft: spread evenly over the target vocabulary,
/// increasing like a real `d2t`'s (those keep the most frequent ids in id order), and away
/// from the identity so that a draft id used as a target id shows in tests.
pub fn random_draft_to_target(c: &DraftConfig) -> Vec<u32> {
    (0..c.draft_vocab_size).map(|d| (d * c.vocab_size / c.draft_vocab_size) as u32).collect()
}

/// The `d2t` tensor of a draft-to-target map: the offset of each target id from its draft id.
pub fn d2t_offsets(draft_to_target: &[u32]) -> Vec<i64> {
    draft_to_target.iter().enumerate().map(|(d, &t)| t as i64 - d as i64).collect()
}

impl DraftWeights {
    /// Every matrix to 128x128-block FP8 in place (`Mat::quantize_fp8`); norms stay f32.
    pub fn quantize_fp8(&mut self) -> Result<()> {
        let mats = [
            &mut self.fc,
            &mut self.q_proj,
            &mut self.k_proj,
            &mut self.v_proj,
            &mut self.o_proj,
            &mut self.gate_proj,
            &mut self.up_proj,
            &mut self.down_proj,
            &mut self.lm_head,
        ];
        for m in mats {
            m.quantize_fp8().map_err(|e| EngineError::Weights(format!("draft FP8: {e}")))?;
        }
        Ok(())
    }

    /// Seeded random weights (bf16-rounded, like the target's: what `write_random_draft`
    /// stores loads back exactly).
    pub fn random(c: &DraftConfig, seed: u64) -> Self {
        Self::build(c, random_draft_to_target(c), |spec| Ok(random_tensor_f32(spec, seed)))
            .expect("random tensors never fail")
    }

    /// Load from a checkpoint folder (`model.safetensors` or sharded with an index; bf16,
    /// f16 or f32). Returns the weights and the float tensors' dtype.
    pub fn load(c: &DraftConfig, dir: &Path) -> Result<(Self, String)> {
        let files = CheckpointFiles::open(dir)?;
        let map = read_d2t(&files, c)?;
        check_t2d(&files, c)?;
        let mut dtypes = std::collections::BTreeSet::new();
        let w = Self::build(c, map, |spec| {
            let (m, dts) = files.read(spec, false)?;
            dtypes.extend(dts);
            Ok(m.data)
        })?;
        Ok((w, dtypes.into_iter().collect::<Vec<_>>().join("+")))
    }

    fn build(
        c: &DraftConfig,
        draft_to_target: Vec<u32>,
        mut get: impl FnMut(&TensorSpec) -> Result<Vec<f32>>,
    ) -> Result<Self> {
        let mut tensors = draft_tensor_specs(c).into_iter().map(|spec| {
            let data = get(&spec)?;
            Ok(Mat::new(data, spec.shape[0], *spec.shape.get(1).unwrap_or(&1)))
        });
        // Taken in draft_tensor_specs' order.
        let mut next = || tensors.next().expect("one tensor per field");
        Ok(DraftWeights {
            fc: next()?,
            input_norm: next()?.data,
            hidden_norm: next()?.data,
            q_proj: next()?,
            k_proj: next()?,
            v_proj: next()?,
            o_proj: next()?,
            post_norm: next()?.data,
            gate_proj: next()?,
            up_proj: next()?,
            down_proj: next()?,
            final_norm: next()?.data,
            lm_head: next()?,
            draft_to_target,
        })
    }
}

fn check_shape(name: &str, got: &[usize], want: &[usize]) -> Result<()> {
    if got != want {
        return Err(EngineError::Weights(format!(
            "tensor `{name}` has shape {got:?}, the config implies {want:?}"
        )));
    }
    Ok(())
}

/// `d2t` as target ids, each checked to be a target id. A draft whose vocabulary is the
/// target's may leave it out (the identity), as SGLang and vLLM allow.
fn read_d2t(files: &CheckpointFiles, c: &DraftConfig) -> Result<Vec<u32>> {
    let Ok((st, _)) = files.view(D2T) else {
        if c.draft_vocab_size == c.vocab_size {
            return Ok((0..c.vocab_size as u32).collect());
        }
        return Err(EngineError::Weights(format!(
            "tensor `{D2T}` missing from the checkpoint (draft_vocab_size {} < vocab_size {} needs the map)",
            c.draft_vocab_size, c.vocab_size
        )));
    };
    let t = st.tensor(D2T).map_err(|e| EngineError::Weights(format!("{D2T}: {e}")))?;
    check_shape(D2T, t.shape(), &[c.draft_vocab_size])?;
    if t.dtype() != Dtype::I64 {
        return Err(EngineError::Weights(format!("tensor `{D2T}` is {:?}, not I64", t.dtype())));
    }
    let offsets = t.data().chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")));
    offsets
        .enumerate()
        .map(|(d, off)| {
            let target = (d as i64).checked_add(off).filter(|&t| (0..c.vocab_size as i64).contains(&t));
            target.map(|t| t as u32).ok_or_else(|| {
                EngineError::Weights(format!(
                    "tensor `{D2T}`: draft id {d} + offset {off} is not a target id (vocab_size {})",
                    c.vocab_size
                ))
            })
        })
        .collect()
}

/// `t2d` is optional and unused (SGLang and vLLM skip it), but a present one must have the
/// target vocabulary's shape: a different one means a draft for another target.
fn check_t2d(files: &CheckpointFiles, c: &DraftConfig) -> Result<()> {
    let Ok((st, _)) = files.view(T2D) else { return Ok(()) };
    let t = st.tensor(T2D).map_err(|e| EngineError::Weights(format!("{T2D}: {e}")))?;
    check_shape(T2D, t.shape(), &[c.vocab_size])
}
