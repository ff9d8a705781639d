//! Per-step metadata: token ids, positions, KV slots, block tables and context lengths,
//! built and validated on the host, then uploaded (fresh buffers for an eager step, or
//! written into a decode graph's fixed buffers).

use super::driver_err;
use crate::error::{EngineError, Result};
use crate::model::SeqChunk;
use kernels::cudarc::driver::{CudaSlice, CudaStream};
use std::sync::Arc;

#[derive(Debug, Default)]
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
}

impl HostMeta {
    /// Check the step as the CPU backend does (a bad id or short table is a caller bug that
    /// must fail the step, not read out of bounds on the GPU) and lay out its metadata.
    pub fn build(
        chunks: &[SeqChunk<'_>],
        vocab: usize,
        block_size: usize,
        pages: usize,
    ) -> Result<Self> {
        let mut m = HostMeta::default();
        for ch in chunks {
            if let Some(&bad) = ch.tokens.iter().find(|&&t| t as usize >= vocab) {
                return Err(EngineError::BadRequest(format!(
                    "token id {bad} >= vocab_size {vocab}"
                )));
            }
            let end = ch.start_pos + ch.tokens.len();
            if ch.block_table.len() * block_size < end
                || ch.block_table.iter().any(|&p| p as usize >= pages)
            {
                return Err(EngineError::BadRequest(format!(
                    "block table does not cover {end} positions"
                )));
            }
            let off = m.tables.len() as i32;
            m.tables.extend(ch.block_table.iter().map(|&p| p as i32));
            for (i, &t) in ch.tokens.iter().enumerate() {
                let pos = ch.start_pos + i;
                m.ids.push(t);
                m.positions.push(pos as i32);
                m.slots.push(
                    (ch.block_table[pos / block_size] as usize * block_size + pos % block_size)
                        as i32,
                );
                m.table_offs.push(off);
                m.ctx_lens.push(pos as i32 + 1);
            }
        }
        Ok(m)
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
        }
    }
}

/// The device copy of a step's metadata.
pub(super) struct StepMeta {
    pub ids: CudaSlice<u32>,
    pub positions: CudaSlice<i32>,
    pub slots: CudaSlice<i32>,
    pub tables: CudaSlice<i32>,
    pub table_offs: CudaSlice<i32>,
    pub ctx_lens: CudaSlice<i32>,
}

impl StepMeta {
    pub fn upload(s: &Arc<CudaStream>, h: &HostMeta) -> Result<Self> {
        let up = driver_err("upload step metadata");
        // A zero-length table has no pointer to pass; the kernels never read it then.
        let tables: &[i32] = if h.tables.is_empty() { &[0] } else { &h.tables };
        Ok(StepMeta {
            ids: s.clone_htod(&h.ids).map_err(&up)?,
            positions: s.clone_htod(&h.positions).map_err(&up)?,
            slots: s.clone_htod(&h.slots).map_err(&up)?,
            tables: s.clone_htod(tables).map_err(&up)?,
            table_offs: s.clone_htod(&h.table_offs).map_err(&up)?,
            ctx_lens: s.clone_htod(&h.ctx_lens).map_err(&up)?,
        })
    }

    /// Fixed buffers for `rows` tokens and `table_cap` table entries (a graph's inputs).
    pub fn alloc(s: &Arc<CudaStream>, rows: usize, table_cap: usize) -> Result<Self> {
        let a = driver_err("alloc step metadata");
        Ok(StepMeta {
            ids: s.alloc_zeros(rows).map_err(&a)?,
            positions: s.alloc_zeros(rows).map_err(&a)?,
            slots: s.alloc_zeros(rows).map_err(&a)?,
            tables: s.alloc_zeros(table_cap).map_err(&a)?,
            table_offs: s.alloc_zeros(rows).map_err(&a)?,
            ctx_lens: s.alloc_zeros(rows).map_err(&a)?,
        })
    }

    /// Overwrite fixed buffers in place (same row count; tables must fit).
    pub fn write(&mut self, s: &Arc<CudaStream>, h: &HostMeta) -> Result<()> {
        if h.ids.len() != self.ids.len() || h.tables.len() > self.tables.len() {
            return Err(EngineError::Backend(format!(
                "graph metadata: {} rows / {} table entries do not fit {} / {}",
                h.ids.len(),
                h.tables.len(),
                self.ids.len(),
                self.tables.len()
            )));
        }
        let w = driver_err("write step metadata");
        s.memcpy_htod(&h.ids, &mut self.ids).map_err(&w)?;
        s.memcpy_htod(&h.positions, &mut self.positions)
            .map_err(&w)?;
        s.memcpy_htod(&h.slots, &mut self.slots).map_err(&w)?;
        s.memcpy_htod(&h.tables, &mut self.tables.slice_mut(..h.tables.len()))
            .map_err(&w)?;
        s.memcpy_htod(&h.table_offs, &mut self.table_offs)
            .map_err(&w)?;
        s.memcpy_htod(&h.ctx_lens, &mut self.ctx_lens).map_err(&w)?;
        Ok(())
    }
}
