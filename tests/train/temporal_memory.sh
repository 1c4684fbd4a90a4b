#!/usr/bin/env bash
# Memory planned before a temporal model allocates (issue 15; train/memory_estimate.h
# estimate_temporal_rank_memory): on a generated temporal SBM under mpirun -np 2, for every temporal model
# (node task; tgcn also link), the figure `train` logs before allocating is an upper bound of the measured
# allocated_bytes of the final metrics record and within 3x of it; with HALOGEN_MEMORY_AVAILABLE_MIB=1 a
# temporal `train` exits 2 with one line naming the figure, and --ignore-memory-check proceeds.
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate temporal-sbm --nodes 1500 --steps 8 --churn 0.2 --drift 0.02 --features 8 --classes 4 \
  --seed 3 -o "$WORK/ts.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/ts.h5" -k 2 -o "$WORK/p2" --link-negatives 5 >/dev/null
TRAIN=("${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" --epochs 1 --eval-every 1 --threads 1 --quiet)

check_bound() {  # check_bound NAME TRAIN-ARGS...: the planned figure against the measured allocation
  local name=$1
  shift
  "${TRAIN[@]}" "$@" --metrics "$WORK/m.jsonl" >"$WORK/log" 2>&1 || fail "$name: $(cat "$WORK/log")"
  python3 - "$name" "$WORK/log" "$WORK/m.jsonl" <<'PY' || fail "$name: the planned figure is not a close upper bound"
import json, re, sys
name, log, metrics = sys.argv[1:]
planned = float(re.search(r"memory: at most ([0-9.]+) MiB per rank planned", open(log).read()).group(1))
final = [json.loads(l) for l in open(metrics)][-1]
measured = final["allocated_bytes"] / 1048576.0
ratio = planned / measured
print(f"ok {name}: planned {planned:.3f} MiB, measured {measured:.3f} MiB (ratio {ratio:.2f})")
# An upper bound by construction (every width rounded up to max(in, hidden, out), a static input counted once
# per snapshot, a 16-width scratch allowance), so >= 1 (0.1% for the 3-decimal MiB print) is the contract. Measured
# 1.63-2.49 here and 1.17-2.08 on Chickenpox regression; 3 still catches a lost factor (floats counted as bytes
# would be 4x; window counted per slot twice, ~2x on top).
sys.exit(0 if 0.999 <= ratio <= 3.0 else 1)
PY
}
for model in tgcn evolvegcn-o gconvgru; do
  check_bound "$model node" --model "$model" --task node
done
check_bound "tgcn link" --model tgcn --task link --negatives 5 --window 2

# The check: exit 2, one line naming the figure (once per job); the override proceeds.
status=0
env HALOGEN_MEMORY_AVAILABLE_MIB=1 "${TRAIN[@]}" --model tgcn --task node >"$WORK/out" 2>"$WORK/err" || status=$?
[[ $status -eq 2 ]] || fail "HALOGEN_MEMORY_AVAILABLE_MIB=1: exit $status, expected 2: $(cat "$WORK/err")"
line=$(grep -F "needs" "$WORK/err") || fail "no 'needs' line: $(cat "$WORK/err")"
[[ $(grep -cF "needs" "$WORK/err") -eq 1 ]] || fail "the message is printed more than once: $(cat "$WORK/err")"
[[ $line =~ training\ tgcn.*MiB\ per\ rank.*needs\ [0-9.]+\ MiB,\ but\ only\ 1\.0\ MiB ]] ||
  fail "the message does not name the figures: $line"
echo "ok refused: $line"
env HALOGEN_MEMORY_AVAILABLE_MIB=1 "${TRAIN[@]}" --model tgcn --task node --ignore-memory-check >"$WORK/out" 2>&1 ||
  fail "--ignore-memory-check: $(cat "$WORK/out")"
grep -qF "done:" "$WORK/out" || fail "--ignore-memory-check did not train: $(cat "$WORK/out")"
echo "ok --ignore-memory-check trains"
