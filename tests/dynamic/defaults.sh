#!/usr/bin/env bash
# The temporal per-model defaults (apps/cmd_train.cpp, docs/dynamic.md "Defaults"): with nothing but
# `--task regression` and a seed, T-GCN on Chickenpox (1 rank) beats both naive forecasts, and the metrics
# header records the defaults it ran with (50 epochs, hidden 32, weight decay 0); `train --help` shows them.
# The full table (every temporal model, seeds 0-2) is in docs/dynamic.md; this is its shortest row.
# Exits 77 (skipped) without ../shared/data.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
data="${HALOGEN_SHARED_DATA:-}/temporal/chickenpox.json"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$bin" train --help | grep -q "temporal models: 50)" || fail "train --help does not show the defaults"
[ -f "$data" ] || { echo "chickenpox.json not found under HALOGEN_SHARED_DATA: skipped"; exit 77; }
"$bin" convert --format pgt-json "$data" -o "$work/cp.h5" >/dev/null || fail "convert chickenpox"
"$bin" partition "$work/cp.h5" -k 1 -o "$work/cp.p1" >/dev/null || fail "partition chickenpox"
"$bin" train "$work/cp.p1" --model tgcn --task regression --seed 0 --threads 1 --quiet --metrics "$work/m.jsonl" \
  >"$work/log" 2>&1 || { cat "$work/log"; fail "training"; }
python3 - "$work/m.jsonl" <<'PY' || fail "T-GCN with the defaults does not beat both naive forecasts"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
config, final = lines[0]["config"], lines[-1]
assert (config["epochs"], config["hidden"], config["weight-decay"], config["eval-every"]) == (50, 32, 0.0, 10), config
mse, last, mean = final["test_mse"], final["baseline_last_mse"], final["baseline_mean_mse"]
print(f"tgcn, defaults, seed 0: test_mse {mse:.4f} | baselines: last value {last:.4f}, training mean {mean:.4f}")
# Measured 0.9995 against 1.1175 (seed 0; seeds 0-2: 0.9995-1.0308): the margin is 10%, far above the
# run-to-run spread of float summation order, so a plain "<" is the property.
sys.exit(0 if mse < last and mse < mean else 1)
PY
