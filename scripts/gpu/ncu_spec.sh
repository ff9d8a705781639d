#!/usr/bin/env bash
# Per-kernel GPU time of a speculating engine's rounds (random Qwen3-8B, the seed's tree,
# synthetic acceptance 3.3, quantization $1) under Nsight Compute: the kernels between the
# last greedy answers (argmax_final) summed by name and grid, so a verify's and a draft
# round's kernels show apart. Run on the device machine after scripts/gpu/package.sh.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} LATLAB_KERNEL_CACHE=/tmp/kc RUST_LOG=warn
Q=${1:-fp8} OUT=${OUT:-/tmp/out}
csv="$OUT/ncu_spec_${Q}.csv"
timeout 400 /usr/local/cuda/bin/ncu --csv --metrics gpu__time_duration.sum,launch__grid_size --print-units base \
  --clock-control none --cache-control none \
  .gpu/t/latlab-engine bench --model random:qwen3-8b --max-model-len 1024 --device cuda \
  --tokenizer .gpu/tok --prompt-len 232 --gen-len 8 --rounds 2 --batch 1 --quantization "$Q" \
  --speculative-algorithm EAGLE3 --speculative-draft-model-path random:qwen3-8b-eagle3 \
  --speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16 \
  --speculative-synthetic-acceptance 3.3 > "$csv" 2> "$OUT/ncu_spec_${Q}.err"
echo "ncu rc=$?"; tail -3 "$OUT/ncu_spec_${Q}.err"
python3 - "$csv" <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
h = next(i for i, r in enumerate(rows) if "Metric Value" in r)
head, rows = rows[h], [r for r in rows[h + 1 :] if len(r) == len(rows[h])]
name = next(head.index(c) for c in ("Kernel Name", "Function Name", "Name") if c in head)
met, val, kid = head.index("Metric Name"), head.index("Metric Value"), head.index("ID")
ks = collections.OrderedDict()
for r in rows:
    k = ks.setdefault(r[kid], {"name": r[name].split("(")[0]})
    try:
        k[r[met]] = float(r[val].replace(",", ""))
    except ValueError:  # "n/a" for a metric a launch lacks
        pass
ks = [(k["name"], int(k.get("launch__grid_size", 0)), k.get("gpu__time_duration.sum", 0) / 1e3) for k in ks.values()]
ends = [i for i, (n, _, _) in enumerate(ks) if n.startswith("argmax_final")]
def show(title, part):
    agg = collections.OrderedDict()
    for n, g, us in part:
        c, t = agg.get((n, g), (0, 0.0)); agg[(n, g)] = (c + 1, t + us)
    print(f"{title}: {len(part)} kernels, {sum(u for _, _, u in part):.0f} us in kernels")
    for (n, g), (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:16]:
        print(f"  {n[:44]:44s} grid {g:6d} x{c:4d} {t:8.1f} us ({t / c:.2f} each)")
for a, b in zip(ends[-4:-1], ends[-3:]):
    show(f"kernels {a + 1}..{b}", ks[a + 1 : b + 1])
show("after the last answer", ks[ends[-1] + 1 :])
PY
