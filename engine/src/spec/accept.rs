//! Which drafted tokens the target accepts, from the target's logits at every node of the
//! verified tree.
//!
//! Greedy rows walk from the root: the target's argmax at a node is the next token; if a
//! child of the node carries it, the walk moves there, else the argmax is the bonus token
//! and the walk ends. The tokens are exactly non-speculative greedy decoding's.
//!
//! Sampled rows use the rule for proposals that are fixed tokens rather than draws from
//! the draft (SGLang's "target only" tree sampling treats them so): at a node with target
//! distribution p, each child token t in turn is accepted with probability p(t) / M, where
//! M is the mass not yet rejected; a rejected t leaves the distribution (M -= p(t)); when
//! every child is rejected, the bonus is drawn from what is left. Token by token this is a
//! draw from p: t1 comes out with p(t1)/M, t2 with (1 - p(t1)/M) p(t2)/(M - p(t1)) =
//! p(t2)/M, and so on, so the target's distribution is kept exactly, whatever the draft.

use crate::model::Next;
use crate::sampling::{Distribution, Rng, SamplingParams, argmax};

/// The outcome for one row: the chunk indices of the accepted nodes (root excluded, in
/// path order) and the token after them. The row emits `tokens[path] ++ [bonus]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub path: Vec<usize>,
    pub bonus: u32,
}

/// `chunk_tokens` and `parents` describe the verify chunk (root at 0, `parents[0]`
/// unused); `next[i]` is the target's row at chunk index i: its logits, or for a greedy
/// row its greedy token (`Backend::verify_next`).
pub fn accept(
    chunk_tokens: &[u32],
    parents: &[usize],
    next: &[Next],
    params: &SamplingParams,
    rng: &mut Rng,
) -> Accepted {
    let children = |node: usize| (1..chunk_tokens.len()).filter(move |&c| parents[c] == node);
    let mut path = vec![];
    let mut node = 0;
    loop {
        let step = match &next[node] {
            // A backend answers with a token only for greedy rows.
            Next::Token(want) => children(node).find(|&c| chunk_tokens[c] == *want).ok_or(*want),
            Next::Logits(logits) if params.is_greedy() => {
                let want = argmax(logits);
                children(node).find(|&c| chunk_tokens[c] == want).ok_or(want)
            }
            Next::Logits(logits) => {
                let mut dist = Distribution::new(logits, params);
                let mut taken = None;
                for c in children(node) {
                    let t = chunk_tokens[c];
                    let w = dist.weight(t);
                    if w > 0.0 && rng.next_f64() * dist.mass < w {
                        taken = Some(c);
                        break;
                    }
                    dist.without(t);
                }
                taken.ok_or_else(|| dist.draw(rng))
            }
        };
        match step {
            Ok(c) => {
                path.push(c);
                node = c;
            }
            Err(bonus) => return Accepted { path, bonus },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Logits over a vocabulary of `n` with the given probabilities (log-weights).
    fn row(probs: &[f64]) -> Vec<f32> {
        probs.iter().map(|&p| if p > 0.0 { p.ln() as f32 } else { -1e30 }).collect()
    }

    fn rows(logits: &[Vec<f32>]) -> Vec<Next> {
        logits.iter().cloned().map(Next::Logits).collect()
    }

    fn greedy() -> SamplingParams {
        SamplingParams { temperature: 0.0, ..SamplingParams::default() }
    }

    #[test]
    fn greedy_follows_the_targets_argmax_down_the_tree_and_adds_the_bonus() {
        // Root's children: 1 (token 7) and 2 (token 8); 3 (token 9) under 2; 4 (token 5) under 3.
        let tokens = [0, 7, 8, 9, 5];
        let parents = [usize::MAX, 0, 0, 2, 3];
        let mut logits = vec![vec![0.0f32; 10]; 5];
        logits[0][8] = 1.0; // the target picks 8 after the root: node 2
        logits[2][9] = 1.0; // then 9: node 3
        logits[3][4] = 1.0; // then 4, which no child carries: the bonus
        let a = accept(&tokens, &parents, &rows(&logits), &greedy(), &mut Rng::new(0));
        assert_eq!(a, Accepted { path: vec![2, 3], bonus: 4 });
        // Rejection at the first token: only the bonus.
        logits[0] = vec![0.0; 10];
        logits[0][3] = 1.0;
        let a = accept(&tokens, &parents, &rows(&logits), &greedy(), &mut Rng::new(0));
        assert_eq!(a, Accepted { path: vec![], bonus: 3 });
        // The whole chain 2 -> 3 -> 4 and the bonus after the leaf.
        logits[0] = vec![0.0; 10];
        logits[0][8] = 1.0;
        logits[3] = vec![0.0; 10];
        logits[3][5] = 1.0;
        logits[4][6] = 1.0;
        let a = accept(&tokens, &parents, &rows(&logits), &greedy(), &mut Rng::new(0));
        assert_eq!(a, Accepted { path: vec![2, 3, 4], bonus: 6 });
    }

    /// Chi-square of `n` draws against p over `k` categories, at p = 0.001 with k - 1
    /// degrees of freedom (the table value is passed in).
    fn chi_square(counts: &[u64], p: &[f64], n: u64) -> f64 {
        counts
            .iter()
            .zip(p)
            .filter(|(_, q)| **q > 0.0)
            .map(|(&c, &q)| (c as f64 - n as f64 * q).powi(2) / (n as f64 * q))
            .sum()
    }

    #[test]
    fn sampled_acceptance_keeps_the_targets_distribution_whatever_the_proposals() {
        // Target p over 6 tokens; the root proposes 2 then 0 then 5 (one unlikely, one
        // likely, one impossible); 20k draws of the first emitted token must follow p.
        let p = [0.30, 0.05, 0.25, 0.15, 0.25, 0.0];
        let tokens = [9, 2, 0, 5];
        let parents = [usize::MAX, 0, 0, 0];
        // Children's rows: whatever; only the first emitted token is counted.
        let logits = vec![row(&p), row(&p), row(&p), row(&p)];
        let params = SamplingParams { temperature: 1.0, ..SamplingParams::default() };
        let mut rng = Rng::new(7);
        let n = 20_000u64;
        let mut counts = [0u64; 6];
        for _ in 0..n {
            let a = accept(&tokens, &parents, &rows(&logits), &params, &mut rng);
            let first = a.path.first().map_or(a.bonus, |&c| tokens[c]);
            counts[first as usize] += 1;
        }
        assert_eq!(counts[5], 0, "a token the target gives no weight never comes out");
        // 4 degrees of freedom (5 categories with weight): 18.47 at p = 0.001.
        let x2 = chi_square(&counts, &p, n);
        assert!(x2 < 18.47, "chi-square {x2:.2}, counts {counts:?}");
        // And the same statistic catches a biased rule: accepting the first proposal always.
        let mut biased = counts;
        biased[2] += biased[0] / 2;
        biased[0] -= biased[0] / 2;
        assert!(chi_square(&biased, &p, n) > 18.47);
    }

    #[test]
    fn sampled_paths_follow_the_targets_joint_distribution_two_levels_deep() {
        // Two tokens deep: the pair (first, second) must follow p1(first) p2(second | first).
        // The tree proposes token 1 under the root and token 0 under it.
        let p1 = [0.2, 0.5, 0.3];
        let p2_after_1 = [0.6, 0.1, 0.3];
        let tokens = [9, 1, 0];
        let parents = [usize::MAX, 0, 1];
        let logits = vec![row(&p1), row(&p2_after_1), row(&[1.0, 0.0, 0.0])];
        let params = SamplingParams { temperature: 1.0, ..SamplingParams::default() };
        let mut rng = Rng::new(11);
        let n = 20_000u64;
        let mut pairs = [0u64; 3];
        let mut firsts = [0u64; 3];
        for _ in 0..n {
            let a = accept(&tokens, &parents, &rows(&logits), &params, &mut rng);
            let emitted: Vec<u32> = a.path.iter().map(|&c| tokens[c]).chain([a.bonus]).collect();
            firsts[emitted[0] as usize] += 1;
            if emitted[0] == 1 {
                pairs[emitted[1] as usize] += 1;
            }
        }
        assert!(chi_square(&firsts, &p1, n) < 13.82, "{firsts:?}"); // 2 dof, p = 0.001
        let n1 = firsts[1];
        assert!(chi_square(&pairs, &p2_after_1, n1) < 13.82, "{pairs:?}");
    }
}
