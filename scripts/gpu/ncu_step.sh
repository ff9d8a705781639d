#!/usr/bin/env bash
# Per-kernel GPU time of one prefill and one decode step (batch $1, quantization $2) under
# Nsight Compute, summed by kernel name: where a step's time goes inside the kernels (the
# step time minus this sum is launch gaps and host work). Run on the device machine after
# scripts/gpu/package.sh; writes $OUT/ncu_<q>_<b>.csv and prints the summary.
# Does not run today: on 2026-12-07 (H100, driver 580) Nsight Compute ended
# the engine in LaunchFailed at skinny_gemm_fp8_bulk_persistent_xs_norm during start-up, with
# and without PDL (engine/PERF-LOG.md step 82). Until that is understood, kernels/lab's
# step_chain (its "without ..." rows, 1-64 rows) is the per-kind breakdown of a step.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} LATLAB_KERNEL_CACHE=/tmp/kc RUST_LOG=warn
B=${1:-1} Q=${2:-none} OUT=${OUT:-/tmp/out}
csv="$OUT/ncu_${Q}_${B}.csv"
# Boost clocks and warm caches, as the engine runs (ncu's defaults lock base clocks and
# flush caches before every kernel: 2026-11-30's table was taken that way, ~20 % slower).
timeout 300 /usr/local/cuda/bin/ncu --csv --metrics gpu__time_duration.sum --print-units base \
  --clock-control none --cache-control none \
  .gpu/t/latlab-engine bench --model random:qwen3-8b --max-model-len 1024 --device cuda \
  --tokenizer .gpu/tok --prompt-len 232 --gen-len 3 --rounds 1 --batch "$B" --quantization "$Q" \
  > "$csv" 2> "$OUT/ncu_${Q}_${B}.err"
echo "ncu rc=$?"
python3 - "$csv" <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
# ncu's CSV shares stdout with the program's output: the table starts at its header.
h = next(i for i, r in enumerate(rows) if "Metric Value" in r)
head, rows = rows[h], [r for r in rows[h + 1 :] if len(r) == len(rows[h])]
name = next(head.index(c) for c in ("Kernel Name", "Function Name", "Name") if c in head)
val = head.index("Metric Value")
ks = [(r[name].split("(")[0], float(r[val].replace(",", "")) / 1e3) for r in rows]  # ns -> us
ends = [i for i, (n, _) in enumerate(ks) if n.startswith("argmax_final")]
def show(title, part):
    agg = collections.OrderedDict()
    for n, us in part:
        c, t = agg.get(n, (0, 0.0)); agg[n] = (c + 1, t + us)
    print(f"{title}: {len(part)} kernels, {sum(u for _, u in part):.0f} us in kernels")
    for n, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f"  {n[:60]:60s} x{c:4d} {t:8.1f} us ({t / c:.2f} each)")
if len(ends) >= 2:
    show("prefill", ks[: ends[0] + 1])
    show("last decode step", ks[ends[-2] + 1 : ends[-1] + 1])
else:
    print("argmax_final not found", len(ks))
PY
