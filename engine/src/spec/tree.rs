//! Which drafted candidates the target verifies: SGLang's expansion and selection, as pure
//! functions of the draft's per-node log-probabilities.
//!
//! SGLang (`select_top_k_tokens` and `organize_draft_results` in python/sglang/srt/
//! speculative/eagle_utils.py):
//! - level 1: the topk tokens of the root's distribution;
//! - level k > 1: each of the topk nodes kept at level k-1 (the frontier) proposes its topk
//!   children, scored parent score x p(child); the topk best of those topk^2 form the next
//!   frontier;
//! - every candidate of every level competes: the best `num_draft_tokens - 1` by score are
//!   verified, in candidate order (level by level; within a level, by the frontier rank of
//!   the parent, then the child's rank).
//!
//! Scores here are sums of log-probabilities, which order candidates as SGLang's products of
//! probabilities do without underflowing. A child never outscores its parent (log p <= 0)
//! and ties go to the earlier candidate, so every selected node's parent is selected too.

use super::DraftTree;

/// One drafted token.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Target token id.
    pub token: u32,
    /// Cumulative log-probability from the root.
    pub score: f32,
    /// The parent candidate's index; None for a child of the root.
    pub parent: Option<usize>,
}

/// The `k` largest entries of `logprobs` as (index, value), largest first; ties go to the
/// lower index. NaN counts as -inf so that a broken distribution cannot outrank its parent.
pub fn top_k(logprobs: &[f32], k: usize) -> Vec<(usize, f32)> {
    let clean = |v: f32| if v.is_nan() { f32::NEG_INFINITY } else { v.min(0.0) };
    let mut best: Vec<(usize, f32)> = Vec::with_capacity(k + 1);
    for (i, &v) in logprobs.iter().enumerate() {
        let v = clean(v);
        if best.len() == k && best.last().is_none_or(|&(_, w)| v <= w) {
            continue;
        }
        // Insert after every entry at least as large: equal values keep index order.
        let at = best.partition_point(|&(_, w)| w >= v);
        best.insert(at, (i, v));
        best.truncate(k);
    }
    best
}

/// A node's best `k` tokens as (target id, log-probability), best first: what the search
/// reads of a distribution, so that a draft on the GPU hands over k pairs per node instead
/// of the draft vocabulary.
pub fn top_tokens(logprobs: &[f32], k: usize, to_target: impl Fn(usize) -> u32) -> Vec<(u32, f32)> {
    top_k(logprobs, k).into_iter().map(|(d, lp)| (to_target(d), lp)).collect()
}

/// The candidates of one draft, grown level by level.
#[derive(Debug, Clone)]
pub struct TreeSearch {
    topk: usize,
    candidates: Vec<Candidate>,
    /// Candidates to expand next, best first.
    frontier: Vec<usize>,
}

impl TreeSearch {
    /// Level 1 from the root's best tokens (`top_tokens`; at most `topk` are read).
    pub fn new(topk: usize, root: &[(u32, f32)]) -> Self {
        let candidates: Vec<Candidate> =
            root.iter().take(topk).map(|&(token, lp)| Candidate { token, score: lp, parent: None }).collect();
        let frontier = (0..candidates.len()).collect();
        TreeSearch { topk, candidates, frontier }
    }

    /// The nodes the next level expands, best first: the draft runs each of them (its
    /// token, its parent's hidden state) and hands `expand` their distributions in this order.
    pub fn frontier(&self) -> &[usize] {
        &self.frontier
    }

    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// One more level: `tops[j]` is frontier node j's best tokens (`top_tokens`, best
    /// first; at most `topk` are read).
    pub fn expand(&mut self, tops: &[&[(u32, f32)]]) {
        assert_eq!(tops.len(), self.frontier.len(), "one token list per frontier node");
        let first = self.candidates.len();
        for (&parent, top) in self.frontier.iter().zip(tops) {
            let base = self.candidates[parent].score;
            for &(token, lp) in top.iter().take(self.topk) {
                self.candidates.push(Candidate { token, score: base + lp, parent: Some(parent) });
            }
        }
        let level: Vec<f32> = self.candidates[first..].iter().map(|c| c.score).collect();
        self.frontier = top_k(&level, self.topk).into_iter().map(|(i, _)| first + i).collect();
    }

    /// The tree to verify: the best `num_draft_tokens - 1` candidates (the root is the
    /// other one), parents first.
    pub fn select(&self, num_draft_tokens: usize) -> DraftTree {
        let want = num_draft_tokens.saturating_sub(1).min(self.candidates.len());
        let mut order: Vec<usize> = (0..self.candidates.len()).collect();
        // Best score first; equal scores in candidate order, so a parent precedes its
        // children (it is both earlier and at least as good).
        order.sort_by(|&a, &b| self.candidates[b].score.total_cmp(&self.candidates[a].score).then(a.cmp(&b)));
        order.truncate(want);
        order.sort_unstable();
        let mut chunk_index = vec![usize::MAX; self.candidates.len()];
        let mut tree = DraftTree::default();
        for (i, &c) in order.iter().enumerate() {
            chunk_index[c] = i + 1;
            let parent = match self.candidates[c].parent {
                None => 0,
                Some(p) => chunk_index[p],
            };
            assert!(
                parent != usize::MAX,
                "candidate {c} selected without its parent {:?}",
                self.candidates[c].parent
            );
            tree.tokens.push(self.candidates[c].token);
            tree.parents.push(parent);
        }
        tree
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Log-probabilities over `n` draft ids with the given probabilities at the given ids and
    /// the rest spread evenly.
    fn dist(n: usize, peaks: &[(usize, f32)]) -> Vec<f32> {
        let rest = 1.0 - peaks.iter().map(|p| p.1).sum::<f32>();
        let others = (n - peaks.len()) as f32;
        let mut v = vec![(rest / others).ln(); n];
        for &(i, p) in peaks {
            v[i] = p.ln();
        }
        v
    }

    fn id(d: usize) -> u32 {
        d as u32 + 1000
    }

    /// The search over full distributions, as the CPU draft runs it.
    fn search(topk: usize, root: &[f32]) -> TreeSearch {
        TreeSearch::new(topk, &top_tokens(root, topk, id))
    }

    fn grow(s: &mut TreeSearch, dists: &[&[f32]]) {
        let tops: Vec<Vec<(u32, f32)>> = dists.iter().map(|d| top_tokens(d, s.topk, id)).collect();
        let refs: Vec<&[(u32, f32)]> = tops.iter().map(Vec::as_slice).collect();
        s.expand(&refs);
    }

    #[test]
    fn top_k_orders_by_value_then_index_and_treats_nan_as_worst() {
        assert_eq!(top_k(&[-1.0, -0.5, -1.0, -3.0], 3), vec![(1, -0.5), (0, -1.0), (2, -1.0)]);
        assert_eq!(top_k(&[f32::NAN, -2.0], 2), vec![(1, -2.0), (0, f32::NEG_INFINITY)]);
        assert_eq!(top_k(&[-1.0], 4), vec![(0, -1.0)]);
    }

    #[test]
    fn topk_one_is_a_chain_of_argmaxes() {
        let mut s = search(1, &dist(8, &[(3, 0.9)]));
        for peak in [5, 1] {
            let d = dist(8, &[(peak, 0.6)]);
            grow(&mut s, &[&d]);
        }
        let t = s.select(4);
        assert_eq!(t, DraftTree::chain(vec![1003, 1005, 1001]));
        // Fewer tokens verified than drafted: the shallowest, since scores only fall.
        assert_eq!(s.select(3), DraftTree::chain(vec![1003, 1005]));
    }

    /// The seed study's tree: 4 steps, top 4, 16 draft tokens (15 below the root).
    #[test]
    fn seed_tree_keeps_the_best_paths_parents_first() {
        let n = 64;
        // Root: four candidates 0.4, 0.3, 0.2, 0.05 at draft ids 10..14.
        let root = dist(n, &[(10, 0.4), (11, 0.3), (12, 0.2), (13, 0.05)]);
        let mut s = search(4, &root);
        assert_eq!(s.frontier(), &[0, 1, 2, 3]);
        // Every node's children: one confident child (0.7) then 0.1, 0.05, 0.04; the
        // child's draft id says which parent it came from.
        let child = |p: usize| dist(n, &[(20 + p, 0.7), (40, 0.1), (41, 0.05), (42, 0.04)]);
        for _ in 1..4 {
            let f = s.frontier().to_vec();
            let ds: Vec<Vec<f32>> = f.iter().map(|&c| child(c % 16)).collect();
            let refs: Vec<&[f32]> = ds.iter().map(|d| d.as_slice()).collect();
            grow(&mut s, &refs);
        }
        assert_eq!(s.candidates().len(), 4 + 3 * 16);
        let t = s.select(16);
        t.check().unwrap();
        // By hand, as products of probabilities: the 15 best are the four level-1 nodes
        // (.4 .3 .2 .05), a0 .28, a1 .04, b0 .21, c0 .14, d0 .035, the confident chains
        // a00 .196, b00 .147, c00 .098 and a000 .137, b000 .103, c000 .069; the next best,
        // b1, has .03. Confident children of candidate c carry draft id 20 + c % 16.
        assert_eq!(
            t.tokens,
            vec![1010, 1011, 1012, 1013, 1020, 1040, 1021, 1022, 1023, 1024, 1028, 1032, 1024, 1028, 1032]
        );
        assert_eq!(t.parents, vec![0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 7, 8, 10, 11, 12]);
        let depths = t.chunk_depths();
        assert!(depths.windows(2).all(|w| w[0] <= w[1]), "{depths:?}");
    }

    /// A certain child (log p = 0) ties its parent: the parent still comes first and is
    /// chosen before the child; equal siblings go in draft-id order.
    #[test]
    fn ties_keep_parents_first_and_order_siblings_by_id() {
        let n = 16;
        let root = dist(n, &[(2, 0.5), (7, 0.5)]);
        let mut s = search(2, &root);
        assert_eq!(s.candidates()[0].token, 1002);
        let certain: Vec<f32> = (0..n).map(|i| if i == 9 { 0.0 } else { f32::NEG_INFINITY }).collect();
        grow(&mut s, &[&certain, &certain]);
        // Level 2: candidates 2, 3 (children of node 0), 4, 5 (of node 1); the certain
        // ones (2 and 4) tie the level-1 nodes.
        assert_eq!(s.frontier(), &[2, 4]);
        let t = s.select(4);
        assert_eq!(t.tokens, vec![1002, 1007, 1009]);
        assert_eq!(t.parents, vec![0, 0, 1]);
        let t = s.select(5);
        assert_eq!(t.tokens, vec![1002, 1007, 1009, 1009]);
        assert_eq!(t.parents, vec![0, 0, 1, 2]);
    }
}
