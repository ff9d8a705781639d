//! The FP8 decode GEMM for 9-64 token rows (wide_fp8.cu): 64 or 128 weight rows per block,
//! read from their own tiled copy of the codes (`wide_tiles`) one bulk copy per 64-row tile
//! and stage, with x staged once per stage in shared memory, K split across blocks that add
//! into a zeroed y where the grid is short of SMs (zeroed by the wide GEMM before it:
//! `WideZeros`). Past 8 rows the skinny kernels' per-tile x reads outgrow the weights; past
//! 64 the engine runs cuBLAS on the bf16 copies.

use super::skinny::{Fp8Matrix, SKINNY_MAX_ROWS, SkinnyX};
use super::to_i32;
use crate::error::{DriverContext, Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::f16;
use rayon::prelude::*;

/// Most token rows the wide kernels take (`FORMS`; rows past the batch are zero-filled).
pub const WIDE_MAX_ROWS: usize = 64;
/// Weight rows of a tile of the wide layout (`wide_tiles`): n must be a multiple of it, and
/// of the block rows of the form that runs.
pub const WIDE_TILE_ROWS: usize = 64;
/// The k of a ring stage (one FP8 scale column): k must be a multiple of it.
const STAGE_K: usize = 128;

/// One form of the wide kernels: the token rows it takes and its block's shape, as
/// wide_fp8.cu's WF_ENTRY lines instantiate it.
#[derive(Clone, Copy)]
struct Form {
    /// Token rows of x it stages (a batch of fewer is zero-filled).
    rows: usize,
    warps: usize,
    /// 16-weight-row fragments per warp.
    fragments: usize,
    /// Ring stages.
    stages: usize,
    /// Resident blocks per SM (the entries' launch bounds; `fits` checks the ring allows it).
    blocks: usize,
    /// Entries: f16 x, bf16 x, SwiGLU.
    names: [&'static str; 3],
}

/// The forms by token rows. 16 and 32: 4 warps of one fragment (64-row blocks, one tile of
/// the layout) and 4 stages (engine/PERF-LOG.md step 73); 48 and 64: 4 warps of two
/// fragments (128-row blocks) and 3 stages, where the one-fragment block read twice the x
/// per weight byte and lost to cuBLAS (steps 76 and 80).
const FORMS: [Form; 4] = [
    Form { rows: 16, warps: 4, fragments: 1, stages: 4, blocks: 4, names: WF16 },
    Form { rows: 32, warps: 4, fragments: 1, stages: 4, blocks: 3, names: WF32 },
    Form { rows: 48, warps: 4, fragments: 2, stages: 3, blocks: 2, names: WF48 },
    Form { rows: 64, warps: 4, fragments: 2, stages: 3, blocks: 2, names: WF64 },
];
const WF16: [&str; 3] = ["wide_fp8_m16", "wide_fp8_bx_m16", "wide_fp8_swiglu_m16"];
const WF32: [&str; 3] = ["wide_fp8_m32", "wide_fp8_bx_m32", "wide_fp8_swiglu_m32"];
const WF48: [&str; 3] = ["wide_fp8_m48", "wide_fp8_bx_m48", "wide_fp8_swiglu_m48"];
const WF64: [&str; 3] = ["wide_fp8_m64", "wide_fp8_bx_m64", "wide_fp8_swiglu_m64"];

impl Form {
    /// The smallest form that takes `rows` token rows (9..=WIDE_MAX_ROWS).
    fn for_rows(rows: usize) -> &'static Form {
        FORMS.iter().find(|f| rows <= f.rows).unwrap_or(&FORMS[FORMS.len() - 1])
    }
    /// Weight rows per block: n must be a multiple of it.
    const fn block_rows(&self) -> usize {
        16 * self.warps * self.fragments
    }
    const fn threads(&self) -> u32 {
        32 * self.warps as u32
    }
    /// Dynamic shared memory: a ring of the block's weight rows x 128 bytes and the form's
    /// token rows x 256 bytes (128 k of f16) per stage.
    const fn smem(&self) -> u32 {
        (self.stages * (self.block_rows() * 128 + self.rows * 256)) as u32
    }
    /// Whether `blocks` of it fit an H100/H200 SM's 228 KiB of shared memory (with the
    /// driver's 1 KiB per block and the ring's barriers).
    const fn fits(&self) -> bool {
        self.blocks * (self.smem() as usize + 1024 + 64) <= 228 * 1024
    }
}
const _: () = assert!(FORMS[0].fits() && FORMS[1].fits() && FORMS[2].fits() && FORMS[3].fits());
const _: () = assert!(FORMS[FORMS.len() - 1].rows == WIDE_MAX_ROWS);

/// An FP8 matrix whose codes are in the wide kernels' layout (`wide_tiles` of the row-major
/// codes); the scales as `Fp8Matrix` has them.
pub struct WideFp8<'a, 'b>(pub Fp8Matrix<'a, 'b>);

/// How a wide GEMM finds its y, and what it zeroes for the next one (wide_fp8.cu's header
/// says why): a step chains them so that no split GEMM needs a memset in front.
#[derive(Default)]
pub struct WideZeros<'a, 'b> {
    /// y is all zeros already: an earlier wide GEMM in the stream cleared it (`clear`) and
    /// nothing wrote it since. Otherwise the op memsets y where K splits.
    pub y_zeroed: bool,
    /// A buffer the kernel zeroes once every kernel before it has finished: the y of a later
    /// split wide GEMM. Nothing before this kernel may still read it and nothing between
    /// this kernel and that GEMM may write it; neither x nor y of this op.
    pub clear: Option<&'a mut CudaViewMut<'b, f32>>,
}

/// Whether `wide_fp8_into` takes an FP8 matrix [n, k] at `rows` token rows: a wide shape
/// whose n the form's blocks divide.
pub fn wide_fp8_supported(rows: usize, n: usize, k: usize) -> bool {
    (SKINNY_MAX_ROWS + 1..=WIDE_MAX_ROWS).contains(&rows)
        && wide_shape(n, k)
        && n.is_multiple_of(Form::for_rows(rows).block_rows())
}

/// Whether an [n, k] matrix has a wide layout (`wide_tiles`).
pub fn wide_shape(n: usize, k: usize) -> bool {
    n > 0 && n.is_multiple_of(WIDE_TILE_ROWS) && k > 0 && k.is_multiple_of(STAGE_K)
}

/// FP8 codes [n, k] row-major -> the wide kernels' layout: tile by tile (64 rows), stage by
/// stage (128 k), each stage's 64 x 128 bytes one contiguous run (one bulk copy), row after
/// row; in a row the 16-byte unit at position p holds the row's unit p ^ (row % 8), the
/// swizzle that lets the kernel's fragment reads hit every bank once. Element (r, c) lands
/// at `wide_index`. `wide_shape(n, k)` must hold.
pub fn wide_tiles(codes: &[u8], n: usize, k: usize) -> Vec<u8> {
    assert!(wide_shape(n, k) && codes.len() == n * k, "codes {} are not a wide {n} x {k}", codes.len());
    let mut out = vec![0u8; n * k];
    // A tile is the same run of bytes in both layouts: permute the tiles in parallel.
    let tile = WIDE_TILE_ROWS * k;
    out.par_chunks_mut(tile).zip(codes.par_chunks(tile)).for_each(|(dst, src)| {
        for s in 0..k / STAGE_K {
            for r in 0..WIDE_TILE_ROWS {
                for p in 0..8 {
                    let from = r * k + s * STAGE_K + (p ^ (r % 8)) * 16;
                    let to = (s * WIDE_TILE_ROWS + r) * STAGE_K + p * 16;
                    dst[to..to + 16].copy_from_slice(&src[from..from + 16]);
                }
            }
        }
    });
    out
}

/// Where `wide_tiles` puts code (row, col) of an [n, k] matrix (the index the kernel reads).
pub fn wide_index(row: usize, col: usize, k: usize) -> usize {
    let (t, r, s) = (row / WIDE_TILE_ROWS, row % WIDE_TILE_ROWS, col / STAGE_K);
    let p = (col % STAGE_K / 16) ^ (r % 8);
    t * WIDE_TILE_ROWS * k + (s * WIDE_TILE_ROWS + r) * STAGE_K + p * 16 + col % 16
}

/// Blocks per block-row tile for an [n, k] matrix in `form`: as many as the SMs' resident
/// blocks hold at once.
fn splits(gpu: &Gpu, n: usize, k: usize, form: &Form) -> usize {
    split_count(n / form.block_rows(), k / STAGE_K, form.blocks * gpu.sms())
}

/// `splits` for `tiles` tiles of `stages` stages on a GPU of `slots` resident blocks: the
/// most whose blocks all fit the slots at once (any count, at least one, at most one per
/// stage), then the fewest that keep the same stages per block, so that no block goes
/// without a stage. One more, so that every slot gets a block and the rest wait for a
/// second wave, ran slower on Qwen3-8B's qkv and down (the lab's `wide_gemm` sweep,
/// engine/PERF-LOG.md step 65; 16 rows: qkv 5 splits 11.4 us against 6 at 12.6, down 8 at
/// 17.1 against 9 at 20.7; 32 rows: 14.2 / 16.5 and 20.9 / 26.9); only gate|up as a plain
/// GEMM at 32 rows ran faster at 2 (39.3 against 44.4 us), and decode runs the SwiGLU form.
fn split_count(tiles: usize, stages: usize, slots: usize) -> usize {
    let stages = stages.max(1);
    let want = (slots / tiles.max(1)).clamp(1, stages);
    stages.div_ceil(stages.div_ceil(want))
}

/// y[m, n] = sum_k x[m, k] w[n, k] for 9-64 rows of x (f16 as the `_f16` norms write it,
/// or bf16), FP8 weights in the wide layout with their block scales (`WideFp8`, plain or
/// interleaved rows).
/// Where K is split the blocks add into a zeroed y (`zeros.y_zeroed`, else a memset on the
/// stream first, which a CUDA graph captures), so the sums' bits may differ between runs.
pub fn wide_fp8_into<X: SkinnyX>(
    gpu: &Gpu,
    x: &CudaView<'_, X>,
    w: &WideFp8<'_, '_>,
    y: &mut CudaViewMut<'_, f32>,
    zeros: WideZeros<'_, '_>,
) -> Result<()> {
    const OP: &str = "wide_fp8";
    let w = &w.0;
    let (m, form) = check_shapes(OP, x.len(), w, y.len(), w.n)?;
    let name = if X::F16 { form.names[0] } else { form.names[1] };
    let s = splits(gpu, w.n, w.k, form);
    if s > 1 && !zeros.y_zeroed {
        gpu.stream().memset_zeros(y).ctx("wide_fp8: zero y")?;
    }
    launch(gpu, (name, form), x, w, (m, s), y, zeros.clear)
}

/// act[m, n / 2] = SwiGLU of x w^T over gate|up rows interleaved by 8
/// (`interleave_gate_up`), f16 x and act as the `_xh` skinny kernels (9-64 rows). K is
/// never split: no block would hold a whole sum to apply SwiGLU to (wide_fp8.cu says why
/// that costs Qwen3-8B's gate|up nothing). `clear`: as `WideZeros::clear`.
pub fn wide_fp8_swiglu_into(
    gpu: &Gpu,
    x: &CudaView<'_, f16>,
    w: &WideFp8<'_, '_>,
    act: &mut CudaViewMut<'_, f16>,
    clear: Option<&mut CudaViewMut<'_, f32>>,
) -> Result<()> {
    const OP: &str = "wide_fp8_swiglu";
    let w = &w.0;
    check(w.interleave > 0, OP, || "gate|up rows must be interleaved (interleave > 0)".into())?;
    let (m, form) = check_shapes(OP, x.len(), w, act.len(), w.n / 2)?;
    launch(gpu, (form.names[2], form), x, w, (m, 1), act, clear)
}

/// The rows of x [m, k] against the matrix and an output of m x `out_cols`, and the form
/// that runs them.
fn check_shapes(
    op: &'static str,
    x_len: usize,
    w: &Fp8Matrix<'_, '_>,
    out_len: usize,
    out_cols: usize,
) -> Result<(usize, &'static Form)> {
    w.check(op, STAGE_K)?;
    check(x_len.is_multiple_of(w.k), op, || format!("x {x_len} is not rows x {}", w.k))?;
    let m = x_len / w.k;
    check((SKINNY_MAX_ROWS + 1..=WIDE_MAX_ROWS).contains(&m), op, || {
        format!("{m} rows; {}..={WIDE_MAX_ROWS} supported", SKINNY_MAX_ROWS + 1)
    })?;
    let form = Form::for_rows(m);
    let br = form.block_rows();
    check(w.n.is_multiple_of(br), op, || format!("n = {} must be a multiple of {br} at {m} rows", w.n))?;
    check(out_len == m * out_cols, op, || format!("out {out_len} != {m} x {out_cols}"))?;
    Ok((m, form))
}

fn launch<X, O>(
    gpu: &Gpu,
    (name, form): (&'static str, &Form),
    x: &CudaView<'_, X>,
    w: &Fp8Matrix<'_, '_>,
    (m, splits): (usize, usize),
    out: &mut CudaViewMut<'_, O>,
    clear: Option<&mut CudaViewMut<'_, f32>>,
) -> Result<()> {
    let (ni, ki) = (to_i32(name, "n", w.n)?, to_i32(name, "k", w.k)?);
    let (ri, il) = (to_i32(name, "scale_rows", w.scale_rows)?, to_i32(name, "interleave", w.interleave)?);
    let mut b = Launch::new(gpu, name)?;
    b.input_aligned16(x, "x")?;
    b.input_aligned16(w.codes, "codes")?;
    b.input(w.scale_inv).output(out);
    b.i32(m as i32).i32(ni).i32(ki).i32(ri).i32(il).i32(splits as i32);
    match clear {
        Some(c) => {
            check(c.len().is_multiple_of(4), name, || format!("clear {} is not float4s", c.len()))?;
            let n4 = to_i32(name, "clear", c.len() / 4)?;
            b.output_aligned16(c)?.i32(n4);
        }
        None => {
            b.null().i32(0);
        }
    }
    let cfg = LaunchConfig {
        grid_dim: ((w.n / form.block_rows() * splits) as u32, 1, 1),
        block_dim: (form.threads(), 1, 1),
        shared_mem_bytes: form.smem(),
    };
    // SAFETY: shapes checked by the callers (check_shapes); n and k are multiples of the
    // form's block rows and 128, so every tile and stage the kernel copies lies inside w
    // (the wide layout is a permutation of the n x k codes), x rows past m are not read
    // (zero-filled), a split output was zeroed before the launch (here, or by the GEMM
    // that cleared it: the caller's `WideZeros`), and `clear` is float4s the kernel only
    // zeroes.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_shapes_are_wide_rows_of_64_by_128_multiples() {
        assert!(wide_fp8_supported(9, 4096, 4096) && wide_fp8_supported(16, 24576, 12288));
        assert!(wide_fp8_supported(17, 4096, 4096) && wide_fp8_supported(32, 6144, 4096));
        assert!(wide_fp8_supported(16, 192, 128), "n a multiple of 64 is enough");
        assert!(wide_fp8_supported(33, 4096, 4096) && wide_fp8_supported(64, 24576, 4096));
        assert!(wide_fp8_supported(32, 192, 128), "32 rows: 64-row blocks");
        assert!(!wide_fp8_supported(64, 192, 128), "64 rows: 128-row blocks");
        assert!(!wide_fp8_supported(33, 192, 128), "48 rows: 128-row blocks");
        assert!(!wide_fp8_supported(8, 4096, 4096), "8 rows: the skinny kernels");
        assert!(!wide_fp8_supported(65, 4096, 4096), "65 rows: cuBLAS");
        assert!(!wide_fp8_supported(16, 4100, 4096) && !wide_fp8_supported(16, 4096, 4000));
        assert!(!wide_fp8_supported(16, 4096, 4032) && !wide_fp8_supported(16, 0, 4096));
    }

    #[test]
    fn wide_tiles_put_each_code_where_wide_index_says_and_lose_none() {
        let (n, k) = (192, 384);
        let codes: Vec<u8> = (0..n * k).map(|i| (i * 7 + i / 251) as u8).collect();
        let t = wide_tiles(&codes, n, k);
        let mut seen = vec![false; n * k];
        for r in 0..n {
            for c in 0..k {
                let at = wide_index(r, c, k);
                assert_eq!(t[at], codes[r * k + c], "({r}, {c}) at {at}");
                assert!(!seen[at], "({r}, {c}) lands where another code did");
                seen[at] = true;
            }
        }
        // A stage is one run: tile 1, stage 2 starts at 64 k + 2 x 64 x 128; row 9's unit 0
        // of it holds the row's unit 1 (the swizzle is 9 % 8 = 1).
        assert_eq!(wide_index(64, 256, k), 64 * k + 2 * 64 * 128);
        assert_eq!(wide_index(64 + 9, 256 + 16, k), 64 * k + 2 * 64 * 128 + 9 * 128);
    }

    #[test]
    fn splits_fill_one_wave_of_resident_blocks_without_idle_blocks() {
        // Qwen3-8B on an H200 with 128-row blocks, two per SM (132 SMs, 264 slots): qkv 48
        // tiles of 32 stages (5 splits of 7, 7, 7, 7 and 4 stages), o_proj 32 of 32, down
        // 32 of 96, gate|up 192 of 32 (as a plain GEMM).
        assert_eq!(split_count(48, 32, 264), 5);
        assert_eq!(split_count(32, 32, 264), 8);
        assert_eq!(split_count(32, 96, 264), 8);
        assert_eq!(split_count(192, 32, 264), 1);
        assert_eq!(split_count(2000, 32, 264), 1);
        // Never more blocks than stages, and every block has a stage: 7 wanted of 12
        // stages gives 2 each, so 6 blocks.
        assert_eq!(split_count(1, 3, 264), 3);
        assert_eq!(split_count(2, 96, 264), 96);
        assert_eq!(split_count(37, 12, 264), 6);
        // 64-row blocks at 16 token rows, four per SM (528 slots): qkv 96 tiles, 5 splits;
        // down 64 tiles of 96 stages, 8.
        assert_eq!(split_count(96, 32, 4 * 132), 5);
        assert_eq!(split_count(64, 96, 4 * 132), 8);
        for (tiles, stages) in [(1usize, 1usize), (3, 7), (5, 33), (48, 32), (7, 100)] {
            let s = split_count(tiles, stages, 264);
            let per = stages.div_ceil(s);
            assert!(per * (s - 1) < stages, "{tiles} tiles of {stages}: block {s} idle");
        }
    }

    #[test]
    fn forms_take_their_rows_and_their_rings_fit_their_blocks() {
        let rows = |m: usize| Form::for_rows(m).rows;
        assert_eq!(
            [rows(9), rows(16), rows(17), rows(32), rows(33), rows(48), rows(49), rows(64)],
            [16, 16, 32, 32, 48, 48, 64, 64]
        );
        assert_eq!(FORMS[0].smem(), 4 * (64 * 128 + 16 * 256));
        assert_eq!(FORMS[1].smem(), 4 * (64 * 128 + 32 * 256));
        assert_eq!(FORMS[2].smem(), 3 * (128 * 128 + 48 * 256));
        assert_eq!(FORMS[3].smem(), 3 * (128 * 128 + 64 * 256));
        assert_eq!(FORMS.map(|f| f.block_rows()), [64, 64, 128, 128]);
        assert_eq!(FORMS.map(|f| f.blocks), [4, 3, 2, 2]);
        // One block more would not fit: the forms use what the SM holds.
        for f in &FORMS {
            let more = Form { blocks: f.blocks + 1, ..*f };
            assert!(!more.fits(), "{} rows: {} blocks fit", f.rows, more.blocks);
        }
    }
}
