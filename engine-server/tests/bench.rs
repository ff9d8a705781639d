//! `latlab-engine bench` on the CPU with `random:tiny`: the batch is prefilled in one step,
//! so the decode window holds only decode steps, and the report counts them right.

use std::process::Command;

#[test]
fn bench_prefills_the_batch_together_and_counts_decode_steps() {
    // 3 x 300 prompt tokens: more than the serving default's 512-token step budget.
    let out = Command::new(env!("CARGO_BIN_EXE_latlab-engine"))
        .args(["bench", "--model", "random:tiny", "--device", "cpu"])
        .args([
            "--batch",
            "3",
            "--prompt-len",
            "300",
            "--gen-len",
            "5",
            "--rounds",
            "1",
        ])
        .env(
            "LATLAB_ASSETS_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache"),
        )
        .output()
        .expect("run latlab-engine bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("max_batched_tokens: 900"),
        "the step budget should hold every prompt: {stdout}"
    );
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
