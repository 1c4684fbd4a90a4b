#!/usr/bin/env bash
# One lock per output for train and predict (issue 31, items 2-4): a job paused while it holds its outputs
# (HALOGEN_FAULT_STOP_AT=before-rename: SIGSTOP just before its first rename) makes a second job on
#   - the same --checkpoint DIR (train, and train --resume),
#   - the same --metrics FILE (train with another checkpoint directory),
#   - the same predict --output,
# fail at once with one line naming the holder's pid; the first then finishes normally. --metrics naming the
# run's own checkpoint file (DIR/last.h5) or a lock file is refused. A checkpoint temporary left by a job killed
# mid-write (HALOGEN_FAULT_KILL_AT=before-rename) is removed by the next job that takes the lock.
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 3000 --classes 4 --features 16 --avg-degree 6 --seed 3 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 1 -o "$WORK/g.p1" >/dev/null
TRAIN=("$HALOGEN_BIN" train "$WORK/g.p1" --hidden 8 --threads 1 --quiet)
train() { "${TRAIN[@]}" --epochs 4 "$@"; }

# Starts the command (a program, not a shell function: $! must be its pid) paused at its first rename (it holds
# its locks), in the background; sets $held to its pid.
start_paused() {
  HALOGEN_FAULT_STOP_AT=before-rename "$@" >"$WORK/held.out" 2>&1 &
  held=$!
  for _ in $(seq 1 300); do
    [ "$(ps -o stat= -p "$held" 2>/dev/null | cut -c1)" = T ] && return 0
    kill -0 "$held" 2>/dev/null || { cat "$WORK/held.out"; fail "the paused job ended early"; }
    sleep 0.1
  done
  fail "the job never paused"
}
finish_paused() {  # the fault point stops the job at every rename: continue it until it ends
  while kill -0 "$held" 2>/dev/null; do
    kill -CONT "$held" 2>/dev/null
    sleep 0.05
    [ "$(ps -o stat= -p "$held" 2>/dev/null | cut -c1)" = Z ] && break
  done
  wait "$held" || { cat "$WORK/held.out"; fail "the paused job failed after SIGCONT"; }
}
refused() {  # NAME command...: fails at once, one line, naming the holder's pid
  local name=$1; shift
  set +e; timeout 60 "$@" >/dev/null 2>"$WORK/err"; local status=$?; set -e
  [ "$status" != 0 ] || fail "$name: a second job on a held output exited 0"
  [ "$status" != 124 ] || fail "$name: waited instead of refusing"
  [ "$(grep -c . "$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "$name: not one line"; }
  grep -q "held by pid $held " "$WORK/err" || { cat "$WORK/err"; fail "$name: the holder's pid $held is not named"; }
  echo "ok: $name refused: $(cat "$WORK/err")"
}

start_paused "${TRAIN[@]}" --epochs 4 --checkpoint "$WORK/ck" --save-best --metrics "$WORK/m.jsonl"
refused "train into the same checkpoint directory" "${TRAIN[@]}" --epochs 4 --checkpoint "$WORK/ck" --save-best
refused "train --resume from it" "${TRAIN[@]}" --checkpoint "$WORK/ck" --resume --epochs 8
refused "train with the same --metrics" "${TRAIN[@]}" --epochs 4 --checkpoint "$WORK/ck2" --metrics "$WORK/m.jsonl"
finish_paused
[ -f "$WORK/ck/last.h5" ] && [ -f "$WORK/ck/best.h5" ] || fail "the first run's checkpoints are missing"
[ "$(grep -c '"epoch"' "$WORK/m.jsonl")" -ge 4 ] || fail "the first run's metrics are incomplete"
! ls -A "$WORK/ck" | grep -q -e '\.tmp\.' -e '\.halogen\.lock' || { ls -A "$WORK/ck"; fail "leftovers after a clean run"; }

start_paused "$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/ck" --output "$WORK/pred.h5"
refused "predict into the same output" "$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/ck" --output "$WORK/pred.h5"
finish_paused
[ -f "$WORK/pred.h5" ] || fail "the first predict wrote nothing"

# --metrics over the run's own checkpoint file, or over a lock file.
for metrics in "$WORK/ck/last.h5" "$WORK/ck/best.h5" "$WORK/.x.halogen.lock"; do
  set +e; train --checkpoint "$WORK/ck" --metrics "$metrics" >/dev/null 2>"$WORK/err"; status=$?; set -e
  [ "$status" = 2 ] && [ "$(grep -c . "$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "--metrics $metrics: exit $status"; }
  echo "ok: --metrics $metrics refused: $(cat "$WORK/err")"
done

# A checkpoint write killed before its rename leaves its temporary; the next run on DIR removes it.
set +e; HALOGEN_FAULT_KILL_AT=before-rename train --checkpoint "$WORK/ck3" >/dev/null 2>&1; set -e
ls -A "$WORK/ck3" | grep -q '^\.last\.h5\.tmp\.' || { ls -A "$WORK/ck3"; fail "the killed run left no temporary to clean"; }
train --checkpoint "$WORK/ck3" >/dev/null || fail "the run after the killed one"
! ls -A "$WORK/ck3" | grep -q '\.tmp\.' || { ls -A "$WORK/ck3"; fail "the killed run's temporary is still there"; }
echo "output locks: OK"
