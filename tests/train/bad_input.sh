#!/usr/bin/env bash
# Bad input ends the whole job with a non-zero status and a clear message, never a hang (timeout guards):
# ranks != parts, a missing shard, a corrupt shard, a NaN loss.
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 600 --classes 3 --features 8 --avg-degree 6 --seed 2 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 -o "$WORK/p2" >/dev/null
expect_failure() {  # name pattern np dir [flags...]
  local name=$1 pattern=$2 np=$3 dir=$4
  shift 4
  local status=0
  timeout 60 "${MPIRUN[@]}" -np "$np" "$HALOGEN_BIN" train "$dir" --epochs 5 "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  [[ $status -ne 0 ]] || fail "$name: exit status 0"
  [[ $status -ne 124 ]] || fail "$name: hung (killed by timeout)"
  grep -q -- "$pattern" "$WORK/err" || fail "$name: expected '$pattern' in: $(cat "$WORK/err")"
  echo "$name: exit $status, '$(grep -m1 -- "$pattern" "$WORK/err")'"
}
expect_failure "ranks != parts" "the partition has 2 parts but the job has 3 ranks" 3 "$WORK/p2"
expect_failure "one rank" "the partition has 2 parts but the job has 1 ranks" 1 "$WORK/p2"
cp -r "$WORK/p2" "$WORK/missing" && rm "$WORK/missing/part-00001.h5"
expect_failure "missing shard" "part-00001.h5" 2 "$WORK/missing"
cp -r "$WORK/p2" "$WORK/corrupt" && head -c 1000 "$WORK/p2/part-00000.h5" >"$WORK/corrupt/part-00000.h5"
expect_failure "corrupt shard" "part-00000.h5" 2 "$WORK/corrupt"
# The diagnosis names the first layer with non-finite outputs (it runs that epoch's forward again: the last
# layer's output shares the workspace with the backward).
expect_failure "NaN loss" "epoch [0-9]*: the loss is .*first non-finite values in the output of layer [0-9]" 2 "$WORK/p2" --lr 1e30
# Shards that disagree with each other (each valid alone): every rank stops with the file and dataset named.
python3 -c 'import h5py' 2>/dev/null || { echo "skipped the shard-agreement cases: python3 lacks h5py"; exit 0; }
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 --method random -o "$WORK/p2r" >/dev/null
cp -r "$WORK/p2" "$WORK/mixed" && cp "$WORK/p2r/part-00001.h5" "$WORK/mixed/"
expect_failure "shards of two partitions" "part-0000[01].h5: /\\(halo\\|owned\\|snapshots\\)" 2 "$WORK/mixed"
edit() {  # edit DIR PART PYTHON: runs PYTHON with f = the shard opened for writing
  python3 -c "import h5py, numpy as np, sys; f = h5py.File(sys.argv[1], 'r+'); $3" "$(printf '%s/part-%05d.h5' "$1" "$2")"
}
cp -r "$WORK/p2" "$WORK/degree" && edit "$WORK/degree" 0 "d = f['degree/halo'][...]; d[0] += 1; f['degree/halo'][...] = d"
expect_failure "a halo degree unlike its owner's" "part-00000.h5: /halo/gid: the halo rows" 2 "$WORK/degree"
cp -r "$WORK/p2" "$WORK/order" && edit "$WORK/order" 1 "i = f['send/idx'][...]; i[[0, 1]] = i[[1, 0]]; f['send/idx'][...] = i"
expect_failure "rows sent out of order" "part-00001.h5: /send/idx" 2 "$WORK/order"
cp -r "$WORK/p2" "$WORK/nan" && edit "$WORK/nan" 1 "x = f['node/feat'][...]; x[3, 2] = np.nan; f['node/feat'][...] = x"
expect_failure "NaN feature in a shard" "part-00001.h5: /node/feat: not finite at row 3, column 2" 2 "$WORK/nan"
cp -r "$WORK/p2" "$WORK/nosplit" && edit "$WORK/nosplit" 1 "del f['split/train']"
expect_failure "a shard without its training split" "part-00001.h5: /split/train: missing" 2 "$WORK/nosplit"
cp -r "$WORK/p2" "$WORK/rowdeg" && edit "$WORK/rowdeg" 0 "d = f['degree/owned'][...]; d[5] += 2; f['degree/owned'][...] = d"
expect_failure "an owned degree unlike its row" "part-00000.h5: /degree/owned: degree" 2 "$WORK/rowdeg"
cp -r "$WORK/p2" "$WORK/overlap" && edit "$WORK/overlap" 0 "t = np.union1d(f['split/test'][...], f['split/train'][:1]); \
del f['split/test']; f.create_dataset('split/test', data=t.astype(np.int64), chunks=True, fletcher32=True)"
expect_failure "a shard whose test split holds a training vertex" \
  "part-00000.h5: /split/test: local id [0-9]* at index [0-9]* is also in /split/train" 2 "$WORK/overlap"
# The same in a graph file: partition refuses it.
cp "$WORK/g.h5" "$WORK/overlap.h5" && python3 -c "import h5py, numpy as np, sys; f = h5py.File(sys.argv[1], 'r+'); \
t = np.union1d(f['split/valid'][...], f['split/train'][:1]); del f['split/valid']; \
f.create_dataset('split/valid', data=t.astype(np.int64), chunks=True, fletcher32=True)" "$WORK/overlap.h5"
status=0
"$HALOGEN_BIN" partition "$WORK/overlap.h5" -k 2 -o "$WORK/overlap.p2" >/dev/null 2>"$WORK/err" || status=$?
[[ $status -eq 2 ]] || fail "overlapping splits in a graph file: partition exit $status"
grep -q "overlap.h5: /split/valid: index [0-9]*: node id [0-9]* is also in /split/train" "$WORK/err" ||
  fail "overlapping splits in a graph file: $(cat "$WORK/err")"
echo "overlapping splits in a graph file: exit 2, '$(cat "$WORK/err")'"
# A metrics file that cannot be written (a full disk) stops every rank with one line, not a truncated file.
expect_failure "metrics on a full disk" "/dev/full: cannot write metrics: No space left on device" 2 "$WORK/p2" \
  --metrics /dev/full
echo "bad input: OK"
