//! The committed seed data file is exactly what the importer makes of the seed document,
//! and the importer reads every published number of it exactly.
//!
//! Regenerate after changing the importer: `LATLAB_REGENERATE_SEED=1 cargo test -p bench-import --test seed_data`.

use bench_import::seed_doc;
use bench_types::MetricKind;
use bench_types::result_block::serving_result;
use std::path::PathBuf;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/seed/qwen3-8b-h100-latency.txt")
}

fn data_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/seed/qwen3-8b-h100-gpustack.json")
}

fn read_doc() -> Option<String> {
    match std::fs::read_to_string(doc_path()) {
        Ok(s) => Some(s),
        Err(e) => {
            println!(
                "SKIPPED: the seed document {} is not here ({e}); CI has shared/ beside the clone",
                doc_path().display()
            );
            None
        }
    }
}

#[test]
fn committed_seed_file_is_what_the_importer_makes_of_the_document() {
    let Some(doc) = read_doc() else { return };
    let study = seed_doc::parse(&doc).unwrap();
    let fresh = seed_doc::to_json(&study);
    if std::env::var_os("LATLAB_REGENERATE_SEED").is_some() {
        std::fs::write(data_path(), &fresh).unwrap();
    }
    let committed =
        std::fs::read_to_string(data_path()).expect("data/seed/qwen3-8b-h100-gpustack.json is committed");
    assert!(
        committed == fresh,
        "data/seed/qwen3-8b-h100-gpustack.json differs from the importer's output; regenerate it (see this file's header)"
    );
}

/// Every block of the document, printed back from the imported summary, is the block as
/// published, character for character: every number is read exactly.
#[test]
fn every_published_block_round_trips_exactly() {
    let Some(doc) = read_doc() else { return };
    let study = seed_doc::parse(&doc).unwrap();
    let lines: Vec<&str> = doc.lines().collect();
    let starts: Vec<usize> =
        (0..lines.len()).filter(|&i| bench_import::text_block::is_block_start(lines[i])).collect();
    assert_eq!(study.runs.len(), starts.len());
    assert_eq!(
        study.runs.len(),
        25,
        "3 engines, CUDA graph, FP8, 2 attention backends, 9 speculative variants, torch.compile, 2 sweeps of 4"
    );
    for (run, &start) in study.runs.iter().zip(&starts) {
        let published: String =
            lines[start..start + 24].iter().map(|l| format!("{}\n", l.trim_end())).collect();
        let printed = serving_result(&run.summary, &[MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl]);
        assert_eq!(printed, published, "run {:?}", run.spec.label);
    }
}

#[test]
fn runs_carry_engine_command_concurrency_and_the_ladder() {
    let Some(doc) = read_doc() else { return };
    let study = seed_doc::parse(&doc).unwrap();
    let t = |i: usize| match &study.runs[i].spec.target {
        bench_types::Target::Imported(t) => t.clone(),
        _ => panic!("not imported"),
    };
    assert_eq!(t(0).engine, "vLLM");
    assert_eq!(t(0).command.as_deref(), Some("vllm serve Qwen/Qwen3-8B"));
    assert_eq!(t(0).engine_version.as_deref(), Some("v0.11.0"));
    assert_eq!(t(0).hardware.as_deref(), Some("1x NVIDIA H100 SXM GPU"));
    assert_eq!(t(1).engine, "SGLang");
    assert_eq!(t(2).engine, "TensorRT-LLM");
    assert_eq!(study.runs[4].spec.model, "Qwen/Qwen3-8B-FP8");
    // The flashinfer variant ran with flashinfer, not with the section's triton command.
    assert!(t(6).command.unwrap().ends_with("--attention-backend flashinfer"));
    let sweep: Vec<Vec<u32>> = study.runs[17..].iter().map(|r| r.spec.load.max_concurrency.clone()).collect();
    assert_eq!(sweep, [[1], [2], [4], [8], [1], [2], [4], [8]]);
    assert_eq!(study.runs[21].summary.ttft.mean_ms, 34.70);
    let gains: Vec<Option<&str>> = study.ladder.iter().map(|s| s.published_gain.as_deref()).collect();
    assert_eq!(gains, [Some("+4.3%"), Some("+25.8%"), Some("+66.2%"), None, None, None]);
    // Steps carry English names (charts draw them; no CJK font needed) and the original.
    let names: Vec<&str> = study.ladder.iter().map(|s| s.item.as_str()).collect();
    assert_eq!(
        names,
        [
            "Engine choice",
            "Quantization",
            "Speculative decoding",
            "CUDA graph max batch size",
            "Attention backend",
            "torch.compile"
        ]
    );
    assert!(study.ladder.iter().all(|s| s.item.is_ascii()));
    assert_eq!(study.ladder[1].original, "量子化");
    let kept: Vec<Option<usize>> = study.ladder.iter().map(|s| s.run).collect();
    assert_eq!(kept, [Some(1), Some(4), Some(7), None, None, None]);
    assert!(
        t(7).command.unwrap().contains(
            "--speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16"
        )
    );
}

/// The study's optimization table is reproducible from the imported numbers: its gains
/// compare mean request latency estimated as mean TTFT + mean TPOT x (mean output tokens
/// minus 1), rounded to 0.01 s, and its speculative-decoding gain is measured against the
/// final sweep's BS=4 run (what the comparison page's ladder note says).
#[test]
fn the_published_ladder_gains_follow_from_the_imported_numbers() {
    let Some(doc) = read_doc() else { return };
    let study = seed_doc::parse(&doc).unwrap();
    let latency_s = |i: usize| {
        let s = &study.runs[i].summary;
        let out = s.total_output_tokens as f64 / s.completed as f64;
        ((s.ttft.mean_ms + s.tpot.mean_ms * (out - 1.0)) / 10.0).round() / 100.0
    };
    let gain = |from: usize, to: usize| format!("{:+.1}%", (latency_s(from) / latency_s(to) - 1.0) * 100.0);
    assert_eq!(
        study.runs[23].spec.label,
        "SGLang FP8 EAGLE3 draft=Tengyunw steps=4 topk=4 draft-tokens=16 optimized BS=4"
    );
    let published: Vec<&str> = study.ladder.iter().filter_map(|s| s.published_gain.as_deref()).collect();
    assert_eq!(published, [gain(0, 1), gain(1, 4), gain(4, 23)]);
}
