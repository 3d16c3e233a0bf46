#!/usr/bin/env python3
"""PyTorch eager + transformers half of `make bench-train`: training and inference samples/s of
`ErnieForSequenceClassification` with the ERNIE 3.0 nano shape on exactly the batch that
`trainer/examples/bench.rs` builds (token 5 + (b*131 + s*17) % (vocab-5), length 64 + (b*37) % 65, padded
with 0). A training step is forward (dropout on) + cross-entropy + backward + AdamW (lr 5e-5, wd 0.01).
Runs in .venv-parity (transformers there; torch 2.13.0 from the project venv via a .pth file, see
scripts/parity/make_fixtures.py). Prints one JSON object.
"""

import argparse
import json
import os
import time

import torch
import transformers
from transformers import ErnieConfig, ErnieForSequenceClassification

PRESETS = {"base": (12, 768, 3072, 3), "medium": (6, 768, 3072, 16), "mini": (6, 384, 1536, 16),
           "micro": (4, 384, 1536, 16), "nano": (4, 312, 1248, 16)}

def forward_flops(layers, h, f, s, labels):
    per_token_layer = 2 * (4 * h * h + 2 * h * f) + 4 * s * h
    return layers * s * per_token_layer + 2 * h * h + 2 * h * labels

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="nano")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="every sequence as long as --seq")
    ap.add_argument("--attn", default=None, help="attn_implementation (default: transformers' choice)")
    a = ap.parse_args()
    threads = a.threads or os.cpu_count()
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    layers, h, f, tasks = PRESETS[a.preset]
    vocab = 40000
    config = ErnieConfig(vocab_size=vocab, hidden_size=h, num_hidden_layers=layers, num_attention_heads=12,
                         intermediate_size=f, max_position_embeddings=2048, type_vocab_size=4,
                         task_type_vocab_size=tasks, use_task_id=True, layer_norm_eps=1e-5, num_labels=2)
    kwargs = {"attn_implementation": a.attn} if a.attn else {}
    model = ErnieForSequenceClassification._from_config(config, **kwargs)
    ids = torch.zeros(a.batch, a.seq, dtype=torch.long)
    mask = torch.zeros(a.batch, a.seq, dtype=torch.long)
    for r in range(a.batch):
        n = a.seq if a.full else min(64 + (r * 37) % 65, a.seq)
        for c in range(n):
            ids[r, c] = 5 + (r * 131 + c * 17) % (vocab - 5)
        mask[r, :n] = 1
    types = torch.zeros_like(ids)
    labels = torch.arange(a.batch) % 2
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)

    def train_step():
        model.train()
        logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(2):
        train_step()
    t = time.perf_counter()
    for _ in range(a.steps):
        last = train_step()
    train_s = time.perf_counter() - t

    model.eval()
    def infer():
        with torch.no_grad():
            return model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits[0, 0].item()
    for _ in range(2):
        infer()
    n_inf = a.steps * 3
    t = time.perf_counter()
    for _ in range(n_inf):
        infer()
    infer_s = time.perf_counter() - t

    fwd = forward_flops(layers, h, f, a.seq, 2)
    train_sps = a.batch * a.steps / train_s
    infer_sps = a.batch * n_inf / infer_s
    print(json.dumps({
        "impl": f"pytorch {torch.__version__} eager + transformers {transformers.__version__}",
        "attn_implementation": model.config._attn_implementation,
        "preset": a.preset, "batch": a.batch, "seq": a.seq, "threads": threads, "full_length": a.full,
        "real_tokens": int(mask.sum()),
        "train_samples_per_s": train_sps, "infer_samples_per_s": infer_sps,
        "train_flops_per_s": train_sps * 3 * fwd, "infer_flops_per_s": infer_sps * fwd,
        "last_loss": last,
    }))

if __name__ == "__main__":
    main()
