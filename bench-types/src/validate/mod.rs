//! Validation of what a request may ask for: every problem reported at once, each naming
//! its field. The same code runs in the browser (wasm) and on the server.

mod errors;
mod fields;
pub mod limits;
mod run_spec;
#[cfg(test)]
mod tests;

pub use errors::{FieldError, ValidationErrors};
pub(crate) use fields::check_text;
pub use fields::{API_KEY_ENV_PREFIX, path_problem};
