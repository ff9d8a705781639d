//! `Tuning`: what of the GPU work stays tunable, fixed for a `Gpu`'s life, and the one
//! place the `LATLAB_*` variables that set it are read (`from_env`). Everything else is
//! hard-wired: each op has one path, picked by the shapes it runs on (ops/). What lost to
//! it, and the commit that last had it, is in engine/PERF-LOG.md; engine/README.md lists
//! these knobs with their defaults.

use crate::carveout::Carveout;
use crate::error::{KernelError, Result};
use serde::Serialize;

/// The tunable part of the GPU work. The defaults are what measured fastest on the H200
/// (engine/PERF.md); the numeric knobs are card-dependent occupancy trade-offs worth
/// re-sweeping on another card, the switches a memory trade-off, diagnostics and an
/// instrument. The last three fields are read by the engine (engine/src/model/cuda), which
/// launches the steps; they live here so that every knob is read and reported in one place
/// (/v1/engine/info serves this struct with each result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tuning {
    /// Programmatic dependent launch on every kernel (`launch.rs`): a kernel's blocks are
    /// placed and read their weights while the kernel before it finishes. A diagnostic
    /// switch: `0` serializes the kernels, to tell a race between neighbours from a bug in
    /// one. `LATLAB_PDL=0|1`.
    pub pdl: bool,
    /// Shared-memory stages (16 KiB each, `BULK_STAGES_RANGE`) of a bf16 skinny GEMM's ring
    /// on grids of two or more 16-row tiles per SM (qkv, gate|up, lm_head) at 1-2 rows.
    /// Fewer stages fit more blocks per SM; more keep more bytes in flight per block.
    /// `LATLAB_BULK_STAGES`.
    pub bulk_stages: u32,
    /// The same on grids of fewer tiles than two per SM (o_proj and down at Qwen3-8B): the
    /// whole grid is resident at once, so a deeper ring only adds bytes in flight, up to
    /// the depth where a second block no longer fits an SM. `LATLAB_BULK_STAGES_SMALL`.
    pub bulk_stages_small: u32,
    /// `bulk_stages` from `WIDE_ROWS` rows on (batch 3-8): a block fewer per SM leaves
    /// room for the kernel after qkv to be placed before qkv ends.
    /// `LATLAB_BULK_STAGES_WIDE`.
    pub bulk_stages_wide: u32,
    /// `bulk_stages` for FP8 weights: their rings hold twice the weights per byte, and
    /// shallower ones leave shared memory to the kernels around the GEMM.
    /// `LATLAB_FP8_BULK_STAGES`.
    pub fp8_bulk_stages: u32,
    /// `bulk_stages_small` for FP8 weights. `LATLAB_FP8_BULK_STAGES_SMALL`.
    pub fp8_bulk_stages_small: u32,
    /// Blocks the split decode attention aims for (`ops::split_count`: splits = this /
    /// (rows x kv heads), 1..=32, and 1 once the pairs are as many as the SMs): more splits
    /// fill the SMs at small batches, fewer make each split's chunk loop longer and its
    /// merge cheaper. `LATLAB_ATTENTION_BLOCKS` (`ATTENTION_BLOCKS_RANGE`).
    pub attention_blocks: u32,
    /// The shared-memory carveout each group of kernels asks for (carveout.rs): an SM
    /// changes its L1/shared split only when idle, so this decides which kernels' blocks
    /// PDL can place beside which. `LATLAB_SMEM_CARVEOUT` (`Carveout::SYNTAX`).
    pub smem_carveout: Carveout,
    /// bf16 decode GEMMs read their weights tiled (`ops::tile_weights`: each ring stage one
    /// contiguous run of bytes), uploaded beside the row-major matrices prefill's cuBLAS
    /// reads: faster decode for 2 bytes more GPU memory per layer weight (13.9 GB at
    /// Qwen3-8B). `0` keeps one row-major copy, for a larger KV cache. FP8 codes stay
    /// row-major for the skinny GEMMs (tiled, they gained nothing). `LATLAB_TILED_WEIGHTS=0|1`.
    pub tiled_weights: bool,
    /// FP8 projections also upload their codes in the wide GEMM's layout (`ops::wide_tiles`)
    /// for steps of 9-32 rows (decode batches past 8, EAGLE-3's verify): 1 byte more GPU
    /// memory per weight (7.6 GB at Qwen3-8B). Without them those steps run cuBLAS on bf16
    /// copies, ~15 % slower a step (engine/PERF-LOG.md step 74). The engine turns it off
    /// where no step can have 9-32 rows of decode (`--max-batch` 8 or less, no speculation).
    /// `LATLAB_WIDE_FP8_COPIES=0|1`.
    pub wide_fp8_copies: bool,
    /// Decode steps of 1-8 rows replay CUDA graphs (the engine's graph.rs). A diagnostic
    /// switch: `0` launches every kernel eagerly, several milliseconds slower a step, to
    /// tell a capture problem from a kernel one. `LATLAB_CUDA_GRAPHS=0|1`.
    pub graphs: bool,
    /// A greedy decode step whose rows can end only by length queues the next step once
    /// its own tokens have landed, unless a request is on its way in (the engine's
    /// run_ahead.rs), so that the host's work between steps overlaps the GPU's. `0`:
    /// never, for A/B runs of the host's share. `LATLAB_RUN_AHEAD=0|1`.
    pub run_ahead: bool,
    /// An instrument: the engine logs, every 100 decode steps, where a step's wall time
    /// goes (the engine's step_timing.rs). It replays extra steps after each log line, so
    /// read ms/step from runs without it. `LATLAB_STEP_TIMING=0|1`.
    pub step_timing: bool,
}

/// The block targets `Tuning::attention_blocks` takes.
pub const ATTENTION_BLOCKS_RANGE: std::ops::RangeInclusive<u32> = 1..=4096;

/// The stage counts the bulk pipeline takes (TM_MAX_STAGES in bulk_ring.cuh).
pub const BULK_STAGES_RANGE: std::ops::RangeInclusive<u32> = 2..=8;

/// The rows from which bf16 bulk rings take `Tuning::bulk_stages_wide` stages.
pub const WIDE_ROWS: usize = 3;

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            pdl: true,
            bulk_stages: 4,
            bulk_stages_small: 6,
            bulk_stages_wide: 5,
            fp8_bulk_stages: 2,
            fp8_bulk_stages_small: 5,
            attention_blocks: 384,
            smem_carveout: Carveout::ATTENTION_MAX,
            tiled_weights: true,
            wide_fp8_copies: true,
            graphs: true,
            run_ahead: true,
            step_timing: false,
        }
    }
}

/// A switch variable: unset gives `default`; `0` and `1` are off and on; anything else is
/// an error naming the variable. Every `LATLAB_*` switch is read through it.
pub fn switch(name: &str, v: Option<&str>, default: bool) -> Result<bool> {
    match v {
        None => Ok(default),
        Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(v) => Err(KernelError::Config(format!("{name}={v:?}: expected 0 or 1"))),
    }
}

/// An integer variable: unset gives `default`; else an integer in `range`, or an error
/// naming the variable.
pub fn int(name: &str, v: Option<&str>, default: u32, range: std::ops::RangeInclusive<u32>) -> Result<u32> {
    match v {
        None => Ok(default),
        Some(v) => v
            .parse()
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(|| KernelError::Config(format!("{name}={v:?}: expected an integer in {range:?}"))),
    }
}

impl Tuning {
    /// The defaults, overridden by the `LATLAB_*` variables each field names, when set.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|n| std::env::var(n).ok())
    }

    /// `from_env` over a given lookup (tests cannot set the process environment safely).
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let d = Tuning::default();
        let get = |name: &str, default: bool| switch(name, var(name).as_deref(), default);
        let stages = |name: &str, default| int(name, var(name).as_deref(), default, BULK_STAGES_RANGE);
        Ok(Tuning {
            pdl: get("LATLAB_PDL", d.pdl)?,
            bulk_stages: stages("LATLAB_BULK_STAGES", d.bulk_stages)?,
            bulk_stages_small: stages("LATLAB_BULK_STAGES_SMALL", d.bulk_stages_small)?,
            bulk_stages_wide: stages("LATLAB_BULK_STAGES_WIDE", d.bulk_stages_wide)?,
            fp8_bulk_stages: stages("LATLAB_FP8_BULK_STAGES", d.fp8_bulk_stages)?,
            fp8_bulk_stages_small: stages("LATLAB_FP8_BULK_STAGES_SMALL", d.fp8_bulk_stages_small)?,
            attention_blocks: int(
                "LATLAB_ATTENTION_BLOCKS",
                var("LATLAB_ATTENTION_BLOCKS").as_deref(),
                d.attention_blocks,
                ATTENTION_BLOCKS_RANGE,
            )?,
            smem_carveout: match var("LATLAB_SMEM_CARVEOUT") {
                None => d.smem_carveout,
                Some(v) => Carveout::parse(&v).ok_or_else(|| {
                    KernelError::Config(format!("LATLAB_SMEM_CARVEOUT={v:?}: expected {}", Carveout::SYNTAX))
                })?,
            },
            tiled_weights: get("LATLAB_TILED_WEIGHTS", d.tiled_weights)?,
            wide_fp8_copies: get("LATLAB_WIDE_FP8_COPIES", d.wide_fp8_copies)?,
            graphs: get("LATLAB_CUDA_GRAPHS", d.graphs)?,
            run_ahead: get("LATLAB_RUN_AHEAD", d.run_ahead)?,
            step_timing: get("LATLAB_STEP_TIMING", d.step_timing)?,
        })
    }
}

#[cfg(test)]
mod tests;
