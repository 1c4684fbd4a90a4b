#!/usr/bin/env bash
# GAT epoch time, Halogen against PyTorch Geometric's GATConv, on the same 200,000-vertex SBM (2,000,000 vertex
# pairs stored once: ~4M directed edges after symmetrising, plus self-loops; 128 features, 16 classes), 2 layers
# of 8 heads x 8 (output: 1 head), dropout 0.6 on inputs and attention, Adam, both on 2 CPU threads, one rank.
# Halogen: `halogen bench epoch` (mean epoch_ms of the timed epochs, no evaluation). PyG: scripts/bench/pyg_gat.py
# (forward + backward + step). Prints both and the ratio (the goal: Halogen <= 0.5 x PyG). The ratio is Halogen's
# --gat-dropout pyg (PyG's dropout placement: the same work); Halogen's default, --gat-dropout original (a
# dropout mask per head on each layer's input, so one product per head in layer 0, and dropout on the transformed
# features), is timed too.
# usage: scripts/bench/gat_vs_pyg.sh HALOGEN_BIN PYTHON [WORKDIR]
#   PYTHON must import torch and torch_geometric (e.g. build/release/pyenv/bin/python, made by the python.pytest
#   test). Run it on an idle machine (or under flock with other benchmarks): the figures are wall-clock times.
set -euo pipefail
bin="${1:?usage: $0 HALOGEN_BIN PYTHON [WORKDIR]}"
python="${2:?usage: $0 HALOGEN_BIN PYTHON [WORKDIR]}"
work="${3:-$(mktemp -d)}"
here="$(cd "$(dirname "$0")" && pwd)"
nodes="${GAT_BENCH_NODES:-200000}" pairs="${GAT_BENCH_PAIRS:-2000000}" epochs="${GAT_BENCH_EPOCHS:-10}"
mkdir -p "$work"
if [[ ! -f "$work/g.p1/meta.json" ]]; then
  "$python" "$here/pyg_gat.py" make-graph "$work/raw" --nodes "$nodes" --edges "$pairs" --features 128 --classes 16 >/dev/null
  "$bin" convert "$work/raw" -o "$work/g.h5" >/dev/null
  "$bin" partition "$work/g.h5" -k 1 -o "$work/g.p1" >/dev/null
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
halogen_epoch() {  # --gat-dropout MODE: mean epoch_ms
  OMP_NUM_THREADS=2 mpirun --oversubscribe --bind-to none -np 1 "$bin" bench epoch "$work/g.p1" --model gat \
    --layers 2 --hidden 8 --heads 8 --output-heads 1 --dropout 0.6 --attention-dropout 0.6 --gat-dropout "$1" \
    --threads 2 --epochs "$epochs" --warmup 2 --overlap on | awk '$1 == "on" { print $4 }'
}
ours=$(halogen_epoch pyg)
original=$(halogen_epoch original)
pyg=$(OMP_NUM_THREADS=2 "$python" "$here/pyg_gat.py" train "$work/raw" --layers 2 --hidden 8 --heads 8 \
  --output-heads 1 --dropout 0.6 --attention-dropout 0.6 --threads 2 --epochs "$epochs" --warmup 2)
pyg_ms=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["epoch_ms_mean"])' "$pyg")
echo "# GAT epoch on an SBM of $nodes vertices ($pairs pairs), 2 layers 8x8 heads, 2 threads, 1 rank"
echo "# pyg: $pyg"
printf "halogen_ms %s  pyg_ms %s  ratio %.3f  (halogen --gat-dropout original: %s ms, ratio %.3f)\n" "$ours" "$pyg_ms" \
  "$(python3 -c "print($ours / $pyg_ms)")" "$original" "$(python3 -c "print($original / $pyg_ms)")"
