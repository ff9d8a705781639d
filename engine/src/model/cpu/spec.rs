//! The CPU backend's side of speculative decoding (spec/mod.rs has the whole step): the
//! target's aux hidden states kept per KV slot, the verify forward over trees, moving the
//! accepted nodes into place, and feeding the draft.

use super::span::Span;
use super::{CpuBackend, KvCache};
use crate::error::{EngineError, Result};
use crate::model::{KeepRow, ProposeRow, VerifyRow};
use crate::spec::{Draft, DraftTree, SpecConfig};

pub(super) struct CpuSpec {
    pub draft: Box<dyn Draft>,
    pub cfg: SpecConfig,
    /// Target layers whose input is captured, in the draft's order.
    layers: Vec<usize>,
    hidden: usize,
    /// Per KV slot, the captured states side by side (`layers.len() * hidden` floats).
    aux: Vec<f32>,
}

impl CpuSpec {
    fn width(&self) -> usize {
        self.layers.len() * self.hidden
    }

    /// Before layer `li` runs (or after the last, `li` = the layer count): stores the
    /// residual stream of every token into its slot's aux row, where the draft wants it.
    pub fn capture(&mut self, li: usize, spans: &[Span<'_>], x: &[f32], cache: &KvCache) {
        let w = self.width();
        for (k, _) in self.layers.iter().enumerate().filter(|(_, l)| **l == li) {
            let mut row = 0;
            for sp in spans {
                for i in 0..sp.tokens.len() {
                    let slot = cache.slot(sp.block_table, sp.kv_pos(i));
                    let src = &x[(row + i) * self.hidden..][..self.hidden];
                    self.aux[slot * w + k * self.hidden..][..self.hidden].copy_from_slice(src);
                }
                row += sp.tokens.len();
            }
        }
    }
}

impl CpuBackend {
    /// This backend speculating with `draft` under `cfg`. The draft's aux layers must be
    /// target layers (or the layer count: the last layer's output), and its aux width
    /// one hidden state per layer.
    pub fn with_draft(mut self, draft: Box<dyn Draft>, cfg: SpecConfig) -> Result<Self> {
        let hidden = self.cfg.hidden_size;
        let layers = crate::spec::aux_layers_of(draft.as_ref(), &self.cfg)?;
        let slots = self.cache.num_pages * self.cache.block_size;
        let aux = vec![0.0; slots * layers.len() * hidden];
        self.spec = Some(CpuSpec { draft, cfg, layers, hidden, aux });
        Ok(self)
    }

    fn spec_mut(&mut self) -> Result<&mut CpuSpec> {
        self.spec
            .as_mut()
            .ok_or_else(|| EngineError::Backend("the cpu backend runs no speculative draft".into()))
    }

    pub(super) fn verify_trees(&mut self, rows: &[VerifyRow<'_>]) -> Result<Vec<Vec<Vec<f32>>>> {
        self.spec_mut()?;
        for r in rows {
            let bad = r.tokens.is_empty()
                || r.parents.len() != r.tokens.len()
                || (1..r.parents.len()).any(|i| r.parents[i] >= i);
            if bad {
                return Err(EngineError::Backend(format!(
                    "a verify tree needs a root and parents before their children, got parents {:?}",
                    r.parents
                )));
            }
        }
        let spans: Vec<Span<'_>> = rows.iter().map(Span::tree).collect();
        let n: usize = rows.iter().map(|r| r.tokens.len()).sum();
        let all: Vec<usize> = (0..n).collect();
        let mut logits = self.run(&spans, &all)?.into_iter();
        Ok(rows.iter().map(|r| logits.by_ref().take(r.tokens.len()).collect()).collect())
    }

    pub(super) fn keep_paths(&mut self, rows: &[KeepRow<'_>]) -> Result<()> {
        for r in rows {
            let end = r.start_pos + 1 + r.path.iter().copied().max().unwrap_or(0);
            self.check_table(r.block_table, end)?;
            // Nodes come parents first, so node path[d] >= d + 1: no copy overwrites a
            // source a later one still needs.
            for (d, &node) in r.path.iter().enumerate() {
                let from = self.cache.slot(r.block_table, r.start_pos + node);
                let to = self.cache.slot(r.block_table, r.start_pos + 1 + d);
                if from != to {
                    self.cache.copy_slot(from, to);
                    let spec = self.spec_mut()?;
                    let w = spec.width();
                    spec.aux.copy_within(from * w..(from + 1) * w, to * w);
                }
            }
        }
        Ok(())
    }

    pub(super) fn propose_trees(&mut self, rows: &[ProposeRow<'_>]) -> Result<Vec<DraftTree>> {
        let cache = &self.cache;
        let spec = self.spec.as_mut().ok_or_else(|| EngineError::Backend("no draft".into()))?;
        let w = spec.width();
        let auxes: Vec<Vec<f32>> = rows
            .iter()
            .map(|r| {
                let end = r.tokens.len().saturating_sub(1);
                let mut a = Vec::with_capacity(end.saturating_sub(r.draft_from) * w);
                for pos in r.draft_from..end {
                    let slot = cache.slot(r.block_table, pos);
                    a.extend_from_slice(&spec.aux[slot * w..(slot + 1) * w]);
                }
                a
            })
            .collect();
        crate::spec::propose_checked(spec.draft.as_mut(), &spec.cfg, rows, &auxes, &self.w.embed)
    }
}
