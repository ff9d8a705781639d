//! `latlab-engine bench` on the CPU with `random:tiny`: the batch is prefilled in one step,
//! so the decode window holds only decode steps, and the report counts them right.

use std::process::{Command, Output};

/// `latlab-engine bench` on random:tiny on the CPU with `args` added.
fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_latlab-engine"))
        .args(["bench", "--model", "random:tiny", "--device", "cpu"])
        .args(args)
        .env("LATLAB_ASSETS_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache"))
        .output()
        .expect("run latlab-engine bench")
}

/// A run's stdout, which must have succeeded.
fn succeeded(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "bench failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn bench_prefills_the_batch_together_and_counts_decode_steps() {
    // 3 x 300 prompt tokens: more than the serving default's 512-token step budget.
    let out = bench(&["--batch", "3", "--prompt-len", "300", "--gen-len", "5", "--rounds", "1"]);
    let stdout = succeeded(&out);
    assert!(stdout.contains("max_batched_tokens: 900"), "the step budget should hold every prompt: {stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("round 0:"))
        .unwrap_or_else(|| panic!("no round line: {stdout}"));
    // 3 sequences x (5 - 1) tokens after the first.
    assert!(line.contains("decode 12 tokens in"), "{line}");
    let ms: f64 = line
        .rsplit('(')
        .next()
        .and_then(|s| s.strip_suffix(" ms/step)"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no ms/step in {line}"));
    assert!(ms > 0.0 && ms.is_finite(), "{line}");
}

/// Several batch sizes over one load: each round runs them in turn, each counted alone, and
/// the engine is sized for the largest. A batch size of 0 is refused by name.
#[test]
fn bench_runs_a_list_of_batch_sizes_in_one_load() {
    let run = |batch: &str| bench(&["--batch", batch, "--prompt-len", "300", "--gen-len", "4"]);
    let stdout = succeeded(&run("2,3"));
    assert!(stdout.contains("max_batch: 3,"), "sized for the largest: {stdout}");
    assert!(stdout.contains("max_batched_tokens: 900"), "{stdout}");
    let rounds: Vec<&str> = stdout.lines().filter(|l| l.starts_with("round ")).collect();
    assert_eq!(rounds.len(), 4, "2 rounds x 2 batch sizes: {stdout}");
    for (line, (round, batch, tokens)) in rounds.iter().zip([(0, 2, 6), (0, 3, 9), (1, 2, 6), (1, 3, 9)]) {
        assert!(
            line.starts_with(&format!("round {round}: batch {batch} "))
                && line.contains(&format!("decode {tokens} tokens in")),
            "{line}"
        );
    }
    let bad = run("1,0");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && stderr.contains("--batch"), "{stderr}");
}

/// With a draft, each batch gets a second line: the verify's and the draft's calls and
/// mean times, and the mean accepted length. The test draft (`random:tiny-eagle3` is a
/// random draft: its proposals are rarely taken) accepts about one token per row-step,
/// the bonus; every call serves all rows of a step, so there are about as many verify
/// calls as decode steps.
#[test]
fn bench_with_a_draft_reports_what_speculation_costs() {
    let out = Command::new(env!("CARGO_BIN_EXE_latlab-engine"))
        .args([
            "bench",
            "--model",
            "random:tiny-eagle3",
            "--device",
            "cpu",
            "--speculative-algorithm",
            "EAGLE3",
        ])
        .args(["--batch", "2", "--prompt-len", "20", "--gen-len", "12", "--rounds", "1"])
        .env("LATLAB_ASSETS_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache"))
        .output()
        .expect("run latlab-engine bench");
    let stdout = succeeded(&out);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("round 0: batch 2 spec: "))
        .unwrap_or_else(|| panic!("no spec line: {stdout}"));
    let num = |after: &str, until: char| -> f64 {
        let rest =
            &line[line.find(after).unwrap_or_else(|| panic!("no {after:?} in {line}")) + after.len()..];
        rest.split(until).next().unwrap().trim().parse().unwrap_or_else(|_| panic!("{after:?} in {line}"))
    };
    let verify_calls = num("spec: ", ' ');
    assert!((1.0..=11.0).contains(&verify_calls), "at most one verify per decode step: {line}");
    assert!(num("verify calls, ", ' ') > 0.0 && num("draft calls, ", ' ') > 0.0, "{line}");
    let accepted = num("mean accepted length ", '\n');
    assert!((1.0..=4.0).contains(&accepted), "{line}");
}
