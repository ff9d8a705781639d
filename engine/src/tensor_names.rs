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

/// The linear projections of a layer (suffixes of `model.layers.{i}.`): the only tensors
/// that are ever FP8. Embeddings and lm_head stay bf16, as in Qwen/Qwen3-8B-FP8.
pub const PROJECTIONS: [&str; 7] = [
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
];

/// Whether `name` is the weight of a linear projection (see PROJECTIONS).
pub fn is_projection(name: &str) -> bool {
    name.strip_prefix("model.layers.")
        .and_then(|rest| rest.split_once('.'))
        .and_then(|(_, rest)| rest.strip_suffix(".weight"))
        .is_some_and(|module| PROJECTIONS.contains(&module))
}

/// The block-scale tensor that goes with an FP8 weight: `X.weight` -> `X.weight_scale_inv`.
pub fn scale_name(weight_name: &str) -> String {
    format!("{weight_name}_scale_inv")
}

/// Every tensor the model reads, in a stable order.
pub fn tensor_specs(c: &ModelConfig) -> Vec<TensorSpec> {
    let m = |name: String, rows: usize, cols: usize| TensorSpec {
        name,
        shape: vec![rows, cols],
        kind: Kind::Matrix,
    };
    let n = |name: String, len: usize| TensorSpec { name, shape: vec![len], kind: Kind::Norm };
    let mut v = vec![m("model.embed_tokens.weight".into(), c.vocab_size, c.hidden_size)];
    for i in 0..c.num_hidden_layers {
        let p = layer_prefix(i);
        v.push(n(format!("{p}.input_layernorm.weight"), c.hidden_size));
        v.push(m(format!("{p}.self_attn.q_proj.weight"), c.q_dim(), c.hidden_size));
        v.push(m(format!("{p}.self_attn.k_proj.weight"), c.kv_dim(), c.hidden_size));
        v.push(m(format!("{p}.self_attn.v_proj.weight"), c.kv_dim(), c.hidden_size));
        v.push(m(format!("{p}.self_attn.o_proj.weight"), c.hidden_size, c.q_dim()));
        v.push(n(format!("{p}.self_attn.q_norm.weight"), c.head_dim));
        v.push(n(format!("{p}.self_attn.k_norm.weight"), c.head_dim));
        v.push(n(format!("{p}.post_attention_layernorm.weight"), c.hidden_size));
        v.push(m(format!("{p}.mlp.gate_proj.weight"), c.intermediate_size, c.hidden_size));
        v.push(m(format!("{p}.mlp.up_proj.weight"), c.intermediate_size, c.hidden_size));
        v.push(m(format!("{p}.mlp.down_proj.weight"), c.hidden_size, c.intermediate_size));
    }
    v.push(n("model.norm.weight".into(), c.hidden_size));
    if !c.tie_word_embeddings {
        v.push(m("lm_head.weight".into(), c.vocab_size, c.hidden_size));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projections_are_the_seven_linears_of_each_layer() {
        let cfg = crate::presets::preset("tiny-untied").unwrap();
        let names: Vec<String> =
            tensor_specs(&cfg).into_iter().filter(|s| is_projection(&s.name)).map(|s| s.name).collect();
        assert_eq!(names.len(), 7 * cfg.num_hidden_layers);
        assert!(names.contains(&"model.layers.2.mlp.down_proj.weight".to_string()));
        for n in ["lm_head.weight", "model.embed_tokens.weight", "model.layers.0.self_attn.q_norm.weight"] {
            assert!(!is_projection(n), "{n}");
        }
        assert_eq!(
            scale_name("model.layers.0.mlp.up_proj.weight"),
            "model.layers.0.mlp.up_proj.weight_scale_inv"
        );
    }
}
