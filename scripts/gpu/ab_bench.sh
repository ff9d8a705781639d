#!/usr/bin/env bash
# Two latlab-engine binaries against each other on the GPU machine: the engine bench of
# engine/PERF.md (random Qwen3-8B, 232-token prompt, 220 tokens, batches 1 and 8 over one
# load, two rounds: the second is the one reported), bf16 and FP8, the binaries taking
# turns (A B A B ...) so that drift on the card hits both alike. Usage, from the
# repository root with the binaries and the tokenizer under .gpu (scripts/gpu/package.sh):
#   bash scripts/gpu/ab_bench.sh .gpu/t/latlab-engine-old .gpu/t/latlab-engine
# RUNS (default 2) sets the turns per weight type. Logs go to $OUT; the last lines printed
# are a table of ms/step (round 1) per weight type, batch and run.
set -uo pipefail
A=$1 B=$2 RUNS=${RUNS:-2}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} RUST_LOG=warn
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
ARGS="bench --model random:qwen3-8b --max-model-len 1024 --device cuda --tokenizer .gpu/tok \
  --prompt-len 232 --gen-len 220 --rounds 2 --batch 1,8"
for q in none fp8; do
  for r in $(seq 1 "$RUNS"); do
    for side in A B; do
      bin=$A; [ $side = B ] && bin=$B
      log="$OUT/ab_${q}_${side}_$r.log"
      # Each binary its own kernel cache: their sources differ.
      LATLAB_KERNEL_CACHE=/tmp/kc_$side timeout 180 "$bin" $ARGS --quantization "$q" > "$log" 2>&1
      echo "$q $side run $r rc=$?"; grep -E "^round 1|rror" "$log"
    done
  done
done
echo "| weights | batch | run | A ms/step | B ms/step | A TTFT s | B TTFT s |"
echo "|---|---|---|---|---|---|---|"
for q in none fp8; do
  for b in 1 8; do
    for r in $(seq 1 "$RUNS"); do
      get() { grep -E "^round 1: batch $b " "$OUT/ab_${q}_$1_$r.log" | sed -E "s/.*\(([0-9.]+) ms\/step\).*/\1/"; }
      ttft() { grep -E "^round 1: batch $b " "$OUT/ab_${q}_$1_$r.log" | sed -E "s/.*TTFT ([0-9.]+) s.*/\1/"; }
      echo "| $q | $b | $r | $(get A) | $(get B) | $(ttft A) | $(ttft B) |"
    done
  done
done
