#!/usr/bin/env bash
# --resume rules (issue 15, finding 11): a checkpoint records its graph (meta.json's graph checksum) and the
# options that determine the arithmetic (train/run_options.h). Resuming
#   - on another graph of the same sizes, or with a changed --lr, --dropout, --weight-decay,
#     --weight-decay-all-layers, --hidden, --layers, --model, --seed or --row-normalize is refused (exit 2) with
#     one line naming the graph checksums or the option with both values, and leaves the checkpoint untouched;
#   - with changed --epochs, --metrics, --quiet, --eval-every, --patience, --checkpoint-every, with --lr and
#     --allow-lr-change, or on another partition (P = 2) of the same graph is accepted.
# Also: the checkpoint is HDF5 with the documented datasets and attributes (read here with h5py).
source "$(dirname "$0")/common.sh"
python3 -c 'import h5py' 2>/dev/null || { echo "skipped: python3 lacks h5py (scripts/install-deps.sh)"; exit 77; }
gen() { "$HALOGEN_BIN" generate sbm --nodes 300 --classes 3 --features 8 --avg-degree 6 --seed "$1" -o "$2" >/dev/null; }
gen 5 "$WORK/g.h5"
gen 6 "$WORK/other.h5"  # the same sizes, another graph
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 1 -o "$WORK/g.p1" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 -o "$WORK/g.p2" >/dev/null
"$HALOGEN_BIN" partition "$WORK/other.h5" -k 1 -o "$WORK/other.p1" >/dev/null
base=(--model gcn --layers 2 --hidden 16 --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --seed 4)
train() { timeout 60 "${MPIRUN[@]}" -np "$1" "$HALOGEN_BIN" train "${@:2}"; }
attr() { python3 -c "import h5py,sys; v=h5py.File(sys.argv[1],'r').attrs[sys.argv[2]]; print(v.decode() if isinstance(v,bytes) else v)" "$@"; }

train 1 "$WORK/g.p1" "${base[@]}" --epochs 3 --quiet --checkpoint "$WORK/ck" >/dev/null || fail "first run"
ck="$WORK/ck/last.h5"
[[ "$(ls -A "$WORK/ck")" == "last.h5" ]] || fail "checkpoint directory holds $(ls -A "$WORK/ck"), not last.h5 alone"
python3 - "$ck" "$WORK/g.p1/meta.json" <<'PY' || fail "checkpoint layout"
import h5py, json, sys
f = h5py.File(sys.argv[1], "r")
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
meta = json.load(open(sys.argv[2]))
assert text(f.attrs["format"]) == "halogen.checkpoint" and int(f.attrs["format_version"]) == 1
assert int(f.attrs["epoch"]) == 3 and text(f.attrs["model"]) == "gcn" and int(f.attrs["rng_seed"]) == 4
assert text(f.attrs["graph_checksum"]) == meta["graph"]["checksum"]
config = json.loads(text(f.attrs["config"]))
expected = {"model": "gcn", "layers": 2, "hidden": 16, "dropout": 0.5, "seed": 4, "lr": 0.01, "weight_decay": 0.0005,
            "weight_decay_all_layers": False, "row_normalize": False}
assert config == expected, config
assert json.loads(text(f.attrs["partition"]))["parts"] == 1
shapes = {"layers/0/weight": (8, 16), "layers/0/bias": (16,), "layers/1/weight": (16, 3), "layers/1/bias": (3,)}
for root in ("", "optimizer/m/", "optimizer/v/"):
    for name, shape in shapes.items():
        assert f[root + name].shape == shape and f[root + name].dtype == "float32", (root + name, f[root + name].shape)
assert int(f["optimizer"].attrs["steps"]) == 3
PY
before="$(md5sum "$ck")"

refused() {  # refused EXPECTED_MESSAGE NP DIR OPTIONS...
  local expected="$1"
  if train "${@:2}" --epochs 5 --quiet --checkpoint "$WORK/ck" --resume >/dev/null 2>"$WORK/err"; then
    fail "resume with ${*:4} was accepted"
  fi
  # One error line for the job (mpirun adds its own notice of the exit status after it).
  [[ $(grep -c "error" "$WORK/err") == 1 ]] || fail "resume with ${*:4}: not one error line: $(cat "$WORK/err")"
  grep -qF -- "$expected" "$WORK/err" || fail "resume with ${*:4}: expected '$expected', got: $(cat "$WORK/err")"
  [[ "$(md5sum "$ck")" == "$before" ]] || fail "a refused resume changed the checkpoint"
  echo "refused: ${*:3}"
}
checksum() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['graph']['checksum'])" "$1/meta.json"; }
refused "--resume on another graph: the checkpoint was trained on the graph with checksum $(checksum "$WORK/g.p1"), this partition's graph has checksum $(checksum "$WORK/other.p1")" \
  1 "$WORK/other.p1" "${base[@]}"
without() {  # the base options without option $1 and its value
  local out=() skip=0
  for a in "${base[@]}"; do
    if ((skip)); then skip=0; continue; fi
    if [[ "$a" == "$1" ]]; then skip=1; continue; fi
    out+=("$a")
  done
  echo "${out[@]}"
}
# shellcheck disable=SC2046
{
refused "--lr is 0.02, the checkpoint was trained with 0.01 (--allow-lr-change" 1 "$WORK/g.p1" $(without --lr) --lr 0.02
refused "--dropout is 0.3, the checkpoint was trained with 0.5" 1 "$WORK/g.p1" $(without --dropout) --dropout 0.3
refused "--weight-decay is 0.001, the checkpoint was trained with 0.0005" 1 "$WORK/g.p1" $(without --weight-decay) --weight-decay 1e-3
refused "--weight-decay-all-layers is true, the checkpoint was trained with false" 1 "$WORK/g.p1" "${base[@]}" --weight-decay-all-layers
refused "--hidden is 8, the checkpoint was trained with 16" 1 "$WORK/g.p1" $(without --hidden) --hidden 8
refused "--layers is 3, the checkpoint was trained with 2" 1 "$WORK/g.p1" $(without --layers) --layers 3
refused "--model is sage, the checkpoint was trained with gcn" 1 "$WORK/g.p1" $(without --model) --model sage
refused "--seed is 5, the checkpoint was trained with 4" 1 "$WORK/g.p1" $(without --seed) --seed 5
refused "--row-normalize is true, the checkpoint was trained with false" 1 "$WORK/g.p1" "${base[@]}" --row-normalize
}
# Nothing left to train: --epochs at or below the checkpoint's epoch (3) is refused, the checkpoint unchanged.
for epochs in 2 3; do
  if train 1 "$WORK/g.p1" "${base[@]}" --epochs "$epochs" --quiet --checkpoint "$WORK/ck" --resume >/dev/null 2>"$WORK/err"; then
    fail "resume with --epochs $epochs after epoch 3 was accepted"
  fi
  grep -qF "the checkpoint is after epoch 3, so --epochs $epochs leaves nothing to train (pass --epochs above 3" \
    "$WORK/err" || fail "resume with --epochs $epochs: $(cat "$WORK/err")"
  [[ "$(md5sum "$ck")" == "$before" ]] || fail "a refused resume changed the checkpoint"
  echo "refused: --epochs $epochs"
done

# Accepted: loop options changed (and --quiet dropped), then --lr with --allow-lr-change, then another partition.
cp -r "$WORK/ck" "$WORK/ck.loop"
train 1 "$WORK/g.p1" "${base[@]}" --epochs 5 --eval-every 2 --patience 9 --checkpoint-every 1 --metrics "$WORK/m.jsonl" \
  --checkpoint "$WORK/ck.loop" --resume >/dev/null || fail "resume with changed loop options"
[[ "$(attr "$WORK/ck.loop/last.h5" epoch)" == 5 ]] || fail "resume with changed loop options did not reach epoch 5"
cp -r "$WORK/ck" "$WORK/ck.lr"
# shellcheck disable=SC2046
train 1 "$WORK/g.p1" $(without --lr) --lr 0.02 --allow-lr-change --epochs 4 --quiet --checkpoint "$WORK/ck.lr" \
  --resume >/dev/null || fail "resume with --lr 0.02 --allow-lr-change"
python3 -c "import h5py,json,sys; c=json.loads(h5py.File(sys.argv[1],'r').attrs['config']); sys.exit(0 if c['lr']==0.02 else 1)" \
  "$WORK/ck.lr/last.h5" || fail "the checkpoint after --allow-lr-change does not record the new lr"
cp -r "$WORK/ck" "$WORK/ck.p2"
train 2 "$WORK/g.p2" "${base[@]}" --epochs 4 --quiet --checkpoint "$WORK/ck.p2" --resume >/dev/null ||
  fail "resume on another partition (P = 2) of the same graph"
# A checkpoint whose epoch attributes are out of range (edited by hand, or damaged) is refused with one line
# naming the file and attribute, by --resume and by predict; no epoch of training runs.
for bad in "epoch=-3" "epoch=1000000000000000" "best_epoch=9"; do
  cp -r "$WORK/ck" "$WORK/ck.bad"
  python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); k,v=sys.argv[2].split('='); f.attrs[k]=int(v)" \
    "$WORK/ck.bad/last.h5" "$bad"
  set +e
  out=$(train 1 "$WORK/g.p1" "${base[@]}" --epochs 5 --quiet --checkpoint "$WORK/ck.bad" --resume 2>&1)
  rc=$?
  set -e
  [[ $rc -ne 0 && $rc -lt 128 && "$out" == *"last.h5: ${bad%%=*}:"* ]] ||
    fail "--resume from a checkpoint with $bad: exit $rc, output: $out"
  set +e
  out=$(timeout 60 "$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/ck.bad/last.h5" -o "$WORK/pred.h5" 2>&1)
  rc=$?
  set -e
  [[ $rc -ne 0 && $rc -lt 128 && "$out" == *"last.h5: ${bad%%=*}:"* ]] ||
    fail "predict from a checkpoint with $bad: exit $rc, output: $out"
  rm -rf "$WORK/ck.bad"
done
# Outputs never replace inputs: predict -o the graph file, train --metrics the partition's meta.json or a shard.
refused() {  # refused WHAT FILE CMD...: exit 2 (not a signal), one line naming the flag, FILE unchanged
  local what=$1 file=$2 before out rc
  shift 2
  before=$(md5sum "$file")
  set +e
  out=$("$@" 2>&1)
  rc=$?
  set -e
  [[ $rc -ne 0 && $rc -lt 128 && "$out" == *"$what"*"is also the input"* ]] || fail "$what over $file: exit $rc, output: $out"
  [[ "$(md5sum "$file")" == "$before" ]] || fail "$what over $file changed it"
}
refused --output "$WORK/g.h5" timeout 60 "$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/ck" -o "$WORK/g.h5"
refused --metrics "$WORK/g.p1/meta.json" train 1 "$WORK/g.p1" "${base[@]}" --epochs 1 --metrics "$WORK/g.p1/meta.json"
refused --metrics "$WORK/g.p2/part-00001.h5" train 2 "$WORK/g.p2" "${base[@]}" --epochs 1 \
  --metrics "$WORK/g.p2/part-00001.h5"
# A NaN weight with a valid checksum (another tool wrote it): predict refuses it rather than output NaN.
cp "$WORK/reuse/best.h5" "$WORK/nan.h5" 2>/dev/null || cp "$ck" "$WORK/nan.h5"
python3 - "$WORK/nan.h5" <<'PY' || fail "making the NaN checkpoint"
import h5py, numpy as np, sys
f = h5py.File(sys.argv[1], "r+")
w = f["layers/0/weight"][...]
w.flat[3] = np.nan
f["layers/0/weight"][...] = w
PY
if timeout 60 "$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/nan.h5" -o "$WORK/nan_pred.h5" 2>"$WORK/err"; then
  fail "predict accepted a NaN weight"
fi
grep -qF "nan.h5: /layers/0/weight: element 3 is not finite (nan)" "$WORK/err" || fail "NaN weight: $(cat "$WORK/err")"
[[ ! -e "$WORK/nan_pred.h5" ]] || fail "predict wrote predictions from a NaN weight"
echo "a NaN weight: refused by predict"
# A new run in a used directory: the earlier run's best.h5 goes (predict would take it for this run's).
train 1 "$WORK/g.p1" "${base[@]}" --epochs 3 --quiet --checkpoint "$WORK/reuse" --save-best >/dev/null || fail "reuse 1"
[[ -f "$WORK/reuse/best.h5" ]] || fail "--save-best wrote no best.h5"
train 1 "$WORK/g.p1" $(without --model) --model sage --epochs 3 --quiet --checkpoint "$WORK/reuse" >"$WORK/out" ||
  fail "reuse 2"
grep -qF "removed $WORK/reuse/best.h5 of an earlier run" "$WORK/out" || fail "no notice of the removed best.h5"
[[ ! -e "$WORK/reuse/best.h5" ]] || fail "a stale best.h5 from a gcn run was left beside a sage run's last.h5"
[[ "$(attr "$WORK/reuse/last.h5" model)" == sage ]] || fail "last.h5 is not the new run's"
echo "a new run in a used directory: the earlier best.h5 removed"
# best.h5 deleted, then --resume --save-best: one warning line says the best model is gone (before: nothing, and
# the done line named a best epoch whose model no file held); predict names the file it read (last.h5).
train 1 "$WORK/g.p1" "${base[@]}" --epochs 3 --quiet --checkpoint "$WORK/gone" --save-best >/dev/null || fail "gone 1"
rm "$WORK/gone/best.h5"
train 1 "$WORK/g.p1" "${base[@]}" --epochs 5 --quiet --checkpoint "$WORK/gone" --save-best --resume >"$WORK/out" \
  2>"$WORK/err" || fail "resume --save-best without best.h5: $(cat "$WORK/err")"
[[ $(grep -c "best.h5" "$WORK/err") == 1 ]] || fail "resume without best.h5: not one line: $(cat "$WORK/err")"
grep -q "^warning: --save-best: $WORK/gone/best.h5, the model of epoch [0-9]* (valid [0-9.]*), is gone" "$WORK/err" ||
  fail "resume without best.h5: $(cat "$WORK/err")"
if [[ ! -e "$WORK/gone/best.h5" ]]; then
  timeout 60 "$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/gone" -o "$WORK/gone.pred.h5" >"$WORK/out" ||
    fail "predict from a directory without best.h5"
  grep -qF "checkpoint $WORK/gone/last.h5:" "$WORK/out" || fail "predict does not name last.h5: $(cat "$WORK/out")"
fi
echo "resume --save-best without best.h5: $(grep best.h5 "$WORK/err")"
echo "checkpoint rules: OK"
