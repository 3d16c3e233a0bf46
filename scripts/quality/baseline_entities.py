"""The reference point for entity extraction: a dictionary of the training file's entities, matched
longest-first left to right over each dev text, scored on exact spans (seqeval's micro P/R/F1). It
finds every dev entity whose words were in training and none of the others.

    python3 scripts/quality/baseline_entities.py [trainer/tests/fixtures/data]

Prints one JSON line: {"dev_f1": ..., "dev_precision": ..., "dev_recall": ...}. Standard library only.
"""
import collections
import json
import sys
from pathlib import Path


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            yield row["text"], [(e["start"], e["end"], e["label"]) for e in row["entities"]]


def read_conll(path):
    text, tags = "", []
    with open(path, encoding="utf-8") as f:
        for line in list(f) + ["\n"]:
            if not line.strip():
                if text:
                    yield text, spans(tags)
                text, tags = "", []
                continue
            token, tag = line.split()
            text += token
            tags.extend([tag] + [("I-" + tag[2:]) if tag != "O" else "O"] * (len(token) - 1))


def spans(tags):
    out, start, kind = [], None, None
    for i, tag in enumerate(tags + ["O"]):
        if start is not None and (tag == "O" or tag.startswith("B-") or tag[2:] != kind):
            out.append((start, i, kind))
            start = None
        if tag.startswith("B-") or (tag.startswith("I-") and start is None):
            start, kind = i, tag[2:]
    return out


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "trainer/tests/fixtures/data")
    votes = collections.defaultdict(collections.Counter)
    for text, entities in read_jsonl(root / "entities_train.jsonl"):
        for s, e, label in entities:
            votes[text[s:e]][label] += 1
    dictionary = {word: c.most_common(1)[0][0] for word, c in votes.items()}
    longest = max(map(len, dictionary))
    tp = gold = predicted = 0
    for text, entities in read_conll(root / "entities_dev.conll"):
        found, i = [], 0
        while i < len(text):
            for n in range(min(longest, len(text) - i), 0, -1):
                if text[i:i + n] in dictionary:
                    found.append((i, i + n, dictionary[text[i:i + n]]))
                    i += n
                    break
            else:
                i += 1
        gold += len(entities)
        predicted += len(found)
        tp += len(set(found) & set(entities))
    p = tp / predicted if predicted else 0.0
    r = tp / gold if gold else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    print(json.dumps({"dev_f1": round(f1, 4), "dev_precision": round(p, 4), "dev_recall": round(r, 4),
                      "dictionary_words": len(dictionary), "dev_entities": gold}))


if __name__ == "__main__":
    main()
