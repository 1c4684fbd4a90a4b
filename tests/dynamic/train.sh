#!/usr/bin/env bash
# Temporal training end to end through `halogen train --model M --task T` under mpirun:
#  - Chickenpox (../shared/data/temporal, lags 4, first 90% of the weeks train), 2 ranks: every model's test MSE
#    is below both naive forecasts (last value, training mean) printed in the same metrics file;
#  - link prediction on a generated temporal SBM, 2 ranks: MAP clearly above random ranking, and no buffer
#    allocated after the trainer's constructor (peak = bytes in use before epoch 1);
#  - bad input: a window longer than the training sequence, lags longer than the series, a task the graph has
#    no labels for, a static graph, --negatives unlike the partition's --link-negatives, a partition without
#    link pairs: exit 2 with one line.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
data="${HALOGEN_SHARED_DATA:-}/temporal/chickenpox.json"
models="${HALOGEN_TEMPORAL_MODELS:-tgcn evolvegcn-o gconvgru}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run2() { mpirun -np 2 --oversubscribe --bind-to none "$bin" train "$@" --threads 1; }
final() {  # final() FILE KEY: the value of KEY in the final metrics object
  python3 -c "import json,sys; d=[json.loads(l) for l in open(sys.argv[1])][-1]; assert d.get('final'); print(d[sys.argv[2]])" "$1" "$2"
}
less_than() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$1" "$2"; }

# Link prediction on a generated temporal SBM.
"$bin" generate temporal-sbm --nodes 1500 --steps 8 --churn 0.2 --drift 0.02 --features 8 --classes 4 --seed 3 \
  -o "$work/ts.h5" >/dev/null || fail "generate temporal-sbm"
"$bin" partition "$work/ts.h5" -k 2 -o "$work/ts.p2" --link-negatives 5 >/dev/null || fail "partition temporal-sbm"
for model in $models; do
  run2 "$work/ts.p2" --model "$model" --task link --negatives 5 --epochs 60 --window 2 --eval-every 60 --quiet \
    --metrics "$work/link-$model.json" >"$work/link.log" 2>&1 || { cat "$work/link.log"; fail "$model link training"; }
  map=$(final "$work/link-$model.json" test_map) || fail "$model: no test_map"
  random=$(final "$work/link-$model.json" random_map) || fail "$model: no random_map"
  echo "link prediction ($model, 2 ranks): test_map $map, random ranking $random"
  less_than "$(python3 -c "print($random + 0.15)")" "$map" || fail "$model: link MAP $map is not well above random $random"
done
cp "$work/link-tgcn.json" "$work/link.json" 2>/dev/null || cp "$work/link-${models%% *}.json" "$work/link.json"
# Memory is sized once: no buffer is allocated after the trainer's constructor.
[ "$(final "$work/link.json" allocated_bytes)" = "$(final "$work/link.json" bytes_before_training)" ] ||
  fail "buffers grew during training: $(tail -1 "$work/link.json")"

# Bad input: one line, exit 2.
expect_error() {  # expect_error PATTERN ARGS...
  local pattern="$1"
  shift
  local out
  out=$(run2 "$@" 2>&1)
  local code=$?
  [ "$code" -ne 0 ] || fail "expected a failure: $*"
  grep -q -- "$pattern" <<<"$out" || fail "expected '$pattern' from: $*; got: $out"
  # An error every rank meets alike is one line for the job, not one per rank.
  [ "$(grep -c "error:" <<<"$out")" -eq 1 ] || fail "not one error line from: $*; got: $out"
}
expect_error "window 50 is longer than the training sequence" "$work/ts.p2" --model tgcn --task link --window 50
expect_error "no regression series" "$work/ts.p2" --model tgcn --task regression
# The link pairs are the partition's: another --negatives asks for a re-partition; shards without link pairs
# (made before they were written; simulated by removing them) ask for one too.
expect_error "re-partition with \`halogen partition ... --link-negatives 3\`" "$work/ts.p2" --model tgcn --task link \
  --negatives 3
if python3 -c 'import h5py' 2>/dev/null; then
  cp -r "$work/ts.p2" "$work/old.p2"
  python3 - "$work/old.p2" <<'PY'
import json, sys, h5py
d = sys.argv[1]
meta = json.load(open(d + "/meta.json"))
del meta["link_negatives"]
json.dump(meta, open(d + "/meta.json", "w"))
for p in range(meta["num_parts"]):
    with h5py.File("%s/part-%05d.h5" % (d, p), "r+") as f:
        del f["/link"]
        del f.attrs["link_negatives"]
        del f.attrs["num_link_steps"]
PY
  expect_error "re-run \`halogen partition\`" "$work/old.p2" --model tgcn --task link
fi
"$bin" generate sbm --nodes 200 --features 4 -o "$work/static.h5" >/dev/null || fail "generate sbm"
"$bin" partition "$work/static.h5" -k 2 -o "$work/static.p2" >/dev/null || fail "partition sbm"
expect_error "not a dynamic graph" "$work/static.p2" --model tgcn --task node

if [ ! -f "$data" ]; then
  echo "chickenpox.json not found under HALOGEN_SHARED_DATA: skipping the Chickenpox part"
  exit 77
fi
"$bin" convert --format pgt-json "$data" -o "$work/cp.h5" >/dev/null || fail "convert chickenpox"
"$bin" partition "$work/cp.h5" -k 2 -o "$work/cp.p2" >/dev/null || fail "partition chickenpox"
expect_error "needs integer class labels" "$work/cp.p2" --model tgcn --task node
expect_error "lags 600 needs more than 600 time steps" "$work/cp.p2" --model tgcn --lags 600
for model in $models; do
  # EvolveGCN-O's weights evolve from one learned start: it needs several updates per epoch (windows of 93 of
  # the 465 training weeks); one window per epoch leaves it at the level of the training-mean forecast.
  extra=()
  [ "$model" = evolvegcn-o ] && extra=(--window 93)
  run2 "$work/cp.p2" --model "$model" --task regression --lags 4 --train-fraction 0.9 --epochs 100 --eval-every 100 \
    "${extra[@]}" --quiet --metrics "$work/$model.json" >"$work/$model.log" 2>&1 ||
    { cat "$work/$model.log"; fail "$model training"; }
  mse=$(final "$work/$model.json" test_mse) || fail "$model: no test_mse"
  last=$(final "$work/$model.json" baseline_last_mse)
  mean=$(final "$work/$model.json" baseline_mean_mse)
  echo "chickenpox $model (2 ranks, 100 epochs): test_mse $mse | baselines: last value $last, training mean $mean"
  less_than "$mse" "$last" || fail "$model: test MSE $mse is not below the last-value forecast $last"
  less_than "$mse" "$mean" || fail "$model: test MSE $mse is not below the training-mean forecast $mean"
done
