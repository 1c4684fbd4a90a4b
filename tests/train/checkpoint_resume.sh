#!/usr/bin/env bash
# Checkpoint/resume: 10 epochs + resume 10 equals 20 straight, bitwise on the same rank count (same
# summation order); resuming on another rank count continues within the partition-invariance tolerance.
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 1200 --classes 3 --features 16 --avg-degree 8 --seed 5 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 -o "$WORK/p2" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 1 -o "$WORK/p1" >/dev/null
common=(--model gcn --hidden 16 --dropout 0.5 --seed 4 --patience 0 --quiet)
timeout 120 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" "${common[@]}" --epochs 20 --metrics "$WORK/straight.jsonl" >/dev/null
timeout 120 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" "${common[@]}" --epochs 10 --checkpoint "$WORK/ck" \
  --metrics "$WORK/first.jsonl" >/dev/null
[[ -f "$WORK/ck/last.h5" ]] || fail "no checkpoint written"
ls "$WORK/ck" | grep -q tmp && fail "temporary checkpoint file left behind"
cp -r "$WORK/ck" "$WORK/ck1"
timeout 120 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" "${common[@]}" --epochs 20 --checkpoint "$WORK/ck" \
  --resume --metrics "$WORK/resumed.jsonl" >/dev/null
compare "$WORK/straight.jsonl" "$WORK/first.jsonl" --rel 0 --min-epochs 10 || fail "first half differs"
compare "$WORK/straight.jsonl" "$WORK/resumed.jsonl" --rel 0 --from-epoch 11 --min-epochs 10 --final || fail "resume is not exact"
sed -n 2p "$WORK/resumed.jsonl" | grep -q '"epoch":11' || fail "resumed run did not start at epoch 11"
head -1 "$WORK/resumed.jsonl" | grep -q '"resumed_after_epoch":10' || fail "a metrics file made by a resumed run has no header"
# Another rank count: one rank continues the two-rank run.
timeout 120 "${MPIRUN[@]}" -np 1 "$HALOGEN_BIN" train "$WORK/p1" "${common[@]}" --epochs 20 --checkpoint "$WORK/ck1" \
  --resume --metrics "$WORK/resumed1.jsonl" >/dev/null
compare "$WORK/straight.jsonl" "$WORK/resumed1.jsonl" --rel 1e-5 --from-epoch 11 --min-epochs 10 || fail "resume on 1 rank"
# A checkpoint of another model is refused, with one message (tests/train/checkpoint_rules.sh has every rule).
if timeout 60 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" --hidden 8 --epochs 12 --checkpoint "$WORK/ck" --resume \
  --quiet 2>"$WORK/err" >/dev/null; then fail "resume with another model succeeded"; fi
grep -q -- "--hidden is 8, the checkpoint was trained with 16" "$WORK/err" || fail "unclear resume error: $(cat "$WORK/err")"
echo "checkpoint/resume: OK"
