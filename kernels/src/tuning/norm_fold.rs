//! `Tuning::norm_epilogue`'s policy: which decode batches fold their inner norms into the
//! skinny GEMMs around them, its names in `LATLAB_NORM_EPILOGUE` and in JSON.

use crate::error::{KernelError, Result};
use serde::{Serialize, Serializer};

/// The largest batch a policy names: decode batches past the skinny GEMM's rows run the
/// prefill path and never fold.
const MAX_ROWS: u8 = crate::ops::SKINNY_MAX_ROWS as u8;

/// Which decode batches fold their inner norms into the GEMMs. Named `off`, `on`,
/// `up_to_N` and `fp8_up_to_N` (N in 1..=8) in `LATLAB_NORM_EPILOGUE` (`0` and `1` for off
/// and on) and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormFold {
    Off,
    /// Every decode batch of at most `ops::SKINNY_MAX_ROWS` rows.
    On,
    /// Batches of 1 to N rows.
    UpTo(u8),
    /// Batches of 1 to N rows with FP8 weights, never with bf16 (`Tuning::for_weights`
    /// resolves it to `UpTo(N)` or `Off`); unresolved, nothing folds.
    Fp8UpTo(u8),
}

impl NormFold {
    /// Whether a decode batch of `rows` rows folds (`Fp8UpTo` unresolved: no).
    pub fn folds(self, rows: usize) -> bool {
        match self {
            NormFold::On => true,
            NormFold::UpTo(n) => rows <= n as usize,
            NormFold::Off | NormFold::Fp8UpTo(_) => false,
        }
    }

    /// This policy for FP8 (`fp8`) or bf16 weights.
    pub fn for_weights(self, fp8: bool) -> NormFold {
        match self {
            NormFold::Fp8UpTo(n) if fp8 => NormFold::UpTo(n),
            NormFold::Fp8UpTo(_) => NormFold::Off,
            other => other,
        }
    }

    /// `LATLAB_NORM_EPILOGUE`'s value (`var` names it in the error).
    pub fn parse(var: &str, v: &str) -> Result<NormFold> {
        let rows = |n: &str| n.parse::<u8>().ok().filter(|n| (1..=MAX_ROWS).contains(n));
        let fold = match v {
            "0" | "off" => Some(NormFold::Off),
            "1" | "on" => Some(NormFold::On),
            _ => match (v.strip_prefix("fp8_up_to_"), v.strip_prefix("up_to_")) {
                (Some(n), _) => rows(n).map(NormFold::Fp8UpTo),
                (None, Some(n)) => rows(n).map(NormFold::UpTo),
                (None, None) => None,
            },
        };
        fold.ok_or_else(|| {
            KernelError::Config(format!(
                "{var}={v:?}: expected 0, 1, up_to_N or fp8_up_to_N with N from 1 to {MAX_ROWS}"
            ))
        })
    }
}

impl std::fmt::Display for NormFold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NormFold::Off => f.write_str("off"),
            NormFold::On => f.write_str("on"),
            NormFold::UpTo(n) => write!(f, "up_to_{n}"),
            NormFold::Fp8UpTo(n) => write!(f, "fp8_up_to_{n}"),
        }
    }
}

/// The same names as `LATLAB_NORM_EPILOGUE` takes, so /v1/engine/info reads as the
/// variable that would set it.
impl Serialize for NormFold {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
