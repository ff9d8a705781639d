//! The errors validation reports: each names the offending field, so forms can show them
//! inline and the API can answer 400 with the same words.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// Dotted path of the field as it appears in the JSON form of the spec, e.g.
    /// `load.max_concurrency` or `target.base_url`.
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationErrors(pub Vec<FieldError>);

impl ValidationErrors {
    pub fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError { field: field.to_string(), message: message.into() });
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// First message for a field (the form shows one message per input).
    pub fn for_field(&self, field: &str) -> Option<&str> {
        self.0.iter().find(|e| e.field == field).map(|e| e.message.as_str())
    }
    pub fn into_result(self) -> Result<(), ValidationErrors> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
        f.write_str(&parts.join("; "))
    }
}

impl std::error::Error for ValidationErrors {}
