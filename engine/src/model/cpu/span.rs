//! Where each token of a forward sits: a plain chunk runs positions `start..start + n`
//! causally; a verify tree's node i is written at KV position `start + i`, rotated at
//! `start + depth(i)` and sees the sequence's KV before `start` and its own ancestors.

use super::kv_cache::KvCache;
use crate::model::{SeqChunk, VerifyRow};

pub(super) struct Span<'a> {
    pub tokens: &'a [u32],
    pub start_pos: usize,
    pub block_table: &'a [u32],
    /// Tree parents (`parents[0]` unused) and depths; None for a causal chunk.
    tree: Option<(&'a [usize], Vec<usize>)>,
}

impl<'a> Span<'a> {
    pub fn chunk(c: &SeqChunk<'a>) -> Self {
        Span { tokens: c.tokens, start_pos: c.start_pos, block_table: c.block_table, tree: None }
    }

    pub fn tree(r: &VerifyRow<'a>) -> Self {
        let mut depth = vec![0; r.tokens.len()];
        for i in 1..r.tokens.len() {
            depth[i] = depth[r.parents[i]] + 1;
        }
        Span {
            tokens: r.tokens,
            start_pos: r.start_pos,
            block_table: r.block_table,
            tree: Some((r.parents, depth)),
        }
    }

    /// The RoPE position of token i.
    pub fn rope_pos(&self, i: usize) -> usize {
        self.start_pos + self.tree.as_ref().map_or(i, |(_, d)| d[i])
    }

    /// The KV position token i is written at.
    pub fn kv_pos(&self, i: usize) -> usize {
        self.start_pos + i
    }

    /// The cache slots token i attends to, in position order.
    pub fn visible(&self, i: usize, cache: &KvCache) -> Vec<usize> {
        let slot = |p| cache.slot(self.block_table, p);
        match &self.tree {
            None => (0..=self.start_pos + i).map(slot).collect(),
            Some((parents, _)) => {
                let mut path = vec![i];
                while *path.last().unwrap() != 0 {
                    path.push(parents[*path.last().unwrap()]);
                }
                (0..self.start_pos).chain(path.iter().rev().map(|&n| self.start_pos + n)).map(slot).collect()
            }
        }
    }
}
