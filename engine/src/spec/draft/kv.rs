//! The draft's KV store: its one layer's K and V per slot, paged like the target's
//! (engine/src/model/cpu/kv_cache.rs): a sequence's draft position i lives in slot
//! `block_table[i / block_size] * block_size + i % block_size` of the same pages the
//! target uses, in a store of its own.

pub struct DraftKv {
    pub block_size: usize,
    pub num_pages: usize,
    kv_dim: usize,
    k: Vec<f32>,
    v: Vec<f32>,
}

impl DraftKv {
    pub fn new(num_pages: usize, block_size: usize, kv_dim: usize) -> Self {
        let n = num_pages * block_size * kv_dim;
        DraftKv { block_size, num_pages, kv_dim, k: vec![0.0; n], v: vec![0.0; n] }
    }

    /// Whether `block_table` names only pages of this store and covers `positions`.
    pub fn covers(&self, block_table: &[u32], positions: usize) -> bool {
        block_table.len() * self.block_size >= positions
            && block_table.iter().all(|&p| (p as usize) < self.num_pages)
    }

    #[inline]
    pub fn slot(&self, block_table: &[u32], pos: usize) -> usize {
        block_table[pos / self.block_size] as usize * self.block_size + pos % self.block_size
    }

    pub fn write(&mut self, slot: usize, k: &[f32], v: &[f32]) {
        let r = slot * self.kv_dim..(slot + 1) * self.kv_dim;
        self.k[r.clone()].copy_from_slice(k);
        self.v[r].copy_from_slice(v);
    }

    #[inline]
    pub fn read(&self, slot: usize) -> (&[f32], &[f32]) {
        let r = slot * self.kv_dim..(slot + 1) * self.kv_dim;
        (&self.k[r.clone()], &self.v[r])
    }
}
