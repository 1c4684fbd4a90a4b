#!/usr/bin/env bash
# No input crashes a command (issue 15, findings 6, 8, 12, 13): each case ends with one clear line and exit 2
# (or, for a clamped thread count, a warning and a normal run), never the OOM killer, a libgomp abort or a raw
# library message; under mpirun -np 2 a job-wide error is printed once, not once per rank.
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 300 --classes 3 --features 8 --avg-degree 6 --seed 2 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 -o "$WORK/p2" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 1 -o "$WORK/p1" >/dev/null

# expect NAME STATUS PATTERN COMMAND...: the exit status, PATTERN (fixed string) in stderr, and when STATUS is 2,
# exactly one line in stderr holding it (once per job) and no raw library text.
expect() {
  local name=$1 want=$2 pattern=$3 status=0
  shift 3
  timeout 120 "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  [[ $status -eq $want ]] || fail "$name: exit $status, expected $want; stderr: $(cat "$WORK/err")"
  cat "$WORK/out" "$WORK/err" >"$WORK/both"
  grep -qF -- "$pattern" "$WORK/both" || fail "$name: expected '$pattern' in: $(cat "$WORK/both")"
  if [[ $want -eq 2 ]]; then
    [[ $(grep -cF -- "$pattern" "$WORK/err") -eq 1 ]] || fail "$name: the message is printed more than once: $(cat "$WORK/err")"
    ! grep -qE 'json\.exception|basic_filebuf|std::|what\(\)' "$WORK/err" || fail "$name: raw library text: $(cat "$WORK/err")"
  fi
  echo "ok $name: exit $status, $(grep -m1 -F -- "$pattern" "$WORK/both")"
}
TRAIN=("${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" --epochs 2 --quiet)

# Finding 6: memory planned before allocation.
expect "hidden 1048576 beyond the memory available" 2 "needs" \
  env HALOGEN_MEMORY_AVAILABLE_MIB=1024 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" --epochs 1 --hidden 1048576
expect "the memory check can be overridden" 0 "done:" \
  env HALOGEN_MEMORY_AVAILABLE_MIB=0 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" --epochs 1 --ignore-memory-check
expect "bench epoch plans memory as train does" 2 "needs" \
  env HALOGEN_MEMORY_AVAILABLE_MIB=1024 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" bench epoch "$WORK/p2" --epochs 1 --hidden 1048576
expect "bench epoch refuses a NaN dropout as train does" 2 "--dropout: value nan must be a finite number in [0, 1)" \
  "$HALOGEN_BIN" bench epoch "$WORK/p2" --epochs 1 --dropout nan
expect "plan refuses a NaN dropout as train does" 2 "--dropout: value nan must be a finite number in [0, 1)" \
  "$HALOGEN_BIN" plan "$WORK/p2" --dropout nan
expect "bench epoch --ignore-memory-check" 0 "overlap" \
  env HALOGEN_MEMORY_AVAILABLE_MIB=0 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" bench epoch "$WORK/p2" --epochs 1 --warmup 0 \
  --ignore-memory-check
if python3 -c "import h5py" 2>/dev/null; then
  cp -r "$WORK/p2" "$WORK/label"
  python3 - "$WORK/label/part-00001.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    labels = f["/node/label"][...]
    labels[0] = 33554432
    f["/node/label"][...] = labels
    f.attrs["num_classes"] = 33554433
PY
  expect "a shard label of 33554432" 2 "part-00001.h5: attribute num_classes is 33554433, meta.json says 3" \
    "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/label" --epochs 1
else
  echo "skip the shard-label case: h5py missing"
fi

# Finding 8: thread counts clamped to the node's CPUs (libgomp crashed creating 100000 threads).
expect "--threads 100000" 0 "asks for 100000 OpenMP threads, but this node has" \
  "$HALOGEN_BIN" train "$WORK/p1" --epochs 1 --quiet --threads 100000
expect "OMP_NUM_THREADS=100000" 0 "OMP_NUM_THREADS asks for 100000 OpenMP threads" \
  env OMP_NUM_THREADS=100000 "$HALOGEN_BIN" train "$WORK/p1" --epochs 1 --quiet

# Finding 13: nonsensical numeric options.
expect "--lr -1" 2 "--lr: value -1 must be a finite number > 0" "${TRAIN[@]}" --lr -1
expect "--lr nan" 2 "--lr: value nan must be a finite number > 0" "${TRAIN[@]}" --lr nan
expect "--weight-decay -1" 2 "--weight-decay: value -1 must be a finite number >= 0" "${TRAIN[@]}" --weight-decay -1
expect "--dropout 1" 2 "--dropout: value 1 must be a finite number in [0, 1)" "${TRAIN[@]}" --dropout 1
expect "--dropout -0.5" 2 "--dropout: value -0.5 must be a finite number in [0, 1)" "${TRAIN[@]}" --dropout -0.5
expect "--epochs 0" 2 "--epochs: Value 0 not in range" "${TRAIN[@]}" --epochs 0
expect "--task link on gcn (a flag check, printed once)" 2 "--task link needs a temporal model" "${TRAIN[@]}" --task link

# Finding 12: library exceptions become one line naming the file and field.
cp -r "$WORK/p2" "$WORK/overflow" && sed -i 's/"num_edges": [0-9]*/"num_edges": 1e400/' "$WORK/overflow/meta.json"
expect "meta.json number 1e400 (train)" 2 "overflow/meta.json: not valid JSON (number overflow parsing '1e400')" \
  "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/overflow" --epochs 1
expect "meta.json number 1e400 (info)" 2 "overflow/meta.json: not valid JSON (number overflow parsing '1e400')" \
  "$HALOGEN_BIN" info "$WORK/overflow"
cp -r "$WORK/p2" "$WORK/wide" && sed -i 's/"num_classes": 3/"num_classes": 1e10/' "$WORK/wide/meta.json"
expect "meta.json num_classes 1e10" 2 'graph: key "num_classes" must be an integer in [-2147483648, 2147483647]' \
  "$HALOGEN_BIN" info "$WORK/wide"
cp -r "$WORK/p2" "$WORK/dirmeta" && rm "$WORK/dirmeta/meta.json" && mkdir "$WORK/dirmeta/meta.json"
expect "meta.json is a directory (train, basic_filebuf)" 2 "dirmeta/meta.json: is a directory" \
  "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/dirmeta" --epochs 1
expect "meta.json is a directory (info, basic_filebuf)" 2 "dirmeta/meta.json: is a directory" \
  "$HALOGEN_BIN" info "$WORK/dirmeta"
mkdir -p "$WORK/json.json"
expect "pgt-json input is a directory" 2 "json.json: is a directory" "$HALOGEN_BIN" convert --format pgt-json "$WORK/json.json" -o "$WORK/x.h5"
expect "generate beyond memory (std::bad_alloc)" 2 "sbm: --nodes 100000000000 --avg-degree 16 --features 64 needs" \
  "$HALOGEN_BIN" generate sbm --nodes 100000000000 --classes 3 -o "$WORK/huge.h5"
[[ ! -e "$WORK/huge.h5" ]] || fail "generate left $WORK/huge.h5 behind"
expect "temporal-sbm with 10^8 steps (ran for minutes towards the OOM killer)" 2 \
  "temporal-sbm: --steps 100000000 --nodes 100 --avg-degree 16 needs" \
  "$HALOGEN_BIN" generate temporal-sbm --nodes 100 --classes 2 --steps 100000000 -o "$WORK/huge.h5"
# Graph files written by other tools (issue 31, finding 7): float labels, or a training split of unlabelled
# vertices, are named as such (before: "/split/train is empty" for a split of 30 ids).
if python3 -c 'import h5py, numpy' 2>/dev/null; then
  python3 - "$WORK/g.h5" "$WORK/float_labels.h5" "$WORK/unlabelled.h5" <<'PY'
import shutil, sys, h5py, numpy as np
src, float_path, unlabelled_path = sys.argv[1:]
for path in (float_path, unlabelled_path):
    shutil.copy(src, path)
    with h5py.File(path, "r+") as f:
        labels = f["/node/label"][...]
        if path == unlabelled_path:
            labels[f["/split/train"][...]] = -1
        del f["/node/label"]
        f.create_dataset("/node/label", data=labels.astype(np.float32 if path == float_path else np.int32),
                         chunks=True, fletcher32=True)
PY
  for name in float_labels unlabelled; do "$HALOGEN_BIN" partition "$WORK/$name.h5" -k 2 -o "$WORK/$name.p2" >/dev/null; done
  expect "float labels" 2 "/node/label is float, which a graph file means as regression targets; node classification needs int32 class ids" \
    "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/float_labels.p2" --epochs 1
  expect "a training split without labels" 2 "/split/train lists $(python3 -c "import h5py,sys; print(len(h5py.File(sys.argv[1])['/split/train']))" "$WORK/g.h5") vertices, but none of them has a label" \
    "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/unlabelled.p2" --epochs 1
fi
echo "input validation: OK"
