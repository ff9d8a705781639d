//! latlab's native inference engine: Qwen3 config and weights, tokenizer and chat
//! template, scheduler with a paged KV block manager, model backends (CPU reference now),
//! sampler, and the engine thread that owns the model.

pub mod bf16_round;
pub mod checkpoint_writer;
pub mod config;
pub mod error;
pub mod fp8;
pub mod model;
pub mod presets;
pub mod quant_config;
pub mod random_weights;
pub mod tensor_names;
pub mod weights;

pub use error::{EngineError, Result};
pub mod arrivals;
pub mod block_manager;
pub mod chat_template;
pub mod detokenize;
pub mod engine_loop;
pub mod handle;
pub mod model_source;
pub mod plan;
pub mod request;
pub mod sampling;
pub mod scheduler;
pub mod spec;
pub mod tokenizer;

pub use handle::EngineHandle;
