#!/usr/bin/env bash
# Why the FP8 skinny GEMMs stream a batch-1 step at ~3.4 TB/s where the bf16 ones reach
# ~4.0 (engine/PERF-LOG.md, 2026-12-02 01:50, "What the bars need now"): Nsight Compute's speed of
# light, warp states, scheduler and memory sections for the engine's own decode gate|up
# GEMM (the largest: 100 MB FP8, 201 MB bf16), three launches each, at batch $1 (default 1)
# for FP8 and bf16. Run on the device machine after scripts/gpu/package.sh (~2 minutes);
# writes $OUT/ncu_skinny_<q>_<b>.txt and prints the lines to compare.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} LATLAB_KERNEL_CACHE=/tmp/kc RUST_LOG=warn
B=${1:-1} OUT=${OUT:-/tmp/out}
for q in fp8 none; do
  kind=$([ $q = fp8 ] && echo fp8 || echo bf16)
  f="$OUT/ncu_skinny_${q}_$B.txt"
  # Boost clocks and warm caches, as the engine runs (ncu_step.sh). Prefill runs cuBLAS, so
  # every gate|up skinny launch is a decode step's (36 a step); skipping 36 leaves the first
  # decode step out.
  timeout 300 /usr/local/cuda/bin/ncu --clock-control none --cache-control none \
    --kernel-name "regex:skinny_gemm_${kind}_swiglu" --launch-skip 36 --launch-count 3 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section SchedulerStats --section Occupancy --print-details all \
    .gpu/t/latlab-engine bench --model random:qwen3-8b --max-model-len 1024 --device cuda \
    --tokenizer .gpu/tok --prompt-len 232 --gen-len 4 --rounds 1 --batch "$B" --quantization $q \
    > "$f" 2>&1
  echo "ncu $q batch $B rc=$?"
  grep -iE "skinny_gemm|Duration|DRAM Throughput|Memory Throughput|Stall|Warp Cycles Per|Issued Ipc|Eligible Warps|Achieved Occupancy" \
    "$f" | head -60
done
