#!/usr/bin/env bash
# The GPU machine's checks and benchmarks, as engine/PERF.md reports them; run on the
# device machine from the repository root after scripts/gpu/package.sh (carry .gpu).
# Logs go to $OUT; a short summary to stdout. Parts: SUITE="tests bench http wide hf timing
# chain trace stream wgmma copy latency sweep splits steptiming ahead tiled fp8prefill"
# (default: tests bench http; hf writes a 16 GB checkpoint and takes ~3 minutes). The lab
# parts (timing ... latency) run kernels/lab's programs: kernels/lab/README.md says what
# each measures.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} LATLAB_KERNEL_CACHE=/tmp/kc RUST_LOG=warn
# The tokenizer package.sh copied (tests that start an engine from a checkpoint read it).
export LATLAB_TOKENIZER_DIR=$PWD/.gpu/tok
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "binaries: $(cat .gpu/BUILD 2>/dev/null || echo 'unknown (no .gpu/BUILD)')"
T=.gpu/t
SUITE=${SUITE:-tests bench http}
has() { [[ " $SUITE " == *" $1 "* ]]; }
# The engine bench on random Qwen3-8B weights with a 232-token prompt; parts add the rest.
BENCH="$T/latlab-engine bench --model random:qwen3-8b --max-model-len 1024 --device cuda --tokenizer .gpu/tok --prompt-len 232"
if has tests; then
  for b in cuda_ops cuda_attention cuda_gemm cuda_norm_epilogue cuda_fp8_x_f16 cuda_backend cuda_paths cuda_wide_batches cuda_wide_gemm cuda_spec; do
    # cuda_spec builds 8B-wide random weights and runs two engines per draft: minutes.
    timeout 420 $T/$b --include-ignored --nocapture --test-threads=1 > "$OUT/$b.log" 2>&1
    echo "$b rc=$?"; grep -E "test result|panicked" "$OUT/$b.log" | head -5
  done
fi
if has timing; then
  timeout 150 $T/timing > "$OUT/timing.log" 2>&1; echo "timing rc=$?"
  grep -E "whole model|attention ctx|argmax|add_rmsnorm|swiglu" "$OUT/timing.log"
fi
if has chain; then
  # A whole decode step built from the real ops, minus one kind of kernel at a time.
  timeout 200 $T/step_chain > "$OUT/chain.log" 2>&1; echo "chain rc=$?"
  grep -E "^\|" "$OUT/chain.log"
fi
if has trace; then
  # The block timeline of a decode step (kernels/lab/src/bin/step_trace.rs): each kernel's
  # share of the critical path and when its blocks were placed.
  timeout 300 $T/step_trace > "$OUT/trace.log" 2>&1; echo "trace rc=$?"
  grep -E "^\||^###|^per layer|^slowest|^  block|panicked" "$OUT/trace.log"
fi
if has stream; then
  # The step's linears as launches against one kernel streaming weights across GEMMs
  # (experiment: kernels/lab/src/bin/stream_chain.rs).
  timeout 300 $T/stream_chain > "$OUT/stream.log" 2>&1; echo "stream rc=$?"
  grep -E "^\||panicked" "$OUT/stream.log"
fi
if has wgmma; then
  # FP8 decode GEMMs on the warpgroup MMA (QGMMA, e4m3 x e4m3) against the engine's kernel
  # (experiment: kernels/lab/src/bin/wgmma_probe.rs).
  timeout 300 $T/wgmma_probe > "$OUT/wgmma.log" 2>&1; echo "wgmma rc=$?"
  grep -E "^\||panicked" "$OUT/wgmma.log"
fi
if has copy; then
  # How fast the step's weights stream by each way of moving them, with no multiplying, and
  # what in the bf16 GEMMs' consumers costs (experiment: kernels/lab/src/bin/copy_ceiling.rs).
  timeout 300 $T/copy_ceiling > "$OUT/copy.log" 2>&1; echo "copy rc=$?"
  grep -E "^\||panicked" "$OUT/copy.log"
fi
if has sweep; then
  # Whole decode steps under tuning variants: SWEEP holds ;-separated sets of VAR=value
  # (an empty set is the defaults).
  IFS=';' read -ra SETS <<< "${SWEEP:-}"
  i=0
  for v in "${SETS[@]}"; do
    i=$((i + 1))
    env $v timeout 200 $T/step_chain > "$OUT/sweep$i.log" 2>&1
    echo "sweep $i [$v] rc=$?"; grep -E "whole step" "$OUT/sweep$i.log"
  done
fi
if has splits; then
  # Decode attention's block target (LATLAB_ATTENTION_BLOCKS, default 384): whole steps.
  for nb in ${SPLITS_BLOCKS:-256 384 528}; do
    LATLAB_ATTENTION_BLOCKS=$nb timeout 200 $T/step_chain > "$OUT/chain_blocks$nb.log" 2>&1
    echo "chain attention_blocks=$nb rc=$?"; grep -E "whole step|without attention" "$OUT/chain_blocks$nb.log"
  done
fi
if has bench; then
  # One load per weight type: each round benches batches 1 and 8 in turn (BENCH_BATCHES).
  B="$BENCH --gen-len 220 --rounds 2 --batch ${BENCH_BATCHES:-1,8}"
  for q in none fp8; do
    timeout 150 $B --quantization "$q" > "$OUT/bench_$q.log" 2>&1
    echo "bench $q rc=$?"; grep -E "round 1|rror" "$OUT/bench_$q.log"
  done
fi
if has wide; then
  # Decode past batch 8 (the graph ladder, engine/src/model/cuda/graph.rs): every captured
  # size from 1 to 64 and one padded size, per weight type, over one load.
  B="$BENCH --gen-len 220 --rounds 2 --batch ${WIDE_BATCHES:-1,2,4,8,12,16,24,32,40,48,64}"
  for q in none fp8; do
    timeout 280 $B --quantization "$q" > "$OUT/wide_$q.log" 2>&1
    echo "wide $q rc=$?"; grep -E "round 1|rror" "$OUT/wide_$q.log"
  done
fi
if has steptiming; then
  # Where the engine's decode step goes (LATLAB_STEP_TIMING=1, engine/src/model/cuda/
  # step_timing.rs): GPU replay, the whole call, the loop between calls, and the same graph
  # replayed back to back (burst_us); bf16 and FP8 at batch 1 (STEPTIMING_BATCH to change).
  for q in none fp8; do
    LATLAB_STEP_TIMING=1 RUST_LOG=info timeout 150 $BENCH --gen-len 220 --rounds 3 \
      --batch ${STEPTIMING_BATCH:-1} --quantization $q > "$OUT/steptiming_$q.log" 2>&1
    echo "step timing, $q rc=$?"; grep -E "round [12]" "$OUT/steptiming_$q.log"
    sed 's/\x1b\[[0-9;]*m//g' "$OUT/steptiming_$q.log" \
      | grep -oE "(gpu_us=[0-9.]+ call_us=[0-9.]+ between_calls_us=[0-9.]+ meta_us=[0-9.]+ launch_us=[0-9.]+|burst_us=[0-9.]+)" | tail -6
  done
fi
if has ahead; then
  # Run-ahead (LATLAB_RUN_AHEAD=0|1, engine/src/model/cuda/run_ahead.rs; its test runs in
  # "tests"): the bench (greedy, ignore_eos) at batch 1 and 8, bf16 and FP8, off and on;
  # AHEAD_CASES (e.g. "none_8 fp8_1") picks fewer.
  B="$BENCH --gen-len 220 --rounds 2"
  for qb in ${AHEAD_CASES:-none_1 none_8 fp8_1 fp8_8}; do
    set -- ${qb/_/ }
    for on in 0 1; do
      LATLAB_RUN_AHEAD=$on timeout 120 $B --batch "$2" --quantization "$1" > "$OUT/ahead_$1_$2_$on.log" 2>&1
      echo "run-ahead=$on $1 batch $2 rc=$?"; grep -E "round 1|rror" "$OUT/ahead_$1_$2_$on.log"
    done
  done
fi
if has tiled; then
  # bf16 decode with the GEMM weights tiled (LATLAB_TILED_WEIGHTS=0|1; engine/PERF-LOG.md,
  # 2026-12-02), interleaved, two runs; each run benches TILED_BATCHES (comma-separated)
  # over one load.
  B="$BENCH --gen-len 220 --rounds 2 --quantization none --batch ${TILED_BATCHES:-8,1}"
  for r in 1 2; do
    for tw in 0 1; do
      LATLAB_TILED_WEIGHTS=$tw timeout 150 $B > "$OUT/tiled_${tw}_$r.log" 2>&1
      echo "tiled=$tw bf16 (run $r) rc=$?"; grep -E "round 1|rror" "$OUT/tiled_${tw}_$r.log"
    done
  done
fi
if has latency; then
  # One dependent load at rest and beside an HBM stream (kernels/lab/src/bin/latency_load.rs).
  timeout 120 $T/latency_load > "$OUT/latency.log" 2>&1; echo "latency rc=$?"
  grep -E "stream alone|per dependent|PDL kernels|panicked" "$OUT/latency.log"
fi
if has fp8prefill; then
  # FP8 prefill on bf16 copies kept from load (the default) against dequantizing at every
  # prefill (--fp8-prefill-weights dequant): TTFT of one 232-token prompt.
  B="$BENCH --gen-len 8 --rounds 3 --quantization fp8 --batch 1"
  for p in dequant bf16-copy; do
    timeout 150 $B --fp8-prefill-weights $p > "$OUT/fp8prefill_$p.log" 2>&1
    echo "fp8 prefill weights $p rc=$?"; grep -E "round|rror" "$OUT/fp8prefill_$p.log"
  done
fi
if has http; then
  # HTTP_QUANTS picks the weights (default both), HTTP_CONCURRENCY the loads (default 1;
  # each runs max(10, 2 x concurrency) prompts), HTTP_SERVE_ARGS more server flags (e.g.
  # speculative decoding's), named in the logs by HTTP_TAG.
  for q in ${HTTP_QUANTS:-none fp8}; do
    $T/latlab-engine serve --model random:qwen3-8b --served-model-name qwen3-8b --device cuda \
      --port 8100 --max-model-len 1024 --tokenizer .gpu/tok --quantization $q ${HTTP_SERVE_ARGS:-} > "$OUT/serve_$q${HTTP_TAG:-}.log" 2>&1 &
    sp=$!
    for _ in $(seq 1 120); do curl -sf http://127.0.0.1:8100/health > /dev/null && break; sleep 1; done
    # Synthetic acceptance speculates only on prompts the server has seen (spec/synthetic.rs):
    # each load then runs twice over the same prompts, the first pass plain (recording) and
    # the second speculating.
    passes=1
    [[ "${HTTP_SERVE_ARGS:-}" == *synthetic-acceptance* ]] && passes=2
    for c in ${HTTP_CONCURRENCY:-1}; do
      n=$((2 * c > 10 ? 2 * c : 10))
      for pass in $(seq 1 $passes); do
        log="$OUT/http_${q}${HTTP_TAG:-}_c${c}_p$pass.log"
        timeout 100 $T/latlab-bench --base-url http://127.0.0.1:8100 --backend openai --endpoint /v1/completions \
          --model qwen3-8b --tokenizer .gpu/tok --dataset-name random --random-input-len 232 \
          --random-output-len 220 --num-prompts $n --max-concurrency $c --ignore-eos --warmup-requests 2 \
          --seed 7 --metric-percentiles 50,99 > "$log" 2>&1
        echo "http $q${HTTP_TAG:-} concurrency $c pass $pass/$passes rc=$?"
        grep -E "Mean TTFT|P99 TTFT|Mean TPOT|P99 ITL \(|Output token throughput" "$log"
        # Speculation's mean accepted length so far (the histogram's sum over its count).
        curl -s http://127.0.0.1:8100/metrics | awk '/^latlab_spec_accept_length_sum/ {s = $2}
          /^latlab_spec_accept_length_count/ {c = $2} END {if (c > 0) printf "  accepted per round so far: %.2f over %d row-steps\n", s / c, c}'
      done
    done
    # The server's own TTFT (engine submit -> first token event, after tokenization; the
    # warm-ups included): the client's TTFT less this is parsing, tokenization and the SSE
    # path on both sides.
    curl -s http://127.0.0.1:8100/metrics > "$OUT/metrics_$q${HTTP_TAG:-}.txt"
    awk '/^latlab_time_to_first_token_seconds_sum/ {s = $2} /^latlab_time_to_first_token_seconds_count/ {c = $2}
      END {if (c > 0) printf "server TTFT mean (ms): %.2f over %d requests\n", 1000 * s / c, c}' "$OUT/metrics_$q${HTTP_TAG:-}.txt"
    # What the server says produced these numbers: the backend, and with CUDA the kernels'
    # tuning, run-ahead policy and graphs (plan.cuda).
    curl -s http://127.0.0.1:8100/v1/engine/info > "$OUT/info_$q${HTTP_TAG:-}.json"
    python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); p=i["plan"]; print("engine info: backend", p["backend"], "gpu", p.get("gpu"), "max_batch", p.get("max_batch"), "decode_graphs", p.get("decode_graphs"), "plan.cuda", json.dumps(p.get("cuda")), "speculative", json.dumps(i.get("speculative")))' "$OUT/info_$q${HTTP_TAG:-}.json" || head -c 600 "$OUT/info_$q${HTTP_TAG:-}.json"
    kill $sp; wait $sp 2> /dev/null
  done
fi
if has hf; then
  timeout 200 $T/latlab-engine make-model --preset qwen3-8b --seed 0 --tokenizer .gpu/tok --out /tmp/q8 > "$OUT/make.log" 2>&1
  echo "make-model rc=$?"
  timeout 200 python3 .gpu/hf_qwen3_8b.py --ckpt /tmp/q8 --out "$OUT/hf8b.json" > "$OUT/hf.log" 2>&1
  echo "hf rc=$?"
  LATLAB_HF8B_CKPT=/tmp/q8 LATLAB_HF8B_JSON="$OUT/hf8b.json" timeout 200 $T/cuda_hf_8b --ignored --nocapture > "$OUT/hf_test.log" 2>&1
  echo "hf test rc=$?"; grep -E "last prompt|teacher|test result|panicked" "$OUT/hf_test.log"
fi
