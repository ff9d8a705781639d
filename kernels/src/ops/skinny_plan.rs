//! Which skinny GEMM kernel a launch runs and in what shape: the register pipeline or the
//! bulk-copy one (skinny_bulk.cu), one-tile or persistent, with x loaded per stage, staged
//! whole in shared memory, or copied through the ring; the ring depth, grid and shared
//! memory that go with it, and the bulk kernels' extra arguments. The ops in skinny.rs
//! launch through `start`.

use super::skinny::{THREADS, TILE_N};
use super::skinny_fat::fat_shape;
use super::weight_layout::WeightLayout;
use crate::error::{Result, check};
use crate::gpu::{Gpu, Tuning, WIDE_ROWS};
use crate::launch::Launch;
use cudarc::driver::{CudaView, LaunchConfig};

/// The bulk-copy variants (`Tuning::skinny_bulk_*`): the 8 warps plus one producer warp,
/// and `Tuning::bulk_stages` x 16 rows x TM_ROW_STRIDE bytes of shared memory
/// (skinny_bulk.cu).
const BULK_THREADS: u32 = THREADS + 32;
pub(super) const BULK_STAGE_BYTES: u32 = 16 * (1024 + 16);

/// A bulk op's kernels: [a block per tile, persistent].
type BulkNames = [&'static str; 2];
const BULK_BF16: BulkNames = ["skinny_gemm_bf16_bulk", "skinny_gemm_bf16_bulk_persistent"];
const BULK_BF16_SWIGLU: BulkNames = [
    "skinny_gemm_bf16_swiglu_bulk",
    "skinny_gemm_bf16_swiglu_bulk_persistent",
];
const BULK_FP8: BulkNames = ["skinny_gemm_fp8_bulk", "skinny_gemm_fp8_bulk_persistent"];
const BULK_FP8_SWIGLU: BulkNames = [
    "skinny_gemm_fp8_swiglu_bulk",
    "skinny_gemm_fp8_swiglu_bulk_persistent",
];
/// FP8 with x staged in shared memory (`Tuning::x_smem_kb`).
const BULK_FP8_XS: BulkNames = [
    "skinny_gemm_fp8_bulk_xs",
    "skinny_gemm_fp8_bulk_persistent_xs",
];
const BULK_FP8_SWIGLU_XS: BulkNames = [
    "skinny_gemm_fp8_swiglu_bulk_xs",
    "skinny_gemm_fp8_swiglu_bulk_persistent_xs",
];

/// How a skinny launch runs: the register pipeline (a block per 16-row tile), or the bulk
/// one with its ring depth, grid (a block per tile, or fewer persistent blocks), the bytes
/// of shared memory it keeps besides the weights' slots: the norm epilogue's
/// (`NormEpi`) and x (staged whole by the `*_xs` kernels; 0: none).
#[derive(Clone, Copy)]
pub(super) enum Pipe {
    Regs,
    Bulk {
        stages: u32,
        blocks: u32,
        x_bytes: u32,
    },
    /// skinny_fat.cu: `groups` rings of `stages` in one CTA per SM, `smem` bytes of
    /// dynamic shared memory (`fat_shape`), `blocks` CTAs.
    Fat {
        groups: u32,
        stages: u32,
        smem: u32,
        blocks: u32,
    },
}

pub(super) fn launch_cfg(n: usize, pipe: Pipe) -> LaunchConfig {
    let (threads, smem, blocks) = match pipe {
        Pipe::Regs => (THREADS, 0, n.div_ceil(TILE_N) as u32),
        Pipe::Bulk {
            stages,
            blocks,
            x_bytes,
            ..
        } => (BULK_THREADS, stages * BULK_STAGE_BYTES + x_bytes, blocks),
        Pipe::Fat {
            groups,
            smem,
            blocks,
            ..
        } => (groups * BULK_THREADS, smem, blocks),
    };
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: smem,
    }
}

/// The ring depth of a bulk launch over `m` rows: FP8 or bf16, the deeper one for grids
/// with fewer tiles than two per SM (`small`), and for bf16 the wide rows' own
/// (`Tuning::bulk_stages_wide`).
pub(super) fn ring_stages(t: &Tuning, fp8: bool, small: bool, m: usize) -> u32 {
    match (fp8, small) {
        (false, false) if m >= WIDE_ROWS => t.bulk_stages_wide,
        (false, false) => t.bulk_stages,
        (false, true) => t.bulk_stages_small,
        (true, false) => t.fp8_bulk_stages,
        (true, true) => t.fp8_bulk_stages_small,
    }
}

/// Shared memory a `*_xs` kernel stages x in: m rows of xs_row_units(k) 16-byte units
/// (skinny_tiles.cuh: 16 units per 128-k chunk, plus XS_PAD).
fn staged_x_bytes(m: usize, k: usize) -> u32 {
    ((k / 16).div_ceil(8) * 16 + 4) as u32 * 16 * m as u32
}

/// Dynamic shared memory a bulk block may take: Hopper's 227 KiB per block less the bulk
/// kernels' static 4.2 KiB (the warps' reduction tile and the ring's barriers), rounded down.
pub(super) const MAX_DYNAMIC_SMEM: u32 = 222 * 1024;

/// The most rows an FP8 GEMM stages x in shared memory for when the FP8 GEMMs read f16 x
/// (`Tuning::fp8_x_f16`). Staging bf16 x saves converting it at every ring stage; f16 x
/// needs no conversion, and staging then pays only at one row, where the folded norms
/// run on bf16 x (gpu_step_chain, H200, session 21, whole FP8 steps, us, x staged within
/// 25 KiB against never: norms unfolded, 1 row 2688-2694 against 2708-2717, 3 rows
/// 2807-2812 against 2762-2773; with f16 x at 2 rows, o_proj's bf16 x, the only one
/// staged, 2751-2764 against 2726-2728). Without f16 x, any row count within
/// `Tuning::x_smem_kb` stages.
pub const F16_X_STAGED_ROWS: usize = 1;

/// The kernel and launch shape for `op` over x [m, k] and n output rows under the GPU's
/// tuning (`skinny_kernel`), with the deeper ring when the grid has fewer tiles than two
/// per SM and, for persistent kernels, the blocks that fit at once. `epi_bytes`: the norm
/// epilogue's shared memory (`NormEpi::check`); above 0 the bulk kernel's `_norm` form
/// runs. `xh`: x is f16 (and a SwiGLU act too), the FP8 bulk kernel's `_xh` form.
pub(super) fn start<'g>(
    gpu: &'g Gpu,
    op: &'static str,
    (m, n, k): (usize, usize, usize),
    epi_bytes: u32,
    xh: bool,
) -> Result<(Launch<'g>, Pipe)> {
    let t = gpu.tuning();
    let tiles = n.div_ceil(TILE_N);
    let small = tiles < 2 * gpu.sms();
    let stages = ring_stages(&t, op.starts_with("skinny_gemm_fp8"), small, m);
    let name = skinny_kernel(&t, op, (m, k), stages);
    check(!xh || name != op, op, || {
        "x as f16 needs the bulk-copy pipeline (LATLAB_SKINNY_BULK_FP8=1)".to_string()
    })?;
    check(!xh || epi_bytes == 0, op, || {
        "x as f16 has no folded-norm form".to_string()
    })?;
    if name == op {
        return Ok((Launch::new(gpu, op)?, Pipe::Regs));
    }
    if epi_bytes == 0
        && !xh
        && let Some((fat, groups, stages, smem)) = fat_shape(&t, name, m, k, (tiles, gpu.sms()))
    {
        let per_sm = gpu.resident_blocks(fat, groups * BULK_THREADS, smem)?;
        let pipe = Pipe::Fat {
            groups,
            stages,
            smem,
            blocks: (tiles as u32)
                .div_ceil(groups)
                .min(per_sm * gpu.sms() as u32),
        };
        return Ok((Launch::new(gpu, fat)?, pipe));
    }
    let name = if epi_bytes > 0 {
        norm_form(name)
    } else if xh {
        xh_form(name)
    } else {
        name
    };
    // The norm epilogue's words lie between the ring and staged x (skinny_bulk.cu).
    let x_bytes = epi_bytes
        + if name.contains("_xs") {
            staged_x_bytes(m, k)
        } else {
            0
        };
    check(
        stages * BULK_STAGE_BYTES + x_bytes <= MAX_DYNAMIC_SMEM,
        op,
        || {
            format!(
                "{stages} ring stages and {x_bytes} bytes beside them exceed {MAX_DYNAMIC_SMEM} bytes of shared memory"
            )
        },
    )?;
    let blocks = if name.contains("_persistent") {
        let smem = stages * BULK_STAGE_BYTES + x_bytes;
        let per_sm = gpu.resident_blocks(name, BULK_THREADS, smem)?;
        (tiles as u32).min(per_sm * gpu.sms() as u32)
    } else {
        tiles as u32
    };
    let pipe = Pipe::Bulk {
        stages,
        blocks,
        x_bytes,
    };
    Ok((Launch::new(gpu, name)?, pipe))
}

/// The kernel a skinny op (`skinny_gemm_bf16`, `_bf16_swiglu`, `_fp8`, `_fp8_swiglu`) runs
/// over x [m, k] under a tuning and a ring of `stages`: the register pipeline (the op's
/// own name) or a bulk kernel, persistent or not; for FP8, x staged whole in shared memory
/// where `Tuning::x_smem_kb` and the block's shared memory allow, and with
/// `Tuning::fp8_x_f16` up to `F16_X_STAGED_ROWS` rows only. Tests check with it that an
/// A/B compares two kernels. The name is the bf16-x kernel's; `start` takes it to its
/// `_xh` or `_norm` form.
pub fn skinny_kernel(
    t: &Tuning,
    op: &'static str,
    (m, k): (usize, usize),
    stages: u32,
) -> &'static str {
    let (bulk, names) = match op {
        "skinny_gemm_bf16" => (t.skinny_bulk_bf16, BULK_BF16),
        "skinny_gemm_bf16_swiglu" => (t.skinny_bulk_bf16, BULK_BF16_SWIGLU),
        "skinny_gemm_fp8" => (t.skinny_bulk_fp8, BULK_FP8),
        "skinny_gemm_fp8_swiglu" => (t.skinny_bulk_fp8, BULK_FP8_SWIGLU),
        _ => unreachable!("{op} is not a skinny GEMM"),
    };
    if !bulk {
        return op;
    }
    let fp8 = op.starts_with("skinny_gemm_fp8");
    let persistent = t.bulk_persistent && (!fp8 || m >= t.fp8_persistent_rows as usize);
    let x = staged_x_bytes(m, k);
    let stage = fp8 && (!t.fp8_x_f16 || m <= F16_X_STAGED_ROWS);
    if stage && x <= t.x_smem_kb * 1024 && stages * BULK_STAGE_BYTES + x <= MAX_DYNAMIC_SMEM {
        let xs = if op == "skinny_gemm_fp8" {
            BULK_FP8_XS
        } else {
            BULK_FP8_SWIGLU_XS
        };
        return xs[persistent as usize];
    }
    names[persistent as usize]
}

/// A bulk kernel's form with decode's RMSNorm folded into its epilogue (`NormEpi`): the
/// same pipeline with NormIo's arguments after the ring's (skinny_bulk.cu).
fn norm_form(name: &'static str) -> &'static str {
    match name {
        "skinny_gemm_bf16_bulk" => "skinny_gemm_bf16_bulk_norm",
        "skinny_gemm_bf16_swiglu_bulk" => "skinny_gemm_bf16_swiglu_bulk_norm",
        "skinny_gemm_bf16_bulk_persistent" => "skinny_gemm_bf16_bulk_persistent_norm",
        "skinny_gemm_bf16_swiglu_bulk_persistent" => "skinny_gemm_bf16_swiglu_bulk_persistent_norm",
        "skinny_gemm_fp8_bulk" => "skinny_gemm_fp8_bulk_norm",
        "skinny_gemm_fp8_swiglu_bulk" => "skinny_gemm_fp8_swiglu_bulk_norm",
        "skinny_gemm_fp8_bulk_persistent" => "skinny_gemm_fp8_bulk_persistent_norm",
        "skinny_gemm_fp8_swiglu_bulk_persistent" => "skinny_gemm_fp8_swiglu_bulk_persistent_norm",
        "skinny_gemm_fp8_bulk_xs" => "skinny_gemm_fp8_bulk_xs_norm",
        "skinny_gemm_fp8_swiglu_bulk_xs" => "skinny_gemm_fp8_swiglu_bulk_xs_norm",
        "skinny_gemm_fp8_bulk_persistent_xs" => "skinny_gemm_fp8_bulk_persistent_xs_norm",
        "skinny_gemm_fp8_swiglu_bulk_persistent_xs" => {
            "skinny_gemm_fp8_swiglu_bulk_persistent_xs_norm"
        }
        _ => unreachable!("{name} is not a bulk skinny kernel"),
    }
}

/// An FP8 bulk kernel's form that reads x as f16 and stores SwiGLU's act as f16
/// (`Tuning::fp8_x_f16`; TileFp8H / TileFp8SH in skinny_tiles.cuh).
fn xh_form(name: &'static str) -> &'static str {
    match name {
        "skinny_gemm_fp8_bulk" => "skinny_gemm_fp8_bulk_xh",
        "skinny_gemm_fp8_swiglu_bulk" => "skinny_gemm_fp8_swiglu_bulk_xh",
        "skinny_gemm_fp8_bulk_persistent" => "skinny_gemm_fp8_bulk_persistent_xh",
        "skinny_gemm_fp8_swiglu_bulk_persistent" => "skinny_gemm_fp8_swiglu_bulk_persistent_xh",
        "skinny_gemm_fp8_bulk_xs" => "skinny_gemm_fp8_bulk_xs_xh",
        "skinny_gemm_fp8_swiglu_bulk_xs" => "skinny_gemm_fp8_swiglu_bulk_xs_xh",
        "skinny_gemm_fp8_bulk_persistent_xs" => "skinny_gemm_fp8_bulk_persistent_xs_xh",
        "skinny_gemm_fp8_swiglu_bulk_persistent_xs" => {
            "skinny_gemm_fp8_swiglu_bulk_persistent_xs_xh"
        }
        _ => unreachable!("{name} is not an FP8 bulk skinny kernel"),
    }
}

/// The bulk kernels' trailing arguments: their ring depth and the weights' layout.
pub(super) fn bulk_args(b: &mut Launch<'_>, pipe: Pipe, layout: WeightLayout) {
    match pipe {
        Pipe::Bulk { stages, .. } => {
            b.i32(stages as i32).i32(layout.arg());
        }
        Pipe::Fat { stages, groups, .. } => {
            b.i32(stages as i32).i32(layout.arg()).i32(groups as i32);
        }
        Pipe::Regs => {}
    }
}

/// Weight argument: the bulk kernels copy from it and need 16-byte alignment; the register
/// pipeline reads row-major weights only.
pub(super) fn weights<T>(
    b: &mut Launch<'_>,
    w: &CudaView<'_, T>,
    layout: WeightLayout,
    pipe: Pipe,
) -> Result<()> {
    match pipe {
        Pipe::Bulk { .. } | Pipe::Fat { .. } => b.input_aligned16(w, "weights").map(drop),
        Pipe::Regs => {
            check(layout == WeightLayout::Rows, b.op(), || {
                "tiled weights need the bulk-copy pipeline (LATLAB_SKINNY_BULK_*=1)".to_string()
            })?;
            b.input(w);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{norm_form, ring_stages, skinny_kernel, xh_form};
    use crate::gpu::Tuning;

    /// Every bulk kernel has a `_norm` form the module defines, named for it, and the
    /// register pipeline's ops have none.
    #[test]
    fn every_bulk_kernel_has_a_norm_form_in_the_module() {
        let skinny = crate::sources::ALL
            .iter()
            .find(|s| s.file == "skinny_bulk.cu")
            .unwrap();
        let bulk: Vec<&str> = skinny
            .kernels
            .iter()
            .copied()
            .filter(|k| !k.ends_with("_norm") && !k.ends_with("_xh"))
            .collect();
        assert_eq!(bulk.len(), 12);
        for k in &bulk {
            let n = norm_form(k);
            assert_eq!(n, format!("{k}_norm"));
            assert!(
                skinny.kernels.contains(&n),
                "{n} not in skinny_bulk.cu's list"
            );
        }
        // The FP8 ones have an `_xh` form too (x as f16).
        for k in bulk.iter().filter(|k| k.starts_with("skinny_gemm_fp8")) {
            let h = xh_form(k);
            assert_eq!(h, format!("{k}_xh"));
            assert!(
                skinny.kernels.contains(&h),
                "{h} not in skinny_bulk.cu's list"
            );
        }
        assert_eq!(skinny.kernels.len(), 32);
    }

    #[test]
    fn wide_bf16_launches_take_their_own_ring() {
        let t = Tuning {
            bulk_stages: 3,
            bulk_stages_small: 6,
            bulk_stages_wide: 7,
            fp8_bulk_stages: 2,
            fp8_bulk_stages_small: 5,
            ..Tuning::default()
        };
        // (fp8, small, rows) -> stages: only bf16 grids of two tiles per SM or more, from
        // WIDE_ROWS (3) rows on.
        for (fp8, small, m, want) in [
            (false, false, 1, 3),
            (false, false, 2, 3),
            (false, false, 3, 7),
            (false, false, 8, 7),
            (false, true, 8, 6),
            (false, true, 1, 6),
            (true, false, 8, 2),
            (true, true, 8, 5),
        ] {
            assert_eq!(
                ring_stages(&t, fp8, small, m),
                want,
                "fp8 {fp8} small {small} m {m}"
            );
        }
    }

    #[test]
    fn each_switch_picks_its_own_kernel() {
        let d = Tuning::default();
        // x staging's rules on bf16 x (f16 x stages at 1 row only, below).
        let bf16_x = Tuning {
            fp8_x_f16: false,
            ..d
        };
        // The FP8 choices as they were before x staging (session 7's defaults).
        let plain = Tuning {
            x_smem_kb: 0,
            fp8_persistent_rows: 2,
            ..bf16_x
        };
        let xs = Tuning {
            x_smem_kb: 64,
            ..bf16_x
        };
        let one_tile = Tuning {
            bulk_persistent: false,
            ..plain
        };
        let regs = Tuning {
            skinny_bulk_bf16: false,
            skinny_bulk_fp8: false,
            ..d
        };
        let pick = |t: &Tuning, op, m| skinny_kernel(t, op, (m, 4096), 4);
        let bf = "skinny_gemm_bf16";
        assert_eq!(pick(&d, bf, 1), "skinny_gemm_bf16_bulk_persistent");
        assert_eq!(pick(&one_tile, bf, 8), "skinny_gemm_bf16_bulk");
        assert_eq!(pick(&regs, bf, 1), bf);
        assert_eq!(pick(&xs, bf, 1), "skinny_gemm_bf16_bulk_persistent");
        // FP8 without x staging: one tile below fp8_persistent_rows.
        let sw = "skinny_gemm_fp8_swiglu";
        assert_eq!(pick(&plain, sw, 1), "skinny_gemm_fp8_swiglu_bulk");
        assert_eq!(
            pick(&plain, sw, 2),
            "skinny_gemm_fp8_swiglu_bulk_persistent"
        );
        assert_eq!(
            pick(&plain, sw, 8),
            "skinny_gemm_fp8_swiglu_bulk_persistent"
        );
        assert_eq!(pick(&one_tile, sw, 1), "skinny_gemm_fp8_swiglu_bulk");
        // The defaults on bf16 x: persistent from 1 row, x staged up to 25 KiB: 3 rows of
        // 4096 (24.2 KiB) and 1 of 12288 (24.1), not 4 of 4096 or 2 of 12288.
        let xs_sw = "skinny_gemm_fp8_swiglu_bulk_persistent_xs";
        assert_eq!(pick(&bf16_x, sw, 1), xs_sw);
        assert_eq!(pick(&bf16_x, sw, 3), xs_sw);
        assert_eq!(
            pick(&bf16_x, sw, 4),
            "skinny_gemm_fp8_swiglu_bulk_persistent"
        );
        // With f16 x (the default), x stages at 1 row only (F16_X_STAGED_ROWS).
        assert_eq!(pick(&d, sw, 1), xs_sw);
        assert_eq!(pick(&d, sw, 2), "skinny_gemm_fp8_swiglu_bulk_persistent");
        let fp8 = "skinny_gemm_fp8";
        assert_eq!(
            skinny_kernel(&d, fp8, (1, 12288), 5),
            "skinny_gemm_fp8_bulk_persistent_xs"
        );
        assert_eq!(
            skinny_kernel(&bf16_x, fp8, (2, 12288), 5),
            "skinny_gemm_fp8_bulk_persistent"
        );
        // x in shared memory where its rows fit x_smem_kb and the ring beside them fits
        // the block: 8 rows of 4096 take 64.5 KiB (over 64), 7 rows 56.4.
        assert_eq!(
            pick(
                &Tuning {
                    x_smem_kb: 64,
                    ..one_tile
                },
                sw,
                1
            ),
            "skinny_gemm_fp8_swiglu_bulk_xs"
        );
        assert_eq!(pick(&xs, fp8, 2), "skinny_gemm_fp8_bulk_persistent_xs");
        assert_eq!(
            pick(&xs, sw, 7),
            "skinny_gemm_fp8_swiglu_bulk_persistent_xs"
        );
        assert_eq!(pick(&xs, sw, 8), "skinny_gemm_fp8_swiglu_bulk_persistent");
        let all = Tuning {
            x_smem_kb: 227,
            ..bf16_x
        };
        assert_eq!(
            skinny_kernel(&all, sw, (8, 12288), 2),
            "skinny_gemm_fp8_swiglu_bulk_persistent"
        );
        assert_eq!(
            skinny_kernel(&all, sw, (4, 12288), 2),
            "skinny_gemm_fp8_swiglu_bulk_persistent_xs"
        );
        assert_eq!(
            skinny_kernel(&all, sw, (4, 12288), 8),
            "skinny_gemm_fp8_swiglu_bulk_persistent"
        );
        // Every name is a kernel the sources ship.
        let shipped: Vec<&str> = crate::sources::ALL
            .iter()
            .flat_map(|s| s.kernels.iter().copied())
            .collect();
        for t in [d, bf16_x, plain, xs, all, one_tile, regs] {
            for op in [bf, "skinny_gemm_bf16_swiglu", "skinny_gemm_fp8", sw] {
                for m in 1..=8 {
                    for k in [16, 4096, 12288] {
                        let name = skinny_kernel(&t, op, (m, k), 2);
                        assert!(shipped.contains(&name), "{name}");
                    }
                }
            }
        }
    }
}
