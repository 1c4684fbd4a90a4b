#!/usr/bin/env bash
# `halogen bench halo|allreduce` under mpiexec -np NP: every row of every table has #wrong = 0 and the command
# exits 0; with --inject-error (one element corrupted on the last rank) the table shows #wrong > 0 and the
# command exits non-zero, so the check is known to count. With PARTITION_DIR mode: a generated SBM graph cut
# into NP parts by `halogen partition` is benchmarked too.
#
# Usage: comm_bench_test.sh HALOGEN_BIN NP      (needs OMPI_ALLOW_RUN_AS_ROOT* when run as root)
set -uo pipefail
bin=$1
np=$2
mpirun=(mpiexec --oversubscribe --bind-to none -np "$np")
work=$(mktemp -d "${TMPDIR:-/tmp}/halogen-comm-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Checks a table in file $1: at least $2 data rows, #wrong (last column) = 0 in all of them.
check_table() {
  local file=$1 min_rows=$2 rows
  rows=$(grep -cE '^ +[0-9]+ ' "$file")
  [ "$rows" -ge "$min_rows" ] || fail "$file: $rows table rows, expected >= $min_rows: $(cat "$file")"
  awk '/^ +[0-9]+ / { if ($NF != 0) bad = 1 } END { exit bad }' "$file" || fail "#wrong != 0: $(cat "$file")"
  grep -q "Out of bounds values : 0 OK" "$file" || fail "$file: no 'Out of bounds values : 0 OK' line"
}

run_ok() {
  local name=$1 min_rows=$2; shift 2
  "${mpirun[@]}" "$bin" bench "$@" --warmup 1 --iters 3 >"$work/$name.out" 2>&1 ||
    fail "halogen bench $* exited $?: $(cat "$work/$name.out")"
  check_table "$work/$name.out" "$min_rows"
  echo "ok: np $np bench $*"
}

run_ok halo_ring 4 halo --pattern ring --rows-per-rank 3000 --halo-rows 500 --min-width 1 --max-width 64 --step-factor 4
run_ok halo_random_reverse 3 halo --pattern random --rows-per-rank 2000 --halo-rows 3000 --max-width 16 --step-factor 4 --reverse
run_ok allreduce 5 allreduce --min-bytes 4 --max-bytes 1M --step-factor 16

# Negative controls: a corrupted element must be counted and fail the command.
for bench in "halo --pattern random --rows-per-rank 500 --halo-rows 200 --max-width 4" "halo --reverse --rows-per-rank 500 --halo-rows 50 --max-width 4" "allreduce --max-bytes 64"; do
  # shellcheck disable=SC2086
  if "${mpirun[@]}" "$bin" bench $bench --warmup 0 --iters 1 --inject-error >"$work/neg.out" 2>&1; then
    fail "bench $bench --inject-error exited 0"
  fi
  awk '/^ +[0-9]+ / { if ($NF > 0) seen = 1 } END { exit !seen }' "$work/neg.out" ||
    fail "bench $bench --inject-error: no row with #wrong > 0: $(cat "$work/neg.out")"
  echo "ok: np $np bench $bench --inject-error is caught"
done

# A real partition directory (skipped while `halogen partition` is not built in this version: exit 3).
"$bin" generate sbm --nodes 3000 --classes 4 --avg-degree 8 --features 8 --seed 3 -o "$work/g.h5" >/dev/null 2>&1 ||
  fail "halogen generate sbm failed"
"$bin" partition "$work/g.h5" -k "$np" -o "$work/g.p" >"$work/partition.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then
  run_ok halo_partition 3 halo "$work/g.p" --max-width 16 --step-factor 4
  run_ok halo_partition_reverse 3 halo "$work/g.p" --max-width 16 --step-factor 4 --reverse
else
  fail "halogen partition exited $rc: $(cat "$work/partition.out")"
fi
# The last rank's shard missing: bench halo and bench epoch stop on every rank (no hang) with exit 2 and one line
# naming the file.
cp -r "$work/g.p" "$work/bad.p"
last=$(printf "%s/bad.p/part-%05d.h5" "$work" $((np - 1)))
rm "$last"
for bench in "halo" "epoch --epochs 2"; do
  # shellcheck disable=SC2086
  timeout 60 "${mpirun[@]}" "$bin" bench $bench "$work/bad.p" >"$work/bad.out" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || fail "bench $bench with $last missing exited $rc (2 expected; 124: a hang): $(cat "$work/bad.out")"
  grep -q "error: $last: no such file" "$work/bad.out" || fail "bench $bench: no line naming $last: $(cat "$work/bad.out")"
  echo "ok: np $np bench $bench stops on a missing shard"
done
echo "comm bench: all checks passed (np $np)"
