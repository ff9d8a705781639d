//! Synthetic acceptance: a measurement-only mode for speed work without real draft
//! weights (`--speculative-synthetic-acceptance L`).
//!
//! A random draft is never right, so its acceptance says nothing about the speed a real
//! draft would bring. In this mode the real draft network still runs every round (its time
//! is real), but its proposals are replaced by tokens of the target's own greedy
//! continuation of the same prompt, recorded when that prompt was last served without
//! speculation, and corrupted so that the rounds accept L tokens on average (the bonus
//! included).
//!
//! The round's acceptance then follows the recording too: the verify runs in full (its
//! time is the measurement) but the tokens taken are the recorded path and the recorded
//! token after it (`Shaped::accepted`). The output is still the target's greedy output,
//! the one recorded. Why not the verify's argmax: random weights give near-tied logits, and
//! the verify's sums (16 rows, tree attention) and the recording's (a decode step) round
//! differently, so on the GPU the argmax parts from the recording every few dozen tokens;
//! after that the recorded proposals belong to another sequence and every later round
//! accepts nothing (Qwen3-8B on an H200, 2026-12-03: 1.31 tokens per round asked for 3.3).
//!
//! So a workload runs twice over the same prompts: the first time a prompt is seen its
//! request decodes plainly and its continuation is recorded (and that pass is the
//! speculation-off baseline); the second time it speculates at the chosen acceptance. Only
//! greedy requests take part; a sampled one never speculates here. /v1/engine/info says
//! "synthetic acceptance" wherever this is on.

use super::DraftTree;
use crate::error::{EngineError, Result};
use std::collections::HashMap;

/// Greedy continuations by prompt, from requests served without speculation.
#[derive(Debug, Default)]
pub struct Recordings {
    by_prompt: HashMap<Vec<u32>, Vec<u32>>,
}

impl Recordings {
    /// Keeps the first continuation recorded for a prompt (later ones are the same tokens,
    /// or shorter or longer runs of them).
    pub fn record(&mut self, prompt: &[u32], continuation: &[u32]) {
        let kept = self.by_prompt.entry(prompt.to_vec()).or_default();
        if continuation.len() > kept.len() {
            *kept = continuation.to_vec();
        }
    }

    pub fn get(&self, prompt: &[u32]) -> Option<&[u32]> {
        self.by_prompt.get(prompt).map(Vec::as_slice)
    }
}

/// The chosen mean accepted length and how far the rounds so far are from it.
#[derive(Debug)]
pub struct Synthetic {
    /// Tokens per round, the bonus included (1 = nothing drafted is taken).
    pub mean_accepted: f64,
    /// Drafted tokens owed to the mean: the rounds take floor or ceil of it so that their
    /// running mean stays within one token of the target at every round (no randomness:
    /// two runs take the same rounds).
    owed: f64,
    /// The target's vocabulary: corrupted tokens stay inside it.
    vocab: u32,
    /// `--speculative-num-steps`: the deepest a round may accept.
    num_steps: usize,
    pub recordings: Recordings,
}

impl Synthetic {
    /// `mean_accepted` in [1, num_steps + 1] (a chain of num_steps can give at most that).
    pub fn new(mean_accepted: f64, num_steps: usize, vocab: usize) -> Result<Self> {
        let most = (num_steps + 1) as f64;
        if !(mean_accepted.is_finite() && (1.0..=most).contains(&mean_accepted)) {
            return Err(EngineError::BadRequest(format!(
                "--speculative-synthetic-acceptance must be in 1..={most} (tokens per round, the bonus included, \
                 with --speculative-num-steps {num_steps}), got {mean_accepted}"
            )));
        }
        let vocab = u32::try_from(vocab).unwrap_or(u32::MAX);
        Ok(Synthetic { mean_accepted, owed: 0.0, vocab, num_steps, recordings: Recordings::default() })
    }

    /// The next round's tree for a row whose recorded continuation from here is `next`:
    /// `tree` rewritten to take `next_round`'s share of it; and what the round accepts,
    /// when the recording reaches past it.
    ///
    /// A tree shallower than the round's share is first re-parented into a chain of that
    /// depth with the other nodes under the root (`deepen`): a random draft's distributions
    /// are nearly flat, so its best candidates are the shallow ones (4 + 11 of the seed's
    /// 15 at depths 1 and 2), and no round could take 3 drafted tokens; every round took 2
    /// (3.0 per round asked for 3.3, H200, 2026-12-03). A trained draft at that acceptance
    /// is confident along its main line and proposes deep trees. The node count, and with
    /// it the verify's cost, stays the same.
    pub fn shape(&mut self, tree: &mut DraftTree, next: &[u32]) -> Option<Shaped> {
        let k = self.next_round(self.num_steps.min(tree.tokens.len()));
        if tree.chunk_depths().into_iter().max().unwrap_or(0) < k {
            deepen(tree, k);
        }
        let taken = rewrite(tree, next, k, self.vocab);
        let bonus = *next.get(taken)?;
        Some(Shaped { path: first_path(tree, taken), bonus })
    }

    /// Drafted tokens the next round accepts, at most `deepest` (the tree's longest path).
    pub fn next_round(&mut self, deepest: usize) -> usize {
        self.owed += self.mean_accepted - 1.0;
        // The epsilon: 0.3 ten times is 2.9999999999999996 in binary.
        let k = ((self.owed + 1e-9).floor().max(0.0) as usize).min(deepest);
        self.owed -= k as f64;
        k
    }
}

/// A shaped round's outcome: the chunk indices of the recorded path's nodes and the
/// recorded token after them (`spec::accept::Accepted`'s form).
#[derive(Debug, Clone, PartialEq)]
pub struct Shaped {
    pub path: Vec<usize>,
    pub bonus: u32,
}

/// The chunk indices (root 0) of `tree`'s first path, the first child at every level, for
/// `k` levels.
fn first_path(tree: &DraftTree, k: usize) -> Vec<usize> {
    let mut path = Vec::with_capacity(k);
    let mut parent = 0;
    while path.len() < k {
        let Some(i) = tree.parents.iter().position(|&p| p == parent) else { break };
        parent = i + 1;
        path.push(parent);
    }
    path
}

/// `tree`'s first `depth` nodes as a chain from the root (each the first child of the one
/// before), every other node a child of the root; parents still come first.
fn deepen(tree: &mut DraftTree, depth: usize) {
    for (i, p) in tree.parents.iter_mut().enumerate() {
        *p = if i < depth { i } else { 0 };
    }
}

/// Rewrites `tree` so that its first path (the first child at every level) carries the
/// recorded tokens `next` (next[0] follows the root) for `k` levels, and every other node,
/// the path's level k + 1 included, a token the target does not pick there: the recorded
/// token at its level plus one and its index (mod vocab), never the recorded one. Where the
/// recording ends, nothing more is taken. Returns how many levels carry recorded tokens.
pub fn rewrite(tree: &mut DraftTree, next: &[u32], k: usize, vocab: u32) -> usize {
    let depths = tree.chunk_depths();
    let mut on_path = vec![false; tree.tokens.len()];
    let (mut parent, mut taken) = (0usize, 0usize);
    while taken < k.min(next.len()) {
        let Some(i) = tree.parents.iter().position(|&p| p == parent) else { break };
        on_path[i] = true;
        parent = i + 1;
        taken += 1;
    }
    for (i, tok) in tree.tokens.iter_mut().enumerate() {
        let level = depths[i + 1];
        let recorded = next.get(level - 1).copied().unwrap_or(0);
        *tok = if on_path[i] { recorded } else { (recorded + 1 + i as u32) % vocab.max(2) };
        if !on_path[i] && *tok == recorded {
            *tok = (recorded + 1) % vocab.max(2);
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_keep_the_running_mean_within_a_token() {
        let mut s = Synthetic::new(3.3, 3, 1000).unwrap();
        let ks: Vec<usize> = (0..10).map(|_| s.next_round(3)).collect();
        let total: usize = ks.iter().sum();
        // 10 rounds at 2.3 drafted tokens each: 23.
        assert_eq!(total, 23, "{ks:?}");
        assert!(ks.iter().all(|&k| k == 2 || k == 3), "{ks:?}");
        // A shallower tree caps a round.
        assert!(Synthetic::new(4.0, 3, 1000).unwrap().next_round(1) <= 1);
        let mut one = Synthetic::new(1.0, 3, 1000).unwrap();
        assert!((0..5).all(|_| one.next_round(3) == 0));
    }

    #[test]
    fn acceptance_out_of_range_is_refused_naming_the_flag() {
        for bad in [0.5, 4.5, f64::NAN] {
            let e = Synthetic::new(bad, 3, 1000).unwrap_err().to_string();
            assert!(e.contains("--speculative-synthetic-acceptance"), "{e}");
        }
    }

    #[test]
    fn the_first_path_carries_the_recording_and_no_other_node_does() {
        // Root's children 1 and 2 (indices 0, 1), 1's children 3 and 4 (indices 2, 3),
        // 3's child 5 (index 4).
        let mut t = DraftTree { tokens: vec![9; 5], parents: vec![0, 0, 1, 1, 3] };
        let next = [100, 200, 300];
        assert_eq!(rewrite(&mut t, &next, 2, 1000), 2);
        assert_eq!(t.tokens[0], 100, "level 1 on the path");
        assert_eq!(t.tokens[2], 200, "level 2 on the path");
        assert_ne!(t.tokens[1], 100, "a sibling at level 1");
        assert_ne!(t.tokens[3], 200, "a sibling at level 2");
        assert_ne!(t.tokens[4], 300, "level 3 is past k");
        // k beyond the recording: only what it holds.
        let mut t = DraftTree::chain(vec![1, 2, 3]);
        assert_eq!(rewrite(&mut t, &[7], 3, 1000), 1);
        assert_eq!(t.tokens[0], 7);
        assert_ne!(t.tokens[1], 0);
    }

    /// A tree too shallow for the round's share is deepened (same node count), so 3.3
    /// asked of a seed-sized tree whose nodes sit at depths 1 and 2 gives 3.3.
    #[test]
    fn a_shallow_tree_is_deepened_to_the_rounds_share() {
        let mut s = Synthetic::new(3.3, 4, 1000).unwrap();
        let next: Vec<u32> = (100..110).collect();
        let mut emitted = 0;
        for _ in 0..10 {
            // Four children of the root, then two under each of the first two.
            let mut t = DraftTree { tokens: vec![9; 8], parents: vec![0, 0, 0, 0, 1, 1, 2, 2] };
            let got = s.shape(&mut t, &next).unwrap();
            t.check().unwrap();
            assert_eq!(t.tokens.len(), 8, "the node count stays");
            assert_eq!(got.bonus, next[got.path.len()]);
            emitted += got.path.len() + 1;
        }
        assert_eq!(emitted, 33, "3.3 tokens per round over 10 rounds");
    }

    /// A shaped round accepts the recorded path (chunk indices) and the recorded token
    /// after it; with nothing recorded after the path, the verify decides.
    #[test]
    fn a_shaped_round_accepts_the_recorded_path_and_its_next_token() {
        let mut s = Synthetic::new(3.0, 3, 1000).unwrap();
        let mut t = DraftTree { tokens: vec![9; 5], parents: vec![0, 0, 1, 1, 3] };
        let got = s.shape(&mut t, &[100, 200, 300]).unwrap();
        assert_eq!(got, Shaped { path: vec![1, 3], bonus: 300 });
        assert_eq!((t.tokens[0], t.tokens[2]), (100, 200));
        let mut t = DraftTree { tokens: vec![9; 5], parents: vec![0, 0, 1, 1, 3] };
        assert_eq!(s.shape(&mut t, &[100, 200]), None, "the recording ends at the path");
    }
}
