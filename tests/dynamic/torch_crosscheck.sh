#!/usr/bin/env bash
# EvolveGCN-O, two independent implementations: `halogen train --model evolvegcn-o --task node` and the plain
# PyTorch model of scripts/bench/torch_evolvegcn.py started from the same weights (--init halogen: Halogen's
# Philox Glorot streams) must give the same training loss at every epoch, on a generated temporal SBM, for
#  - 1 layer, hidden 16 > 8 features (aggregate first: (Â X) W), 1 rank;
#  - 2 layers, hidden 4 < 8 features (transform first in layer 0: Â (X W)), seed 3, 2 ranks.
# Skipped (77) when no python with torch and h5py is found (PYTHON, else /usr/bin/python3), or while the
# binary's EvolveGCN-O is still the "not built yet" stub.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
src="${HALOGEN_SOURCE_DIR:?HALOGEN_SOURCE_DIR not set}"
python="${PYTHON:-/usr/bin/python3}"
"$python" -c "import torch, h5py" 2>/dev/null || { echo "SKIP: $python lacks torch or h5py"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" generate temporal-sbm --nodes 600 --steps 4 --churn 0.2 --drift 0.05 --features 8 --classes 3 --seed 2 \
  -o "$work/ts.h5" >/dev/null || fail "generate temporal-sbm"
"$bin" partition "$work/ts.h5" -k 1 -o "$work/ts.p1" >/dev/null || fail "partition -k 1"
"$bin" partition "$work/ts.h5" -k 2 -o "$work/ts.p2" >/dev/null || fail "partition -k 2"

compare() {  # compare NAME RANKS LAYERS HIDDEN SEED
  local name=$1 ranks=$2 layers=$3 hidden=$4 seed=$5 epochs=6
  local dir=$work/ts.p$ranks
  local args=(train "$dir" --model evolvegcn-o --task node --layers "$layers" --hidden "$hidden" --seed "$seed"
              --epochs "$epochs" --eval-every 1 --quiet --threads 1 --metrics "$work/$name.json")
  if [ "$ranks" = 1 ]; then "$bin" "${args[@]}" >"$work/$name.log" 2>&1
  else mpirun -np "$ranks" --oversubscribe --bind-to none "$bin" "${args[@]}" >"$work/$name.log" 2>&1; fi ||
    { grep -q "model is not built yet" "$work/$name.log" && { echo "SKIP: $(cat "$work/$name.log")"; exit 77; }
      cat "$work/$name.log"; fail "$name: halogen train"; }
  "$python" "$src/scripts/bench/torch_evolvegcn.py" "$work/ts.h5" --layers "$layers" --hidden "$hidden" \
    --seed "$seed" --epochs "$epochs" --init halogen >"$work/$name.torch.json" || fail "$name: torch_evolvegcn.py"
  # Relative 1e-4: both run in float32 with different summation orders (BLAS, sparse products, 2 ranks'
  # allreduce) through 6 Adam steps; a wrong term in either model changes the first epoch's loss by far more.
  "$python" - "$work/$name.json" "$work/$name.torch.json" "$name" <<'PY' || fail "$name: losses differ"
import json, sys
ours = [json.loads(l)["loss"] for l in open(sys.argv[1]) if "epoch" in json.loads(l) and not json.loads(l).get("final")]
theirs = json.loads(open(sys.argv[2]).read().splitlines()[-1])["losses"]
print(f"{sys.argv[3]}: halogen {[round(v, 6) for v in ours]}\n{' ' * len(sys.argv[3])}  torch   {theirs}")
assert len(ours) == len(theirs), (len(ours), len(theirs))
bad = [(e, a, b) for e, (a, b) in enumerate(zip(ours, theirs)) if abs(a - b) > 1e-4 * abs(b) + 1e-5]
# the torch losses are printed to 5 decimals: 1e-5 absolute covers that rounding
sys.exit(1 if bad else 0)
PY
}

compare one_layer 1 1 16 0
compare two_layers_two_ranks 2 2 4 3
echo "OK: halogen and torch EvolveGCN-O losses agree at every epoch"
