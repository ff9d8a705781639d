//! `Tuning`: which kernel variants run and how they launch, fixed for a `Gpu`'s life; the
//! defaults with the measurements behind them, and the `LATLAB_*` variables that override
//! them for A/B runs.

use crate::carveout::Carveout;
use crate::error::{KernelError, Result};
use serde::Serialize;

mod norm_fold;
pub use norm_fold::NormFold;

/// How kernels are launched and which variants run; fixed for a `Gpu`'s life. The
/// defaults are what measured fastest and was verified on the H200 (engine/PERF.md); the
/// environment can override them for A/B runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tuning {
    /// Programmatic dependent launch on every kernel (`launch.rs`). `LATLAB_PDL=0|1`.
    pub pdl: bool,
    /// Prefill attention through the tensor-core kernel (prefill_attention.cu) where the
    /// geometry allows, instead of decode_attention with one split (H200, Qwen3-8B, 232
    /// tokens: 22 instead of 123 us per layer, TTFT 14 -> 10 ms). `LATLAB_PREFILL_ATTENTION=0|1`.
    pub prefill_attention: bool,
    /// bf16 decode GEMMs (M <= 8) through the bulk-copy pipeline (`skinny_*_bulk`: a
    /// producer warp streams weights into shared memory with cp.async.bulk) instead of the
    /// register pipeline. H200, all linears of a step at batch 1: 4024 -> 3692 us (4.10
    /// TB/s); decode 5.2 -> 4.9 ms/step. `LATLAB_SKINNY_BULK_BF16=0|1`.
    pub skinny_bulk_bf16: bool,
    /// The same for FP8 weights, on since session 6. Off until then: linears alone were
    /// 1-3 % faster with bulk rings, but whole decode steps were not (0.838 vs 0.832 s for
    /// 219 steps, session 5). With the lean norms, and the FP8 rings set apart from bf16's
    /// (`fp8_bulk_stages*`), whole steps (gpu_step_chain, H200) went 3126 -> 2966 us at
    /// batch 1 and 3958 -> 3565 at batch 8. `LATLAB_SKINNY_BULK_FP8=0|1`.
    pub skinny_bulk_fp8: bool,
    /// Shared-memory stages of the bulk pipeline's ring, 16 KiB each
    /// (`BULK_STAGES_RANGE`); fewer stages fit more blocks per SM. `LATLAB_BULK_STAGES`.
    pub bulk_stages: u32,
    /// The ring depth for bulk GEMMs with fewer 16-row tiles than two per SM (o_proj and
    /// down at Qwen3-8B's size: 256 tiles on 132 SMs). Up to 6 stages two blocks still fit
    /// per SM, all the grid is resident at once, and the deeper ring only adds bytes in
    /// flight: down 31.1 -> 24.3 us (4 -> 6 stages); 8 stages fit one block per SM and lose
    /// (`BULK_STAGES_RANGE`). `LATLAB_BULK_STAGES_SMALL`.
    pub bulk_stages_small: u32,
    /// `bulk_stages` for bf16 launches of `WIDE_ROWS` rows or more (batch 3-8) on grids of
    /// two or more tiles per SM (qkv, gate|up). With 5 stages two blocks fit per SM instead
    /// of three. At batch 8 the gain is beside qkv: the qk-norm/rope/kv kernel's blocks
    /// then all fit before its release (6.1 -> 2.1 us per layer; engine/PERF.md step 49); at
    /// batch 4 it is in gate|up; at batch 1-2 the third block per SM pays more. Whole bf16
    /// steps (gpu_step_chain, H200, session 17, clusters on, us; 4 -> 5 -> 6 stages): batch
    /// 1 4025-4033 -> 4093; batch 2 4106-4108 -> 4173-4181 -> 4134; batch 3 4222 -> 4165;
    /// batch 4 4221-4233 -> 4188-4197 -> 4214; batch 8 4358-4368 -> 4307-4314 -> 4298-4313.
    /// `LATLAB_BULK_STAGES_WIDE` (`BULK_STAGES_RANGE`).
    pub bulk_stages_wide: u32,
    /// `bulk_stages` for FP8 weights (`LATLAB_FP8_BULK_STAGES`). Whole steps at FP8 batch
    /// 1 / 8 (us, session 6) with small rings of 6: 3 stages 3108 / 3786, 2 stages 3010 /
    /// 3663, 4 stages 3191 / 3851. Fewer, shallower rings leave shared memory to the
    /// kernels around the GEMM.
    pub fp8_bulk_stages: u32,
    /// `bulk_stages_small` for FP8 weights (`LATLAB_FP8_BULK_STAGES_SMALL`). With 2 main
    /// stages, whole steps at batch 1 / 8 (us): 3 small stages 3131 / 3609, 5: 2966 /
    /// 3565, 6: 3010 / 3663, 7: 3266 / 3837, 8: 3250 / 3822.
    pub fp8_bulk_stages_small: u32,
    /// Decode attention reads the K/V of a row's older positions before it waits on the
    /// previous kernel, when the caller says they are settled (`PagedAttnArgs::settled`:
    /// a decode step). `LATLAB_ATTENTION_EARLY=0|1`, for A/B runs.
    pub attention_early_loads: bool,
    /// RMSNorm rows of a multiple of 16 (4096 in Qwen3-8B) run on the lean kernels
    /// (`add_rmsnorm_vec`: 4 float4 per thread, 56 registers, against 168), which may be
    /// resident beside the GEMM blocks before them. On: whole decode steps (gpu_step_chain,
    /// H200, session 6) went 4594 -> 4309 us at bf16 batch 1, 5084 -> 4854 at batch 8,
    /// 3360 -> 3140 / 4085 -> 3956 with FP8 weights. `LATLAB_NORM_VEC=0|1`.
    pub norm_vec: bool,
    /// Blocks the split decode attention aims for (`ops::attention_splits`: splits =
    /// this / (rows x kv heads), 1..=32). 528 = four per SM of an H200 was best when each
    /// split loaded its K/V after the wait (gpu_timing, session 2), and stayed best through
    /// session 15. With the tensor-core attention (`attention_mma`), whose 4 warps take a
    /// 64-position tile in one pass, fewer, longer splits pay: whole batch-8 steps
    /// (gpu_step_chain, H200, session 16, us, bf16 / FP8) 528: 4352-4353 / 3332-3343; 384 (6
    /// splits): 4322-4326 / 3309-3313; 448: 4319 / 3310; 320: 4369 / 3363; 128: 4402 / 3445;
    /// 64: 4694 / 3586; 768: 4453 / 3425. Batch 1 keeps the 32-split cap. The engine's
    /// batch-8 bench: 4.34-4.39 -> 4.35 ms/step (bf16), 3.39-3.41 -> 3.37-3.38 (FP8).
    /// `LATLAB_ATTENTION_BLOCKS` (`ATTENTION_BLOCKS_RANGE`), for sweeps.
    pub attention_blocks: u32,
    /// The bulk GEMMs run persistent (`*_bulk_persistent`, skinny_bulk.cu): a grid of the
    /// blocks that fit at once, each looping over tiles with its ring running on, instead of
    /// a block per 16-row tile. Whole steps (gpu_step_chain, H200, session 7, us), one-tile
    /// -> persistent: bf16 batch 1 4269 -> 4254, batch 8 4829 -> 4662; FP8 batch 1 2948 ->
    /// 3040 (slower: `fp8_persistent_rows`), batch 8 3592 -> 3535.
    /// `LATLAB_BULK_PERSISTENT=0|1`.
    pub bulk_persistent: bool,
    /// FP8 bulk GEMMs run persistent (with `bulk_persistent`) from this many rows on; below,
    /// a block per tile. 1 (all) since session 8: with x loaded through L1 at every stage,
    /// persistent FP8 lost 90 us per step at batch 1 (session 7); with x staged in shared
    /// memory (`x_smem_kb`), once per block instead of once per tile, it wins (2902 -> 2858
    /// us per step, H200). `LATLAB_FP8_PERSISTENT_ROWS` (`PERSISTENT_ROWS_RANGE`; 9: never).
    pub fp8_persistent_rows: u32,
    /// The shared-memory carveout each group of kernels asks for (carveout.rs). An SM
    /// changes its L1/shared split only when idle, so a kernel whose carveout differs from
    /// the one running cannot place blocks beside it, which is what PDL needs: ncu showed
    /// the FP8 GEMMs at a 135 KB carveout, the bf16 ones need 228. Whole steps (H200,
    /// session 7, us; driver -> max-outside-gemms / max): bf16 batch 1 4299 -> 4236 / 4235
    /// (the norms cost 35 us instead of ~105), batch 8 4627 -> 4657 / 4661, FP8 batch 1
    /// 2969 -> 2971 / 2989, batch 8 3446 -> 3565 / 3639 (a smaller L1 for the 8 rows of x).
    /// Per group (session 10): only the split attention at the largest gains
    /// (`Carveout::ATTENTION_MAX`, the default). `LATLAB_SMEM_CARVEOUT` (`Carveout::SYNTAX`).
    pub smem_carveout: Carveout,
    /// The split decode attention merges its splits inside thread block clusters
    /// (`decode_attention_cluster`: the splits of a (row, kv head) read each other's partial
    /// states from distributed shared memory) instead of a second kernel, where that costs
    /// at most half the splits: a cluster holds at most 8 (the portable size), so counts of
    /// 9..=16 are capped at 8 and larger ones keep the merge kernel (`ops::attention_splits`).
    /// Same bits at the same split count (cuda_attention). Whole steps (H200, session 6-7, us):
    /// batch 8 (9 -> 8 splits) bf16 4849 -> 4798, FP8 3587 -> 3519; batch 1 (32 -> 8)
    /// slower, 4305 -> 4421. Since the fast scores outside clusters (`attention_d32`) and
    /// the attention's carveout at the largest (session 10, batch 8): bf16 4644 -> 4534
    /// without clusters, FP8 3466 -> 3529; so for FP8 weights only until session 16, when
    /// the tensor-core attention (`attention_mma`) outside clusters beat them at FP8 batch 8
    /// too (3441-3446 -> 3321-3333 us): off. Session 17, the tensor-core attention in
    /// clusters (`decode_attention_mma_cluster`) against it outside (gpu_step_chain, us, off
    /// -> on): FP8 batch 8 3313-3345 -> 3178-3193, batch 4 3066 -> 2921-2923, batch 2 2821
    /// -> 2797-2806; bf16 batch 8 4367-4377 -> 4360-4369, batch 4 4257 -> 4221-4233; batch 1
    /// unchanged (32 splits keep the merge kernel): on. `for_weights` resolves `Fp8Only`.
    /// `LATLAB_ATTENTION_CLUSTER=0|1|fp8`.
    pub attention_cluster: AttentionCluster,
    /// The FP8 bulk GEMMs stage x in shared memory as f16 once per block (the `*_xs`
    /// kernels, `TileFp8S`) where its rows take at most this many KiB, instead of loading
    /// it through L1 at every stage: ncu put 47 % of the FP8 GEMM's stall cycles on those
    /// loads. 25 covers batch 1 at every Qwen3-8B shape (down's 12288 take 24.1 KiB) and
    /// batches 2-3 where k = 4096; more costs the rings their residency (227: batch 8
    /// whole steps 3457 -> 3559 us). Whole FP8 steps, H200, session 8 (us, batch 1 / 8):
    /// 2966 / 3462 without, 2858 / 3458 with 25 and `fp8_persistent_rows` 1. Same bits
    /// (cuda_paths A/B). With `fp8_x_f16` only at 1 row (`ops::F16_X_STAGED_ROWS`: f16 x
    /// has no conversion for staging to save). 0: never. `LATLAB_X_SMEM_KB`
    /// (`X_SMEM_KB_RANGE`).
    pub x_smem_kb: u32,
    /// Decode attention with head_dim % 32 == 0, outside clusters, runs the `_d32` kernel:
    /// eight lanes per position for the scores, K staged in shared memory with V, instead
    /// of two lanes per position with K in registers. The block timeline (session 9) put
    /// ~4.6 us of the batch-1 attention's ~9 us per layer in the scores, all in one warp;
    /// with it 1.1 us, and whole steps at batch 1 -115 us (bf16) and -150 us (FP8).
    /// `LATLAB_ATTENTION_D32=0|1`.
    pub attention_d32: bool,
    /// Which decode GEMMs' weights the engine uploads tiled (`ops::tile_weights`: each
    /// bulk ring stage one contiguous run of bytes) where the bulk pipeline reads them. The
    /// ring alone streams a step's layer linears at 4.63 TB/s tiled against 4.23 row-major
    /// (H200, gpu_copy_ceiling, session 12). latlab-engine bench, bf16 Qwen3-8B shape, tiled
    /// against row-major on one card each (engine/PERF.md sessions 22-23), ms/step: batch 8
    /// 4.22 / 4.27, 4.29 / 4.31, 4.25 / 4.28-4.29; batch 1 3.91 / 3.89, 3.96-3.97 / 3.96,
    /// 3.91 / 3.93. So bf16 models tile by default (`Bf16`): batch 8 stays under 4.3 ms on
    /// all three cards, where row-major missed on one. The price is memory: bf16 models
    /// keep their row-major matrices too, for prefill's cuBLAS GEMMs, 13.9 GB more GPU
    /// memory at Qwen3-8B (the trade FP8 models already make with their bf16 prefill
    /// copies). FP8 codes gained nothing tiled (their GEMMs are bound by their consumers);
    /// they are tiled in place when asked (`All`; prefill dequantizes from either layout).
    /// `LATLAB_TILED_WEIGHTS=0|bf16|1` (1: FP8 codes too).
    pub tiled_weights: TiledWeights,
    /// An untied lm_head [vocab, hidden] is uploaded tiled (`ops::tile_weights`) instead of
    /// row-major, for the bulk skinny GEMM. Unlike `tiled_weights` this costs no memory:
    /// only the skinny GEMM reads lm_head (prefill wants logits for at most a few rows and
    /// runs it in chunks of 8), so no row-major copy is kept. lm_head is 1.24 GB of a
    /// Qwen3-8B step (8 % in bf16, 15 % in FP8, whose lm_head stays bf16). A tied lm_head is
    /// the embedding, which the gather reads row-major, so it stays as it is. Measured equal
    /// to row-major within 0.01 ms/step, bf16 and FP8, batches 1 and 8 (engine/PERF.md step
    /// 56), so off; kept for A/B runs. `LATLAB_TILED_LM_HEAD=0|1`.
    pub tiled_lm_head: bool,
    /// Decode attention with head_dim 128 and at most 8 query heads per KV head runs on the
    /// tensor cores (`decode_attention_mma`, and `_mma_cluster` in clusters; each warp 16
    /// positions of a tile, the softmax in registers, P rounded to bf16 for P V) instead of
    /// the CUDA-core kernels. Whole steps (gpu_step_chain, H200, session 16, us, with
    /// clusters off): bf16 batch 1 4047-4058 -> 4022-4037, batch 8 4515-4533 -> 4396-4409;
    /// FP8 batch 1 2680-2690 -> 2664-2671, batch 8 3441-3446 -> 3321-3333.
    /// `LATLAB_ATTENTION_MMA=0|1`.
    pub attention_mma: bool,
    /// Which decode batches fold their RMSNorms (but the first and the last of a step)
    /// into the skinny GEMMs around them (`ops::NormEpi`): o_proj and down add their sums to
    /// the residual and store the next GEMM's x with the norm's weights and per-tile sums
    /// of squares; qkv and gate|up scale their sums by each row's norm scale. No norm
    /// kernel and no reduction round trip remain between the linears. The residual keeps
    /// its bits; the normed x is rounded to bf16 before the scale instead of after (HF
    /// transformers rounds it before the weights), so logits move within bf16 tolerance.
    /// Needs the bulk pipeline and fused gate|up; runs the `_norm` kernels (the plain ones
    /// keep 38a0393's SASS). gpu_step_chain, H200, session 20, two machines, us, fold on
    /// minus off: bf16 batch 1 +75 / +66 / +59, batch 2 +17 / +13, batch 4 -12 / -13,
    /// batch 8 0 / -3 / 0; FP8 batch 1 -53 / -55 / -57, batch 2 -20 / -36, batch 4 +39 /
    /// +37, batch 8 +42 / +57 / +45. latlab-engine bench, FP8 batch 1: 2.66-2.68 -> 2.58-2.60
    /// ms/step (the others within +-0.02). The epilogues cost about what the norm kernels
    /// did, but where FP8 steps are short: so there only, first at batches 1-2. Since FP8
    /// GEMMs read f16 x (`fp8_x_f16`, session 21), batch 2 runs faster unfolded on f16 x
    /// (chain 2764-2777 against 2784-2791 us; bench 2.77 against 2.79 ms), and batch 1
    /// still folds (2624 against 2688-2694): `NormFold::Fp8UpTo(1)`, resolved by
    /// `for_weights`. `LATLAB_NORM_EPILOGUE=0|1|up_to_N|fp8_up_to_N`.
    pub norm_epilogue: NormFold,
    /// FP8 decode GEMMs read x as f16 (`ops::SkinnyX`, the `_xh` kernels) where the norms
    /// before qkv and gate|up and the gate|up SwiGLU before down write it so
    /// (`ops::rmsnorm_f16_into`): no block converts bf16 x to f16 at every ring stage. Same
    /// bits (each f16 is the bf16 value converted as the GEMM converted it). A timing-only
    /// build without that conversion (session 20, gpu_step_chain, us): FP8 batch 2 2792 ->
    /// 2750, batch 4 2922 -> 2738, batch 8 3176 -> 3027; batch 1 stages x in shared memory
    /// as f16 already. Measured (session 21, latlab-engine bench, ms/step, off -> on): FP8
    /// batch 8 3.21 -> 3.07, batch 4 2.93 -> 2.78. On; `for_weights` turns it off for bf16
    /// weights, which never take it. Not where the norms fold (`norm_epilogue`, FP8 batch 1
    /// by default), nor o_proj (the attention writes its x in bf16).
    /// `LATLAB_FP8_X_F16=0|1`.
    pub fp8_x_f16: bool,
    /// bf16 decode GEMMs at one token row run as "fat" blocks (skinny_fat.cu,
    /// `ops::skinny_plan`): one CTA per SM holds the rings the bulk kernels run as separate
    /// blocks (3 of `bulk_stages`, or 2 of `bulk_stages_small` on grids of fewer tiles than
    /// two per SM) and stages x in shared memory once for all of them, instead of loading x
    /// through L1 at every stage. Same bits. H200, the 144 tiled layer linears of a step
    /// (gpu_copy_ceiling, engine/PERF.md step 59): 3522-3525 -> 3404-3411 us. But whole
    /// steps lost (latlab-engine bench, bf16 batch 1, ms/step, step 60): off 3.967 / on
    /// 3.993-3.996 on one card; off 3.892 / `large` 3.958-3.960 / `small` 3.949-3.955 on
    /// another. A fat CTA holds an SM's whole shared memory; what costs it between the
    /// GEMMs of a real step is not yet found. So off. `Large`: only
    /// on grids of two or more tiles per SM (qkv, gate|up, lm_head); `Small`: only on the
    /// others (o_proj, down); `Reuse`: only where each ring runs two tiles or more, so
    /// that x staged once is read more than once (gate|up, lm_head).
    /// `LATLAB_BF16_FAT=0|1|large|small|reuse`.
    pub bf16_fat: FatBlocks,
    /// Rings per fat CTA on grids of two or more tiles per SM (`FAT_GROUPS_RANGE`; with
    /// `bulk_stages`, the CTAs per SM follow from shared memory): 3, one CTA per SM with the
    /// bulk kernels' 3 x 4 stages. 1 makes each ring its own CTA with x staged beside it,
    /// which fits 2 per SM at 6 stages (engine/PERF.md step 63). `LATLAB_FAT_GROUPS`.
    pub fat_groups: u32,
    /// `fat_groups` on smaller grids (o_proj, down): 2. `LATLAB_FAT_GROUPS_SMALL`.
    pub fat_groups_small: u32,
}

/// `Tuning::tiled_weights`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TiledWeights {
    Off,
    Bf16,
    All,
}

/// `Tuning::bf16_fat`: which one-row bf16 GEMMs run as fat blocks, by their grid (large:
/// two or more 16-row tiles per SM).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FatBlocks {
    Off,
    Large,
    Small,
    /// Large grids where every ring runs two tiles or more (ops::skinny_fat decides).
    Reuse,
    All,
}

impl FatBlocks {
    /// Whether a grid of fewer tiles than two per SM (`small`) or more takes them.
    pub fn takes(self, small: bool) -> bool {
        match self {
            FatBlocks::Off => false,
            FatBlocks::All => true,
            FatBlocks::Large | FatBlocks::Reuse => !small,
            FatBlocks::Small => small,
        }
    }
}

/// The rings a fat CTA takes (FAT_MAX_GROUPS in skinny_fat.cu).
pub const FAT_GROUPS_RANGE: std::ops::RangeInclusive<u32> = 1..=3;

/// The block targets `Tuning::attention_blocks` takes.
pub const ATTENTION_BLOCKS_RANGE: std::ops::RangeInclusive<u32> = 1..=4096;

/// The stage counts the bulk pipeline takes (TM_MAX_STAGES in skinny_bulk.cu).
pub const BULK_STAGES_RANGE: std::ops::RangeInclusive<u32> = 2..=8;

/// The rows from which bf16 bulk rings take `Tuning::bulk_stages_wide` stages.
pub const WIDE_ROWS: usize = 3;

/// `Tuning::attention_cluster`: where the split attention merges in clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionCluster {
    Off,
    On,
    /// On for FP8 weights, off for bf16 (`Tuning::for_weights`); off until resolved.
    Fp8Only,
}

/// The sizes `Tuning::x_smem_kb` takes (KiB; the largest dynamic shared memory is 227).
pub const X_SMEM_KB_RANGE: std::ops::RangeInclusive<u32> = 0..=227;

/// The row counts `Tuning::fp8_persistent_rows` takes (9: past the skinny GEMM's 8, never).
pub const PERSISTENT_ROWS_RANGE: std::ops::RangeInclusive<u32> = 1..=9;

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            pdl: true,
            prefill_attention: true,
            skinny_bulk_bf16: true,
            skinny_bulk_fp8: true,
            bulk_stages: 4,
            bulk_stages_small: 6,
            bulk_stages_wide: 5,
            fp8_bulk_stages: 2,
            fp8_bulk_stages_small: 5,
            attention_early_loads: true,
            norm_vec: true,
            attention_blocks: 384,
            bulk_persistent: true,
            fp8_persistent_rows: 1,
            smem_carveout: Carveout::ATTENTION_MAX,
            attention_cluster: AttentionCluster::On,
            x_smem_kb: 25,
            attention_d32: true,
            tiled_weights: TiledWeights::Bf16,
            tiled_lm_head: false,
            attention_mma: true,
            norm_epilogue: NormFold::Fp8UpTo(1),
            fp8_x_f16: true,
            bf16_fat: FatBlocks::Off,
            fat_groups: 3,
            fat_groups_small: 2,
        }
    }
}

/// "0" / "1" of a switch variable, or an error naming it.
fn switch(name: &str, v: Option<&str>, default: bool) -> Result<bool> {
    match v {
        None => Ok(default),
        Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(v) => Err(KernelError::Config(format!(
            "{name}={v:?}: expected 0 or 1"
        ))),
    }
}

impl Tuning {
    /// This tuning for a model with FP8 (`fp8`) or bf16 weights: resolves the choices
    /// that depend on the weights (`AttentionCluster::Fp8Only`, `NormFold::Fp8UpTo`,
    /// `fp8_x_f16`).
    pub fn for_weights(mut self, fp8: bool) -> Tuning {
        if self.attention_cluster == AttentionCluster::Fp8Only {
            self.attention_cluster = if fp8 {
                AttentionCluster::On
            } else {
                AttentionCluster::Off
            };
        }
        self.norm_epilogue = self.norm_epilogue.for_weights(fp8);
        self.fp8_x_f16 &= fp8;
        self
    }

    /// Whether a decode batch of `rows` rows folds its inner norms into the GEMMs
    /// (`norm_epilogue`; the caller checks that the GEMMs can: bulk pipeline, fused
    /// gate|up, rows within the skinny GEMM's).
    pub fn folds_norms(&self, rows: usize) -> bool {
        self.norm_epilogue.folds(rows)
    }

    /// Whether the split attention may merge in clusters (`Fp8Only` unresolved: no).
    pub fn clusters(&self) -> bool {
        self.attention_cluster == AttentionCluster::On
    }

    /// Whether decode weights (FP8 codes when `fp8`, else bf16) are uploaded tiled: asked
    /// for, and read by the bulk pipeline (the register pipeline reads row-major only).
    pub fn tiles_weights(&self, fp8: bool) -> bool {
        match (self.tiled_weights, fp8) {
            (TiledWeights::Off, _) | (TiledWeights::Bf16, true) => false,
            (_, true) => self.skinny_bulk_fp8,
            (_, false) => self.skinny_bulk_bf16,
        }
    }

    /// Whether an untied lm_head is uploaded tiled (`tiled_lm_head`, read by the bulk
    /// pipeline only).
    pub fn tiles_lm_head(&self) -> bool {
        self.tiled_lm_head && self.skinny_bulk_bf16
    }

    /// The defaults, overridden by `LATLAB_PDL`, `LATLAB_PREFILL_ATTENTION`,
    /// `LATLAB_SKINNY_BULK_BF16`, `LATLAB_SKINNY_BULK_FP8`, `LATLAB_BULK_STAGES`,
    /// `LATLAB_BULK_STAGES_SMALL`, `LATLAB_BULK_STAGES_WIDE`, `LATLAB_FP8_BULK_STAGES`,
    /// `LATLAB_FP8_BULK_STAGES_SMALL`, `LATLAB_ATTENTION_EARLY`, `LATLAB_NORM_VEC` and
    /// `LATLAB_ATTENTION_BLOCKS`, `LATLAB_ATTENTION_CLUSTER`, `LATLAB_BULK_PERSISTENT`,
    /// `LATLAB_FP8_PERSISTENT_ROWS`, `LATLAB_SMEM_CARVEOUT`,
    /// `LATLAB_X_SMEM_KB`, `LATLAB_ATTENTION_D32`, `LATLAB_TILED_WEIGHTS`, `LATLAB_TILED_LM_HEAD`,
    /// `LATLAB_ATTENTION_MMA`, `LATLAB_NORM_EPILOGUE`, `LATLAB_FP8_X_F16`, `LATLAB_BF16_FAT`,
    /// `LATLAB_FAT_GROUPS` and `LATLAB_FAT_GROUPS_SMALL` when set.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|n| std::env::var(n).ok())
    }

    /// `from_env` over a given lookup (tests cannot set the process environment safely).
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let d = Tuning::default();
        let get = |name: &str, default: bool| switch(name, var(name).as_deref(), default);
        let int = |name: &str, default: u32, range: std::ops::RangeInclusive<u32>| match var(name) {
            None => Ok(default),
            Some(v) => v.parse().ok().filter(|n| range.contains(n)).ok_or_else(|| {
                KernelError::Config(format!("{name}={v:?}: expected an integer in {range:?}"))
            }),
        };
        let stages = |name: &str, default: u32| int(name, default, BULK_STAGES_RANGE);
        Ok(Tuning {
            pdl: get("LATLAB_PDL", d.pdl)?,
            prefill_attention: get("LATLAB_PREFILL_ATTENTION", d.prefill_attention)?,
            skinny_bulk_bf16: get("LATLAB_SKINNY_BULK_BF16", d.skinny_bulk_bf16)?,
            skinny_bulk_fp8: get("LATLAB_SKINNY_BULK_FP8", d.skinny_bulk_fp8)?,
            attention_early_loads: get("LATLAB_ATTENTION_EARLY", d.attention_early_loads)?,
            norm_vec: get("LATLAB_NORM_VEC", d.norm_vec)?,
            attention_d32: get("LATLAB_ATTENTION_D32", d.attention_d32)?,
            attention_mma: get("LATLAB_ATTENTION_MMA", d.attention_mma)?,
            fp8_x_f16: get("LATLAB_FP8_X_F16", d.fp8_x_f16)?,
            bf16_fat: match var("LATLAB_BF16_FAT").as_deref() {
                None => d.bf16_fat,
                Some("0") => FatBlocks::Off,
                Some("1") => FatBlocks::All,
                Some("large") => FatBlocks::Large,
                Some("small") => FatBlocks::Small,
                Some("reuse") => FatBlocks::Reuse,
                Some(v) => {
                    return Err(KernelError::Config(format!(
                        "LATLAB_BF16_FAT={v:?}: expected 0, 1, large, small or reuse"
                    )));
                }
            },
            fat_groups: int("LATLAB_FAT_GROUPS", d.fat_groups, FAT_GROUPS_RANGE)?,
            fat_groups_small: int(
                "LATLAB_FAT_GROUPS_SMALL",
                d.fat_groups_small,
                FAT_GROUPS_RANGE,
            )?,
            tiled_lm_head: get("LATLAB_TILED_LM_HEAD", d.tiled_lm_head)?,
            norm_epilogue: match var("LATLAB_NORM_EPILOGUE") {
                None => d.norm_epilogue,
                Some(v) => NormFold::parse("LATLAB_NORM_EPILOGUE", &v)?,
            },
            tiled_weights: match var("LATLAB_TILED_WEIGHTS").as_deref() {
                None => d.tiled_weights,
                Some("0") => TiledWeights::Off,
                Some("bf16") => TiledWeights::Bf16,
                Some("1") => TiledWeights::All,
                Some(v) => {
                    return Err(KernelError::Config(format!(
                        "LATLAB_TILED_WEIGHTS={v:?}: expected 0, bf16 or 1"
                    )));
                }
            },
            attention_cluster: match var("LATLAB_ATTENTION_CLUSTER").as_deref() {
                None => d.attention_cluster,
                Some("0") => AttentionCluster::Off,
                Some("1") => AttentionCluster::On,
                Some("fp8") => AttentionCluster::Fp8Only,
                Some(v) => {
                    return Err(KernelError::Config(format!(
                        "LATLAB_ATTENTION_CLUSTER={v:?}: expected 0, 1 or fp8"
                    )));
                }
            },
            bulk_persistent: get("LATLAB_BULK_PERSISTENT", d.bulk_persistent)?,
            smem_carveout: match var("LATLAB_SMEM_CARVEOUT") {
                None => d.smem_carveout,
                Some(v) => Carveout::parse(&v).ok_or_else(|| {
                    KernelError::Config(format!(
                        "LATLAB_SMEM_CARVEOUT={v:?}: expected {}",
                        Carveout::SYNTAX
                    ))
                })?,
            },
            fp8_persistent_rows: int(
                "LATLAB_FP8_PERSISTENT_ROWS",
                d.fp8_persistent_rows,
                PERSISTENT_ROWS_RANGE,
            )?,
            attention_blocks: int(
                "LATLAB_ATTENTION_BLOCKS",
                d.attention_blocks,
                ATTENTION_BLOCKS_RANGE,
            )?,
            x_smem_kb: int("LATLAB_X_SMEM_KB", d.x_smem_kb, X_SMEM_KB_RANGE)?,
            bulk_stages: stages("LATLAB_BULK_STAGES", d.bulk_stages)?,
            bulk_stages_small: stages("LATLAB_BULK_STAGES_SMALL", d.bulk_stages_small)?,
            bulk_stages_wide: stages("LATLAB_BULK_STAGES_WIDE", d.bulk_stages_wide)?,
            fp8_bulk_stages: stages("LATLAB_FP8_BULK_STAGES", d.fp8_bulk_stages)?,
            fp8_bulk_stages_small: stages("LATLAB_FP8_BULK_STAGES_SMALL", d.fp8_bulk_stages_small)?,
        })
    }
}

#[cfg(test)]
mod tests;
