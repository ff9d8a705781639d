//! How a decode GEMM's weight matrix [n, k] lies in memory. The bulk kernels' producer
//! warp fills each 16 KB ring stage with 1 KB of each of a 16-row tile's rows
//! (skinny_bulk.cu). In the checkpoint's row-major layout those 16 pieces lie a row
//! (8 KB at Qwen3-8B's k = 4096 in bf16) apart; in the tiled layout a stage's pieces lie
//! side by side, so each stage is one contiguous run of bytes, which the ring streams
//! faster (the lab's copy_ceiling; engine/PERF-LOG.md step 34: the stage's contiguity, not
//! a power-of-two stride, since padding the rows' pitch did not close the gap). bf16
//! weights only (`Tuning::tiled_weights`); FP8 codes and cuBLAS read row-major.

use rayon::prelude::*;

/// A decode weight matrix's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightLayout {
    /// Row-major [n, k], as checkpoints hold it (cuBLAS and every kernel read it).
    Rows,
    /// `tile_weights`' order: only the bf16 skinny GEMMs read it.
    Tiled,
}

impl WeightLayout {
    /// The kernels' `tiled` argument.
    pub(crate) fn arg(self) -> i32 {
        (self == WeightLayout::Tiled) as i32
    }
}

/// Bytes of each row a ring stage holds (TM_ROW_BYTES in skinny_bulk.cu).
pub const STAGE_ROW_BYTES: usize = 1024;
/// Rows per tile (the MMA's m; TILE_N in skinny.rs).
const TILE_ROWS: usize = 16;

/// bf16 weights [n, k] row-major -> the tiled layout (`tile_rows`).
pub fn tile_weights(w: &[half::bf16], n: usize, k: usize) -> Vec<half::bf16> {
    tile_rows(w, n, k)
}

/// w [n, k] row-major -> the tiled layout: tile by tile (16 rows; the last may have fewer),
/// and inside a tile, piece by piece (STAGE_ROW_BYTES of each row; the last may be
/// shorter), each piece's rows side by side. Element (r, c) lands at `tiled_index`. The
/// pieces are counted in T's bytes, so T must be what the kernels read (bf16 or e4m3
/// codes): `tile_weights` fixes it to bf16.
fn tile_rows<T: Copy + Send + Sync>(w: &[T], n: usize, k: usize) -> Vec<T> {
    assert_eq!(w.len(), n * k, "w is not {n} x {k}");
    let piece = (STAGE_ROW_BYTES / std::mem::size_of::<T>()).max(1);
    // Each tile is the same run of rows in both layouts: permute the tiles in parallel,
    // straight into the output.
    // A parallel copy allocates the output (one thread's `to_vec` took seconds of a load).
    let mut out = Vec::with_capacity(w.len());
    out.par_extend(w.par_iter().copied());
    out.par_chunks_mut(TILE_ROWS * k).zip(w.par_chunks(TILE_ROWS * k)).for_each(|(dst, tile)| {
        let rows = tile.len() / k;
        let mut at = 0;
        for c0 in (0..k).step_by(piece) {
            let len = piece.min(k - c0);
            for r in 0..rows {
                dst[at..at + len].copy_from_slice(&tile[r * k + c0..r * k + c0 + len]);
                at += len;
            }
        }
    });
    out
}

/// Where `tile_weights` puts element (row, col) of an [n, k] matrix of `elem`-byte values
/// (the index the kernels compute).
pub fn tiled_index(row: usize, col: usize, n: usize, k: usize, elem: usize) -> usize {
    let piece = (STAGE_ROW_BYTES / elem).max(1);
    let (n0, r) = (row / TILE_ROWS * TILE_ROWS, row % TILE_ROWS);
    let rows = TILE_ROWS.min(n - n0);
    let (c, c0) = (col / piece, col / piece * piece);
    let len = piece.min(k - c0);
    n0 * k + rows * c * piece + r * len + (col - c0)
}

#[cfg(test)]
mod tests {
    use super::{WeightLayout, tile_rows, tile_weights, tiled_index};
    use half::bf16;

    #[test]
    fn a_stage_is_contiguous_and_every_element_lands_where_the_kernels_look() {
        // bf16 values (as bits): 512 per piece. n = 37 leaves a 5-row last tile; k = 1288
        // a 264-element last piece.
        let (n, k) = (37usize, 1288usize);
        let w: Vec<bf16> = (0..n * k).map(|i| bf16::from_bits((i % 65521) as u16)).collect();
        let t = tile_weights(&w, n, k);
        let (t, w): (Vec<u16>, Vec<u16>) =
            (t.iter().map(|v| v.to_bits()).collect(), w.iter().map(|v| v.to_bits()).collect());
        assert_eq!(t.len(), w.len());
        for row in 0..n {
            for col in 0..k {
                let at = tiled_index(row, col, n, k, 2);
                assert_eq!(t[at], w[row * k + col], "({row}, {col})");
            }
        }
        // The first stage: 512 elements of row 0, then of row 1, ...
        assert_eq!(&t[..512], &w[..512]);
        assert_eq!(&t[512..1024], &w[k..k + 512]);
        // The first tile's last piece (264 wide) follows its two full pieces.
        let last = 16 * 2 * 512;
        assert_eq!(&t[last..last + 264], &w[1024..1288]);
        assert_eq!(WeightLayout::Tiled.arg(), 1);
        assert_eq!(WeightLayout::Rows.arg(), 0);
    }

    #[test]
    fn bytes_take_1_kb_pieces() {
        let (n, k) = (16usize, 2048usize);
        let w: Vec<u8> = (0..n * k).map(|i| (i * 7 % 251) as u8).collect();
        let t = tile_rows(&w, n, k);
        assert_eq!(&t[1024..2048], &w[2048..3072], "row 1's first KB is second");
        assert_eq!(tiled_index(0, 1024, n, k, 1), 16 * 1024);
    }
}
