#!/usr/bin/env bash
# Dynamic graphs end to end through the `halogen` command: convert --format pgt-json, generate temporal-sbm
# (same seed, same sizes), partition, info (snapshot line) and info --check of the snapshot shards and link
# steps (meta.json records link_negatives);
# bad inputs exit 2 with one line naming the file and what is wrong.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A 4-vertex path given one way plus a self-loop (dropped), and a series of 3 time steps.
cat >"$work/tiny.json" <<'JSON'
{"edges": [[0, 1], [1, 2], [2, 3], [3, 3]], "weights": [1, 2, 3, 4],
 "FX": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]}
JSON
"$bin" convert "$work/tiny.json" -o "$work/tiny.h5" >/dev/null || fail "convert tiny.json"
info=$("$bin" info "$work/tiny.h5" --check) || fail "info tiny.h5"
grep -q "edges     6 stored" <<<"$info" || fail "tiny: expected 6 stored edges: $info"
grep -q "snapshots 3  stored edges per snapshot min 6  mean 6.0  max 6" <<<"$info" || fail "tiny: snapshot line: $info"
grep -q "targets   regression \[3, 4\]" <<<"$info" || fail "tiny: targets: $info"
"$bin" partition "$work/tiny.h5" -k 2 --method contiguous -o "$work/tiny.p2" >/dev/null || fail "partition tiny"
"$bin" info "$work/tiny.p2" --check >/dev/null || fail "info --check tiny.p2"

grep -q "^preprocess: none  (the values as given, as PGT's ChickenpoxDatasetLoader)" <<<"$info" ||
  fail "tiny: preprocess line: $info"

# convert --preprocess: an England-COVID-shaped file is standardised per node by default (region 0: mean 40,
# std 35.355..., so day 0 is -0.8485), recorded, shown by info FILE and info DIR, and trains; none keeps it raw.
cat >"$work/england_covid.json" <<'JSON'
{"time_periods": 8, "edge_mapping": {"edge_index": {"0": [[0, 1]], "1": [[1, 2]], "2": [[0, 2]], "3": [[0, 1]],
 "4": [[0, 1]], "5": [[1, 2]], "6": [[0, 2]], "7": [[0, 1]]}},
 "y": [[10, 0, 7], [30, 1, 7], [20, 5, 7], [100, 2, 7], [10, 0, 7], [30, 1, 7], [20, 5, 7], [100, 2, 7]]}
JSON
"$bin" convert "$work/england_covid.json" -o "$work/covid.h5" >"$work/covid.log" 2>&1 || fail "convert covid: $(cat "$work/covid.log")"
grep -q "preprocess: standardize per node ((y - mean_v) / (std_v + 1e-10)" "$work/covid.log" ||
  fail "convert did not print the transform: $(cat "$work/covid.log")"
info=$("$bin" info "$work/covid.h5" --check) || fail "info covid.h5"
grep -q "^preprocess: standardize per node  ((y - mean_v) / (std_v + 1e-10), mean and population std of each node's series over all 8 steps, as PGT's EnglandCovidDatasetLoader)" <<<"$info" ||
  fail "covid: preprocess line: $info"
python3 -c 'import h5py, numpy' 2>/dev/null && { python3 - "$work/covid.h5" <<'PY' || fail "covid: stored values or record wrong"; }
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    y = f["/node/label"][...]
    offset, scale = f["/node/label_offset"][...], f["/node/label_scale"][...]
    assert f["/node/label"].attrs["preprocess"] in (b"standardize per node", "standardize per node")
raw = np.array([[10, 0, 7], [30, 1, 7], [20, 5, 7], [100, 2, 7]] * 2, dtype=np.float64)
ref = (raw - raw.mean(axis=0)) / (raw.std(axis=0) + 1e-10)
ref[:, 2] = 0  # a constant series is kept as 0
assert np.allclose(y, ref, atol=1e-6), (y, ref)
assert np.allclose(y * scale + offset, raw, atol=1e-4)
PY
"$bin" partition "$work/covid.h5" -k 1 -o "$work/covid.p1" >/dev/null || fail "partition covid"
"$bin" info "$work/covid.p1" | grep -q "^preprocess: standardize per node  ((y - mean_v)" || fail "info DIR lacks the preprocess line"
"$bin" train "$work/covid.p1" --model tgcn --task regression --lags 2 --epochs 2 --quiet >"$work/covid-train.log" 2>&1 ||
  fail "train on the preprocessed file: $(cat "$work/covid-train.log")"
"$bin" convert "$work/england_covid.json" -o "$work/covid-raw.h5" --preprocess none >/dev/null || fail "convert --preprocess none"
"$bin" info "$work/covid-raw.h5" | grep -q "^preprocess: none  (the values as given, by --preprocess none; PGT's EnglandCovidDatasetLoader applies" ||
  fail "covid-raw: preprocess line: $("$bin" info "$work/covid-raw.h5")"

for run in a b; do
  "$bin" generate temporal-sbm --nodes 500 --steps 4 --churn 0.2 --drift 0.1 --seed 5 -o "$work/ts-$run.h5" \
    >/dev/null || fail "generate temporal-sbm"
done
cmp <("$bin" info "$work/ts-a.h5" | grep -v '^file') <("$bin" info "$work/ts-b.h5" | grep -v '^file') >/dev/null \
  || fail "temporal-sbm: same seed, different files"
"$bin" partition "$work/ts-a.h5" -k 3 -o "$work/ts.p3" >/dev/null || fail "partition temporal-sbm"
"$bin" info "$work/ts.p3" --check >/dev/null || fail "info --check ts.p3"
python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))['link_negatives'] == 1 else 1)" \
  "$work/ts.p3/meta.json" || fail "meta.json lacks link_negatives 1 (the default)"

# expect_rejected NAME EXPECTED-SUBSTRING command...
expect_rejected() {
  local name="$1" wanted="$2"
  shift 2
  local out rc
  out=$("$bin" "$@" 2>&1)
  rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit $rc, expected 2 (output: $out)"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$name: more than one line: $out"
  grep -qF -- "$wanted" <<<"$out" || fail "$name: message '$out' lacks '$wanted'"
  echo "ok  $name: $out"
}
printf '{"edges": [[0, 1]], "X": [[1, 2], [3, 4, 5]]}' >"$work/ragged.json"
expect_rejected ragged 'ragged.json: "X"[1]: expected a list of 2 node values, found 3' \
  convert "$work/ragged.json" -o "$work/out.h5"
printf '{"edges": [], "X": [[1, 2]]}' >"$work/empty.json"
expect_rejected empty 'empty.json: "edges" is empty: every snapshot would have no edges' \
  convert "$work/empty.json" -o "$work/out.h5"
[ ! -e "$work/out.h5" ] || fail "a rejected convert left out.h5 behind"
printf '1,2,1,0\n2,3,1,10\n3,1,1,35\n' >"$work/gap.csv"
expect_rejected empty-step 'gap.csv: time step 2 ([20, 30) s) has no edges' \
  convert --format snap-temporal --time-step 10 "$work/gap.csv" -o "$work/out.h5"
"$bin" convert --format snap-temporal --time-step 20 "$work/gap.csv" -o "$work/otc.h5" >/dev/null \
  || fail "snap-temporal with 20-second steps"
"$bin" info "$work/otc.h5" --check | grep -q "snapshots 2  stored edges per snapshot min 2  mean 3.0  max 4" \
  || fail "snap-temporal: snapshot line: $("$bin" info "$work/otc.h5")"
expect_rejected churn 'temporal-sbm: --churn must be in [0, 1]' \
  generate temporal-sbm --churn 2 -o "$work/out.h5"

# A graph file whose snapshot 1 spans 3 vertices instead of 4 (h5py available in CI for the io tests).
if python3 -c 'import h5py' 2>/dev/null; then
  python3 - "$work/tiny.h5" "$work/short.h5" <<'PY'
import shutil, sys, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    del f["/snapshots/00001/indptr"]
    f.create_dataset("/snapshots/00001/indptr", data=np.array([0, 1, 3, 5], dtype=np.int64), chunks=(4,),
                     fletcher32=True)  # with a checksum, as Halogen requires of every dataset
PY
  expect_rejected short-snapshot "short.h5: /snapshots/00001/indptr: expected shape [5], found [4]" \
    info "$work/short.h5" --check
  # A shard whose link step 1 lost its pair targets (link prediction data written by `halogen partition`).
  cp -r "$work/ts.p3" "$work/nolink.p3"
  python3 - "$work/nolink.p3/part-00002.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    del f["/link/00001/target"]
PY
  # (info prints the directory's description on stdout before checking: the error is the one line on stderr)
  out=$("$bin" info "$work/nolink.p3" --check 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] || fail "missing-link-dataset: exit $rc, expected 2 ($out)"
  [ "$out" = "halogen: error: $work/nolink.p3/part-00002.h5: /link/00001/target: missing" ] ||
    fail "missing-link-dataset: message '$out'"
  echo "ok  missing-link-dataset: $out"
fi
echo "all dynamic CLI checks passed"
