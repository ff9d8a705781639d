//! The real data: the packaged (cut-off) ShareGPT file and the Qwen3 tokenizer that
//! `scripts/fetch-assets.sh` fetched. Expected numbers come from an independent Python
//! reference of vLLM's sampler (json entry-by-entry, `random.seed(s); random.shuffle`,
//! HF `tokenizers` counts, `is_valid_sequence`), run on the same files.

use bench::dataset::{sample, sharegpt_reader::read_sharegpt};
use bench::tokenizer::TokenCounter;
use bench_types::Dataset;
use std::path::Path;

const ASSETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache");

fn sharegpt_path() -> String {
    format!("{ASSETS}/sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json")
}

#[test]
fn cut_off_file_keeps_every_whole_entry_and_picks_like_vllm() {
    let file = read_sharegpt(Path::new(&sharegpt_path()), &bench::CancellationToken::new()).unwrap();
    assert_eq!((file.entries, file.pairs.len(), file.truncated), (17_671, 17_400, true));

    let tok = TokenCounter::load(Path::new(&format!("{ASSETS}/qwen3/tokenizer.json"))).unwrap();
    let ds = Dataset::Sharegpt { path: Some(sharegpt_path()), output_len: None };
    // (seed, total input, total output, first three (input, output)) from the Python reference.
    let cases = [
        (0u64, 18_753u64, 19_238u64, [(15, 318), (211, 195), (82, 343)]),
        (1, 21_388, 24_482, [(280, 45), (24, 254), (40, 473)]),
    ];
    for (seed, want_in, want_out, first) in cases {
        let s = sample(&ds, 100, seed, &tok, &bench::CancellationToken::new()).unwrap();
        assert_eq!(s.requests.len(), 100);
        let tin: u64 = s.requests.iter().map(|r| u64::from(r.input_tokens)).sum();
        let tout: u64 = s.requests.iter().map(|r| u64::from(r.output_len)).sum();
        assert_eq!((tin, tout), (want_in, want_out), "seed {seed}");
        let got: Vec<(u32, u32)> = s.requests[..3].iter().map(|r| (r.input_tokens, r.output_len)).collect();
        assert_eq!(got, first, "seed {seed}");
        assert!(
            s.notes[0].contains("17671 complete entries") && s.notes[0].contains("cut off"),
            "{:?}",
            s.notes
        );
    }
}

#[test]
fn fixed_output_len_overrides_and_skips_the_output_minimum() {
    let tok = TokenCounter::load(Path::new(&format!("{ASSETS}/qwen3/tokenizer.json"))).unwrap();
    let ds = Dataset::Sharegpt { path: Some(sharegpt_path()), output_len: Some(2) };
    let s = sample(&ds, 20, 0, &tok, &bench::CancellationToken::new()).unwrap();
    assert!(s.requests.iter().all(|r| r.output_len == 2 && r.input_tokens >= 4 && r.input_tokens <= 1024));
}
