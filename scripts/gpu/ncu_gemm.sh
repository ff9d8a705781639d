#!/usr/bin/env bash
# Why the bf16 GEMM's per-stage x loads cost what they do (engine/PERF-LOG.md,
# 2026-11-30 23:19): Nsight Compute's warp states, throughput and memory sections for the
# engine's persistent bf16 GEMM rebuilt in the lab's copy_ceiling (copy_ceiling_gemm), with
# every consumer part on
# (parts 7) and without the x loads (parts 6), three launches each (gate|up, down, qkv)
# from the timed chain. Run on the device machine after scripts/gpu/package.sh;
# writes $OUT/ncu_gemm_<parts>.txt and prints their key lines (time, stalls, throughput, hits).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} LATLAB_KERNEL_CACHE=/tmp/kc RUST_LOG=warn
OUT=${OUT:-/tmp/out}
for parts in 7 6; do
  # Boost clocks and warm caches, as the engine runs (see ncu_step.sh). The first launches
  # are the 4 correctness checks; 302 lands on a gate|up launch (4 + 2 x 144 + 10) of the
  # row-major chain, the next two on down and the next layer's qkv.
  LATLAB_CONSUMER_ONLY=$parts timeout 300 /usr/local/cuda/bin/ncu --clock-control none \
    --cache-control none --kernel-name copy_ceiling_gemm --launch-skip 302 --launch-count 3 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section SchedulerStats --print-details all \
    .gpu/t/copy_ceiling what_in_the_gemm_consumers_costs \
    > "$OUT/ncu_gemm_$parts.txt" 2>&1
  echo "ncu parts $parts rc=$?"
  grep -iE "Duration|Stall|Warp Cycles Per|Issued Ipc|Memory Throughput|L1/TEX Hit|L2 Hit" \
    "$OUT/ncu_gemm_$parts.txt" | head -40
done
