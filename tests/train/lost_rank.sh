#!/usr/bin/env bash
# A rank whose process ends without saying goodbye (SIGKILL: the OOM killer, a crash, a host whose processes
# all ended) ends the job at once with one line naming it (PeerLiveness), not after the communication timeout
# (600 s by default, left at the default here); a job that ends on purpose (completed, a termination signal to
# every rank) reports nobody lost. The same over a network: tests/cluster/cluster_test.sh faults.
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 4000 --classes 4 --features 16 --seed 2 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 3 -o "$WORK/p3" >/dev/null

# The pid of rank $1 of the job running in $WORK (empty while it has not started).
rank_pid() {
  local p
  for p in $(pgrep -x halogen); do
    tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -q "^$WORK/p3$" || continue
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"
  done
  return 0
}

# Starts a long job, waits for its first checkpoint, sends signal $2 to rank $1 (or to every rank: all), and
# checks that the job ends non-zero within 15 s. Output in $WORK/$3.txt.
run_and_signal() {
  local victim=$1 signal=$2 name=$3
  rm -rf "$WORK/ck"
  timeout 120 "${MPIRUN[@]}" -np 3 "$HALOGEN_BIN" train "$WORK/p3" --epochs 1000000 --checkpoint "$WORK/ck" \
    --checkpoint-every 10 --quiet >"$WORK/$name.txt" 2>&1 &
  local job=$! pids="" start
  for _ in $(seq 1 300); do [ -f "$WORK/ck/last.h5" ] && break; sleep 0.1; done
  [ -f "$WORK/ck/last.h5" ] || fail "$name: no checkpoint within 30 s: $(cat "$WORK/$name.txt")"
  if [ "$victim" = all ]; then pids="$(rank_pid 0) $(rank_pid 1) $(rank_pid 2)"; else pids=$(rank_pid "$victim"); fi
  [ -n "${pids// /}" ] || fail "$name: rank $victim not found"
  start=$SECONDS
  # shellcheck disable=SC2086
  kill "-$signal" $pids
  local status=0
  wait "$job" || status=$?
  [ "$status" -ne 0 ] || fail "$name: the job exited 0"
  [ "$status" -ne 124 ] || fail "$name: the job still ran 120 s after it started"
  [ $((SECONDS - start)) -le 15 ] || fail "$name: the job took $((SECONDS - start)) s to end"
  echo "$name: the job ended $((SECONDS - start)) s after the signal (exit $status)"
}

run_and_signal 2 KILL lost2
grep -E "^\[0/3\] error: lost rank 2 \(" "$WORK/lost2.txt" || fail "no line from rank 0 naming rank 2: $(cat "$WORK/lost2.txt")"
[ "$(grep -c "error: lost rank" "$WORK/lost2.txt")" = 1 ] || fail "more than one 'lost rank' line: $(cat "$WORK/lost2.txt")"

run_and_signal 0 KILL lost0
grep -E "^\[1/3\] error: lost rank 0 \(" "$WORK/lost0.txt" || fail "no line from rank 1 naming rank 0: $(cat "$WORK/lost0.txt")"
[ "$(grep -c "error: lost rank" "$WORK/lost0.txt")" = 1 ] || fail "more than one 'lost rank' line: $(cat "$WORK/lost0.txt")"

# Ended on purpose: no rank is reported lost.
run_and_signal all TERM term
! grep -q "lost rank" "$WORK/term.txt" || fail "SIGTERM to every rank reported a lost rank: $(cat "$WORK/term.txt")"
"${MPIRUN[@]}" -np 3 "$HALOGEN_BIN" train "$WORK/p3" --epochs 3 --quiet >"$WORK/ok.txt" 2>&1 ||
  fail "a normal 3-rank run failed: $(cat "$WORK/ok.txt")"
! grep -q "lost rank" "$WORK/ok.txt" || fail "a completed run reported a lost rank: $(cat "$WORK/ok.txt")"
echo "PASS"
