//! Per-step metadata: token ids, positions, KV slots, block tables and context lengths,
//! built and validated on the host, then uploaded (fresh buffers for an eager step, or
//! written into a decode graph's fixed buffers).

use super::driver_err;
use crate::error::{EngineError, Result};
use crate::model::SeqChunk;
use kernels::cudarc::driver::{
    CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, PinnedHostSlice, sys,
};
use std::sync::Arc;

#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct HostMeta {
    pub ids: Vec<u32>,
    pub positions: Vec<i32>,
    pub slots: Vec<i32>,
    /// Block tables of the step's sequences, concatenated.
    pub tables: Vec<i32>,
    /// Per token: where its sequence's table starts in `tables`.
    pub table_offs: Vec<i32>,
    /// Per token: how many positions it attends to (position + 1: causal).
    pub ctx_lens: Vec<i32>,
    /// Per token: the positions its sequence's table covers (host only: what `advanced`
    /// may predict into).
    pub covered: Vec<usize>,
    /// A verify's tree masks, three ints per token (`ops::tree_attention_into`); empty for
    /// causal steps. Uploaded apart from `packed` (graphs never carry them).
    pub tree: Vec<i32>,
}

impl HostMeta {
    /// Check the step as the CPU backend does (a bad id or short table is a caller bug that
    /// must fail the step, not read out of bounds on the GPU) and lay out its metadata.
    pub fn build(chunks: &[SeqChunk<'_>], vocab: usize, block_size: usize, pages: usize) -> Result<Self> {
        let mut m = HostMeta::default();
        for ch in chunks {
            if let Some(&bad) = ch.tokens.iter().find(|&&t| t as usize >= vocab) {
                return Err(EngineError::BadRequest(format!("token id {bad} >= vocab_size {vocab}")));
            }
            let end = ch.start_pos + ch.tokens.len();
            if ch.block_table.len() * block_size < end || ch.block_table.iter().any(|&p| p as usize >= pages)
            {
                return Err(EngineError::BadRequest(format!("block table does not cover {end} positions")));
            }
            let off = m.tables.len() as i32;
            m.tables.extend(ch.block_table.iter().map(|&p| p as i32));
            for (i, &t) in ch.tokens.iter().enumerate() {
                let pos = ch.start_pos + i;
                m.ids.push(t);
                m.positions.push(pos as i32);
                m.slots
                    .push((ch.block_table[pos / block_size] as usize * block_size + pos % block_size) as i32);
                m.table_offs.push(off);
                m.ctx_lens.push(pos as i32 + 1);
                m.covered.push(ch.block_table.len() * block_size);
            }
        }
        Ok(m)
    }

    /// The decode step after this one, as the engine will ask for it if each of the first
    /// `rows` tokens' sequences takes one more token (run-ahead, graph.rs): every position,
    /// slot and context one further on, the tables and padding rows as they are, ids 0
    /// (the caller fills them with this step's tokens). None when a table does not cover
    /// the next position: the engine will grow it first, so the step would not match.
    pub fn advanced(&self, rows: usize, block_size: usize) -> Option<HostMeta> {
        let mut m = self.clone();
        for i in 0..rows {
            let pos = self.positions[i] as usize + 1;
            if pos >= self.covered[i] {
                return None;
            }
            let page = self.tables[self.table_offs[i] as usize + pos / block_size] as usize;
            m.ids[i] = 0;
            m.positions[i] = pos as i32;
            m.slots[i] = (page * block_size + pos % block_size) as i32;
            m.ctx_lens[i] = pos as i32 + 1;
        }
        Some(m)
    }

    /// Pad to `rows` tokens with dummies that live on `pad_page` (a page the block manager
    /// never hands out): token 0 at position 0, attending to itself.
    pub fn pad(&mut self, rows: usize, pad_page: usize, block_size: usize) {
        let off = self.tables.len() as i32;
        self.tables.push(pad_page as i32);
        while self.ids.len() < rows {
            self.ids.push(0);
            self.positions.push(0);
            self.slots.push((pad_page * block_size) as i32);
            self.table_offs.push(off);
            self.ctx_lens.push(1);
            self.covered.push(block_size);
        }
    }
}

impl HostMeta {
    /// The metadata as one array, in `StepMeta`'s order: ids (their bits), positions,
    /// slots, table offsets, context lengths, then the tables (one 0 when there are none:
    /// a zero-length buffer has no pointer to pass, and the kernels never read it then).
    pub fn packed(&self) -> Vec<i32> {
        let mut v = Vec::with_capacity(5 * self.ids.len() + self.tables.len().max(1));
        v.extend(self.ids.iter().map(|&t| t as i32));
        for f in [&self.positions, &self.slots, &self.table_offs, &self.ctx_lens] {
            v.extend_from_slice(f);
        }
        v.extend_from_slice(&self.tables);
        if self.tables.is_empty() {
            v.push(0);
        }
        v
    }
}

/// Page-locked host memory a step's metadata goes up from (`StepMeta::write_staged`;
/// cached: the host writes it), and the event after its last copy.
pub(super) struct Staging {
    host: PinnedHostSlice<i32>,
    copied: CudaEvent,
}

/// The device copy of a step's metadata: one buffer, uploaded in one copy. Six copies
/// (one per array) were most of the ~37 us the host spent around each decode graph's
/// replay at batch 1 (LATLAB_STEP_TIMING, H200, 2026-11-30 23:19), time in which the GPU idles.
/// Layout: `rows` ids, positions, slots, table offsets and context lengths, then up to
/// `table_cap` table entries.
pub(super) struct StepMeta {
    buf: CudaSlice<i32>,
    rows: usize,
    /// The tree masks of a verify step (`HostMeta::tree`).
    tree: Option<CudaSlice<i32>>,
}

impl StepMeta {
    fn field(&self, i: usize) -> CudaView<'_, i32> {
        self.buf.slice(i * self.rows..(i + 1) * self.rows)
    }
    pub fn ids(&self) -> CudaView<'_, u32> {
        // SAFETY: i32 and u32 have the same size and every bit pattern is valid in both;
        // the ids were written as their bits (HostMeta::packed).
        unsafe { self.field(0).transmute::<u32>(self.rows) }.expect("rows fit the buffer")
    }
    pub fn positions(&self) -> CudaView<'_, i32> {
        self.field(1)
    }
    pub fn slots(&self) -> CudaView<'_, i32> {
        self.field(2)
    }
    pub fn table_offs(&self) -> CudaView<'_, i32> {
        self.field(3)
    }
    pub fn ctx_lens(&self) -> CudaView<'_, i32> {
        self.field(4)
    }
    pub fn tables(&self) -> CudaView<'_, i32> {
        self.buf.slice(5 * self.rows..)
    }
    /// A verify step's tree masks, None for a causal step.
    pub fn tree(&self) -> Option<CudaView<'_, i32>> {
        self.tree.as_ref().map(|t| t.as_view())
    }

    pub fn upload(s: &Arc<CudaStream>, h: &HostMeta) -> Result<Self> {
        let tree = match h.tree.is_empty() {
            true => None,
            false => Some(s.clone_htod(&h.tree).map_err(driver_err("upload tree masks"))?),
        };
        Ok(StepMeta {
            buf: s.clone_htod(&h.packed()).map_err(driver_err("upload step metadata"))?,
            rows: h.ids.len(),
            tree,
        })
    }

    /// `alloc` with room for the tree masks of `rows` verify nodes (a verify graph's inputs).
    pub fn alloc_tree(s: &Arc<CudaStream>, rows: usize, table_cap: usize) -> Result<Self> {
        let tree = s.alloc_zeros(3 * rows).map_err(driver_err("alloc tree masks"))?;
        Ok(StepMeta { tree: Some(tree), ..Self::alloc(s, rows, table_cap)? })
    }

    /// Fixed buffers for `rows` tokens and `table_cap` table entries (a graph's inputs).
    pub fn alloc(s: &Arc<CudaStream>, rows: usize, table_cap: usize) -> Result<Self> {
        Ok(StepMeta {
            buf: s.alloc_zeros(5 * rows + table_cap.max(1)).map_err(driver_err("alloc step metadata"))?,
            rows,
            tree: None,
        })
    }

    /// Overwrite fixed buffers in place (same row count; tables must fit).
    pub fn write(&mut self, s: &Arc<CudaStream>, h: &HostMeta) -> Result<()> {
        let cap = self.buf.len() - 5 * self.rows;
        if h.ids.len() != self.rows || h.tables.len() > cap {
            return Err(EngineError::Backend(format!(
                "graph metadata: {} rows / {} table entries do not fit {} / {}",
                h.ids.len(),
                h.tables.len(),
                self.rows,
                cap
            )));
        }
        if let Some(tree) = self.tree.as_mut() {
            if h.tree.len() != tree.len() {
                return Err(EngineError::Backend(format!(
                    "graph metadata: {} tree ints for {} rows",
                    h.tree.len(),
                    self.rows
                )));
            }
            s.memcpy_htod(&h.tree, tree).map_err(driver_err("write tree masks"))?;
        }
        let packed = h.packed();
        s.memcpy_htod(&packed, &mut self.buf.slice_mut(..packed.len()))
            .map_err(driver_err("write step metadata"))
    }

    /// `write` through page-locked `staging`, so that the copy is queued on the stream and
    /// the host goes on (run-ahead, graph.rs): a pageable copy returns only once it has been
    /// staged, which would wait for the graph before it. Only the packed length goes up
    /// (the tables' capacity is rows x KV pages, far more than a step uses), and `staging`
    /// is not rewritten before its last copy has run (its event).
    pub fn write_staged(&mut self, s: &Arc<CudaStream>, h: &HostMeta, staging: &mut Staging) -> Result<()> {
        let packed = h.packed();
        let n = packed.len();
        if h.ids.len() != self.rows || n > self.buf.len() {
            return Err(EngineError::Backend(format!(
                "graph metadata: {} rows / {n} values do not fit {} / {}",
                h.ids.len(),
                self.rows,
                self.buf.len()
            )));
        }
        staging.copied.synchronize().map_err(driver_err("wait for metadata staging"))?;
        let host = staging.host.as_mut_slice().map_err(driver_err("metadata staging"))?;
        host[..n].copy_from_slice(&packed);
        s.memcpy_htod(&host[..n], &mut self.buf.slice_mut(..n)).map_err(driver_err("write step metadata"))?;
        staging.copied.record(s).map_err(driver_err("record metadata staging"))
    }

    /// Staging for `write_staged`.
    pub fn staging(&self, s: &Arc<CudaStream>) -> Result<Staging> {
        // SAFETY: i32 is valid for any bits; write_staged fills what it copies.
        let host = unsafe { s.context().alloc_pinned_with_flags::<i32>(self.buf.len(), 0) }
            .map_err(driver_err("alloc metadata staging"))?;
        let copied = s
            .context()
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(driver_err("create metadata staging event"))?;
        Ok(Staging { host, copied })
    }

    /// The ids, to be written on the GPU (run-ahead: the graph's own tokens).
    pub fn ids_mut(&mut self) -> CudaViewMut<'_, u32> {
        // SAFETY: as `ids`, which lie at the buffer's start.
        unsafe { self.buf.transmute_mut::<u32>(self.rows) }.expect("rows fit the buffer")
    }
}

#[cfg(test)]
mod tests {
    use super::HostMeta;
    use crate::model::SeqChunk;

    /// The packed order is the one StepMeta's views read: a misplaced array would feed the
    /// kernels another array's values.
    #[test]
    fn packed_metadata_lies_in_step_meta_order() {
        let (t0, t1) = ([3u32, 9], [7u32]);
        let chunks = [
            SeqChunk { tokens: &t0, start_pos: 4, block_table: &[2, 5], want_logits: true },
            SeqChunk { tokens: &t1, start_pos: 0, block_table: &[1], want_logits: true },
        ];
        let mut h = HostMeta::build(&chunks, 100, 4, 8).unwrap();
        h.pad(4, 8, 4);
        #[rustfmt::skip]
        let want = [
            3, 9, 7, 0, // ids (the pad row's token 0)
            4, 5, 0, 0, // positions
            20, 21, 4, 32, // slots: page * 4 + pos % 4; the pad page 8
            0, 0, 2, 3, // table offsets
            5, 6, 1, 1, // context lengths
            2, 5, 1, 8, // tables
        ];
        assert_eq!(h.packed(), want);
        assert_eq!(HostMeta::default().packed(), [0], "no tables: one 0");
    }

    /// Run-ahead queues `advanced`'s step and skips the engine's next call only when that
    /// call's metadata equals it: so the prediction, with its ids filled, must be exactly
    /// what the next step builds, across a page boundary too; and there is none where a
    /// table does not cover the next position.
    #[test]
    fn advanced_metadata_is_the_next_steps() {
        let bs = 4;
        let step = |pos: [usize; 2], toks: [u32; 2], tables: [&[u32]; 2]| {
            let t = [[toks[0]], [toks[1]]];
            let chunks: Vec<SeqChunk> = (0..2)
                .map(|i| SeqChunk {
                    tokens: &t[i],
                    start_pos: pos[i],
                    block_table: tables[i],
                    want_logits: true,
                })
                .collect();
            let mut h = HostMeta::build(&chunks, 100, bs, 16).unwrap();
            h.pad(4, 15, bs);
            h
        };
        let tables: [&[u32]; 2] = [&[3, 7], &[9, 2, 5]];
        // Row 0 crosses from its first page into its second (position 3 -> 4).
        let now = step([3, 9], [11, 12], tables);
        let mut next = now.advanced(2, bs).expect("both tables cover the next position");
        assert_eq!(&next.ids, &[0, 0, 0, 0], "ids wait for this step's tokens");
        next.ids[..2].copy_from_slice(&[21, 22]);
        assert_eq!(next, step([4, 10], [21, 22], tables));
        assert_eq!(next.slots[..2], [7 * 4, 5 * 4 + 2]);
        // Row 0 at its table's last position (7 of 8): the engine grows the table first.
        assert_eq!(step([7, 9], [1, 2], tables).advanced(2, bs), None);
        // Padding rows stay as they are.
        assert_eq!(next.positions[2..], now.positions[2..]);
    }
}
