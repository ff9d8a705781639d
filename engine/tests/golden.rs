//! The CPU backend against Hugging Face transformers (goldens.json, made by
//! tests/golden/make_goldens.py on the GPU machine: transformers 5.17 / torch 2.11, float32,
//! CPU, eager attention) for three tiny random Qwen3 configs written by `make-model`.
//!
//! Tolerance: both sides compute in f32 from identical bf16-rounded weights; they differ only
//! in summation order (our GEMV/SGEMM vs. MKL/oneDNN) and transcendental implementations
//! (exp, sin/cos, rsqrt). f32 rounding is 6e-8 relative; over dot products of length <= 128
//! and 2-3 layers with norms in between that grows to ~1e-5 on logits of magnitude 1-10.
//! We allow 1e-4 absolute + 1e-5 relative: 10x headroom over the expected error, yet ~1000x
//! below what a real bug (a wrong RoPE pair, a missing norm weight, an off-by-one position)
//! does to these logits. Greedy tokens must match exactly.

use engine::model::cpu::CpuBackend;
use engine::model::{Backend, SeqChunk};
use engine::sampling::argmax;
use engine::weights::ModelWeights;
use serde::Deserialize;

#[derive(Deserialize)]
struct Goldens {
    generator: String,
    probe_ids: Vec<u32>,
    models: Vec<Model>,
}

#[derive(Deserialize)]
struct Model {
    preset: String,
    seed: u64,
    sequences: Vec<Sequence>,
    greedy: Vec<Greedy>,
}

#[derive(Deserialize)]
struct Sequence {
    tokens: Vec<u32>,
    top_ids: Vec<Vec<u32>>,
    top_logits: Vec<Vec<f32>>,
    probe_logits: Vec<Vec<f32>>,
    logsumexp: Vec<f64>,
}

#[derive(Deserialize)]
struct Greedy {
    prompt: Vec<u32>,
    tokens: Vec<u32>,
}

fn goldens() -> Goldens {
    let text = include_str!("golden/goldens.json");
    serde_json::from_str(text).expect("goldens.json parses")
}

fn backend(m: &Model) -> CpuBackend {
    let cfg = engine::presets::preset(&m.preset).expect("golden preset exists");
    // random:<preset> in memory equals make-model's checkpoint (tested in checkpoint_writer).
    let w = ModelWeights::random(&cfg, m.seed).unwrap();
    CpuBackend::new(cfg, w, 64, 16)
}

fn close(ours: f32, theirs: f32) -> bool {
    (ours - theirs).abs() <= 1e-4 + 1e-5 * theirs.abs()
}

#[test]
fn logits_match_transformers() {
    let g = goldens();
    assert!(g.generator.contains("transformers"));
    assert_eq!(g.models.len(), 3);
    let mut worst = 0f32;
    for m in &g.models {
        let mut b = backend(m);
        for s in &m.sequences {
            let ours = b.logits_all_positions(&s.tokens).unwrap();
            for (pos, row) in ours.iter().enumerate() {
                let pairs = s.top_ids[pos]
                    .iter()
                    .zip(&s.top_logits[pos])
                    .chain(g.probe_ids.iter().zip(&s.probe_logits[pos]));
                for (&id, &theirs) in pairs {
                    let o = row[id as usize];
                    worst = worst.max((o - theirs).abs());
                    assert!(close(o, theirs), "{} pos {pos} id {id}: ours {o}, HF {theirs}", m.preset);
                }
                assert_eq!(argmax(row), s.top_ids[pos][0], "{} pos {pos}: argmax", m.preset);
                let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
                let lse = max + row.iter().map(|&x| (x as f64 - max).exp()).sum::<f64>().ln();
                assert!(
                    (lse - s.logsumexp[pos]).abs() < 1e-4,
                    "{} pos {pos}: logsumexp {lse} vs {}",
                    m.preset,
                    s.logsumexp[pos]
                );
            }
        }
    }
    eprintln!("max |ours - HF| over checked logits: {worst:e}");
}

/// Greedy decoding through the serving path: one prefill chunk, then one-token decode steps
/// over the paged KV cache.
#[test]
fn greedy_tokens_match_transformers_exactly() {
    for m in &goldens().models {
        let mut b = backend(m);
        for gr in &m.greedy {
            let table: Vec<u32> = (0..8).rev().collect();
            let mut toks = gr.prompt.clone();
            let mut start = 0;
            for _ in 0..gr.tokens.len() {
                let chunk = SeqChunk {
                    tokens: &toks[start..],
                    start_pos: start,
                    block_table: &table,
                    want_logits: true,
                };
                let logits = b.forward(&[chunk]).unwrap();
                start = toks.len();
                toks.push(argmax(&logits[0]));
            }
            assert_eq!(
                &toks[gr.prompt.len()..],
                gr.tokens.as_slice(),
                "{} prompt {:?}",
                m.preset,
                &gr.prompt[..3]
            );
        }
    }
}
