//! A verify step's metadata (`Backend::verify`): each row's tree laid out as the CPU
//! backend's spans do (cpu/span.rs): node i written at KV position `start + i`, rotated at
//! `start + depth(i)`, seeing the sequence's KV before `start` and its own ancestors, which
//! the tree masks of `ops::tree_attention_into` say.

use super::meta::HostMeta;
use crate::error::{EngineError, Result};
use crate::model::VerifyRow;
use kernels::ops::MAX_TREE_NODES;

impl HostMeta {
    /// The metadata of one target forward over every row's tree, checked as the CPU backend
    /// checks a verify (bad trees, ids or tables fail the step before the GPU sees them).
    pub fn tree_step(rows: &[VerifyRow<'_>], vocab: usize, block_size: usize, pages: usize) -> Result<Self> {
        let mut m = HostMeta::default();
        for r in rows {
            let n = r.tokens.len();
            let bad_tree = n == 0 || r.parents.len() != n || (1..n).any(|i| r.parents[i] >= i);
            if bad_tree {
                return Err(EngineError::Backend(format!(
                    "a verify tree needs a root and parents before their children, got parents {:?}",
                    r.parents
                )));
            }
            if n > MAX_TREE_NODES {
                return Err(EngineError::BadRequest(format!(
                    "a verify tree of {n} nodes: the CUDA backend takes at most {MAX_TREE_NODES}"
                )));
            }
            if let Some(&bad) = r.tokens.iter().find(|&&t| t as usize >= vocab) {
                return Err(EngineError::BadRequest(format!("token id {bad} >= vocab_size {vocab}")));
            }
            let end = r.start_pos + n;
            if r.block_table.len() * block_size < end || r.block_table.iter().any(|&p| p as usize >= pages) {
                return Err(EngineError::BadRequest(format!("block table does not cover {end} positions")));
            }
            let off = m.tables.len() as i32;
            m.tables.extend(r.block_table.iter().map(|&p| p as i32));
            // Node i's ancestors and itself, as bits; and its depth.
            let (mut masks, mut depth) = (vec![0u64; n], vec![0usize; n]);
            for i in 0..n {
                let parent = if i == 0 { None } else { Some(r.parents[i]) };
                masks[i] = parent.map_or(0, |p| masks[p]) | 1 << i;
                depth[i] = parent.map_or(0, |p| depth[p] + 1);
            }
            for i in 0..n {
                let pos = r.start_pos + i;
                m.ids.push(r.tokens[i]);
                m.positions.push((r.start_pos + depth[i]) as i32);
                m.slots
                    .push((r.block_table[pos / block_size] as usize * block_size + pos % block_size) as i32);
                m.table_offs.push(off);
                m.ctx_lens.push(pos as i32 + 1);
                m.covered.push(r.block_table.len() * block_size);
                m.tree.extend([r.start_pos as i32, masks[i] as u32 as i32, (masks[i] >> 32) as u32 as i32]);
            }
        }
        Ok(m)
    }
}

impl HostMeta {
    /// Pad a verify step to `rows` nodes with one-node trees on `pad_page` (a page the block
    /// manager never hands out), as `pad` does for a decode step.
    pub fn pad_tree(&mut self, rows: usize, pad_page: usize, block_size: usize) {
        let n = self.ids.len();
        self.pad(rows, pad_page, block_size);
        for _ in n..rows {
            self.tree.extend([0, 1, 0]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HostMeta;
    use crate::model::VerifyRow;

    /// The seed's shape in small: root 0, children 1 and 2, 3 under 1, 4 under 3. Node 4
    /// sees 0, 1, 3 and itself; positions follow depth, slots follow the node index.
    #[test]
    fn tree_masks_name_each_nodes_ancestors_and_itself() {
        let (tokens, parents) = ([5u32, 6, 7, 8, 9], [0usize, 0, 0, 1, 3]);
        let row = VerifyRow { tokens: &tokens, parents: &parents, start_pos: 6, block_table: &[4, 2, 9] };
        let m = HostMeta::tree_step(&[row], 100, 4, 16).unwrap();
        assert_eq!(m.positions, [6, 7, 7, 8, 9]);
        assert_eq!(m.ctx_lens, [7, 8, 9, 10, 11]);
        // Positions 6..11 on pages 2 (6, 7) and 9 (8, 9, 10).
        assert_eq!(m.slots, [10, 11, 36, 37, 38]);
        let masks: Vec<u32> = m.tree.chunks(3).map(|t| t[1] as u32).collect();
        assert_eq!(masks, [0b1, 0b11, 0b101, 0b1011, 0b11011]);
        assert!(m.tree.chunks(3).all(|t| t[0] == 6 && t[2] == 0));
    }

    /// Padding nodes see only their own slot on the spare page: position 0, mask bit 0.
    #[test]
    fn padding_nodes_are_one_node_trees_on_the_spare_page() {
        let (tokens, parents) = ([5u32, 6], [0usize, 0]);
        let row = VerifyRow { tokens: &tokens, parents: &parents, start_pos: 3, block_table: &[1] };
        let mut m = HostMeta::tree_step(&[row], 100, 8, 4).unwrap();
        m.pad_tree(4, 4, 8);
        assert_eq!(m.ids.len(), 4);
        assert_eq!(m.tree.len(), 12);
        assert_eq!(&m.tree[6..], [0, 1, 0, 0, 1, 0]);
        assert_eq!(&m.slots[2..], [32, 32]);
        assert_eq!(&m.ctx_lens[2..], [1, 1]);
    }

    #[test]
    fn bad_trees_fail_before_the_gpu() {
        let tokens = [1u32, 2, 3];
        let row = |parents: &'static [usize], table: &'static [u32]| VerifyRow {
            tokens: &tokens,
            parents,
            start_pos: 0,
            block_table: table,
        };
        let err = |r| HostMeta::tree_step(&[r], 100, 4, 16).unwrap_err().to_string();
        assert!(err(row(&[0, 2, 0], &[1])).contains("parents before their children"));
        assert!(err(row(&[0, 0], &[1])).contains("parents before their children"));
        assert!(err(row(&[0, 0, 1], &[20])).contains("block table"));
        let many = vec![0u32; 65];
        let parents: Vec<usize> = (0..65).map(|i: usize| i.saturating_sub(1)).collect();
        let r = VerifyRow { tokens: &many, parents: &parents, start_pos: 0, block_table: &[0; 17] };
        assert!(HostMeta::tree_step(&[r], 100, 4, 32).unwrap_err().to_string().contains("at most 64"));
    }
}
