#!/usr/bin/env bash
# Halogen's first run, end to end with no external data: generate a stochastic-block-model graph, partition it
# for 2 ranks with METIS, train a 2-layer GCN on 2 MPI ranks, and print accuracy and epoch times.
#   usage: scripts/demo.sh [WORK_DIR]        (HALOGEN_BIN overrides the binary; default build/release)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${HALOGEN_BIN:-}"
if [[ -z "$BIN" ]]; then
  for candidate in "$ROOT/build/release/bin/halogen" "$ROOT/build/cpu/bin/halogen"; do
    [[ -x "$candidate" ]] && BIN="$candidate" && break
  done
fi
[[ -n "$BIN" && -x "$BIN" ]] || { echo "demo: build first (cmake --preset release && cmake --build --preset release)" >&2; exit 2; }
WORK="${1:-$ROOT/build/demo}"
mkdir -p "$WORK"
MPIRUN=(mpirun -np 2)
# Open MPI refuses root without these, and a laptop may have fewer than 2 slots.
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
if mpirun --version 2>/dev/null | grep -qi "open mpi"; then MPIRUN+=(--oversubscribe --bind-to none); fi

echo "== 1/3 generate: SBM, 20000 nodes, 8 classes, 64 features"
"$BIN" generate sbm --nodes 20000 --classes 8 --avg-degree 16 --homophily 0.7 --features 64 --seed 1 \
  -o "$WORK/sbm.h5"
echo "== 2/3 partition: METIS, 2 parts"
"$BIN" partition "$WORK/sbm.h5" -k 2 -o "$WORK/sbm.p2" --force
echo "== 3/3 train: GCN on 2 MPI ranks"
"${MPIRUN[@]}" "$BIN" train "$WORK/sbm.p2" --model gcn --layers 2 --hidden 64 --epochs 100 --eval-every 10 \
  --dropout 0.5 --lr 0.01 --metrics "$WORK/metrics.jsonl"
echo "metrics: $WORK/metrics.jsonl"
