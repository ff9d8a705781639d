//! Grouped-query attention of one span's queries over the paged KV cache.

use super::kv_cache::KvCache;
use super::ops::dot;
use rayon::prelude::*;

pub struct AttnShape {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
}

/// `q` is [n, heads * head_dim]; query t sees the KV at the cache slots `visible[t]`,
/// which are already written. Returns [n, heads * head_dim].
pub fn attend(q: &[f32], visible: &[Vec<usize>], cache: &KvCache, layer: usize, s: &AttnShape) -> Vec<f32> {
    let qd = s.heads * s.head_dim;
    let group = s.heads / s.kv_heads;
    let scale = 1.0 / (s.head_dim as f32).sqrt();
    let mut out = vec![0f32; visible.len() * qd];
    // One task per (token, head): independent and equal-sized enough for rayon.
    out.par_chunks_mut(s.head_dim).enumerate().for_each(|(idx, o)| {
        let (t, h) = (idx / s.heads, idx % s.heads);
        let kvh = h / group;
        let qv = &q[t * qd + h * s.head_dim..][..s.head_dim];
        let mut scores: Vec<f32> = visible[t]
            .iter()
            .map(|&slot| {
                let (k, _) = cache.read(layer, slot);
                dot(qv, &k[kvh * s.head_dim..][..s.head_dim]) * scale
            })
            .collect();
        let max = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0f32;
        for x in scores.iter_mut() {
            *x = (*x - max).exp();
            sum += *x;
        }
        for (&slot, w) in visible[t].iter().zip(&scores) {
            let (_, v) = cache.read(layer, slot);
            let w = w / sum;
            for (oi, vi) in o.iter_mut().zip(&v[kvh * s.head_dim..][..s.head_dim]) {
                *oi += w * vi;
            }
        }
    });
    out
}
