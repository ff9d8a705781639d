//! FP8 against bf16 on the CPU backend: the golden configs (tests/golden) and one config with
//! real multi-block shapes, each run with its bf16 random weights and with the same weights
//! quantized at load (128x128 blocks, as `--quantization fp8`). Reports max |logit error|,
//! the relative error (RMS error / RMS logit), teacher-forced top-1 agreement over the golden
//! sequences, and greedy agreement over 32 generated tokens. Run with `--nocapture` to see
//! the numbers (engine/README.md, "FP8", quotes them).
//!
//! Why these bounds: e4m3 keeps 3 mantissa bits, so one weight moves by at most 1/16 of its
//! size (half an ulp) and by ~2.5 % RMS for values spread over the binades below 448. The
//! random models amplify that to ~9-11 % RMS on the logits; a control, the bf16 weights
//! times independent noise of the same 2.5 % RMS, moves them just as much (0.94-1.12x), so
//! this is the random model's sensitivity, not FP8 error of its own: we assert FP8 <= 1.5x
//! the control. (An inverted scale is off by 10^5; block-index bugs are invisible here,
//! since uniform random weights give every block nearly the same scale, and are caught by
//! fp8's unit tests with outlier and zero blocks.) Random models with a 151,936-token
//! vocabulary have near-tied top logits, so top-1 flips often (70-84 % agree) while staying
//! in bf16's top 5 (98-100 %), and free-running greedy paths diverge after a few tokens,
//! after which agreement means nothing: the greedy bound is on teacher-forced agreement
//! along bf16's greedy path (72-92 % measured, 60 % asserted); free-running common prefixes
//! are printed.
//!
//! Each config also runs as W8A8: the same FP8 weights with every layer projection's input
//! rounded through e4m3 per token and 128-column group (`CpuBackend::with_fp8_activations`),
//! as vLLM and SGLang run block-FP8 checkpoints. The engine does not (its GEMMs take bf16
//! x); this measures what switching would cost in accuracy: ~30 % more logit error than
//! W8A16, a few points less top-1 and teacher-forced agreement.

use engine::config::ModelConfig;
use engine::model::cpu::CpuBackend;
use engine::model::{Backend, SeqChunk};
use engine::quant_config::QuantConfig;
use engine::sampling::argmax;
use engine::weights::ModelWeights;
use serde::Deserialize;

#[derive(Deserialize)]
struct Goldens {
    models: Vec<GoldenModel>,
}

#[derive(Deserialize)]
struct GoldenModel {
    preset: String,
    seed: u64,
    sequences: Vec<Sequence>,
    greedy: Vec<Greedy>,
}

#[derive(Deserialize)]
struct Sequence {
    tokens: Vec<u32>,
}

#[derive(Deserialize)]
struct Greedy {
    prompt: Vec<u32>,
}

const GREEDY_TOKENS: usize = 32;

/// W8A8's relative logit error: at most this many times the weight-noise control, and
/// under this cap (measured 1.27-1.47x the control, 11.5-15.2 %; W8A16 0.94-1.12x).
const W8A8_BOUND: (f64, f64) = (2.0, 0.25);

fn weights(cfg: &ModelConfig, seed: u64, fp8: bool) -> (ModelConfig, ModelWeights) {
    let cfg = ModelConfig { quantization: fp8.then(QuantConfig::fp8), ..cfg.clone() };
    let w = ModelWeights::random(&cfg, seed).unwrap();
    assert_eq!(w.layers[0].down_proj.fp8.is_some(), fp8);
    (cfg, w)
}

/// RMS(b - a) / RMS(a) over every projection of every layer.
fn weight_rel_error(a: &ModelWeights, b: &ModelWeights) -> f64 {
    let (mut err, mut sq) = (0f64, 0f64);
    for (la, lb) in a.layers.iter().zip(&b.layers) {
        for ((_, ma), (_, mb)) in la.projections().into_iter().zip(lb.projections()) {
            for (&x, &y) in ma.data.iter().zip(&mb.data) {
                err += ((y - x) as f64).powi(2);
                sq += (x as f64).powi(2);
            }
        }
    }
    (err / sq).sqrt()
}

/// Multiply every projection weight by 1 + u * rel * sqrt(3), u uniform in [-1, 1): relative
/// RMS `rel`, like FP8's rounding but without its structure.
fn add_noise(w: &mut ModelWeights, rel: f64) {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let amp = (rel * 3f64.sqrt()) as f32;
    for l in &mut w.layers {
        for (_, m) in l.projections_mut() {
            for x in &mut m.data {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let u = (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
                *x *= 1.0 + amp * u;
            }
        }
    }
}

/// RMS(b - a) / RMS(a) of the logits over `sequences`, a's given (`Reference::logits`).
fn logit_rel_error(la: &[Vec<Vec<f32>>], b: &mut CpuBackend, sequences: &[Vec<u32>]) -> f64 {
    let (mut err, mut sq) = (0f64, 0f64);
    for (a, s) in la.iter().zip(sequences) {
        let lb = b.logits_all_positions(s).unwrap();
        for (&p, &q) in a.iter().flatten().zip(lb.iter().flatten()) {
            err += ((q - p) as f64).powi(2);
            sq += (p as f64).powi(2);
        }
    }
    (err / sq).sqrt()
}

fn top_k(row: &[f32], k: usize) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..row.len() as u32).collect();
    idx.sort_by(|&i, &j| row[j as usize].total_cmp(&row[i as usize]));
    idx.truncate(k);
    idx
}

/// Greedy decoding through the paged KV cache, as the engine runs it.
fn greedy(b: &mut CpuBackend, prompt: &[u32], n: usize) -> Vec<u32> {
    let table: Vec<u32> = (0..8).collect();
    let mut toks = prompt.to_vec();
    let mut start = 0;
    for _ in 0..n {
        let chunk =
            SeqChunk { tokens: &toks[start..], start_pos: start, block_table: &table, want_logits: true };
        let logits = b.forward(&[chunk]).unwrap();
        start = toks.len();
        toks.push(argmax(&logits[0]));
    }
    toks.split_off(prompt.len())
}

#[derive(Default, Debug)]
struct Report {
    max_abs: f32,
    max_logit: f32,
    sq_err: f64,
    sq_logit: f64,
    positions: usize,
    top1_same: usize,
    /// Positions where FP8's top-1 is among bf16's top 5.
    top1_in_top5: usize,
    greedy_prefix: Vec<usize>,
    /// Of the 32 tokens bf16 generates greedily, how many FP8 predicts too when fed the same
    /// path (teacher-forced: one early disagreement does not end the comparison).
    greedy_forced_same: usize,
    /// RMS(dequantized - bf16) / RMS(bf16) over all projection weights.
    weight_rel: f64,
    /// The logits' relative error of a control: bf16 weights times independent noise of the
    /// same relative RMS as FP8's. How sensitive the model itself is to that much noise.
    control_rel: f64,
}

impl Report {
    fn rel(&self) -> f64 {
        (self.sq_err / self.sq_logit).sqrt()
    }
    fn top1(&self) -> f64 {
        self.top1_same as f64 / self.positions as f64
    }
    fn greedy_mean(&self) -> f64 {
        self.greedy_prefix.iter().sum::<usize>() as f64 / (self.greedy_prefix.len() * GREEDY_TOKENS) as f64
    }
    fn top5(&self) -> f64 {
        self.top1_in_top5 as f64 / self.positions as f64
    }
    fn greedy_forced(&self) -> f64 {
        self.greedy_forced_same as f64 / (self.greedy_prefix.len() * GREEDY_TOKENS) as f64
    }
}

/// What every FP8 run of a config is compared with, computed once: the bf16 model's logits
/// over the sequences and its greedy paths from the prompts, FP8's weight error, and the
/// noise control's logit error.
struct Reference {
    logits: Vec<Vec<Vec<f32>>>,
    greedy: Vec<Vec<u32>>,
    weight_rel: f64,
    control_rel: f64,
}

fn reference((cfg, seed): (&ModelConfig, u64), sequences: &[Vec<u32>], prompts: &[Vec<u32>]) -> Reference {
    let ((ca, wa), (_, wb)) = (weights(cfg, seed, false), weights(cfg, seed, true));
    let weight_rel = weight_rel_error(&wa, &wb);
    let (cc, mut wc) = weights(cfg, seed, false);
    add_noise(&mut wc, weight_rel);
    assert!((weight_rel_error(&wa, &wc) / weight_rel - 1.0).abs() < 0.05);
    let mut a = CpuBackend::new(ca, wa, 64, 16);
    let logits: Vec<_> = sequences.iter().map(|s| a.logits_all_positions(s).unwrap()).collect();
    let mut control = CpuBackend::new(cc, wc, 64, 16);
    let control_rel = logit_rel_error(&logits, &mut control, sequences);
    let greedy = prompts.iter().map(|p| greedy(&mut a, p, GREEDY_TOKENS)).collect();
    Reference { logits, greedy, weight_rel, control_rel }
}

/// FP8 weights (W8A16, as the engine runs them) or FP8 weights and activations (`w8a8`:
/// every layer projection's input rounded through e4m3 per token and 128-group, as vLLM
/// and SGLang run block-FP8 checkpoints) against bf16 (`reference`).
fn compare(
    (cfg, seed): (&ModelConfig, u64),
    reference: &Reference,
    sequences: &[Vec<u32>],
    prompts: &[Vec<u32>],
    w8a8: bool,
) -> Report {
    let (cb, wb) = weights(cfg, seed, true);
    let b = CpuBackend::new(cb, wb, 64, 16);
    let mut b = if w8a8 { b.with_fp8_activations() } else { b };
    let mut r =
        Report { weight_rel: reference.weight_rel, control_rel: reference.control_rel, ..Default::default() };
    for (la, s) in reference.logits.iter().zip(sequences) {
        let lb = b.logits_all_positions(s).unwrap();
        for (x, y) in la.iter().zip(&lb) {
            for (&p, &q) in x.iter().zip(y) {
                r.max_abs = r.max_abs.max((p - q).abs());
                r.max_logit = r.max_logit.max(p.abs());
                r.sq_err += ((p - q) as f64).powi(2);
                r.sq_logit += (p as f64).powi(2);
            }
            r.positions += 1;
            r.top1_same += (argmax(x) == argmax(y)) as usize;
            r.top1_in_top5 += top_k(x, 5).contains(&argmax(y)) as usize;
        }
    }
    for (p, ga) in prompts.iter().zip(&reference.greedy) {
        let gb = greedy(&mut b, p, GREEDY_TOKENS);
        r.greedy_prefix.push(ga.iter().zip(&gb).take_while(|(x, y)| x == y).count());
        let path: Vec<u32> = p.iter().chain(ga).copied().collect();
        let lb = b.logits_all_positions(&path).unwrap();
        r.greedy_forced_same +=
            ga.iter().enumerate().filter(|&(i, &t)| argmax(&lb[p.len() - 1 + i]) == t).count();
    }
    r
}

fn print(name: &str, r: &Report) {
    eprintln!(
        "{name:<12} weights rel RMS {:.2} %; logits max|d| {:.3} (max |logit| {:.2}), rel RMS {:.2} % (noise control {:.2} %); \
         top-1 {:.1} % (in bf16 top-5 {:.1} %) of {}; greedy {GREEDY_TOKENS}: common prefixes {:?} \
         (mean {:.1} %), teacher-forced {:.1} %",
        r.weight_rel * 100.0,
        r.max_abs,
        r.max_logit,
        r.rel() * 100.0,
        r.control_rel * 100.0,
        r.top1() * 100.0,
        r.top5() * 100.0,
        r.positions,
        r.greedy_prefix,
        r.greedy_mean() * 100.0,
        r.greedy_forced() * 100.0
    );
}

/// `w8a8`: the activations' rounding adds about as much error again as the weights'.
fn check(name: &str, r: &Report, w8a8: bool) {
    // e4m3 rounding of weights spread over binades: ~2.5 % RMS (2.56 % measured).
    assert!((0.02..0.03).contains(&r.weight_rel), "{name}: weight error {:.4}", r.weight_rel);
    // The logits move as much as under plain noise of that size (measured 0.94-1.12x): FP8
    // adds no error of its own beyond its rounding. A scale bug would be >10x.
    let (factor, cap) = if w8a8 { W8A8_BOUND } else { (1.5, 0.15) };
    assert!(
        r.rel() < factor * r.control_rel && r.rel() < cap,
        "{name}: relative logit error {:.4} (control {:.4})",
        r.rel(),
        r.control_rel
    );
    // The largest of ~20 M logit errors sits ~5-6 RMS out: measured up to 0.19x the largest
    // logit.
    assert!(
        r.max_abs < 0.35 * r.max_logit,
        "{name}: max |dlogit| {} vs max |logit| {}",
        r.max_abs,
        r.max_logit
    );
    // Random models with Qwen3's 151,936-token vocabulary have near-tied top logits, so top-1
    // flips often under a few percent of noise; it stays within bf16's top 5 (W8A8, with
    // ~30 % more logit error: 93.6-99.3 % measured).
    let top5 = if w8a8 { 0.9 } else { 0.95 };
    assert!(r.top1() >= 0.6, "{name}: top-1 agreement {:.3}", r.top1());
    assert!(r.top5() >= top5, "{name}: top-1 in top-5 {:.3}", r.top5());
    assert!(r.greedy_forced() >= 0.6, "{name}: teacher-forced greedy agreement {:.3}", r.greedy_forced());
}

#[test]
fn fp8_vs_bf16_on_the_golden_configs() {
    let g: Goldens = serde_json::from_str(include_str!("golden/goldens.json")).unwrap();
    for m in &g.models {
        let cfg = engine::presets::preset(&m.preset).unwrap();
        let seqs: Vec<Vec<u32>> = m.sequences.iter().map(|s| s.tokens.clone()).collect();
        let prompts: Vec<Vec<u32>> = m.greedy.iter().map(|s| s.prompt.clone()).collect();
        both(&m.preset, (&cfg, m.seed), &seqs, &prompts);
    }
}

/// W8A16 and W8A8 reports against one reference, checked; W8A8 must add error of its own
/// (its rounding runs).
fn both(name: &str, model: (&ModelConfig, u64), seqs: &[Vec<u32>], prompts: &[Vec<u32>]) {
    let r = reference(model, seqs, prompts);
    let run = |w8a8| compare(model, &r, seqs, prompts, w8a8);
    let (w16, w8) = (run(false), run(true));
    print(name, &w16);
    print(&format!("{name} W8A8"), &w8);
    check(name, &w16, false);
    check(&format!("{name} W8A8"), &w8, true);
    assert!(
        w8.rel() > w16.rel(),
        "{name}: W8A8 logit error {:.4} not above W8A16's {:.4}",
        w8.rel(),
        w16.rel()
    );
}

/// The tiny presets (hidden 48-64) have one partial block per matrix; this shape has full
/// 128x128 blocks, several per matrix, and Qwen3's head_dim 128.
#[test]
fn fp8_vs_bf16_on_multi_block_shapes() {
    let cfg = ModelConfig {
        hidden_size: 512,
        intermediate_size: 1536,
        num_hidden_layers: 4,
        num_attention_heads: 8,
        num_key_value_heads: 4,
        head_dim: 128,
        ..engine::presets::preset("tiny-untied").unwrap()
    };
    let seqs: Vec<Vec<u32>> =
        (0..3).map(|s| (0..48).map(|i| (i * 7919 + s * 104_729 + 11) % 151_000).collect()).collect();
    let prompts: Vec<Vec<u32>> =
        (0..4).map(|s| (0..8).map(|i| (i * 31_337 + s * 977 + 5) % 151_000).collect()).collect();
    both("multi-block", (&cfg, 9), &seqs, &prompts);
}
