#!/usr/bin/env python3
"""Reference for the full-size check of the CUDA backend: HF transformers on the same GPU.

Loads a checkpoint written by `latlab-engine make-model --preset qwen3-8b` (random weights of
the exact Qwen3-8B shape; nothing can be downloaded here) in bf16 on the GPU, and records
for one 232-token prompt:
  - the logits at the last prompt position: the 64 highest with their ids, and logsumexp;
  - 32 greedy tokens (argmax after each step, KV cache on, no EOS stop), and at each of
    those 32 steps the 8 highest logits with their ids (teacher forcing on HF's path).
HF's logits come out of a bf16 lm_head: at |logit| ~4 they are multiples of 1/32, and a
random model's top logits sit closer than that, so argmax often breaks bf16 ties by index.
engine/tests/cuda_hf_8b.rs compares latlab's CUDA backend against this file.

Usage: python3 hf_qwen3_8b.py --ckpt DIR --out FILE.json
"""
import argparse, json, time

import torch
import transformers
from transformers import Qwen3ForCausalLM

PROMPT = [(i * 7919 + 13) % 151643 for i in range(232)]
STEPS = 32


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    t = time.time()
    model = Qwen3ForCausalLM.from_pretrained(a.ckpt, dtype=torch.bfloat16).to("cuda").eval()
    print(f"loaded in {time.time() - t:.1f} s", flush=True)
    with torch.no_grad():
        ids = torch.tensor([PROMPT], device="cuda")
        out = model(ids, use_cache=True)
        last = out.logits[0, -1].float()
        top = torch.topk(last, 64)
        past = out.past_key_values
        toks, steps = [], []
        row = last
        for _ in range(STEPS):
            t8 = torch.topk(row, 8)
            steps.append({"top_ids": t8.indices.tolist(), "top_logits": t8.values.tolist()})
            nxt = int(torch.argmax(row))
            toks.append(nxt)
            out = model(torch.tensor([[nxt]], device="cuda"), past_key_values=past, use_cache=True)
            past = out.past_key_values
            row = out.logits[0, -1].float()
    res = {
        "generator": f"transformers {transformers.__version__}, torch {torch.__version__}, bf16, "
        f"{torch.cuda.get_device_name()}, default attention",
        "prompt": PROMPT,
        "top_ids": top.indices.tolist(),
        "top_logits": top.values.tolist(),
        "logsumexp": float(torch.logsumexp(last.double(), dim=-1)),
        "greedy": toks,
        "steps": steps,
    }
    with open(a.out, "w") as f:
        json.dump(res, f)
    print("greedy", toks[:12], "...", flush=True)


if __name__ == "__main__":
    main()
