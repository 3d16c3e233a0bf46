#!/usr/bin/env python3
"""Manual check (not part of `make test`) that transformers loads checkpoints written by Paddock's
`checkpoint::save` unchanged and computes the same input_ids and logits.

    source scripts/env.sh
    cargo run -p trainer --example export_check -- /tmp/paddock-roundtrip
    .venv-parity/bin/python scripts/parity/check_roundtrip.py /tmp/paddock-roundtrip

(.venv-parity is described in scripts/parity/make_fixtures.py.) Exits non-zero on any mismatch.
"""

import json
import os
import sys

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

def main():
    root = sys.argv[1]
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
        ok = ok and same_ids and diff < 1e-4
    print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)

if __name__ == "__main__":
    main()
