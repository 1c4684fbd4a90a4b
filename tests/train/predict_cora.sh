#!/usr/bin/env bash
# `halogen predict` from a --save-best checkpoint (issue 16's done-when): GCN on Cora trained on 2 ranks with
# --save-best; predict on a 1-part and on a 2-part partition of the same graph gives identical predictions, and
# their test accuracy, computed here from the graph file's labels and test split, equals the run's reported
# test_acc_at_best exactly (the same counts divided by the same total). Also: --embeddings, a checkpoint file
# named directly, and a partition of another graph refused. Skipped (77) without ../shared/data or h5py.
source "$(dirname "$0")/common.sh"
CORA="${HALOGEN_SHARED_DATA:-/nonexistent}/ogb-format/cora"
[[ -d "$CORA" ]] || { echo "skipped: $CORA not found"; exit 77; }
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "skipped: python3 lacks h5py/numpy"; exit 77; }
"$HALOGEN_BIN" convert "$CORA" --format ogb -o "$WORK/cora.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/cora.h5" -k 1 -o "$WORK/cora.p1" >/dev/null
"$HALOGEN_BIN" partition "$WORK/cora.h5" -k 2 -o "$WORK/cora.p2" >/dev/null
timeout 120 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/cora.p2" --model gcn --layers 2 --hidden 16 --dropout 0.5 \
  --lr 0.01 --weight-decay 5e-4 --epochs 200 --row-normalize --seed 1 --quiet --save-best --checkpoint "$WORK/ck" \
  --metrics "$WORK/m.jsonl" >/dev/null || fail "training"
[[ -f "$WORK/ck/best.h5" && -f "$WORK/ck/last.h5" ]] || fail "expected best.h5 and last.h5 in $(ls "$WORK/ck")"
predict() { timeout 120 "${MPIRUN[@]}" -np "$1" "$HALOGEN_BIN" predict "${@:2}"; }
predict 1 "$WORK/cora.p1" --checkpoint "$WORK/ck" --output "$WORK/p1.h5" >/dev/null || fail "predict on 1 rank"
predict 2 "$WORK/cora.p2" --checkpoint "$WORK/ck" --output "$WORK/p2.h5" >/dev/null || fail "predict on 2 ranks"
predict 2 "$WORK/cora.p2" --checkpoint "$WORK/ck/last.h5" --output "$WORK/last.h5" >/dev/null || fail "predict from last.h5"
predict 2 "$WORK/cora.p2" --checkpoint "$WORK/ck" --embeddings 0 --output "$WORK/e0.h5" >/dev/null || fail "--embeddings 0"
predict 1 "$WORK/cora.p1" --checkpoint "$WORK/ck" --embeddings 1 --output "$WORK/e1.h5" >/dev/null || fail "--embeddings 1"
python3 - "$WORK" <<'PY' || fail "predictions"
import h5py, json, numpy as np, sys
w = sys.argv[1]
final = json.loads(open(f"{w}/m.jsonl").read().splitlines()[-1])
assert final.get("final"), "no final metrics record"
g = h5py.File(f"{w}/cora.h5", "r")
labels, test = g["node/label"][:], g["split/test"][:]
test = test[labels[test] >= 0]
p1, p2 = h5py.File(f"{w}/p1.h5", "r"), h5py.File(f"{w}/p2.h5", "r")
n, c = labels.shape[0], int(labels.max()) + 1
for p in (p1, p2):
    assert p["probabilities"].shape == (n, c) and p["probabilities"].dtype == np.float32
    assert p["predicted"].shape == (n,) and p["predicted"].dtype == np.int32
    # float32 softmax of 7 classes summed in float64: within a few ulp of 1.
    assert np.abs(p["probabilities"][:].astype(np.float64).sum(axis=1) - 1).max() < 1e-5
assert np.array_equal(p1["predicted"][:], p2["predicted"][:]), "1-rank and 2-rank predictions differ"
assert np.array_equal(p1["predicted"][:], p1["probabilities"][:].argmax(axis=1))
acc = float(np.sum(p2["predicted"][:][test] == labels[test])) / len(test)
best_epoch = int(h5py.File(f"{w}/ck/best.h5", "r").attrs["epoch"])
print(f"predict: test accuracy {acc:.4f} (1 and 2 ranks identical); training reported test_acc_at_best "
      f"{final['test_acc_at_best']:.4f} at epoch {final['best_epoch']} (best.h5: epoch {best_epoch})")
assert best_epoch == final["best_epoch"]
assert acc == final["test_acc_at_best"], (acc, final["test_acc_at_best"])
last = h5py.File(f"{w}/last.h5", "r")
assert int(last.attrs["epoch"]) == 200
e0, e1 = h5py.File(f"{w}/e0.h5", "r")["embeddings"][:], h5py.File(f"{w}/e1.h5", "r")["embeddings"][:]
assert e0.shape == (n, 16) and e0.min() >= 0, "layer 0's embeddings are relu outputs"
assert e1.shape == (n, c) and np.array_equal(e1.argmax(axis=1), p1["predicted"][:]), "layer 1's output is the logits"
PY
# A partition of another graph is refused, naming both checksums.
"$HALOGEN_BIN" generate sbm --nodes 100 --classes 7 --features 1433 --avg-degree 4 --seed 1 -o "$WORK/other.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/other.h5" -k 1 -o "$WORK/other.p1" >/dev/null
if predict 1 "$WORK/other.p1" --checkpoint "$WORK/ck" --output "$WORK/x.h5" 2>"$WORK/err" >/dev/null; then
  fail "predict on another graph succeeded"
fi
grep -q "the checkpoint was trained on the graph with checksum .*, the partition .* is of the graph with checksum" \
  "$WORK/err" || fail "unclear error: $(cat "$WORK/err")"
[[ ! -e "$WORK/x.h5" ]] || fail "a refused predict wrote its output"
echo "predict: OK"
