//! Token counting with a Hugging Face `tokenizer.json` (the Qwen3 one by default), the
//! way vLLM's benchmark counts: `tokenizer(text).input_ids` for prompts and dataset
//! outputs, `add_special_tokens=False` when re-counting generated text.

use crate::error::BenchError;
use std::path::{Path, PathBuf};

pub struct TokenCounter {
    tok: tokenizers::Tokenizer,
    path: PathBuf,
}

impl TokenCounter {
    /// Loads `path`, a `tokenizer.json` or a folder holding one.
    pub fn load(path: &Path) -> Result<Self, BenchError> {
        let file = if path.is_dir() { path.join("tokenizer.json") } else { path.to_path_buf() };
        if !file.is_file() {
            return Err(BenchError::Tokenizer {
                path: file,
                message: "no such file (run scripts/fetch-assets.sh, or pass --tokenizer)".into(),
            });
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut crate::input_file::open_regular(&file, crate::input_file::MAX_TOKENIZER_BYTES)?,
            &mut bytes,
        )
        .map_err(|e| BenchError::io(&file, e))?;
        let tok = tokenizers::Tokenizer::from_bytes(&bytes)
            .map_err(|e| BenchError::Tokenizer { path: file.clone(), message: e.to_string() })?;
        Ok(TokenCounter { tok, path: file })
    }

    /// The spec's tokenizer, or the fetched Qwen3 one.
    pub fn for_spec(tokenizer: Option<&str>) -> Result<Self, BenchError> {
        match tokenizer {
            Some(p) => Self::load(Path::new(p)),
            None => Self::load(&crate::assets::default_tokenizer_path()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tokens of `text` with special tokens added as the tokenizer's post-processor says
    /// (HF `tokenizer(text)`; Qwen3 adds none).
    pub fn count(&self, text: &str) -> u32 {
        self.tok.encode_fast(text, true).map(|e| e.len() as u32).unwrap_or(0)
    }

    /// Tokens of generated text, without special tokens (vLLM's fallback count).
    pub fn count_generated(&self, text: &str) -> u32 {
        self.tok.encode_fast(text, false).map(|e| e.len() as u32).unwrap_or(0)
    }

    /// Byte offsets in `text` where each of its tokens (no special tokens) ends, in order.
    pub fn token_ends(&self, text: &str) -> Vec<usize> {
        self.tok
            .encode(text, false)
            .map(|e| e.get_offsets().iter().map(|&(_, end)| end).collect())
            .unwrap_or_default()
    }

    /// Token ids of `text` without special tokens.
    pub fn encode_ids(&self, text: &str) -> Vec<u32> {
        self.tok.encode_fast(text, false).map(|e| e.get_ids().to_vec()).unwrap_or_default()
    }

    /// Size of the base vocabulary (added tokens excluded).
    pub fn vocab_size(&self) -> u32 {
        self.tok.get_vocab_size(false) as u32
    }

    pub fn decode(&self, ids: &[u32]) -> String {
        self.tok.decode(ids, true).unwrap_or_default()
    }
}
