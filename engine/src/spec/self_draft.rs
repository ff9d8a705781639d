//! The target as its own draft: a test double whose proposals are known. Random EAGLE-3
//! drafts almost never agree with their target, which would leave the accept path
//! untested; this one proposes the target's own greedy continuation (every greedy token
//! accepted), or misses on purpose from a given depth on, or always.

use super::{DraftContext, DraftInfo, DraftRow, DraftSource, DraftTree, SpecConfig};
use crate::error::Result;
use crate::model::cpu::CpuBackend;
use crate::model::{Backend, SeqChunk};
use std::sync::Arc;

/// Which proposals are wrong (a wrong proposal is the target's second choice, and no
/// sibling then carries the first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Miss {
    /// Every main-line proposal is the target's greedy token.
    Never,
    /// The token at this depth (1 = the first drafted) is wrong.
    AtDepth(usize),
    /// Every proposal is wrong: only the bonus token is ever emitted.
    Always,
}

pub struct SelfDraft {
    target: CpuBackend,
    pages: usize,
    block_size: usize,
    miss: Miss,
    aux_layers: Vec<usize>,
    hidden: usize,
}

impl SelfDraft {
    /// A `DraftSource` building this draft over the engine's target.
    pub fn source(miss: Miss) -> DraftSource {
        DraftSource::Built(Arc::new(move |ctx: &DraftContext<'_>| {
            let target =
                CpuBackend::new(ctx.target.clone(), ctx.weights.clone(), ctx.num_pages, ctx.block_size);
            Ok(Box::new(SelfDraft {
                target,
                pages: ctx.num_pages,
                block_size: ctx.block_size,
                miss,
                aux_layers: vec![0],
                hidden: ctx.target.hidden_size,
            }) as Box<dyn super::Draft>)
        }))
    }

    /// The target's logits after `tokens`, recomputed from position 0 on the draft's own pages.
    fn next_logits(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let pages = tokens.len().div_ceil(self.block_size).min(self.pages);
        let table: Vec<u32> = (0..pages as u32).collect();
        let chunk = SeqChunk { tokens, start_pos: 0, block_table: &table, want_logits: true };
        Ok(self.target.forward(&[chunk])?.remove(0))
    }

    fn tree(&mut self, tokens: &[u32], cfg: &SpecConfig) -> Result<DraftTree> {
        let budget = cfg.num_draft_tokens - 1;
        let depth = cfg.num_steps.min(budget);
        let mut seq = tokens.to_vec();
        let mut tree = DraftTree::default();
        let mut siblings = vec![]; // (parent chunk index, token)
        for level in 1..=depth {
            let logits = self.next_logits(&seq)?;
            let ranked = ranked(&logits, cfg.topk + 1);
            let wrong = match self.miss {
                Miss::Never => false,
                Miss::AtDepth(d) => level == d,
                Miss::Always => true,
            };
            let (main, rest) =
                if wrong { (ranked[1], &ranked[2..]) } else { (ranked[0], &ranked[1..cfg.topk]) };
            tree.tokens.push(main);
            tree.parents.push(level - 1);
            siblings.extend(rest.iter().take(cfg.topk - 1).map(|&t| (level - 1, t)));
            seq.push(main);
        }
        for (parent, t) in siblings.into_iter().take(budget - depth) {
            tree.tokens.push(t);
            tree.parents.push(parent);
        }
        Ok(tree)
    }
}

/// The `n` highest logits' ids, first maximum first (as `sampling::argmax`).
fn ranked(logits: &[f32], n: usize) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..logits.len() as u32).collect();
    ids.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]).then(a.cmp(&b)));
    ids.truncate(n);
    ids
}

impl super::Draft for SelfDraft {
    fn aux_width(&self) -> usize {
        self.hidden
    }
    fn aux_layers(&self) -> &[usize] {
        &self.aux_layers
    }
    fn propose(
        &mut self,
        rows: &[DraftRow<'_>],
        cfg: &SpecConfig,
        _embed: &crate::weights::Mat,
    ) -> Result<Vec<DraftTree>> {
        rows.iter().map(|r| self.tree(r.tokens, cfg)).collect()
    }
    fn describe(&self) -> DraftInfo {
        DraftInfo {
            source: format!("the target itself (test draft, miss {:?})", self.miss),
            random_weights: true,
            draft_vocab_size: 0,
            aux_layers: self.aux_layers.clone(),
        }
    }

    fn into_eagle3(
        self: Box<Self>,
    ) -> std::result::Result<Box<super::draft::Eagle3Draft>, Box<dyn super::Draft>> {
        Err(self)
    }
}
