#!/usr/bin/env bash
# Two latlab-engine binaries against each other on the GPU machine: the engine bench of
# engine/PERF.md (random Qwen3-8B, 232-token prompt, 220 tokens, batches 1 and 8 over one
# load, two rounds: the last is the one reported), bf16 and FP8, the binaries taking
# turns (A B A B ...) so that drift on the card hits both alike. Usage, from the
# repository root with the binaries and the tokenizer under .gpu (scripts/gpu/package.sh):
#   bash scripts/gpu/ab_bench.sh .gpu/t/latlab-engine-old .gpu/t/latlab-engine
# RUNS (default 2) sets the turns per weight type. Batches past 8 (engine/PERF.md's "Batches
# past 8": one round of 120 tokens, FP8 only):
#   BATCHES=1,8,16,24,32,48,64 GEN=120 ROUNDS=1 QUANTS=fp8 bash scripts/gpu/ab_bench.sh A B
# Logs go to $OUT; the last lines printed are a table of ms/step (the last round) per
# weight type, batch and run, and each side's mean per weight type and batch.
set -uo pipefail
A=$1 B=$2 RUNS=${RUNS:-2} BATCHES=${BATCHES:-1,8} GEN=${GEN:-220} ROUNDS=${ROUNDS:-2}
QUANTS=${QUANTS:-none fp8}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} RUST_LOG=warn
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
ARGS="bench --model random:qwen3-8b --max-model-len 1024 --device cuda --tokenizer .gpu/tok \
  --prompt-len 232 --gen-len $GEN --rounds $ROUNDS --batch $BATCHES"
LAST=$((ROUNDS - 1))
for q in $QUANTS; do
  for r in $(seq 1 "$RUNS"); do
    for side in A B; do
      bin=$A; [ $side = B ] && bin=$B
      log="$OUT/ab_${q}_${side}_$r.log"
      # Each binary its own kernel cache: their sources differ.
      LATLAB_KERNEL_CACHE=/tmp/kc_$side timeout 240 "$bin" $ARGS --quantization "$q" > "$log" 2>&1
      echo "$q $side run $r rc=$?"; grep -E "^round $LAST|rror" "$log"
    done
  done
done
# A log's figures for batch $2 in the last round (q, b and r below pick the logs).
ms() { grep -E "^round $LAST: batch $2 " "$1" | sed -E "s/.*\(([0-9.]+) ms\/step\).*/\1/"; }
ttft() { grep -E "^round $LAST: batch $b " "$OUT/ab_${q}_$1_$r.log" | sed -E "s/.*TTFT ([0-9.]+) s.*/\1/"; }
mean() { local r; for r in $(seq 1 "$RUNS"); do ms "$OUT/ab_${q}_$1_$r.log" "$b"; done | awk '{s += $1; n++} END {if (n) printf "%.3f", s / n}'; }
echo "| weights | batch | run | A ms/step | B ms/step | A TTFT s | B TTFT s |"
echo "|---|---|---|---|---|---|---|"
for q in $QUANTS; do
  for b in ${BATCHES//,/ }; do
    for r in $(seq 1 "$RUNS"); do
      echo "| $q | $b | $r | $(ms "$OUT/ab_${q}_A_$r.log" "$b") | $(ms "$OUT/ab_${q}_B_$r.log" "$b") | $(ttft A) | $(ttft B) |"
    done
  done
done
echo "| weights | batch | A mean | B mean | B / A |"
echo "|---|---|---|---|---|"
for q in $QUANTS; do
  for b in ${BATCHES//,/ }; do
    a=$(mean A) bm=$(mean B)
    echo "| $q | $b | $a | $bm | $(awk -v a="$a" -v b="$bm" 'BEGIN {if (a > 0) printf "%+.1f %%", (b / a - 1) * 100}') |"
  done
done
