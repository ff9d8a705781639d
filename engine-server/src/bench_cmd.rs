//! `latlab-engine bench`: engine speed without HTTP. Submits `batch` identical-length greedy
//! requests with ignore_eos and reports prefill time and decode tokens/s.

use crate::cli::BenchArgs;
use engine::request::{GenerateRequest, TokenEvent};
use engine::sampling::SamplingParams;
use std::time::Instant;

pub fn run(a: BenchArgs, handle: engine::EngineHandle) -> anyhow::Result<()> {
    let vocab = 151_000u32.min(handle.shared().config.vocab_size as u32);
    for round in 0..a.rounds {
        let t0 = Instant::now();
        let rxs: Vec<_> = (0..a.batch)
            .map(|b| {
                let prompt = (0..a.prompt_len)
                    .map(|i| ((i * 7919 + b * 104_729 + 11) as u32) % vocab)
                    .collect();
                let params = SamplingParams {
                    temperature: 0.0,
                    max_tokens: Some(a.gen_len),
                    ignore_eos: true,
                    ..Default::default()
                };
                handle.submit(GenerateRequest { prompt, params })
            })
            .collect::<Result<_, _>>()?;
        let mut first = None;
        let mut tokens = 0usize;
        for mut rx in rxs {
            while let Some(ev) = rx.blocking_recv() {
                match ev {
                    TokenEvent::Token { finished, .. } => {
                        tokens += 1;
                        first.get_or_insert_with(Instant::now);
                        if finished.is_some() {
                            break;
                        }
                    }
                    TokenEvent::Error(e) => anyhow::bail!(e),
                }
            }
        }
        let end = Instant::now();
        let first = first.unwrap_or(end);
        let ttft = (first - t0).as_secs_f64();
        let decode = (end - first).as_secs_f64();
        let decode_tokens = tokens.saturating_sub(a.batch);
        println!(
            "round {round}: batch {} prompt {} gen {}: TTFT {:.3} s, decode {} tokens in {:.3} s = {:.2} tok/s ({:.2} ms/step)",
            a.batch,
            a.prompt_len,
            a.gen_len,
            ttft,
            decode_tokens,
            decode,
            decode_tokens as f64 / decode,
            decode * 1e3 / (a.gen_len.saturating_sub(1)).max(1) as f64
        );
    }
    Ok(())
}
