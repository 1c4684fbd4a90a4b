#!/usr/bin/env bash
# Signals are not bad input, in train and predict too (issue 31, item 4). SIGTERM, SIGINT or SIGHUP in any phase
# ends the job with exit 128 + signal and one line `halogen train: interrupted by SIGTERM during <phase>`, and
# leaves no temporary or lock file; a job of several ranks signalled as a whole (scancel, Ctrl-C under mpirun)
# prints that line once, from rank 0. Before, a 1-rank run died silently by the signal (a temporary of a
# checkpoint write and the output lock were left for the next job), and ranks of a larger job printed nothing
# that named the phase.
#
# Each phase is hit exactly with HALOGEN_FAULT_SIGNAL_AT=PREFIX (the process sends itself SIGTERM as that phase
# begins, core/interrupt.h); then real signals from outside at several moments of a run that writes a checkpoint
# every epoch, after which the checkpoint directory holds only complete checkpoints and --resume goes on.
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 20000 --classes 8 --features 64 --avg-degree 10 --seed 3 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 1 -o "$WORK/p1" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 -o "$WORK/p2" >/dev/null
"$HALOGEN_BIN" train "$WORK/p1" --epochs 2 --quiet --checkpoint "$WORK/ck0" >/dev/null

leftovers() {  # leftovers DIR...: temporaries and lock files of any job
  find "$@" -maxdepth 1 \( -name '.*.tmp.*' -o -name '*.tmp.*' -o -name '*.halogen.lock' \) 2>/dev/null | head -3
}
# expect_interrupted NAME STATUS PATTERN: the last run ($status, $WORK/err) ended by a signal as it should.
expect_interrupted() {
  [ "$status" = "$2" ] || { cat "$WORK/err"; fail "$1: exit $status (want $2)"; }
  [ "$(grep -c 'halogen' "$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "$1: not one line"; }
  grep -q -- "$3" "$WORK/err" || { cat "$WORK/err"; fail "$1: no '$3'"; }
  ! grep -q -i -e "error" -e "METIS" -e "corrupt" -e "checksum" "$WORK/err" || { cat "$WORK/err"; fail "$1: an error"; }
  echo "ok: $1: $(grep halogen "$WORK/err")"
}

# --- train, one rank: each phase ---
for phase in "reading $WORK/p1" "building the model" "preparing training" "training" "finishing training"; do
  rm -rf "$WORK/ck" "$WORK/m.jsonl"
  set +e
  HALOGEN_FAULT_SIGNAL_AT="$phase" "$HALOGEN_BIN" train "$WORK/p1" --epochs 3 --quiet --checkpoint "$WORK/ck" \
    --save-best --metrics "$WORK/m.jsonl" >/dev/null 2>"$WORK/err"
  status=$?
  set -e
  expect_interrupted "train: SIGTERM as '$phase' begins" 143 "^halogen train: interrupted by SIGTERM during $phase"
  [ -z "$(leftovers "$WORK/ck" "$WORK")" ] || fail "train: '$phase': left $(leftovers "$WORK/ck" "$WORK")"
done

# --- predict: each phase; the output is never created ---
for phase in "reading the checkpoint" "reading $WORK/p1" "building the model" "inference" "writing"; do
  set +e
  HALOGEN_FAULT_SIGNAL_AT="$phase" "$HALOGEN_BIN" predict "$WORK/p1" --checkpoint "$WORK/ck0" -o "$WORK/pred.h5" \
    >/dev/null 2>"$WORK/err"
  status=$?
  set -e
  expect_interrupted "predict: SIGTERM as '$phase' begins" 143 "^halogen predict: interrupted by SIGTERM during $phase"
  [ ! -e "$WORK/pred.h5" ] || fail "predict: '$phase': wrote pred.h5"
  [ -z "$(leftovers "$WORK")" ] || fail "predict: '$phase': left $(leftovers "$WORK")"
done

# --- real signals from outside: SIGINT and SIGHUP; SIGTERM at several moments of checkpoint-every-epoch ---
run_and_signal() {  # run_and_signal SIGNAL DELAY: a long 1-rank run into $WORK/ck, signalled after DELAY s
  "$HALOGEN_BIN" train "$WORK/p1" --epochs 100000 --quiet --checkpoint "$WORK/ck" --checkpoint-every 1 \
    "${@:3}" >/dev/null 2>"$WORK/err" &
  local pid=$!
  sleep "$2"
  kill -s "$1" "$pid"
  set +e
  wait "$pid"
  status=$?
  set -e
}
rm -rf "$WORK/ck"
run_and_signal INT 2
expect_interrupted "train: SIGINT" 130 "^halogen train: interrupted by SIGINT during "
run_and_signal HUP 2 --resume
expect_interrupted "train --resume: SIGHUP" 129 "^halogen train: interrupted by SIGHUP during "
for delay in 1.3 1.7 2.1 2.5 2.9; do
  run_and_signal TERM "$delay" --resume
  expect_interrupted "train --resume: SIGTERM after $delay s" 143 "^halogen train: interrupted by SIGTERM during "
  [ -z "$(leftovers "$WORK/ck")" ] || fail "SIGTERM after $delay s: left $(leftovers "$WORK/ck")"
done
[ "$(ls -A "$WORK/ck")" = "last.h5" ] || fail "the checkpoint directory holds $(ls -A "$WORK/ck" | tr '\n' ' ')"
# The last checkpoint is whole: a resumed run reads it and goes on.
"$HALOGEN_BIN" train "$WORK/p1" --quiet --checkpoint "$WORK/ck" --resume --epochs 1 \
  >"$WORK/out" 2>&1 && fail "--resume --epochs 1 after the interrupted runs trained (it should be past epoch 1)"
grep -q "leaves nothing to train" "$WORK/out" || { cat "$WORK/out"; fail "--resume after the interrupted runs: unexpected message"; }
"$HALOGEN_BIN" predict "$WORK/p1" --checkpoint "$WORK/ck" -o "$WORK/pred.h5" >/dev/null ||
  fail "predict from the last checkpoint of the interrupted runs failed"

# --- two ranks, the whole job signalled (each rank sends itself SIGTERM): one line, rank 0's ---
if command -v mpirun >/dev/null; then
  for phase in "reading $WORK/p2" "training" "finishing training"; do
    rm -rf "$WORK/ck2"
    set +e
    HALOGEN_FAULT_SIGNAL_AT="$phase" timeout 120 "${MPIRUN[@]}" -np 2 -x HALOGEN_FAULT_SIGNAL_AT "$HALOGEN_BIN" train \
      "$WORK/p2" --epochs 3 --quiet --checkpoint "$WORK/ck2" >/dev/null 2>"$WORK/err"
    status=$?
    set -e
    [ "$status" != 0 ] && [ "$status" != 124 ] || { cat "$WORK/err"; fail "2 ranks, '$phase': exit $status"; }
    [ "$(grep -c 'interrupted by' "$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "2 ranks, '$phase': not one line"; }
    grep -q "^\[0/2\] halogen train: interrupted by SIGTERM during $phase" "$WORK/err" ||
      { cat "$WORK/err"; fail "2 ranks, '$phase': not rank 0's line"; }
    ! grep -q "error" "$WORK/err" || { cat "$WORK/err"; fail "2 ranks, '$phase': an error line"; }
    [ -z "$(leftovers "$WORK/ck2")" ] || fail "2 ranks, '$phase': left $(leftovers "$WORK/ck2")"
    echo "ok: 2 ranks, SIGTERM as '$phase' begins: $(grep 'interrupted by' "$WORK/err")"
  done
fi
echo "train and predict interrupted: OK"
