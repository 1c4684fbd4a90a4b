#!/usr/bin/env bash
# EvolveGCN-O snapshots/s: `halogen train --model evolvegcn-o --task node` against the plain-PyTorch version of
# the same model (scripts/bench/torch_evolvegcn.py) on the same generated temporal SBM, same settings.
#
#   scripts/bench/evolvegcn_compare.sh [WORKDIR]          (default WORKDIR: /tmp/halogen_evolvegcn_compare)
#
# Environment (defaults): HALOGEN (build/release/bin/halogen), PYTHON (/usr/bin/python3: needs torch + h5py),
# NODES (100000), STEPS (20), FEATURES (16), CLASSES (8), HIDDEN (32), LAYERS (1), EPOCHS (3), THREADS ("1 2"),
# TORCH_ADJACENCY ("csr coo": torch runs once per sparse layout and the faster counts, to be fair to it),
# REPEAT (1: runs of each program per setting; the best counts, which filters out other load on a shared box).
# The graph (WORKDIR/ts-N-T.h5) and its 1-part partition are made once and reused. Prints one line per
# thread count: threads, halogen snapshots/s, torch snapshots/s per layout, ratio to the faster torch; the
# raw JSON lines and logs go to WORKDIR.
# A benchmark, not a test: the figures depend on the machine and its load.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
halogen=${HALOGEN:-$root/build/release/bin/halogen}
python=${PYTHON:-/usr/bin/python3}
work=${1:-/tmp/halogen_evolvegcn_compare}
nodes=${NODES:-100000} steps=${STEPS:-20} features=${FEATURES:-16} classes=${CLASSES:-8}
hidden=${HIDDEN:-32} layers=${LAYERS:-1} epochs=${EPOCHS:-3} threads_list=${THREADS:-"1 2"}
layouts=${TORCH_ADJACENCY:-"csr coo"} repeat=${REPEAT:-1}

[ -x "$halogen" ] || { echo "evolvegcn_compare: $halogen: no halogen binary (set HALOGEN=...)" >&2; exit 2; }
"$python" -c "import torch, h5py" 2>/dev/null ||
  { echo "evolvegcn_compare: $python lacks torch or h5py (set PYTHON=...)" >&2; exit 2; }
mkdir -p "$work"
graph=$work/ts-$nodes-$steps.h5
parts=$work/ts-$nodes-$steps.p1
if [ ! -f "$graph" ]; then
  "$halogen" generate temporal-sbm --nodes "$nodes" --steps "$steps" --features "$features" --classes "$classes" \
    --churn 0.1 --drift 0.02 --seed 1 -o "$graph"
fi
if [ ! -f "$parts/meta.json" ]; then
  "$halogen" partition "$graph" --parts 1 -o "$parts"
fi

field() { "$python" -c "import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])" "$1" "$2"; }

printf "%-8s %16s   %s   %s\n" threads halogen_snap/s "torch_snap/s per layout" "ratio (halogen / faster torch)"
best_of() { "$python" -c "import sys; print(max(float(v) for v in sys.argv[1:]))" "$@"; }
for threads in $threads_list; do
  ours=0
  for run in $(seq "$repeat"); do
    metrics=$work/halogen-t$threads-r$run.json
    rm -f "$metrics"
    OMP_NUM_THREADS=$threads "$halogen" train "$parts" --model evolvegcn-o --task node --layers "$layers" \
      --hidden "$hidden" --epochs "$epochs" --threads "$threads" --metrics "$metrics" >"$work/halogen-t$threads-r$run.log" 2>&1 ||
      { cat "$work/halogen-t$threads-r$run.log" >&2; exit 1; }
    ours=$(best_of "$ours" "$(field "$metrics" snapshots_per_s)")
  done
  torch_figures="" best=0
  for layout in $layouts; do
    layout_best=0
    for run in $(seq "$repeat"); do
      out=$work/torch-t$threads-$layout-r$run.json
      OMP_NUM_THREADS=$threads "$python" "$root/scripts/bench/torch_evolvegcn.py" "$graph" --layers "$layers" \
        --hidden "$hidden" --epochs "$epochs" --threads "$threads" --adjacency "$layout" >"$out"
      layout_best=$(best_of "$layout_best" "$(field "$out" snapshots_per_s)")
    done
    torch_figures="$torch_figures $layout $(printf %.2f "$layout_best")"
    best=$(best_of "$best" "$layout_best")
  done
  "$python" -c "import sys; o, t = float(sys.argv[2]), float(sys.argv[4]); print('%-8s %16.2f  %s   %.2fx' % (sys.argv[1], o, sys.argv[3], o / t))" \
    "$threads" "$ours" "$torch_figures" "$best"
done
