"""The reference point for text matching: the cosine similarity of character 1-2-gram TF-IDF vectors of the
two texts, with the threshold that is most accurate on the training pairs, scored on the dev pairs.

    .venv-parity/bin/python scripts/quality/baseline_matching.py [trainer/tests/fixtures/data]

Prints one JSON line: {"dev_accuracy": ..., "dev_macro_f1": ..., "threshold": ...}.
"""
import csv
import json
import sys
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import accuracy_score, f1_score


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r["text_a"] for r in rows], [r["text_b"] for r in rows], [r["label"] for r in rows]


def similarities(vec, a, b):
    va, vb = vec.transform(a), vec.transform(b)
    # TF-IDF rows are L2-normalised: the row-wise dot product is the cosine.
    return va.multiply(vb).sum(axis=1).A1


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "trainer/tests/fixtures/data")
    (atr, btr, ytr), (adev, bdev, ydev) = (read(root / f"matching_{s}.tsv") for s in ("train", "dev"))
    vec = TfidfVectorizer(analyzer="char", ngram_range=(1, 2), sublinear_tf=True).fit(atr + btr)
    str_, sdev = similarities(vec, atr, btr), similarities(vec, adev, bdev)
    best = max((accuracy_score(ytr, ["same" if s >= t else "different" for s in str_]), t)
               for t in sorted(set(str_)))
    threshold = best[1]
    pred = ["same" if s >= threshold else "different" for s in sdev]
    print(json.dumps({"dev_accuracy": round(accuracy_score(ydev, pred), 4),
                      "dev_macro_f1": round(f1_score(ydev, pred, average="macro"), 4),
                      "threshold": round(float(threshold), 4), "train_accuracy": round(best[0], 4),
                      "train_pairs": len(ytr), "dev_pairs": len(ydev)}))


if __name__ == "__main__":
    main()
