#!/usr/bin/env python3
"""Builds Paddock's entity-extraction sample: synthetic sentences with silver entity labels, said plainly.

No openly licensed Chinese NER corpus can be fetched here (MSRA and People's Daily NER are for research use
only), so sentences are generated from 30 hand-written templates ("{PER}上周从{LOC}调到{ORG}工作。") whose
slots are filled with words that jieba's dictionary (MIT, as shipped in the jieba-rs crate Paddock already
builds) tags `nr` (person), `ns` (place) or `nt` (organisation). The labels are silver: the words are what
jieba's dictionary says they are, and the templates make them entities.

A quarter of each type's words appear only in the dev sentences, so the dev set measures whether a model finds
entities it never saw by their context, which a dictionary of the training entities cannot.

Writes `entities_train.jsonl` (`{"text", "entities": [{"start", "end", "label"}]}`, character offsets) and
`entities_dev.conll` (a character and its BIO tag per line, a blank line after each sentence), fixed seed.
Standard library only:
    python3 scripts/dataset/make_entities.py --dict ~/.cargo/registry/src/*/jieba-rs-0.7.*/src/data/dict.txt \
        --out trainer/tests/fixtures/data
"""
import argparse
import json
import os
import random
import re

SEED = 20261207
TRAIN = 1200
DEV = 240
HELD_OUT = 0.25

TEMPLATES = [
    "{PER}上周从{LOC}调到{ORG}工作。",
    "{ORG}在{LOC}召开了座谈会，{PER}出席并讲话。",
    "据{ORG}消息，{PER}将于下月访问{LOC}。",
    "{PER}说，{LOC}的发展离不开{ORG}的支持。",
    "记者从{ORG}获悉，{LOC}今年的粮食产量创了新高。",
    "{PER}和{PER}昨天一起去了{LOC}。",
    "{LOC}的游客越来越多了。",
    "{ORG}发布了新的管理办法。",
    "{PER}是{ORG}的负责人。",
    "我们明天从{LOC}出发，后天到{LOC}。",
    "{PER}在{LOC}生活了二十年。",
    "这次会议由{ORG}主办，{ORG}协办。",
    "{PER}给{PER}打了个电话，约在{LOC}见面。",
    "听说{ORG}要在{LOC}建一个新的办事处。",
    "{LOC}和{LOC}之间的高铁今天开通了。",
    "{PER}获得了{ORG}颁发的奖项。",
    "昨天下午，{PER}在{LOC}接受了采访。",
    "{ORG}的代表团抵达{LOC}。",
    "请把材料交给{ORG}的{PER}。",
    "{PER}认为，{ORG}的改革很有成效。",
    "今年春节{PER}没有回{LOC}过年。",
    "{LOC}位于{LOC}的东部。",
    "{PER}毕业后一直在{ORG}工作。",
    "{ORG}和{ORG}签署了合作协议。",
    "天气预报说{LOC}明天有雨。",
    "{PER}向{ORG}反映了{LOC}的交通问题。",
    "这家店的老板叫{PER}，老家是{LOC}的。",
    "会后，{PER}参观了{ORG}。",
    "今天的会议没有讨论什么新问题。",
    "大家都觉得这个方案不错。",
]


def read_words(path):
    """{type: [words]} from a jieba dictionary (`word freq tag` per line)."""
    wanted = {"nr": "PER", "ns": "LOC", "nt": "ORG"}
    lengths = {"PER": (2, 3), "LOC": (2, 4), "ORG": (3, 8)}
    least = {"PER": 200, "LOC": 300, "ORG": 50}
    out = {t: [] for t in wanted.values()}
    han = re.compile(r"^[\u4e00-\u9fff]+$")
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 3 or parts[2] not in wanted:
                continue
            word, freq, kind = parts[0], int(parts[1]), wanted[parts[2]]
            lo, hi = lengths[kind]
            if han.match(word) and lo <= len(word) <= hi and freq >= least[kind]:
                out[kind].append(word)
    return {k: sorted(set(v)) for k, v in out.items()}


def fill(template, words, rng):
    """The template with its slots filled: (text, [(start, end, type)])."""
    text, spans = "", []
    for piece in re.split(r"(\{[A-Z]+\})", template):
        m = re.fullmatch(r"\{([A-Z]+)\}", piece)
        if m:
            word = rng.choice(words[m.group(1)])
            spans.append((len(text), len(text) + len(word), m.group(1)))
            text += word
        else:
            text += piece
    return text, spans


def sentences(words, n, rng):
    out, seen = [], set()
    while len(out) < n:
        text, spans = fill(rng.choice(TEMPLATES), words, rng)
        if text in seen:
            continue
        seen.add(text)
        out.append((text, spans))
    return out


def bio(text, spans):
    tags = ["O"] * len(text)
    for start, end, kind in spans:
        tags[start] = "B-" + kind
        for i in range(start + 1, end):
            tags[i] = "I-" + kind
    return tags


def write(path, body):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(body)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dict", required=True, help="jieba's dict.txt")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = random.Random(SEED)
    words = read_words(args.dict)
    train_words, dev_words = {}, {}
    for kind, pool in words.items():
        pool = pool[:]
        rng.shuffle(pool)
        pool = pool[:1200]
        cut = int(len(pool) * HELD_OUT)
        dev_only = pool[:cut]
        train_words[kind] = pool[cut:]
        # Dev mixes words seen in training with words it never saw.
        dev_words[kind] = dev_only + pool[cut:cut + len(dev_only)]
    train = sentences(train_words, TRAIN, rng)
    dev = sentences(dev_words, DEV, rng)
    os.makedirs(args.out, exist_ok=True)
    write(os.path.join(args.out, "entities_train.jsonl"), "".join(
        json.dumps({"text": t, "entities": [{"start": s, "end": e, "label": k} for s, e, k in spans]},
                   ensure_ascii=False) + "\n" for t, spans in train))
    write(os.path.join(args.out, "entities_dev.conll"), "".join(
        "".join(f"{c} {tag}\n" for c, tag in zip(t, bio(t, spans))) + "\n" for t, spans in dev))
    counts = {k: len(v) for k, v in words.items()}
    print(f"dictionary words {counts}; {TRAIN} training and {DEV} dev sentences")


if __name__ == "__main__":
    main()
