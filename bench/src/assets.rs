//! Where the real data lives: `$LATLAB_ASSETS_DIR`, else `assets/cache` under the current
//! directory, laid out by `scripts/fetch-assets.sh`.

use std::path::PathBuf;

pub const ASSETS_ENV: &str = "LATLAB_ASSETS_DIR";

pub fn assets_dir() -> PathBuf {
    std::env::var_os(ASSETS_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("assets/cache"))
}

/// The Qwen3 `tokenizer.json` that setup fetched.
pub fn default_tokenizer_path() -> PathBuf {
    assets_dir().join("qwen3/tokenizer.json")
}

/// The ShareGPT V3 file that setup fetched (truncated; read as a stream).
pub fn default_sharegpt_path() -> PathBuf {
    assets_dir().join("sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json")
}
