//! Results latlab did not measure itself but imported (vLLM `--save-result` JSON, or a
//! printed "Serving Benchmark Result" block), with the configuration they came with.
//! (Filled in by the comparisons issue.)

use crate::validate::ValidationErrors;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedTarget {
    /// Engine that produced the numbers, e.g. "vLLM", "SGLang".
    pub engine: String,
    /// Where the numbers come from (a file name, a document and section).
    pub source: String,
}

impl ImportedTarget {
    pub fn validate_into(&self, e: &mut ValidationErrors) {
        if self.engine.trim().is_empty() {
            e.push("target.engine", "is required");
        }
    }
}
