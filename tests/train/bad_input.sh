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
expect_failure "NaN loss" "epoch [0-9]*: the loss is .*layer [0-9]" 2 "$WORK/p2" --lr 1e30
# A metrics file that cannot be written (a full disk) stops every rank with one line, not a truncated file.
expect_failure "metrics on a full disk" "/dev/full: cannot write metrics: No space left on device" 2 "$WORK/p2" \
  --metrics /dev/full
echo "bad input: OK"
