//! The tensors of a Qwen3 checkpoint: Hugging Face names and the shapes the config implies.
//! One list drives loading (shape checks), random init and checkpoint writing.

use crate::config::ModelConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A norm scale: initialised near 1.
    Norm,
    /// A linear or embedding matrix [rows, cols]: initialised with std 1/sqrt(cols).
    Matrix,
}

#[derive(Debug, Clone)]
pub struct TensorSpec {
    pub name: String,
    pub shape: Vec<usize>,
    pub kind: Kind,
}

impl TensorSpec {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

pub fn layer_prefix(i: usize) -> String {
    format!("model.layers.{i}")
}

/// Every tensor the model reads, in a stable order.
pub fn tensor_specs(c: &ModelConfig) -> Vec<TensorSpec> {
    let m = |name: String, rows: usize, cols: usize| TensorSpec {
        name,
        shape: vec![rows, cols],
        kind: Kind::Matrix,
    };
    let n = |name: String, len: usize| TensorSpec {
        name,
        shape: vec![len],
        kind: Kind::Norm,
    };
    let mut v = vec![m(
        "model.embed_tokens.weight".into(),
        c.vocab_size,
        c.hidden_size,
    )];
    for i in 0..c.num_hidden_layers {
        let p = layer_prefix(i);
        v.push(n(format!("{p}.input_layernorm.weight"), c.hidden_size));
        v.push(m(
            format!("{p}.self_attn.q_proj.weight"),
            c.q_dim(),
            c.hidden_size,
        ));
        v.push(m(
            format!("{p}.self_attn.k_proj.weight"),
            c.kv_dim(),
            c.hidden_size,
        ));
        v.push(m(
            format!("{p}.self_attn.v_proj.weight"),
            c.kv_dim(),
            c.hidden_size,
        ));
        v.push(m(
            format!("{p}.self_attn.o_proj.weight"),
            c.hidden_size,
            c.q_dim(),
        ));
        v.push(n(format!("{p}.self_attn.q_norm.weight"), c.head_dim));
        v.push(n(format!("{p}.self_attn.k_norm.weight"), c.head_dim));
        v.push(n(
            format!("{p}.post_attention_layernorm.weight"),
            c.hidden_size,
        ));
        v.push(m(
            format!("{p}.mlp.gate_proj.weight"),
            c.intermediate_size,
            c.hidden_size,
        ));
        v.push(m(
            format!("{p}.mlp.up_proj.weight"),
            c.intermediate_size,
            c.hidden_size,
        ));
        v.push(m(
            format!("{p}.mlp.down_proj.weight"),
            c.hidden_size,
            c.intermediate_size,
        ));
    }
    v.push(n("model.norm.weight".into(), c.hidden_size));
    if !c.tie_word_embeddings {
        v.push(m("lm_head.weight".into(), c.vocab_size, c.hidden_size));
    }
    v
}
