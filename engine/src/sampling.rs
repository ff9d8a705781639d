//! Sampling parameters of one request and the sampler: greedy, or temperature with top-k
//! and top-p, from a per-request seeded generator (same seed, same tokens).

use crate::error::{EngineError, Result};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SamplingParams {
    /// 0 means greedy.
    pub temperature: f32,
    /// 1.0 disables.
    pub top_p: f32,
    /// 0 disables.
    pub top_k: usize,
    pub seed: Option<u64>,
    /// None: up to the model length.
    pub max_tokens: Option<usize>,
    pub stop_token_ids: Vec<u32>,
    /// Keep generating past EOS ids (benchmarks pin output length with it).
    pub ignore_eos: bool,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            seed: None,
            max_tokens: None,
            stop_token_ids: vec![],
            ignore_eos: false,
        }
    }
}

impl SamplingParams {
    /// The token is the argmax of the logits (no randomness involved).
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0 || self.top_k == 1
    }

    /// Bounds follow OpenAI's API; the error names the parameter.
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=2.0).contains(&self.temperature) {
            return Err(EngineError::BadRequest(format!(
                "`temperature` must be in [0, 2], got {}",
                self.temperature
            )));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(EngineError::BadRequest(format!("`top_p` must be in (0, 1], got {}", self.top_p)));
        }
        if self.max_tokens == Some(0) {
            return Err(EngineError::BadRequest("`max_tokens` must be at least 1".into()));
        }
        Ok(())
    }
}

/// splitmix64: tiny, fast, and stable across versions (reproducible seeded sampling).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub fn argmax(logits: &[f32]) -> u32 {
    // First maximum wins on ties, as torch.argmax does.
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// The distribution a sampled row draws from: temperature, then top-k, then top-p, as
/// candidates in descending probability. `probs` are softmax weights over the top-k
/// candidates, cut to the top-p prefix and not renormalised: `mass` is their sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub ids: Vec<u32>,
    pub probs: Vec<f64>,
    pub mass: f64,
}

impl Distribution {
    /// Of a sampled (not greedy) row's logits.
    pub fn new(logits: &[f32], p: &SamplingParams) -> Self {
        let t = p.temperature as f64;
        let mut cand: Vec<(u32, f64)> =
            logits.iter().enumerate().map(|(i, &l)| (i as u32, l as f64 / t)).collect();
        let by_logit_desc = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if p.top_k > 0 && p.top_k < cand.len() {
            cand.select_nth_unstable_by(p.top_k - 1, by_logit_desc);
            cand.truncate(p.top_k);
        }
        cand.sort_unstable_by(by_logit_desc);
        let max = cand[0].1;
        let mut probs: Vec<f64> = cand.iter().map(|c| (c.1 - max).exp()).collect();
        let sum: f64 = probs.iter().sum();
        probs.iter_mut().for_each(|x| *x /= sum);
        // top-p: the smallest prefix of the sorted distribution whose mass reaches top_p.
        let mut keep = probs.len();
        if p.top_p < 1.0 {
            let mut acc = 0.0;
            for (i, q) in probs.iter().enumerate() {
                acc += q;
                if acc >= p.top_p as f64 {
                    keep = i + 1;
                    break;
                }
            }
        }
        probs.truncate(keep);
        let ids = cand[..keep].iter().map(|c| c.0).collect();
        let mass = probs.iter().sum();
        Distribution { ids, probs, mass }
    }

    /// One draw: a uniform point in [0, mass) walked along the candidates.
    pub fn draw(&self, rng: &mut Rng) -> u32 {
        let mut r = rng.next_f64() * self.mass;
        for (id, q) in self.ids.iter().zip(&self.probs) {
            r -= q;
            if r < 0.0 {
                return *id;
            }
        }
        // Rounding left r at or above the last weight: the last candidate with any weight.
        let last = self.probs.iter().rposition(|&q| q > 0.0).unwrap_or(self.ids.len() - 1);
        self.ids[last]
    }

    /// The weight of `id` (0 outside the kept candidates).
    pub fn weight(&self, id: u32) -> f64 {
        self.ids.iter().position(|&i| i == id).map_or(0.0, |i| self.probs[i])
    }

    /// The distribution with `id` taken out (its weight moved off the mass): what is left
    /// to draw from once a proposal of `id` was rejected.
    pub fn without(&mut self, id: u32) {
        if let Some(i) = self.ids.iter().position(|&i| i == id) {
            self.mass -= self.probs[i];
            self.probs[i] = 0.0;
        }
    }
}

/// Pick the next token from one row of logits.
pub fn sample(logits: &[f32], p: &SamplingParams, rng: &mut Rng) -> u32 {
    if p.is_greedy() {
        return argmax(logits);
    }
    Distribution::new(logits, p).draw(rng)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(temperature: f32, top_p: f32, top_k: usize) -> SamplingParams {
        SamplingParams { temperature, top_p, top_k, ..Default::default() }
    }

    #[test]
    fn greedy_and_filters() {
        let logits = [0.0, 3.0, 2.9, -1.0, 2.0];
        let mut rng = Rng::new(1);
        assert_eq!(sample(&logits, &params(0.0, 1.0, 0), &mut rng), 1);
        assert_eq!(sample(&logits, &params(1.0, 1.0, 1), &mut rng), 1);
        // top-k 2 only ever yields ids 1 and 2; top-p tiny yields only the best.
        for _ in 0..200 {
            let t = sample(&logits, &params(1.0, 1.0, 2), &mut rng);
            assert!(t == 1 || t == 2);
            assert_eq!(sample(&logits, &params(1.0, 0.01, 0), &mut rng), 1);
        }
    }

    #[test]
    fn temperature_sampling_matches_softmax_frequencies() {
        let logits = [1.0f32, 0.0, 2.0];
        let z: f64 = logits.iter().map(|&l| (l as f64).exp()).sum();
        let mut counts = [0usize; 3];
        let mut rng = Rng::new(42);
        let n = 20_000;
        for _ in 0..n {
            counts[sample(&logits, &params(1.0, 1.0, 0), &mut rng) as usize] += 1;
        }
        for i in 0..3 {
            let expect = (logits[i] as f64).exp() / z;
            let got = counts[i] as f64 / n as f64;
            // 5 standard errors of a binomial proportion at n = 20k is <= 0.018.
            assert!((got - expect).abs() < 0.018, "id {i}: {got} vs {expect}");
        }
        // Same seed, same sequence.
        let (mut a, mut b) = (Rng::new(9), Rng::new(9));
        let sa: Vec<u32> = (0..50).map(|_| sample(&logits, &params(0.8, 0.9, 0), &mut a)).collect();
        let sb: Vec<u32> = (0..50).map(|_| sample(&logits, &params(0.8, 0.9, 0), &mut b)).collect();
        assert_eq!(sa, sb);
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(params(3.0, 1.0, 0).validate().unwrap_err().to_string().contains("temperature"));
        assert!(params(1.0, 0.0, 0).validate().unwrap_err().to_string().contains("top_p"));
    }
}
