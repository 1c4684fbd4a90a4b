#!/usr/bin/env bash
# --edge-weight end to end: an SBM graph given symmetric edge weights (through scripts/graph_from_arrays.py, the
# way a weighted graph with features comes in) keeps them through `halogen convert`-equivalent writing and
# `halogen partition`; `halogen info` reports them; GCN, SAGE and APPNP with --edge-weight on 2 ranks equal
# 1 rank (1e-5 relative, as train.partition_invariance) and differ from the unweighted run (the weights are
# used); --edge-weight on a graph without weights stops with one clear line and exit 2.
# Skipped (77) when python3 lacks numpy/h5py.
source "$(dirname "$0")/common.sh"
python3 -c 'import numpy, h5py' 2>/dev/null || { echo "skipped: python3 lacks numpy/h5py"; exit 77; }
SRC="${HALOGEN_SOURCE_DIR:?}"
"$HALOGEN_BIN" generate sbm --nodes 800 --classes 4 --features 16 --avg-degree 8 --seed 5 -o "$WORK/plain.h5" >/dev/null
python3 - "$WORK/plain.h5" "$WORK/arrays.npz" <<'PY'
import sys
import h5py
import numpy as np
with h5py.File(sys.argv[1], "r") as f:
    indptr, indices = f["csr/indptr"][:], f["csr/indices"][:]
    src = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    keep = src < indices  # each undirected pair once; the converter mirrors it with the same weight
    a, b = src[keep], indices[keep]
    weight = (0.25 + ((a * 2654435761 + b * 40503) % 8) / 4.0).astype(np.float32)
    np.savez(sys.argv[2], edge_index=np.stack([a, b]), edge_weight=weight, x=f["node/feat"][:],
             y=f["node/label"][:], train=f["split/train"][:], valid=f["split/valid"][:], test=f["split/test"][:],
             num_nodes=len(indptr) - 1)
PY
python3 "$SRC/scripts/graph_from_arrays.py" "$WORK/arrays.npz" -o "$WORK/weighted.h5" --name weighted >/dev/null
"$HALOGEN_BIN" info "$WORK/weighted.h5" | grep -q "^weights   yes" || fail "info does not report the weights"
"$HALOGEN_BIN" info "$WORK/plain.h5" | grep -q "^weights   none" || fail "info reports weights on an unweighted graph"
for k in 1 2; do
  "$HALOGEN_BIN" partition "$WORK/weighted.h5" -k $k -o "$WORK/w$k" >/dev/null
  python3 -c "import h5py,sys; sys.exit(0 if 'weight' in h5py.File('$WORK/w$k/part-00000.h5','r')['csr'] else 1)" ||
    fail "the partition dropped /csr/weight"
  "$HALOGEN_BIN" info "$WORK/w$k" | grep -q "^weights   yes" || fail "info on the partition does not report the weights"
done
"$HALOGEN_BIN" partition "$WORK/plain.h5" -k 1 -o "$WORK/plain1" >/dev/null
"$HALOGEN_BIN" info "$WORK/plain1" | grep -q "^weights   none" || fail "info reports weights on an unweighted partition"
run() {  # model np extra-flags... -> metrics file
  local model=$1 np=$2; shift 2
  local out="$WORK/$model-np$np$(echo "$@" | tr -d ' -').jsonl"
  timeout 120 "${MPIRUN[@]}" -np "$np" "$HALOGEN_BIN" train "$WORK/w$np" --model "$model" --hidden 16 --appnp-k 5 \
    --epochs 15 --lr 0.02 --seed 4 --quiet --metrics "$out" "$@" >/dev/null
  echo "$out"
}
for model in gcn sage appnp; do
  reference=$(run $model 1 --edge-weight)
  compare "$reference" "$(run $model 2 --edge-weight)" --rel 1e-5 --final || fail "$model --edge-weight: 2 ranks != 1"
  if compare "$reference" "$(run $model 1)" --rel 1e-3 >/dev/null; then fail "$model: --edge-weight changes nothing"; fi
done
set +e
message=$("${MPIRUN[@]}" -np 1 "$HALOGEN_BIN" train "$WORK/plain1" --edge-weight --epochs 2 --quiet 2>&1 >/dev/null)
status=$?
set -e
[[ $status -eq 2 ]] || fail "--edge-weight on an unweighted graph: exit $status, expected 2"
[[ $(grep -c "error: --edge-weight: .*no edge weights" <<<"$message") -eq 1 ]] ||
  fail "--edge-weight on an unweighted graph: expected one error line, got: $message"
echo "edge weights: OK"
