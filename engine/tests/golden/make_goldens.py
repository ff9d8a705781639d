#!/usr/bin/env python3
"""Golden logits and greedy tokens from Hugging Face transformers for tiny random Qwen3s.

For each (preset, seed) below: `latlab-engine make-model` writes a random bf16 checkpoint,
transformers' Qwen3ForCausalLM loads it in float32 on the CPU (eager attention, no TF32,
so this is the plain fp32 reference), and we record for fixed token sequences:
  - per position: the 16 highest logits with their ids, the logits of 32 fixed probe ids,
    and logsumexp over the vocabulary (full rows would be ~600 KB each);
  - 16 greedy tokens, by argmax over a full re-run of the growing sequence (no cache, no
    generate() quirks such as stopping at EOS).
Output: goldens.json, committed next to this script and read by engine/tests/golden.rs.

Usage: python3 make_goldens.py --engine PATH/latlab-engine --assets assets/cache --out DIR
"""
import argparse, json, os, subprocess, sys, tempfile

import torch
import transformers
from transformers import Qwen3ForCausalLM

CONFIGS = [("tiny", 1), ("tiny-untied", 2), ("tiny-mqa", 3)]
# Token sequences: a Qwen3 chat prompt, a mix reaching the padded top of the vocabulary, and
# a 120-token run to exercise RoPE at later positions.
SEQUENCES = [
    [151644, 872, 198, 9707, 11, 1879, 0, 151645, 198, 151644, 77091, 198],
    [0, 151935, 151643, 100000, 42, 7, 151668, 151667, 3],
    [(i * 7919 + 13) % 151936 for i in range(120)],
]
GREEDY_PROMPTS = [SEQUENCES[0], SEQUENCES[1][:5]]
GREEDY_STEPS = 16
PROBES = [(i * 4751 + 17) % 151936 for i in range(32)]


def logits_of(model, tokens):
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].float()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True)
    ap.add_argument("--assets", default="assets/cache")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    out = {
        "generator": f"transformers {transformers.__version__}, torch {torch.__version__}, float32, CPU, eager attention",
        "probe_ids": PROBES,
        "models": [],
    }
    for preset, seed in CONFIGS:
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, LATLAB_ASSETS_DIR=a.assets)
            subprocess.run([a.engine, "make-model", "--preset", preset, "--seed", str(seed), "--out", d], check=True, env=env)
            model = Qwen3ForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
            entry = {"preset": preset, "seed": seed, "sequences": [], "greedy": []}
            for seq in SEQUENCES:
                lg = logits_of(model, seq)
                top = torch.topk(lg, 16, dim=-1)
                entry["sequences"].append({
                    "tokens": seq,
                    "top_ids": top.indices.tolist(),
                    "top_logits": top.values.tolist(),
                    "probe_logits": lg[:, PROBES].tolist(),
                    "logsumexp": torch.logsumexp(lg.double(), dim=-1).tolist(),
                })
            for prompt in GREEDY_PROMPTS:
                toks = list(prompt)
                for _ in range(GREEDY_STEPS):
                    toks.append(int(torch.argmax(logits_of(model, toks)[-1])))
                entry["greedy"].append({"prompt": prompt, "tokens": toks[len(prompt):]})
            out["models"].append(entry)
            print(f"{preset}: greedy {entry['greedy'][0]['tokens'][:8]}...", file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "goldens.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
