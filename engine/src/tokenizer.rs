//! The model's tokenizer (`tokenizer.json`, Hugging Face `tokenizers`) and its chat template
//! source (`tokenizer_config.json`), loaded from one directory.

use crate::chat_template::ChatTemplate;
use crate::error::{EngineError, Result};
use std::path::{Path, PathBuf};

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    pub chat_template: Option<ChatTemplate>,
    pub dir: PathBuf,
}

/// Where the assets live: `$LATLAB_ASSETS_DIR`, else `assets/cache` under the current dir.
pub fn assets_dir() -> PathBuf {
    std::env::var_os("LATLAB_ASSETS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("assets/cache"))
}

/// The real Qwen3 tokenizer directory inside the assets dir.
pub fn qwen3_tokenizer_dir() -> PathBuf {
    assets_dir().join("qwen3")
}

impl Tokenizer {
    /// Load `dir/tokenizer.json` and, if present, the chat template of `dir/tokenizer_config.json`.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let path = dir.join("tokenizer.json");
        let inner = tokenizers::Tokenizer::from_file(&path)
            .map_err(|e| EngineError::Tokenizer(format!("loading {}: {e}", path.display())))?;
        let cfg_path = dir.join("tokenizer_config.json");
        let chat_template = if cfg_path.exists() {
            let text = std::fs::read_to_string(&cfg_path).map_err(|e| EngineError::io(&cfg_path, e))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|source| EngineError::Json { path: cfg_path.clone(), source })?;
            match v.get("chat_template").and_then(|t| t.as_str()) {
                Some(src) => Some(ChatTemplate::new(src)?),
                None => None,
            }
        } else {
            None
        };
        Ok(Tokenizer { inner, chat_template, dir: dir.to_path_buf() })
    }

    /// Token ids of raw text; no special tokens added (Qwen3 adds no BOS).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self.inner.encode(text, false).map_err(|e| EngineError::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of ids, special tokens skipped (what OpenAI-compatible servers return).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, true).map_err(|e| EngineError::Tokenizer(e.to_string()))
    }

    /// Number of ids the tokenizer knows (base vocab + added tokens).
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn qwen3() -> Tokenizer {
        Tokenizer::from_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3"))).unwrap()
    }

    #[test]
    fn loads_qwen3_and_roundtrips() {
        let t = qwen3();
        assert_eq!(t.vocab_size(), 151_669);
        let ids = t.encode("Hello, world! 你好").unwrap();
        assert_eq!(&ids[..4], &[9707, 11, 1879, 0]);
        assert_eq!(t.decode(&ids).unwrap(), "Hello, world! 你好");
        assert_eq!(t.token_to_id("<|im_end|>"), Some(151_645));
        // Special tokens in text are recognised as single ids.
        assert_eq!(t.encode("<|im_start|>user").unwrap()[0], 151_644);
        assert!(t.chat_template.is_some());
    }
}
