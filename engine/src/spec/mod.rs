//! Speculative decoding (EAGLE-3, SGLang's semantics and flag names).
//!
//! One decode step of a speculating row, in the engine's order:
//! 1. **verify**: the target runs the tree the draft proposed last step (root = the row's
//!    last token, which has no KV yet) in one forward with a tree mask, logits at every node;
//! 2. **accept** (`accept.rs`): the longest root path the target agrees with, plus one token
//!    the target picks after it (the bonus); lossless for greedy and for sampling;
//! 3. **keep** (`Backend::keep_tree_path`): the accepted nodes' KV (and aux hidden states)
//!    move to their sequential positions; the rest is garbage past the sequence's end;
//! 4. **draft** (`Draft::propose`): the draft reads the target's aux hidden states of the
//!    positions it has not seen, extends its own KV over them, and proposes the next tree.
//!
//! Positions: the target's KV at position i holds token i. The draft's KV at position i
//! holds the pair (aux hidden of target position i, token i + 1): EAGLE-3 predicts the
//! token after next from where the target was and the token it chose.

pub mod accept;
pub mod draft;
pub mod self_draft;
pub mod synthetic;
pub mod tree;

use crate::error::{EngineError, Result};

/// `--speculative-num-steps`, `--speculative-eagle-topk`, `--speculative-num-draft-tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SpecConfig {
    /// Draft levels run per step (the tree's depth below the root).
    pub num_steps: usize,
    /// Branches kept per node and level; 1 is a chain (vLLM-style EAGLE).
    pub topk: usize,
    /// Tree nodes the target verifies per step, the root included (SGLang counts it too).
    pub num_draft_tokens: usize,
}

/// Bounds that catch a typo; far beyond what pays at batch 1-8.
pub const MAX_STEPS: usize = 32;
pub const MAX_TOPK: usize = 16;
pub const MAX_DRAFT_TOKENS: usize = 256;

impl SpecConfig {
    /// The checked config; errors name the flag.
    pub fn new(num_steps: usize, topk: usize, num_draft_tokens: usize) -> Result<Self> {
        let bad = |m: String| Err(EngineError::BadRequest(m));
        if !(1..=MAX_STEPS).contains(&num_steps) {
            return bad(format!("--speculative-num-steps must be in 1..={MAX_STEPS}, got {num_steps}"));
        }
        if !(1..=MAX_TOPK).contains(&topk) {
            return bad(format!("--speculative-eagle-topk must be in 1..={MAX_TOPK}, got {topk}"));
        }
        if !(2..=MAX_DRAFT_TOKENS).contains(&num_draft_tokens) {
            return bad(format!(
                "--speculative-num-draft-tokens must be in 2..={MAX_DRAFT_TOKENS} (the root and at least one \
                 drafted token), got {num_draft_tokens}"
            ));
        }
        let cap = Self::tree_capacity(num_steps, topk);
        if num_draft_tokens > cap {
            return bad(format!(
                "--speculative-num-draft-tokens {num_draft_tokens} is more than a tree of \
                 --speculative-num-steps {num_steps} and --speculative-eagle-topk {topk} holds ({cap}, the root \
                 included)"
            ));
        }
        Ok(SpecConfig { num_steps, topk, num_draft_tokens })
    }

    /// Nodes a draft of these steps and branching can propose, the root included: topk at
    /// the first level, then topk children of each of the topk best nodes of the level
    /// above (SGLang's expansion), so 1 + topk + (num_steps - 1) * topk^2.
    pub fn tree_capacity(num_steps: usize, topk: usize) -> usize {
        1 + topk + (num_steps - 1) * topk * topk
    }

    /// KV slots a verify writes past the row's last committed position.
    pub fn lookahead(&self) -> usize {
        self.num_draft_tokens
    }
}

/// A proposed tree, the root excluded. Nodes come parents first; `parents[i]` indexes the
/// verify chunk `[root, tokens...]`, so 0 is the root and node i sits at chunk index i + 1.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DraftTree {
    pub tokens: Vec<u32>,
    pub parents: Vec<usize>,
}

impl DraftTree {
    /// A chain: each token the child of the one before it.
    pub fn chain(tokens: Vec<u32>) -> Self {
        let parents = (0..tokens.len()).collect();
        DraftTree { tokens, parents }
    }

    /// The verify chunk's parent array, root included (`usize::MAX` for the root).
    pub fn chunk_parents(&self) -> Vec<usize> {
        std::iter::once(usize::MAX).chain(self.parents.iter().copied()).collect()
    }

    /// Depth of every chunk index (root 0).
    pub fn chunk_depths(&self) -> Vec<usize> {
        let mut d = vec![0; self.tokens.len() + 1];
        for (i, &p) in self.parents.iter().enumerate() {
            d[i + 1] = d[p] + 1;
        }
        d
    }

    /// A tree whose parents come first and stay in range; the verify forward relies on it.
    pub fn check(&self) -> Result<()> {
        if self.parents.len() != self.tokens.len() {
            return Err(EngineError::Backend(format!(
                "draft tree has {} tokens and {} parents",
                self.tokens.len(),
                self.parents.len()
            )));
        }
        if let Some((i, &p)) = self.parents.iter().enumerate().find(|&(i, &p)| p > i) {
            return Err(EngineError::Backend(format!(
                "draft tree node {i} names parent {p}, not an earlier node"
            )));
        }
        Ok(())
    }
}

/// One row for `Draft::propose`.
#[derive(Debug, Clone)]
pub struct DraftRow<'a> {
    /// The sequence's tokens, the one just picked last.
    pub tokens: &'a [u32],
    /// The first draft position not yet in the draft's KV (0 after a prefill or a
    /// preemption). The draft extends over `draft_from..tokens.len() - 1`, whose inputs are
    /// (aux of target position i, tokens[i + 1]).
    pub draft_from: usize,
    /// The target's aux hidden states of positions `draft_from..tokens.len() - 1`, row after
    /// row, `Draft::aux_width` floats each.
    pub aux: &'a [f32],
    /// KV pages of the sequence, covering positions `0..tokens.len() - 1`. The draft's KV
    /// uses the same pages as the target's, in a store of its own; the nodes it drafts
    /// below the root keep their KV in scratch memory for the one `propose` call.
    pub block_table: &'a [u32],
}

/// A draft model: EAGLE-3 (`draft::Eagle3Draft`), or a test double.
pub trait Draft: Send {
    /// Floats per aux hidden row (3 x the target's hidden size for EAGLE-3).
    fn aux_width(&self) -> usize;
    /// Target layers whose input (the residual stream before layer j) is captured.
    fn aux_layers(&self) -> &[usize];
    /// Extend each row's draft KV, then propose its next tree under `cfg`.
    /// `embed` is the target's embedding, which EAGLE-3 drafts share.
    fn propose(
        &mut self,
        rows: &[DraftRow<'_>],
        cfg: &SpecConfig,
        embed: &crate::weights::Mat,
    ) -> Result<Vec<DraftTree>>;
    /// What /v1/engine/info says of the draft: its source, and whether its weights are random.
    fn describe(&self) -> DraftInfo;
    /// The EAGLE-3 draft this is, whose weights a GPU backend takes to run them itself; the
    /// test doubles, which only run where they are, give themselves back.
    fn into_eagle3(self: Box<Self>) -> std::result::Result<Box<draft::Eagle3Draft>, Box<dyn Draft>>;
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DraftInfo {
    /// "random:tiny-eagle3" or the checkpoint path.
    pub source: String,
    /// Random weights: acceptance measured with them means nothing.
    pub random_weights: bool,
    pub draft_vocab_size: usize,
    pub aux_layers: Vec<usize>,
}

/// Where the draft comes from.
#[derive(Clone)]
pub enum DraftSource {
    /// `random:<preset>-eagle3` or an EAGLE-3 checkpoint directory.
    Named(String),
    /// A draft built in code: the tests' drafts whose proposals are known to match.
    Built(std::sync::Arc<BuildDraft>),
}

/// Builds a draft for the target in the context.
pub type BuildDraft = dyn Fn(&DraftContext<'_>) -> Result<Box<dyn Draft>> + Send + Sync;

impl std::fmt::Debug for DraftSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DraftSource::Named(s) => write!(f, "{s:?}"),
            DraftSource::Built(_) => write!(f, "<built in code>"),
        }
    }
}

/// The draft `source` names, for the target in `ctx`.
pub fn build_draft(source: &DraftSource, ctx: &DraftContext<'_>) -> Result<Box<dyn Draft>> {
    match source {
        DraftSource::Built(f) => f(ctx),
        DraftSource::Named(name) => {
            Ok(Box::new(draft::load_draft(name, ctx.target, ctx.num_pages, ctx.block_size)?))
        }
    }
}

/// The target layers `draft` reads the input of (the layer count: the last layer's
/// output), checked against `target`: each a target layer, one hidden state per layer in
/// its aux width. Every backend asks this before it attaches a draft.
pub fn aux_layers_of(draft: &dyn Draft, target: &crate::config::ModelConfig) -> Result<Vec<usize>> {
    let (n, hidden) = (target.num_hidden_layers, target.hidden_size);
    let layers = draft.aux_layers().to_vec();
    if let Some(bad) = layers.iter().find(|&&l| l > n) {
        return Err(EngineError::BadRequest(format!(
            "the draft reads target layer {bad}, but the target has {n} layers"
        )));
    }
    if draft.aux_width() != layers.len() * hidden {
        return Err(EngineError::BadRequest(format!(
            "the draft reads {} floats of aux state per token; the target gives {} ({} layers x hidden {hidden})",
            draft.aux_width(),
            layers.len() * hidden,
            layers.len()
        )));
    }
    Ok(layers)
}

/// `draft.propose` over the backend's rows, each with the aux rows the backend gathered for
/// it (`DraftRow::aux`), and every tree checked before the engine verifies it.
pub fn propose_checked(
    draft: &mut dyn Draft,
    cfg: &SpecConfig,
    rows: &[crate::model::ProposeRow<'_>],
    auxes: &[Vec<f32>],
    embed: &crate::weights::Mat,
) -> Result<Vec<DraftTree>> {
    let drows: Vec<DraftRow<'_>> = rows
        .iter()
        .zip(auxes)
        .map(|(r, aux)| DraftRow {
            tokens: r.tokens,
            draft_from: r.draft_from,
            aux,
            block_table: r.block_table,
        })
        .collect();
    let trees = draft.propose(&drows, cfg, embed)?;
    for t in &trees {
        t.check()?;
    }
    Ok(trees)
}

/// What a draft is built against.
pub struct DraftContext<'a> {
    pub target: &'a crate::config::ModelConfig,
    pub weights: &'a crate::weights::ModelWeights,
    pub num_pages: usize,
    pub block_size: usize,
}

/// `--speculative-algorithm EAGLE3` and its draft and tree.
#[derive(Debug, Clone)]
pub struct SpeculativeArgs {
    pub draft: DraftSource,
    pub cfg: SpecConfig,
    /// `--speculative-synthetic-acceptance`: measure speed at this mean accepted length
    /// with recorded proposals (synthetic.rs); None: the draft's own proposals.
    pub synthetic_acceptance: Option<f64>,
}

/// What /v1/engine/info says of speculative decoding.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SpecInfo {
    /// "EAGLE3", as SGLang's flag names it.
    pub algorithm: &'static str,
    pub num_steps: usize,
    pub topk: usize,
    pub num_draft_tokens: usize,
    pub draft: DraftInfo,
    /// Where the draft's forward runs: "cuda" for an EAGLE-3 draft on the CUDA backend,
    /// "cpu" on the CPU backend and for the test doubles (`self_draft`).
    pub draft_device: &'static str,
    /// Set in the measurement-only mode (synthetic.rs): proposals come from recorded greedy
    /// continuations, made to reach this mean accepted length; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic_acceptance: Option<f64>,
}

impl SpecInfo {
    pub fn new(cfg: SpecConfig, draft: DraftInfo) -> Self {
        SpecInfo {
            algorithm: "EAGLE3",
            num_steps: cfg.num_steps,
            topk: cfg.topk,
            num_draft_tokens: cfg.num_draft_tokens,
            draft,
            draft_device: "cpu",
            synthetic_acceptance: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_studys_tree_fits_and_a_bigger_one_is_refused_with_its_capacity() {
        // The seed's SGLang flags: 4 steps, top 4, 16 draft tokens (capacity 1 + 4 + 3 * 16).
        assert_eq!(SpecConfig::tree_capacity(4, 4), 53);
        assert!(SpecConfig::new(4, 4, 16).is_ok());
        // A chain of 3 steps holds the root and 3 tokens.
        assert!(SpecConfig::new(3, 1, 4).is_ok());
        let e = SpecConfig::new(3, 1, 5).unwrap_err().to_string();
        assert!(e.contains("--speculative-num-draft-tokens 5") && e.contains("(4,"), "{e}");
        let e = SpecConfig::new(0, 1, 2).unwrap_err().to_string();
        assert!(e.contains("--speculative-num-steps"), "{e}");
        let e = SpecConfig::new(2, 0, 2).unwrap_err().to_string();
        assert!(e.contains("--speculative-eagle-topk"), "{e}");
        let e = SpecConfig::new(2, 2, 1).unwrap_err().to_string();
        assert!(e.contains("--speculative-num-draft-tokens"), "{e}");
    }

    #[test]
    fn a_tree_knows_its_depths_and_refuses_a_parent_after_its_child() {
        let t = DraftTree { tokens: vec![5, 6, 7, 8], parents: vec![0, 0, 1, 3] };
        t.check().unwrap();
        assert_eq!(t.chunk_depths(), vec![0, 1, 1, 2, 3]);
        assert_eq!(DraftTree::chain(vec![1, 2, 3]).chunk_depths(), vec![0, 1, 2, 3]);
        let bad = DraftTree { tokens: vec![5, 6], parents: vec![0, 2] };
        assert!(bad.check().is_err());
    }
}
