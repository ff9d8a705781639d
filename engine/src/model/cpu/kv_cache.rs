//! Paged KV storage of the CPU backend: per layer, `num_pages * block_size` slots of
//! `kv_dim` floats for K and for V. Which pages a sequence owns is the block manager's
//! business; this only maps (block table, position) to a slot.

pub struct KvCache {
    pub block_size: usize,
    pub num_pages: usize,
    kv_dim: usize,
    k: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
}

impl KvCache {
    pub fn new(layers: usize, num_pages: usize, block_size: usize, kv_dim: usize) -> Self {
        let n = num_pages * block_size * kv_dim;
        KvCache {
            block_size,
            num_pages,
            kv_dim,
            k: vec![vec![0.0; n]; layers],
            v: vec![vec![0.0; n]; layers],
        }
    }

    #[inline]
    pub fn slot(&self, block_table: &[u32], pos: usize) -> usize {
        block_table[pos / self.block_size] as usize * self.block_size + pos % self.block_size
    }

    pub fn write(&mut self, layer: usize, slot: usize, k: &[f32], v: &[f32]) {
        let r = slot * self.kv_dim..(slot + 1) * self.kv_dim;
        self.k[layer][r.clone()].copy_from_slice(k);
        self.v[layer][r].copy_from_slice(v);
    }

    /// K and V rows (kv_dim floats each) of one slot.
    #[inline]
    pub fn read(&self, layer: usize, slot: usize) -> (&[f32], &[f32]) {
        let r = slot * self.kv_dim..(slot + 1) * self.kv_dim;
        (&self.k[layer][r.clone()], &self.v[layer][r])
    }
}

impl KvCache {
    /// Copies every layer's K and V from slot `from` to slot `to` (speculative decoding's
    /// accepted nodes moving to their sequential positions).
    pub fn copy_slot(&mut self, from: usize, to: usize) {
        let d = self.kv_dim;
        for layer in 0..self.k.len() {
            self.k[layer].copy_within(from * d..(from + 1) * d, to * d);
            self.v[layer].copy_within(from * d..(from + 1) * d, to * d);
        }
    }
}
