#!/usr/bin/env bash
# `halogen info DIR` predicts the per-rank buffer memory that `halogen train` then reports as its peak, within
# 20% (the README's promise), for a dense-feature GCN, SAGE, GIN, APPNP (K = 10) and GAT (8 heads x 8, 1 output
# head: its per-edge attention buffers; with --gat-dropout original, the default, and pyg) model on 2 ranks.
set -euo pipefail
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun_cmd=(mpirun -np 2 --oversubscribe --bind-to none)

"$bin" generate sbm --nodes 6000 --classes 4 --features 48 --seed 3 -o "$work/g.h5" >/dev/null
"$bin" partition "$work/g.h5" -k 2 -o "$work/g.p2" >/dev/null

check() {
  local model=$1 hidden=$2 layers=$3
  local extra=("${@:4}")  # options for both info and train
  local predicted measured
  predicted=$("$bin" info "$work/g.p2" --model "$model" --hidden "$hidden" --layers "$layers" "${extra[@]}" |
    sed -n 's/.*max per rank \([0-9.]*\) MiB.*/\1/p')
  measured=$("${mpirun_cmd[@]}" "$bin" train "$work/g.p2" --model "$model" --hidden "$hidden" --layers "$layers" \
    "${extra[@]}" --epochs 2 --quiet 2>&1 | sed -n 's/^memory: peak \([0-9.]*\) MiB.*/\1/p')
  [ -n "$predicted" ] || { echo "FAIL: info printed no prediction"; exit 1; }
  [ -n "$measured" ] || { echo "FAIL: train printed no peak"; exit 1; }
  python3 - "$predicted" "$measured" "$model" <<'PY'
import sys
predicted, measured, model = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ratio = predicted / measured
print(f"{model}: predicted {predicted} MiB, measured peak {measured} MiB, ratio {ratio:.3f}")
sys.exit(0 if 0.8 <= ratio <= 1.2 else 1)
PY
}
check gcn 64 2
check sage 32 3
check gin 32 2
check appnp 64 2
check gat 8 2
check gat 8 2 --gat-dropout pyg
echo "info memory: all checks passed"
