#!/usr/bin/env python3
"""PyTorch eager + transformers half of `make bench-train`: training and inference samples/s of
`ErnieForSequenceClassification` with the ERNIE 3.0 nano shape on exactly the batch that
`trainer/examples/bench.rs` builds (token 5 + (b*131 + s*17) % (vocab-5), length 64 + (b*37) % 65, padded
with 0). With `--batches FILE` (written by `bench --data ... --write-batches FILE`), the real-data batches
instead: the model is built from the config in that file (the vocabulary size of the corpus-built vocabulary
included), and the batches run in the file's order, iteration i using batch i % n, as the Rust side does;
FLOPs are then counted per row at its real length. A training step is forward (dropout on) + cross-entropy
+ backward + AdamW (lr 5e-5, wd 0.01). With `--precision bf16` the forward runs under CPU bf16 autocast.
Runs in .venv-parity (transformers there; torch 2.13.0 from the project venv via a .pth file, see
scripts/parity/make_fixtures.py). Prints one JSON object.

With `--ddp`, started by torchrun: the training step of one rank of DistributedDataParallel over Gloo, on
its share of the batch (every world-th row, as Paddock's ranks take theirs); rank 0 prints the run's
samples/s.
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
    ap.add_argument("--batches", default=None, help="real-data batches written by bench --write-batches")
    ap.add_argument("--ddp", action="store_true", help="one rank of torchrun + DistributedDataParallel (Gloo)")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                    help="bf16: the forward under torch.autocast('cpu', bfloat16), as the Rust side does")
    a = ap.parse_args()
    threads = a.threads or os.cpu_count()
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    kwargs = {"attn_implementation": a.attn} if a.attn else {}
    extra = {}
    if a.batches:
        with open(a.batches, encoding="utf-8") as fh:
            spec = json.load(fh)
        # The Rust side's config.json as written into a checkpoint, so both models have the same shape,
        # vocabulary, dropout and labels.
        config = ErnieConfig.from_dict(spec["config"])
        batches = [tuple(torch.tensor(b[k], dtype=torch.long)
                         for k in ("input_ids", "attention_mask", "token_type_ids", "labels"))
                   for b in spec["batches"]]
        if not batches:
            raise SystemExit(f"{a.batches}: no batches")
        h, f, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
        flops = [sum(forward_flops(layers, h, f, int(n), config.num_labels) for n in mask.sum(1))
                 for _, mask, _, _ in batches]
        extra = {"scenario": "real", "data": spec["data"], "batches": len(batches),
                 "rows": sum(len(b[3]) for b in batches), "vocab_size": config.vocab_size,
                 "padded_tokens": sum(b[0].numel() for b in batches), "flops_count": "real tokens only"}
        preset = spec["preset"]
    else:
        layers, h, f, tasks = PRESETS[a.preset]
        vocab = 40000
        config = ErnieConfig(vocab_size=vocab, hidden_size=h, num_hidden_layers=layers, num_attention_heads=12,
                             intermediate_size=f, max_position_embeddings=2048, type_vocab_size=4,
                             task_type_vocab_size=tasks, use_task_id=True, layer_norm_eps=1e-5, num_labels=2)
        ids = torch.zeros(a.batch, a.seq, dtype=torch.long)
        mask = torch.zeros(a.batch, a.seq, dtype=torch.long)
        for r in range(a.batch):
            n = a.seq if a.full else min(64 + (r * 37) % 65, a.seq)
            for c in range(n):
                ids[r, c] = 5 + (r * 131 + c * 17) % (vocab - 5)
            mask[r, :n] = 1
        batches = [(ids, mask, torch.zeros_like(ids), torch.arange(a.batch) % 2)]
        flops = [a.batch * forward_flops(layers, h, f, a.seq, 2)]
        preset = a.preset
    model = ErnieForSequenceClassification._from_config(config, **kwargs)
    if a.ddp:
        return data_parallel(a, model, batches, threads, preset)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    nb = len(batches)
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16")

    # Iteration i runs batch i % nb: the synthetic scenarios repeat their one batch, the real one passes
    # over its batches in the order the Rust side wrote them.
    def train_step(i):
        ids, mask, types, labels = batches[i % nb]
        model.train()
        with autocast():
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits.float()
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for i in range(2):
        train_step(i)
    t = time.perf_counter()
    for i in range(a.steps):
        last = train_step(i)
    train_s = time.perf_counter() - t

    model.eval()
    def infer(i):
        ids, mask, types, _ = batches[i % nb]
        with torch.no_grad(), autocast():
            return model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits[0, 0].item()
    for i in range(2):
        infer(i)
    n_inf = a.steps * 3
    t = time.perf_counter()
    for i in range(n_inf):
        infer(i)
    infer_s = time.perf_counter() - t

    def work(iters):
        """Rows and forward FLOPs of the first `iters` iterations."""
        return (sum(len(batches[i % nb][3]) for i in range(iters)), sum(flops[i % nb] for i in range(iters)))
    train_rows, train_fwd = work(a.steps)
    infer_rows, infer_fwd = work(n_inf)
    print(json.dumps({
        "impl": f"pytorch {torch.__version__} eager + transformers {transformers.__version__}",
        "attn_implementation": model.config._attn_implementation,
        "preset": preset, "batch": a.batch, "seq": max(b[0].shape[1] for b in batches), "threads": threads,
        "full_length": a.full, "precision": a.precision, "real_tokens": sum(int(b[1].sum()) for b in batches),
        "train_samples_per_s": train_rows / train_s, "infer_samples_per_s": infer_rows / infer_s,
        "train_flops_per_s": 3 * train_fwd / train_s, "infer_flops_per_s": infer_fwd / infer_s,
        "last_loss": last, **extra,
    }))

def data_parallel(a, model, batches, threads, preset):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=5e-5, weight_decay=0.01)
    shards = [tuple(t[rank::world] for t in b) for b in batches]
    nb = len(shards)
    ddp.train()

    def step(i):
        ids, mask, types, labels = shards[i % nb]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            logits = ddp(input_ids=ids, attention_mask=mask, token_type_ids=types).logits.float()
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for i in range(2):
        step(i)
    t = time.perf_counter()
    for i in range(a.steps):
        step(i)
    secs = time.perf_counter() - t
    rows = sum(len(batches[i % nb][3]) for i in range(a.steps))
    if rank == 0:
        print(json.dumps({
            "impl": f"pytorch {torch.__version__} DDP (Gloo) + transformers {transformers.__version__}",
            "ranks": world, "threads_per_rank": threads, "preset": preset, "batch": a.batch,
            "precision": a.precision, "train_samples_per_s": rows / secs, "step_ms": 1e3 * secs / a.steps,
        }))
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
