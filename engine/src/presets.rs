//! Named model shapes for random weights: `tiny*` for tests and goldens, the real Qwen3
//! shapes for benchmarking without downloadable weights.
//!
//! The tiny presets keep Qwen3's full 151,936-token vocabulary (hidden size 64): every id
//! they sample is a valid id of the real Qwen3 tokenizer, so the whole text path (chat
//! template, detokenization, stop strings) runs for real in tests. The cost is a 9.7 M-entry
//! embedding (19 MB in bf16), which is fast enough for CI.

use crate::config::ModelConfig;

pub const QWEN3_VOCAB: usize = 151_936;
const QWEN3_BOS: u32 = 151_643; // <|endoftext|>
const QWEN3_EOS: [u32; 2] = [151_645, 151_643]; // <|im_end|>, <|endoftext|>

pub const PRESET_NAMES: [&str; 5] = ["tiny", "tiny-untied", "tiny-mqa", "qwen3-0.6b", "qwen3-8b"];

#[allow(clippy::too_many_arguments)]
fn shape(
    hidden: usize,
    inter: usize,
    layers: usize,
    heads: usize,
    kv: usize,
    head_dim: usize,
    tied: bool,
    max_pos: usize,
) -> ModelConfig {
    ModelConfig {
        vocab_size: QWEN3_VOCAB,
        hidden_size: hidden,
        intermediate_size: inter,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        num_key_value_heads: kv,
        head_dim,
        rms_norm_eps: 1e-6,
        rope_theta: 1_000_000.0,
        max_position_embeddings: max_pos,
        tie_word_embeddings: tied,
        eos_token_ids: QWEN3_EOS.to_vec(),
        bos_token_id: Some(QWEN3_BOS),
        quantization: None,
    }
}

/// The config of a named preset, or None.
pub fn preset(name: &str) -> Option<ModelConfig> {
    Some(match name {
        // GQA 4:2, tied lm_head, head_dim * heads == hidden.
        "tiny" => shape(64, 128, 2, 4, 2, 16, true, 4096),
        // Untied lm_head, head_dim * heads != hidden (Qwen3 allows it), 3 layers, small theta.
        "tiny-untied" => ModelConfig { rope_theta: 10_000.0, ..shape(64, 96, 3, 4, 2, 32, false, 4096) },
        // Multi-query attention (1 kv head), odd sizes.
        "tiny-mqa" => shape(48, 80, 2, 6, 1, 8, true, 4096),
        "qwen3-0.6b" => shape(1024, 3072, 28, 16, 8, 128, true, 40960),
        "qwen3-8b" => shape(4096, 12288, 36, 32, 8, 128, false, 40960),
        _ => return None,
    })
}
