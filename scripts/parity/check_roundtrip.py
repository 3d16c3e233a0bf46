#!/usr/bin/env python3
"""Manual check (not part of `make test`) that transformers loads checkpoints written by Paddock unchanged and
computes the same input_ids and logits. Two modes.

Checkpoints written by `checkpoint::save` directly (a relabelled parity fixture and a from-scratch nano model):

    source scripts/env.sh
    cargo run -p trainer --example export_check -- /tmp/paddock-roundtrip
    .venv-parity/bin/python scripts/parity/check_roundtrip.py /tmp/paddock-roundtrip

A checkpoint written by `paddock train`, against `paddock predict --json` on a file of texts (one per line):

    paddock predict --model CKPT --file texts.txt --json > predictions.jsonl
    .venv-parity/bin/python scripts/parity/check_roundtrip.py --checkpoint CKPT --texts texts.txt \\
        --predictions predictions.jsonl

The second mode tokenizes with `AutoTokenizer` at the length `predict` used (`trainer_state.json`'s max_seq_len,
else 512) — pairs for a matching model (`A<TAB>B` lines) — runs `AutoModelForSequenceClassification` (or
`AutoModelForTokenClassification` for an entity model) in fp32, and compares every row's logits (every real
token's, for an entity model) and its answer with Paddock's. (.venv-parity is described in scripts/parity/make_fixtures.py.) Exits non-zero on any mismatch.
"""

import argparse
import json
import os
import sys

import torch
from transformers import (AutoConfig, AutoModelForSequenceClassification, AutoModelForTokenClassification,
                          AutoTokenizer)

TOLERANCE = 1e-4


def export_check(root):
    expected = json.load(open(os.path.join(root, "paddock_logits.json"), encoding="utf-8"))
    ok = True
    for name, exp in expected.items():
        d = os.path.join(root, name)
        tok = AutoTokenizer.from_pretrained(d)
        model = AutoModelForSequenceClassification.from_pretrained(d).eval()
        texts = [t for t, _ in exp["texts"]]
        pairs = [p for _, p in exp["texts"]]
        ids = [tok(t, p, truncation=True, max_length=64)["input_ids"] if p else
               tok(t, truncation=True, max_length=64)["input_ids"] for t, p in zip(texts, pairs)]
        same_ids = ids == exp["input_ids"]
        s = max(len(i) for i in ids)
        input_ids = torch.tensor([i + [tok.pad_token_id] * (s - len(i)) for i in ids])
        mask = torch.tensor([[1] * len(i) + [0] * (s - len(i)) for i in ids])
        types = torch.tensor([[t for t in
                               (tok(a, b)["token_type_ids"] if b else tok(a)["token_type_ids"])[:len(i)]]
                              + [0] * (s - len(i)) for a, b, i in zip(texts, pairs, ids)])
        with torch.no_grad():
            logits = model(input_ids=input_ids, attention_mask=mask, token_type_ids=types).logits
        diff = (logits.double() - torch.tensor(exp["logits"], dtype=torch.float64)).abs().max().item()
        print(f"{name}: class={type(model).__name__} tokenizer={type(tok).__name__} "
              f"labels={model.config.id2label} same_input_ids={same_ids} max_logit_diff={diff:.2e}")
        ok = ok and same_ids and diff < TOLERANCE
    return ok


def predict_check(checkpoint, texts_path, predictions_path, batch=64):
    """Each task as `paddock predict` reads its file: a matching model's lines are `A<TAB>B` pairs; an entity
    model (ErnieForTokenClassification) answers every token's logits, compared token by token."""
    with open(texts_path, encoding="utf-8") as f:
        lines = [line.rstrip("\r\n") for line in f]
    with open(predictions_path, encoding="utf-8") as f:
        predictions = [json.loads(line) for line in f if line.strip()]
    if len(lines) != len(predictions):
        print(f"{len(lines)} texts but {len(predictions)} predictions")
        return False
    state = os.path.join(checkpoint, "trainer_state.json")
    max_len = json.load(open(state))["max_seq_len"] if os.path.exists(state) else 512
    config = AutoConfig.from_pretrained(checkpoint)
    task = getattr(config, "paddock_task", "classification")
    tokens = config.architectures[0].endswith("TokenClassification")
    auto = AutoModelForTokenClassification if tokens else AutoModelForSequenceClassification
    tok = AutoTokenizer.from_pretrained(checkpoint)
    model = auto.from_pretrained(checkpoint).eval()
    worst, answers_differ = 0.0, 0
    for start in range(0, len(lines), batch):
        chunk = lines[start:start + batch]
        if task == "matching":
            a, b = zip(*(line.split("\t", 1) for line in chunk))
            enc = tok(list(a), list(b), truncation=True, max_length=max_len, padding=True, return_tensors="pt")
        else:
            enc = tok(chunk, truncation=True, max_length=max_len, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits.double()
        for row, mask, p in zip(logits, enc["attention_mask"], predictions[start:start + batch]):
            theirs = torch.tensor(p["logits"], dtype=torch.float64)
            if tokens:
                ours = row[mask.bool()]
                if ours.shape != theirs.shape:
                    print(f"token rows differ: transformers {tuple(ours.shape)}, Paddock {tuple(theirs.shape)}")
                    return False
                answers_differ += not torch.equal(ours.argmax(-1), theirs.argmax(-1))
            else:
                ours = row
                answers_differ += model.config.id2label[int(row.argmax())] != p["label"]
            worst = max(worst, (ours - theirs).abs().max().item())
    print(f"{checkpoint}: task={task} class={type(model).__name__} tokenizer={type(tok).__name__} "
          f"labels={model.config.id2label} rows={len(lines)} max_length={max_len} "
          f"max_logit_diff={worst:.2e} answers_differ={answers_differ}")
    return worst < TOLERANCE and answers_differ == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", help="directory written by the export_check example")
    ap.add_argument("--checkpoint", help="a checkpoint directory written by `paddock train`")
    ap.add_argument("--texts", help="the file given to `paddock predict --file`")
    ap.add_argument("--predictions", help="what `paddock predict --json` printed for it")
    a = ap.parse_args()
    if a.checkpoint:
        if not (a.texts and a.predictions):
            ap.error("--checkpoint needs --texts and --predictions")
        ok = predict_check(a.checkpoint, a.texts, a.predictions)
    elif a.root:
        ok = export_check(a.root)
    else:
        ap.error("give the export_check directory or --checkpoint")
    print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
