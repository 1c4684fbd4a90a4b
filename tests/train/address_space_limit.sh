#!/usr/bin/env bash
# The memory plan respects the process's own limits (issue 31, item 5): under `ulimit -v` (RLIMIT_AS) or
# `ulimit -d` (RLIMIT_DATA) below a rank's plan, `halogen train` used to die with "halogen: error:
# std::bad_alloc" after reading the shard; now it stops before allocating its buffers with one line naming the
# limit, the plan and the headroom (exit 2). With the limit above the plan it trains. A malformed
# HALOGEN_MEMORY_AVAILABLE_MIB (abc, -5) is one line too, no longer ignored silently. With the check skipped, the
# failed allocation is one line for the job (1 and 2 ranks) naming the phase and the plan.
# The limit cases are skipped in an AddressSanitizer build (ASan reserves terabytes of address space).
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 200000 --classes 8 --features 128 --avg-degree 10 --seed 1 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 1 -o "$WORK/g.p1" >/dev/null
# --device cpu: info plans the CPU (on a GPU host train would pick cuda, whose matrices store their values).
train() { "$HALOGEN_BIN" train "$WORK/g.p1" --device cpu --hidden 256 --epochs 1 --threads 1 --quiet "$@"; }

one_line_error() {  # NAME PATTERN: the last run exited 2 with exactly one stderr line holding PATTERN
  [ "$status" = 2 ] || { cat "$WORK/err"; fail "$1: exit $status (want 2)"; }
  [ "$(grep -c . "$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "$1: more than one line"; }
  grep -q -- "$2" "$WORK/err" || { cat "$WORK/err"; fail "$1: no '$2'"; }
  ! grep -q bad_alloc "$WORK/err" || fail "$1: bad_alloc"
  echo "ok: $1: $(cat "$WORK/err")"
}

for value in abc -5 12x; do
  set +e; HALOGEN_MEMORY_AVAILABLE_MIB=$value train >/dev/null 2>"$WORK/err"; status=$?; set -e
  one_line_error "HALOGEN_MEMORY_AVAILABLE_MIB=$value" "HALOGEN_MEMORY_AVAILABLE_MIB=$value: expected a whole number"
done

if ldd "$HALOGEN_BIN" | grep libasan >/dev/null; then  # not grep -q: under pipefail an early exit fails ldd
  echo "skipped the ulimit cases: AddressSanitizer build"
  exit 0
fi
# The plan of this run is ~620 MiB (info's figure); the process holds ~400 MiB (MPI, OpenMP, the shard) when it
# checks.
plan=$("$HALOGEN_BIN" info "$WORK/g.p1" --hidden 256 | sed -n 's/.*max per rank \([0-9.]*\) MiB.*/\1/p')
[ -n "$plan" ] || fail "info printed no plan"
set +e
(ulimit -v 900000; train) >/dev/null 2>"$WORK/err"; status=$?
set -e
one_line_error "ulimit -v 900000" "under its address-space limit (ulimit -v)"
grep -q "needs $plan MiB" "$WORK/err" || fail "the plan is not named"
set +e
(ulimit -d 700000; train) >/dev/null 2>"$WORK/err"; status=$?
set -e
one_line_error "ulimit -d 700000" "under its data limit (ulimit -d)"
# The check skipped (--ignore-memory-check): the allocation fails, and that is one line naming the phase and
# the plan (it was "halogen: error: std::bad_alloc", or "out of memory" without either).
set +e
(ulimit -v 900000; train --ignore-memory-check) >/dev/null 2>"$WORK/err"; status=$?
set -e
one_line_error "ulimit -v 900000 --ignore-memory-check" "out of memory during building the model: an allocation failed"
grep -q "the plan: $plan MiB per rank" "$WORK/err" || fail "--ignore-memory-check: the plan is not named"
# Two ranks out of memory alike: one line for the job, not one per rank.
if command -v mpirun >/dev/null; then
  "$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 -o "$WORK/g.p2" >/dev/null
  set +e
  (ulimit -v 800000; "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/g.p2" --hidden 512 --epochs 1 --threads 1 --quiet \
    --ignore-memory-check) >/dev/null 2>"$WORK/err"; status=$?
  set -e
  [ "$status" != 0 ] || fail "2 ranks under ulimit -v 800000: trained"
  [ "$(grep -c 'out of memory' "$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "2 ranks: not one out-of-memory line"; }
  grep -q "out of memory during building the model: .*the plan: .* MiB per rank" "$WORK/err" ||
    { cat "$WORK/err"; fail "2 ranks: the line names no phase or plan"; }
  ! grep -q bad_alloc "$WORK/err" || fail "2 ranks: bad_alloc"
  echo "ok: 2 ranks out of memory: $(grep 'out of memory' "$WORK/err")"
fi
# Room enough: it trains.
(ulimit -v 2500000; train) >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; fail "ulimit -v 2500000: training failed"; }
echo "address-space limits: OK"
