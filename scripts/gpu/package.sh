#!/usr/bin/env bash
# Build what a run on the GPU machine needs and put it in .gpu/ (ignored by git) for the device
# tool's `carry`: the GPU test binaries, latlab-engine, latlab-bench, the Qwen3 tokenizer
# and the HF reference script. Under 64 MiB in all. Then, on the device:
#   bash scripts/gpu/suite.sh            (carry [".gpu"])
set -euo pipefail
cd "$(dirname "$0")/../.."
export SQLX_OFFLINE=true
rm -rf .gpu/t .gpu/tok && mkdir -p .gpu/t .gpu/tok
# A build elsewhere (CARGO_TARGET_DIR) serves too, e.g. beside a test run holding target/.
TD=${CARGO_TARGET_DIR:-target}
cargo build -p engine-server -p bench -p kernels-lab --bins
cp "$TD/debug/latlab-engine" "$TD/debug/latlab-bench" .gpu/t/
# The kernel lab (kernels/lab/README.md): one program per experiment.
for b in timing step_chain step_trace stream_chain wgmma_probe copy_ceiling latency_load l2_reuse mlp_fused wide_gemm wide_wgmma; do
  cp "$TD/debug/$b" ".gpu/t/$b"
done
# Test binaries have hashed names: ask cargo for them.
for pkg in engine; do
  cargo test -p "$pkg" --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
want = {"cuda_ops", "cuda_attention", "cuda_gemm", "cuda_norm_epilogue", "cuda_fp8_x_f16", "cuda_backend", "cuda_paths", "cuda_wide_batches", "cuda_wide_gemm", "cuda_spec", "cuda_hf_8b"}
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in want:
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do cp "$exe" ".gpu/t/$name"; done
done
# Debug symbols take a quarter of the binaries; without them everything fits the device
# tool's 64 MiB carry (it did not on 2026-11-30). Panic messages stay; backtraces lose names.
if command -v strip > /dev/null; then strip .gpu/t/*; fi
cp assets/cache/qwen3/tokenizer.json assets/cache/qwen3/tokenizer_config.json .gpu/tok/
cp scripts/gpu/hf_qwen3_8b.py scripts/gpu/suite.sh scripts/gpu/ncu_step.sh scripts/gpu/ncu_spec.sh scripts/gpu/ncu_gemm.sh scripts/gpu/ncu_skinny.sh scripts/gpu/ncu_source.sh .gpu/
# Which tree the binaries are: suite.sh prints it first, so a log says what it measured
# (on 2026-11-30 binaries were benched that had been packaged while a reverted experiment was still in the tree).
dirty=$(git status --porcelain --untracked-files=no | wc -l)
stamp="$(git rev-parse --short HEAD)"
if [ "$dirty" -gt 0 ]; then
  stamp="$stamp + uncommitted changes in $dirty files (diff $(git diff HEAD | sha256sum | cut -c1-12))"
fi
echo "$stamp, packaged $(date -u +%FT%TZ)" > .gpu/BUILD
cat .gpu/BUILD
du -sh .gpu
