#!/usr/bin/env bash
# Temporal checkpoint/resume is exact, on 2 ranks, for every temporal model and task (regression on Chickenpox,
# link and node on a generated temporal SBM):
#   - `--epochs 6 --checkpoint DIR` then the same command with `--epochs 12 --resume` gives per-epoch losses and
#     metrics bitwise equal to a straight 12-epoch run, and the resumed run writes epochs 7-12 only;
#   - a run killed (SIGKILL) mid-way with `--checkpoint-every 1` and resumed does the same from the epoch after
#     its last checkpoint (epoch 5 on).
# Bitwise, because the resumed run does the same arithmetic in the same order as the straight one: the
# checkpoint holds the weights, Adam's moments and step count, and every epoch starts from the zero state.
source "$(dirname "$0")/../train/common.sh"
data="${HALOGEN_SHARED_DATA:-}/temporal/chickenpox.json"
models="${HALOGEN_TEMPORAL_MODELS:-evolvegcn-o tgcn gconvgru}"
run2() { timeout 120 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$@" --threads 1 --quiet --eval-every 1 >/dev/null; }

"$HALOGEN_BIN" generate temporal-sbm --nodes 300 --steps 6 --churn 0.2 --drift 0.02 --features 4 --classes 3 \
  --seed 3 -o "$WORK/ts.h5" >/dev/null || fail "generate temporal-sbm"
"$HALOGEN_BIN" partition "$WORK/ts.h5" -k 2 -o "$WORK/ts.p2" >/dev/null || fail "partition temporal-sbm"
cases=("link ts.p2 --task link --window 2" "node ts.p2 --task node --window 3")
if [ -f "$data" ]; then
  "$HALOGEN_BIN" convert --format pgt-json "$data" -o "$WORK/cp.h5" >/dev/null || fail "convert chickenpox"
  "$HALOGEN_BIN" partition "$WORK/cp.h5" -k 2 -o "$WORK/cp.p2" >/dev/null || fail "partition chickenpox"
  cases+=("regression cp.p2 --task regression --window 100")
else
  echo "chickenpox.json not found under HALOGEN_SHARED_DATA: the regression case is skipped"
fi

epochs_of() { python3 -c "import json,sys; print(' '.join(str(json.loads(l)['epoch']) for l in open(sys.argv[1]) if 'epoch' in json.loads(l) and not json.loads(l).get('final')))" "$1"; }

for model in $models; do
  for spec in "${cases[@]}"; do
    read -r name dir args <<<"$spec"
    # shellcheck disable=SC2206
    opts=($args --model "$model" --hidden 8 --seed 5)
    tag="$model-$name"
    run2 "$WORK/$dir" "${opts[@]}" --epochs 12 --metrics "$WORK/$tag.straight.jsonl" || fail "$tag: straight run"
    run2 "$WORK/$dir" "${opts[@]}" --epochs 6 --checkpoint "$WORK/$tag.ck" --metrics "$WORK/$tag.first.jsonl" ||
      fail "$tag: first half"
    run2 "$WORK/$dir" "${opts[@]}" --epochs 12 --checkpoint "$WORK/$tag.ck" --resume \
      --metrics "$WORK/$tag.resumed.jsonl" || fail "$tag: resumed run"
    [ "$(epochs_of "$WORK/$tag.resumed.jsonl")" = "7 8 9 10 11 12" ] ||
      fail "$tag: the resumed run wrote epochs $(epochs_of "$WORK/$tag.resumed.jsonl"), not 7-12"
    compare "$WORK/$tag.straight.jsonl" "$WORK/$tag.first.jsonl" --rel 0 --min-epochs 6 >/dev/null ||
      fail "$tag: the first 6 epochs differ from the straight run"
    compare "$WORK/$tag.straight.jsonl" "$WORK/$tag.resumed.jsonl" --rel 0 --from-epoch 7 --min-epochs 6 ||
      fail "$tag: resume is not exact"

    # Killed mid-way: every epoch checkpointed; rank 0 SIGKILLs itself as epoch 5 starts (the fault-injection
    # hook HALOGEN_FAULT_KILL_AT_EPOCH of train/trainer.h), so the last checkpoint holds epoch 4.
    rm -rf "$WORK/$tag.kill"
    if HALOGEN_FAULT_KILL_AT_EPOCH=5 run2 "$WORK/$dir" "${opts[@]}" --epochs 12 --checkpoint "$WORK/$tag.kill" \
      --checkpoint-every 1 --metrics "$WORK/$tag.kill.jsonl" 2>/dev/null; then
      fail "$tag: the run meant to be killed at epoch 5 finished"
    fi
    [ "$(epochs_of "$WORK/$tag.kill.jsonl")" = "1 2 3 4" ] || fail "$tag: the killed run wrote epochs $(epochs_of "$WORK/$tag.kill.jsonl")"
    run2 "$WORK/$dir" "${opts[@]}" --epochs 12 --checkpoint "$WORK/$tag.kill" --resume \
      --metrics "$WORK/$tag.killed-resumed.jsonl" || fail "$tag: resume after the kill"
    [ "$(epochs_of "$WORK/$tag.killed-resumed.jsonl")" = "5 6 7 8 9 10 11 12" ] ||
      fail "$tag: resume after the kill wrote epochs $(epochs_of "$WORK/$tag.killed-resumed.jsonl")"
    compare "$WORK/$tag.straight.jsonl" "$WORK/$tag.killed-resumed.jsonl" --rel 0 --from-epoch 5 --min-epochs 8 \
      >/dev/null || fail "$tag: resume after the kill is not exact"
    echo "$tag: resume exact (6 + 6 = 12, and killed at epoch 5 then resumed)"
  done
done
# The GPU warm-up pass (TemporalWorkload::warm_up: one unapplied pass over every window and one evaluation,
# so that cuSPARSE allocates before epoch 1) leaves no trace: forced on the CPU, the losses are bitwise those
# of a run without it.
for model in $models; do
  read -r name dir args <<<"${cases[${#cases[@]}-1]}"
  # shellcheck disable=SC2206
  opts=($args --model "$model" --hidden 8 --seed 5 --epochs 3)
  run2 "$WORK/$dir" "${opts[@]}" --metrics "$WORK/$model.plain.jsonl" || fail "$model: run without warm-up"
  HALOGEN_TEST_WARM_UP_ON_CPU=1 timeout 120 "${MPIRUN[@]}" -x HALOGEN_TEST_WARM_UP_ON_CPU -np 2 "$HALOGEN_BIN" train \
    "$WORK/$dir" "${opts[@]}" --threads 1 --quiet --eval-every 1 --metrics "$WORK/$model.warm.jsonl" \
    >"$WORK/$model.warm.log" 2>&1 || fail "$model: run with the warm-up pass"
  grep -q "^warm-up: " "$WORK/$model.warm.log" || fail "$model: the warm-up pass did not run"
  compare "$WORK/$model.plain.jsonl" "$WORK/$model.warm.jsonl" --rel 0 --min-epochs 3 >/dev/null ||
    fail "$model: the warm-up pass changed the losses"
done
echo "temporal checkpoint/resume: OK"
