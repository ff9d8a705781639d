#!/usr/bin/env bash
# Where the decode gate|up GEMM's warps stall, instruction by instruction: Nsight Compute's
# source counters (SASS-level warp-state samples) for one launch each, FP8 and bf16, at batch
# $1 (default 1). Run on the device machine after scripts/gpu/package.sh (~2 minutes);
# writes $OUT/src_<q>.ncu-rep and $OUT/src_<q>.csv (the source page: per instruction, its
# samples, stall reasons and executions) and prints the ten instructions with most samples.
# Read on 2026-12-02: 29 % of the FP8 kernel's samples waited for the weights to land, 16 %
# sat in the ring's per-stage index division (engine/PERF-LOG.md step 55).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} LATLAB_KERNEL_CACHE=/tmp/kc RUST_LOG=warn
B=${1:-1} OUT=${OUT:-/tmp/out} NCU=/usr/local/cuda/bin/ncu
for q in fp8 none; do
  kind=$([ $q = fp8 ] && echo fp8 || echo bf16)
  # Prefill runs cuBLAS, so every gate|up skinny launch is a decode step's (36 a step);
  # skipping 36 leaves the first decode step out.
  timeout 240 $NCU --clock-control none --cache-control none \
    --kernel-name "regex:skinny_gemm_${kind}_swiglu" --launch-skip 36 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no \
    -o "$OUT/src_$q" -f \
    .gpu/t/latlab-engine bench --model random:qwen3-8b --max-model-len 1024 --device cuda \
    --tokenizer .gpu/tok --prompt-len 232 --gen-len 4 --rounds 1 --batch "$B" --quantization $q \
    > "$OUT/src_$q.log" 2>&1
  echo "ncu $q batch $B rc=$?"
  $NCU -i "$OUT/src_$q.ncu-rep" --page source --csv --print-source sass > "$OUT/src_$q.csv"
  python3 - "$OUT/src_$q.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr, data = rows[1], rows[2:]
ia = hdr.index("Warp Stall Sampling (All Samples)")
tot = sum(float(r[ia] or 0) for r in data) or 1
for r in sorted(data, key=lambda r: -float(r[ia] or 0))[:10]:
    print(f"  {float(r[ia]) / tot * 100:5.1f} %  {r[1][:80]}")
PY
done
