//! Skinny GEMM on the tensor cores for decode batches (M <= 8 token rows): bf16 weights, or
//! FP8 e4m3 weights with 128x128 block scales, dequantized in registers. f32 out. Each op
//! has a register-pipeline kernel and a bulk-copy one (`Tuning::skinny_bulk_*`).

use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::{Gpu, Tuning};
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::bf16;

/// Most token rows one launch takes (the MMA's n = 8).
pub const SKINNY_MAX_ROWS: usize = 8;
/// Output rows per block (the MMA's m = 16); must match skinny_tiles.cuh.
const TILE_N: usize = 16;
/// Threads per block: 8 warps splitting K (SG_WARPS in skinny_tiles.cuh).
const THREADS: u32 = 256;
/// FP8 scale blocks (rows x cols), the only layout the kernel reads.
pub const FP8_BLOCK: usize = 128;

fn rows_of(op: &'static str, x_len: usize, k: usize, y_len: usize, n: usize) -> Result<usize> {
    check(x_len.is_multiple_of(k), op, || {
        format!("x {x_len} is not rows x {k}")
    })?;
    let m = x_len / k;
    check((1..=SKINNY_MAX_ROWS).contains(&m), op, || {
        format!("{m} rows; 1..={SKINNY_MAX_ROWS} supported")
    })?;
    check(y_len == m * n, op, || format!("y {y_len} != {m} x {n}"))?;
    Ok(m)
}

/// The bulk-copy variants (`Tuning::skinny_bulk_*`): the 8 warps plus one producer warp,
/// and `Tuning::bulk_stages` x 16 rows x TM_ROW_STRIDE bytes of shared memory
/// (skinny_bulk.cu).
const BULK_THREADS: u32 = THREADS + 32;
const BULK_STAGE_BYTES: u32 = 16 * (1024 + 16);

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
/// FP8 with x through the ring (`Tuning::x_ring_rows`).
const BULK_FP8_XR: BulkNames = [
    "skinny_gemm_fp8_bulk_xr",
    "skinny_gemm_fp8_bulk_persistent_xr",
];
const BULK_FP8_SWIGLU_XR: BulkNames = [
    "skinny_gemm_fp8_swiglu_bulk_xr",
    "skinny_gemm_fp8_swiglu_bulk_persistent_xr",
];
const BULK_FP8_SWIGLU_XS: BulkNames = [
    "skinny_gemm_fp8_swiglu_bulk_xs",
    "skinny_gemm_fp8_swiglu_bulk_persistent_xs",
];

/// How a skinny launch runs: the register pipeline (a block per 16-row tile), or the bulk
/// one with its ring depth, grid (a block per tile, or fewer persistent blocks), the bytes
/// of x it keeps in shared memory besides the weights' slots (staged whole by the `*_xs`
/// kernels, per slot by the `*_xr` ones; 0: none), and whether its copy engine reads x
/// (the `*_xr` kernels: x must be 16-byte aligned).
#[derive(Clone, Copy)]
enum Pipe {
    Regs,
    Bulk {
        stages: u32,
        blocks: u32,
        x_bytes: u32,
        x_copied: bool,
    },
}

fn cfg(n: usize, pipe: Pipe) -> LaunchConfig {
    let (threads, smem, blocks) = match pipe {
        Pipe::Regs => (THREADS, 0, n.div_ceil(TILE_N) as u32),
        Pipe::Bulk {
            stages,
            blocks,
            x_bytes,
            ..
        } => (BULK_THREADS, stages * BULK_STAGE_BYTES + x_bytes, blocks),
    };
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: smem,
    }
}

/// The ring depth of a bulk launch: FP8 or bf16, and the deeper one for grids with fewer
/// tiles than two per SM (`small`).
fn ring_stages(t: &Tuning, fp8: bool, small: bool) -> u32 {
    match (fp8, small) {
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

/// Bytes of one x row in a slot of the `*_xr` kernels (XR_ROW_STRIDE in skinny_bulk.cu:
/// 1024 k of bf16, padded), and the most slots their rings take: 3 slots of 8 rows (100
/// KiB) keep two blocks per SM for the small grids, 2 (the FP8 default) three.
const XR_ROW_STRIDE: u32 = 2048 + 32;
const XR_MAX_STAGES: u32 = 3;

/// Dynamic shared memory a bulk block may take: Hopper's 227 KiB per block less the bulk
/// kernels' static 4.2 KiB (the warps' reduction tile and the ring's barriers), rounded down.
const MAX_DYNAMIC_SMEM: u32 = 222 * 1024;

/// The kernel and launch shape for `op` over x [m, k] and n output rows under the GPU's
/// tuning (`skinny_kernel`), with the deeper ring when the grid has fewer tiles than two
/// per SM and, for persistent kernels, the blocks that fit at once.
fn start<'g>(
    gpu: &'g Gpu,
    op: &'static str,
    (m, n, k): (usize, usize, usize),
) -> Result<(Launch<'g>, Pipe)> {
    let t = gpu.tuning();
    let small = n.div_ceil(TILE_N) < 2 * gpu.sms();
    let mut stages = ring_stages(&t, op.starts_with("skinny_gemm_fp8"), small);
    let name = skinny_kernel(&t, op, (m, k), stages);
    if name == op {
        return Ok((Launch::new(gpu, op)?, Pipe::Regs));
    }
    let x_copied = name.ends_with("_xr");
    let x_bytes = if name.ends_with("_xs") {
        staged_x_bytes(m, k)
    } else if x_copied {
        stages = stages.min(XR_MAX_STAGES);
        stages * m as u32 * XR_ROW_STRIDE
    } else {
        0
    };
    let tiles = n.div_ceil(TILE_N) as u32;
    let blocks = if name.contains("_persistent") {
        let smem = stages * BULK_STAGE_BYTES + x_bytes;
        let per_sm = gpu.resident_blocks(name, BULK_THREADS, smem)?;
        tiles.min(per_sm * gpu.sms() as u32)
    } else {
        tiles
    };
    let pipe = Pipe::Bulk {
        stages,
        blocks,
        x_bytes,
        x_copied,
    };
    Ok((Launch::new(gpu, name)?, pipe))
}

/// The kernel a skinny op (`skinny_gemm_bf16`, `_bf16_swiglu`, `_fp8`, `_fp8_swiglu`) runs
/// over x [m, k] under a tuning and a ring of `stages`: the register pipeline (the op's
/// own name) or a bulk kernel, persistent or not; for FP8, x staged whole in shared memory
/// where `Tuning::x_smem_kb` and the block's shared memory allow, else x through the ring
/// from `Tuning::x_ring_rows` rows on (at most XR_MAX_STAGES slots). Tests check with it
/// that an A/B compares two kernels.
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
    if fp8 && x <= t.x_smem_kb * 1024 && stages * BULK_STAGE_BYTES + x <= MAX_DYNAMIC_SMEM {
        let xs = if op == "skinny_gemm_fp8" {
            BULK_FP8_XS
        } else {
            BULK_FP8_SWIGLU_XS
        };
        return xs[persistent as usize];
    }
    let slot = BULK_STAGE_BYTES + m as u32 * XR_ROW_STRIDE;
    if fp8 && m >= t.x_ring_rows as usize && stages.min(XR_MAX_STAGES) * slot <= MAX_DYNAMIC_SMEM {
        let xr = if op == "skinny_gemm_fp8" {
            BULK_FP8_XR
        } else {
            BULK_FP8_SWIGLU_XR
        };
        return xr[persistent as usize];
    }
    names[persistent as usize]
}

/// The bulk kernels' trailing argument: their ring depth.
fn bulk_args(b: &mut Launch<'_>, pipe: Pipe) {
    if let Pipe::Bulk { stages, .. } = pipe {
        b.i32(stages as i32);
    }
}

/// x argument: the `*_xr` kernels copy from it and need 16-byte alignment.
fn tokens(b: &mut Launch<'_>, x: &CudaView<'_, bf16>, pipe: Pipe) -> Result<()> {
    match pipe {
        Pipe::Bulk { x_copied: true, .. } => b.input_aligned16(x, "x").map(drop),
        _ => {
            b.input(x);
            Ok(())
        }
    }
}

/// Weight argument: the bulk kernels copy from it and need 16-byte alignment.
fn weights<T>(b: &mut Launch<'_>, w: &CudaView<'_, T>, pipe: Pipe) -> Result<()> {
    match pipe {
        Pipe::Bulk { .. } => b.input_aligned16(w, "weights").map(drop),
        Pipe::Regs => {
            b.input(w);
            Ok(())
        }
    }
}

/// A bf16 weight matrix of w_len elements is [n, k] with k a positive multiple of 8 (the
/// kernels' 16-byte loads).
fn check_bf16_weights(op: &'static str, w_len: usize, n: usize, k: usize) -> Result<()> {
    check(k > 0 && k.is_multiple_of(8), op, || {
        format!("k = {k} must be a positive multiple of 8")
    })?;
    check(w_len == n * k, op, || format!("w {w_len} != {n} x {k}"))
}

/// y[m, n] = sum_k x[m, k] w[n, k]: x [m, k] bf16 (1 <= m <= 8), w [n, k] bf16 (HF layout),
/// y [m, n] f32; k % 8 == 0 (16-byte loads).
pub fn skinny_gemm_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &CudaView<'_, bf16>,
    n: usize,
    k: usize,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_bf16";
    check_bf16_weights(OP, w.len(), n, k)?;
    let m = rows_of(OP, x.len(), k, y.len(), n)?;
    launch_bf16(gpu, OP, x, w, (m, n, k), y)
}

/// Launch a bf16 skinny kernel whose shapes the caller checked: x [m, k], w [n, k], out.
fn launch_bf16<O>(
    gpu: &Gpu,
    op: &'static str,
    x: &CudaView<'_, bf16>,
    w: &CudaView<'_, bf16>,
    (m, n, k): (usize, usize, usize),
    out: &mut CudaViewMut<'_, O>,
) -> Result<()> {
    let (mi, ni, ki) = (m as i32, to_i32(op, "n", n)?, to_i32(op, "k", k)?);
    let (mut b, pipe) = start(gpu, op, (m, n, k))?;
    b.input(x);
    weights(&mut b, w, pipe)?;
    b.output(out).i32(mi).i32(ni).i32(ki);
    bulk_args(&mut b, pipe);
    // SAFETY: the caller checked the shapes; k % 8 == 0 keeps every row 16-byte aligned
    // given cudarc's 256-byte-aligned allocations (views at row offsets keep it too).
    unsafe { b.launch(cfg(n, pipe)) }?;
    Ok(())
}

/// Where an FP8 matrix's codes and scales live: w [n, k] e4m3fn codes, scale_inv
/// [ceil(n / scale_rows), ceil(k / 128)] f32, real weight = code * scale_inv[n /
/// scale_rows][k / 128]. scale_rows is 128 in the Qwen3-8B-FP8 layout (1: a row each).
/// `interleave` > 0: the codes are gate|up rows interleaved by `interleave_gate_up` (n = 2
/// x interleave) while the scales stay in gate-then-up order; 0: plain rows.
pub struct Fp8Matrix<'a, 'b> {
    pub codes: &'a CudaView<'b, u8>,
    pub scale_inv: &'a CudaView<'b, f32>,
    pub scale_rows: usize,
    pub n: usize,
    pub k: usize,
    pub interleave: usize,
}

impl Fp8Matrix<'_, '_> {
    fn check(&self, op: &'static str, k_mult: usize) -> Result<(i32, i32, i32)> {
        let (n, k, r, il) = (self.n, self.k, self.scale_rows, self.interleave);
        check(
            il == 0 || (n == 2 * il && il.is_multiple_of(GATE_UP_GROUP)),
            op,
            || {
                format!(
                    "interleave {il}: needs n = 2 x interleave (n = {n}), a multiple of {GATE_UP_GROUP}"
                )
            },
        )?;
        check(k > 0 && k.is_multiple_of(k_mult), op, || {
            format!("k = {k} must be a positive multiple of {k_mult}")
        })?;
        check(r == 1 || r.is_multiple_of(16), op, || {
            format!("scale_rows {r} must be 1 or a multiple of the 16-row tile")
        })?;
        check(self.codes.len() == n * k, op, || {
            format!("codes {} != {n} x {k}", self.codes.len())
        })?;
        let (sr, sc) = (n.div_ceil(r), k.div_ceil(FP8_BLOCK));
        check(self.scale_inv.len() == sr * sc, op, || {
            format!("scale_inv {} != {sr} x {sc}", self.scale_inv.len())
        })?;
        Ok((
            to_i32(op, "n", n)?,
            to_i32(op, "k", k)?,
            to_i32(op, "scale_rows", r)?,
        ))
    }
}

/// y[m, n] = sum_k x[m, k] w[n, k] with FP8 weights dequantized in registers; k % 16 == 0.
pub fn skinny_gemm_fp8_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &Fp8Matrix<'_, '_>,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_fp8";
    let sizes = w.check(OP, 16)?;
    let m = rows_of(OP, x.len(), w.k, y.len(), w.n)?;
    launch_fp8(gpu, OP, x, w, m, sizes, y)
}

/// Launch an FP8 skinny kernel whose shapes the caller checked (`sizes` from
/// `Fp8Matrix::check`): x [m, k], the matrix, out.
fn launch_fp8<O>(
    gpu: &Gpu,
    op: &'static str,
    x: &CudaView<'_, bf16>,
    w: &Fp8Matrix<'_, '_>,
    m: usize,
    (ni, ki, ri): (i32, i32, i32),
    out: &mut CudaViewMut<'_, O>,
) -> Result<()> {
    let il = to_i32(op, "interleave", w.interleave)?;
    let (mut b, pipe) = start(gpu, op, (m, w.n, w.k))?;
    tokens(&mut b, x, pipe)?;
    weights(&mut b, w.codes, pipe)?;
    b.input(w.scale_inv).output(out);
    b.i32(m as i32).i32(ni).i32(ki).i32(ri).i32(il);
    bulk_args(&mut b, pipe);
    // SAFETY: the caller checked the shapes; k % 16 == 0 keeps every fp8 row 16-byte
    // aligned.
    unsafe { b.launch(cfg(w.n, pipe)) }?;
    Ok(())
}

/// Rows per group when gate|up are interleaved for the fused SwiGLU kernels (half the
/// skinny GEMM's 16-row tile, so each tile holds 8 gate rows and their 8 up rows).
pub const GATE_UP_GROUP: usize = 8;

/// gate [inter, k] and up [inter, k] (row-major, HF layout) -> [2 * inter, k] with rows
/// gate 0..8, up 0..8, gate 8..16, up 8..16, ...: the layout the `*_swiglu` kernels and
/// `swiglu_into(.., tiled = true)` read. inter % 8 == 0.
pub fn interleave_gate_up<T: Copy>(gate: &[T], up: &[T], k: usize) -> Vec<T> {
    assert!(k > 0 && gate.len() == up.len() && gate.len().is_multiple_of(k));
    let inter = gate.len() / k;
    assert!(
        inter.is_multiple_of(GATE_UP_GROUP),
        "inter {inter} % {GATE_UP_GROUP} != 0"
    );
    let block = GATE_UP_GROUP * k;
    let mut out = Vec::with_capacity(2 * gate.len());
    for (g, u) in gate.chunks(block).zip(up.chunks(block)) {
        out.extend_from_slice(g);
        out.extend_from_slice(u);
    }
    out
}

/// act[m, c] = bf16(silu(gate) * up) of x [m, k] times interleaved gate|up weights w [2 *
/// inter, k] (`interleave_gate_up`), in one kernel: gate|up GEMM and SwiGLU fused.
pub fn skinny_gemm_swiglu_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &CudaView<'_, bf16>,
    inter: usize,
    k: usize,
    act: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_bf16_swiglu";
    check(inter > 0 && inter.is_multiple_of(GATE_UP_GROUP), OP, || {
        format!("inter = {inter} must be a positive multiple of {GATE_UP_GROUP}")
    })?;
    let n = 2 * inter;
    check_bf16_weights(OP, w.len(), n, k)?;
    let m = rows_of(OP, x.len(), k, act.len(), inter)?;
    launch_bf16(gpu, OP, x, w, (m, n, k), act)
}

/// `skinny_gemm_swiglu_into` with FP8 weights: `w.interleave` must be `w.n / 2`.
pub fn skinny_gemm_fp8_swiglu_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &Fp8Matrix<'_, '_>,
    act: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_fp8_swiglu";
    let sizes = w.check(OP, 16)?;
    check(w.interleave > 0, OP, || {
        "the matrix is not interleaved gate|up".to_string()
    })?;
    let m = rows_of(OP, x.len(), w.k, act.len(), w.interleave)?;
    launch_fp8(gpu, OP, x, w, m, sizes, act)
}

/// out [n, k] bf16 = the FP8 matrix's values (prefill runs cuBLAS on them); k % 8 == 0.
pub fn fp8_dequant_into(
    gpu: &Gpu,
    w: &Fp8Matrix<'_, '_>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "fp8_dequant_bf16";
    let (ni, ki, ri) = w.check(OP, 8)?;
    check(out.len() >= w.n * w.k, OP, || {
        format!("out {} < {} x {}", out.len(), w.n, w.k)
    })?;
    let groups = (w.n * w.k / 8) as u32;
    let mut b = Launch::new(gpu, OP)?;
    let il = to_i32(OP, "interleave", w.interleave)?;
    b.input(w.codes)
        .input(w.scale_inv)
        .output(out)
        .i32(ni)
        .i32(ki)
        .i32(ri)
        .i32(il);
    let cfg = LaunchConfig {
        grid_dim: (groups.div_ceil(256), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above; k % 8 == 0 keeps every 8-code group aligned.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_bf16_weights, interleave_gate_up, skinny_kernel};
    use crate::gpu::Tuning;

    #[test]
    fn each_switch_picks_its_own_kernel() {
        let d = Tuning::default();
        // The FP8 choices as they were before x staging (session 7's defaults).
        let plain = Tuning {
            x_smem_kb: 0,
            fp8_persistent_rows: 2,
            ..d
        };
        let xs = Tuning { x_smem_kb: 64, ..d };
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
        // The defaults: persistent from 1 row, x staged up to 25 KiB: 3 rows of 4096 (24.2
        // KiB) and 1 of 12288 (24.1), not 4 of 4096 or 2 of 12288.
        assert_eq!(pick(&d, sw, 1), "skinny_gemm_fp8_swiglu_bulk_persistent_xs");
        assert_eq!(pick(&d, sw, 3), "skinny_gemm_fp8_swiglu_bulk_persistent_xs");
        assert_eq!(pick(&d, sw, 4), "skinny_gemm_fp8_swiglu_bulk_persistent");
        let fp8 = "skinny_gemm_fp8";
        assert_eq!(
            skinny_kernel(&d, fp8, (1, 12288), 5),
            "skinny_gemm_fp8_bulk_persistent_xs"
        );
        assert_eq!(
            skinny_kernel(&d, fp8, (2, 12288), 5),
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
        // x through the ring from x_ring_rows rows on, where x is not staged whole: 4 and
        // 8 rows of 4096 (over 25 KiB), not 3 (staged), nor below x_ring_rows; 8 rows of
        // 12288 too, whose whole x would not fit beside the ring.
        let xr = Tuning {
            x_ring_rows: 4,
            ..d
        };
        assert_eq!(
            pick(&xr, sw, 3),
            "skinny_gemm_fp8_swiglu_bulk_persistent_xs"
        );
        assert_eq!(
            pick(&xr, sw, 4),
            "skinny_gemm_fp8_swiglu_bulk_persistent_xr"
        );
        assert_eq!(pick(&xr, fp8, 8), "skinny_gemm_fp8_bulk_persistent_xr");
        assert_eq!(
            skinny_kernel(&xr, fp8, (8, 12288), 5),
            "skinny_gemm_fp8_bulk_persistent_xr"
        );
        assert_eq!(pick(&xr, bf, 8), "skinny_gemm_bf16_bulk_persistent");
        assert_eq!(
            pick(&Tuning { x_smem_kb: 0, ..xr }, sw, 2),
            "skinny_gemm_fp8_swiglu_bulk_persistent"
        );
        assert_eq!(
            pick(
                &Tuning {
                    x_ring_rows: 1,
                    x_smem_kb: 0,
                    ..one_tile
                },
                sw,
                1
            ),
            "skinny_gemm_fp8_swiglu_bulk_xr"
        );
        let all = Tuning {
            x_smem_kb: 227,
            ..d
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
        for t in [d, plain, xs, xr, all, one_tile, regs] {
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

    #[test]
    fn bf16_weight_checks_name_the_bad_dimension() {
        assert!(check_bf16_weights("op", 64 * 16, 64, 16).is_ok());
        let e = check_bf16_weights("op", 60 * 12, 60, 12)
            .unwrap_err()
            .to_string();
        assert!(e.contains("op") && e.contains("k = 12"), "{e}");
        let e = check_bf16_weights("op", 100, 64, 16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("w 100 != 64 x 16"), "{e}");
    }

    #[test]
    fn gate_up_interleave_alternates_blocks_of_8_rows() {
        let k = 3;
        let gate: Vec<u32> = (0..16 * k as u32).collect();
        let up: Vec<u32> = (1000..1000 + 16 * k as u32).collect();
        let out = interleave_gate_up(&gate, &up, k);
        let row = |r: usize| &out[r * k..(r + 1) * k];
        assert_eq!(out.len(), 32 * k);
        assert_eq!(row(0), &gate[..k]);
        assert_eq!(row(7), &gate[7 * k..8 * k]);
        assert_eq!(row(8), &up[..k]);
        assert_eq!(row(15), &up[7 * k..8 * k]);
        assert_eq!(row(16), &gate[8 * k..9 * k]);
        assert_eq!(row(31), &up[15 * k..16 * k]);
    }
}
