#!/usr/bin/env python3
"""Builds the golden parity fixtures under trainer/tests/fixtures/parity/ with Python transformers.

Three tiny random models are written in the Hugging Face layout (config.json, vocab.txt, tokenizer_config.json,
model.safetensors): `ernie/` (model_type ernie, task-type embeddings, lower-casing tokenizer), `bert/`
(model_type bert, no task-type embeddings, cased tokenizer) and `ernie_tokens/` (ERNIE with a token-classification
head over BIO tags, no pooler); `bert_bin/` holds the same BERT weights as a pickled pytorch_model.bin. `expected.json` records, per model, the tokenizer's input_ids / token_type_ids for a set of
Chinese, English and mixed texts (single and pairs, with truncation), and the logits of padded batches.
trainer/tests/parity.rs checks Paddock against these numbers. Python is not part of `make test`: rerun this
script only when the fixtures must change, and commit its output.

Environment (kept apart from the runtime venv, which must not receive transformers):
    python3 -m venv .venv-parity
    .venv-parity/bin/pip install transformers safetensors numpy
    # torch is not installed twice: a .pth file makes the project venv's torch 2.13.0 importable.
    echo "$PWD/.venv/lib/python3.11/site-packages" > .venv-parity/lib/python3.11/site-packages/paddock_torch.pth
    .venv-parity/bin/python scripts/parity/make_fixtures.py
"""

import json
import os
import shutil
import sys

import torch
import transformers
from transformers import (AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer,
                          BertConfig, BertForSequenceClassification, ErnieConfig, ErnieForSequenceClassification,
                          ErnieForTokenClassification)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "trainer", "tests", "fixtures", "parity")

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHINESE = list("我们你他是的不了在有这个很好今天天气电影非常喜欢看中国北京上海人工智能学习模型数据服务质量差太价格便宜一般推荐")
WORDS = ["hello", "world", "the", "movie", "good", "bad", "great", "un", "##aff", "##able", "play", "##ing",
         "##ed", "cafe", "naive", "ernie", "bert", "2026", "100", "##0", "gpu", "cpu", "ok", "i", "it", "is",
         "Hello", "World", "The", "Movie", "Café", "café", "naïve", "GPU", "OK", "I", "It"]
PUNCT = list(",.!?;:()[]\"'-/，。！？、；：（）《》“”")
CONT = ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
LETTERS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

TEXTS = [
    ("今天天气很好", None),
    ("这个电影非常好看，我很喜欢！", None),
    ("Hello, World! The movie is GREAT.", None),
    ("我们在北京学习 ERNIE 和 BERT 模型。", None),
    ("Café naïve CAFÉ résumé", None),
    ("服务质量太差了", "价格便宜，一般般"),
    ("unaffable playing played", "gpu cpu 2026年"),
    ("  空格\t制表符\n换行  ", None),
    ("数据" * 30, "模型" * 30),
    ("人工智能" * 20, "好"),
    ("ＡＢＣ全角１２３", None),
    ("emoji 😀 和罕见字 龘", None),
    ("[MASK] 是 [SEP] 特殊 [UNK]", None),
    ("", None),
    ("x" * 120, None),
]
MAX_LEN = 40

def write_vocab(path, lowercase):
    vocab = SPECIALS + CHINESE + [w for w in WORDS if lowercase is False or w == w.lower()] + PUNCT + LETTERS + CONT
    seen, out = set(), []
    for tok in vocab:
        if tok not in seen:
            seen.add(tok)
            out.append(tok)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return len(out)

def randomise(model, seed):
    # Larger than transformers' N(0, 0.02) init so that logits differ clearly between inputs and a wrong
    # mask, activation or normalisation shows up far above the 1e-4 tolerance.
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))

def batches(tok, use_task_id, seed):
    g = torch.Generator().manual_seed(seed)
    groups = [TEXTS[0:5], TEXTS[5:10], TEXTS[10:15]]
    out = []
    for i, group in enumerate(groups):
        texts = [t for t, _ in group]
        pairs = [p for _, p in group]
        if all(p is None for p in pairs):
            enc = tok(texts, padding=True, truncation=True, max_length=MAX_LEN, return_tensors="pt")
        else:
            enc = tok(texts, [p or "" for p in pairs], padding=True, truncation=True, max_length=MAX_LEN,
                      return_tensors="pt")
        item = {
            "input_ids": enc["input_ids"].tolist(),
            "attention_mask": enc["attention_mask"].tolist(),
            "token_type_ids": enc["token_type_ids"].tolist(),
            "task_type_ids": None,
        }
        # One ERNIE batch with explicit non-zero task types; the others rely on the zero default.
        if use_task_id and i == 1:
            item["task_type_ids"] = torch.randint(0, 3, enc["input_ids"].shape, generator=g).tolist()
        out.append(item)
    return out

def build(kind, seed):
    d = os.path.join(OUT, kind)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    lowercase = kind.startswith("ernie")
    vocab_size = write_vocab(os.path.join(d, "vocab.txt"), lowercase)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": lowercase}, f, indent=2)
    common = dict(vocab_size=vocab_size, hidden_size=24, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=48, max_position_embeddings=64, hidden_act="gelu")
    if kind == "ernie":
        labels = ["negative", "neutral", "positive"]
        config = ErnieConfig(**common, type_vocab_size=4, use_task_id=True, task_type_vocab_size=3,
                             layer_norm_eps=1e-5, id2label=dict(enumerate(labels)),
                             label2id={l: i for i, l in enumerate(labels)})
        torch.manual_seed(seed)
        model = ErnieForSequenceClassification(config)
    elif kind == "ernie_tokens":
        labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
        config = ErnieConfig(**common, type_vocab_size=4, use_task_id=True, task_type_vocab_size=3,
                             layer_norm_eps=1e-5, id2label=dict(enumerate(labels)),
                             label2id={l: i for i, l in enumerate(labels)})
        torch.manual_seed(seed)
        model = ErnieForTokenClassification(config)
    else:
        config = BertConfig(**common, type_vocab_size=2, layer_norm_eps=1e-12, num_labels=2)
        torch.manual_seed(seed)
        model = BertForSequenceClassification(config)
    randomise(model, seed)
    model.eval()
    model.save_pretrained(d, safe_serialization=True)

    tok = AutoTokenizer.from_pretrained(d)
    cases = []
    for text, pair in TEXTS:
        enc = tok(text, pair, truncation=True, max_length=MAX_LEN) if pair is not None else \
            tok(text, truncation=True, max_length=MAX_LEN)
        cases.append({"text": text, "pair": pair, "max_len": MAX_LEN, "input_ids": enc["input_ids"],
                      "token_type_ids": enc["token_type_ids"], "tokens": tok.convert_ids_to_tokens(enc["input_ids"])})
    # Reload through the auto class, as a user would, and compute the reference logits in float64 so the
    # fixture carries no float32 rounding of its own.
    auto = AutoModelForTokenClassification if kind == "ernie_tokens" else AutoModelForSequenceClassification
    ref = auto.from_pretrained(d, attn_implementation="eager").double().eval()
    out_batches = []
    for b in batches(tok, kind.startswith("ernie"), seed):
        kwargs = dict(input_ids=torch.tensor(b["input_ids"]), attention_mask=torch.tensor(b["attention_mask"]),
                      token_type_ids=torch.tensor(b["token_type_ids"]))
        if b["task_type_ids"] is not None:
            kwargs["task_type_ids"] = torch.tensor(b["task_type_ids"])
        with torch.no_grad():
            b["logits"] = ref(**kwargs).logits.tolist()
        out_batches.append(b)
    return {"dir": kind, "model_type": config.model_type, "cases": cases, "batches": out_batches}, model

def main():
    os.makedirs(OUT, exist_ok=True)
    ernie, _ = build("ernie", 1234)
    bert, bert_model = build("bert", 5678)
    tokens, _ = build("ernie_tokens", 4321)
    # The same BERT weights as a pickled state dict, for the pytorch_model.bin loader.
    d = os.path.join(OUT, "bert_bin")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in ["config.json", "vocab.txt", "tokenizer_config.json"]:
        shutil.copy(os.path.join(OUT, "bert", f), d)
    torch.save(bert_model.state_dict(), os.path.join(d, "pytorch_model.bin"))
    meta = {"transformers": transformers.__version__, "torch": torch.__version__}
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"generated_by": "scripts/parity/make_fixtures.py", "versions": meta,
                   "models": [ernie, bert, tokens]}, f, ensure_ascii=False, indent=1)
    for name in sorted(os.listdir(OUT)):
        print(name)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(OUT) for f in fs)
    print(f"total {total} bytes", file=sys.stderr)

if __name__ == "__main__":
    main()
