#!/usr/bin/env bash
# GAT on Cora (Planetoid split) with the issue's settings (8 heads x 8 hidden, dropout 0.6 on inputs and on the
# attention, lr 0.005, weight decay 5e-4 on every layer, 300 epochs, row-normalised features; the default
# --gat-dropout original), seed 0: test_acc_at_best >= 0.79 and the final test accuracy >= 0.80 on 1 rank (seeds
# 0-4 give 0.827-0.833 at best validation, mean 82.98%, and 0.809-0.834 at the end; a model ignoring the graph,
# the MLP, gets 61.9%), and the first 100 epochs of a 2-rank run equal the 1-rank run's (losses and accuracies,
# 1e-4 relative; the sums are reassociated, nothing else differs). Seeds 0-4 agree within 5e-8 over all 300
# epochs; with dropout on inputs, hidden units and attention the trajectory is chaotic, so a value crossing a kink
# (leaky relu, an argmax) in one run only can separate the runs after ~50-100 epochs (an earlier set of masks had
# such a seed), and the check covers 100 epochs of seed 0. The per-seed, 1- and 2-rank figures are in
# docs/train.md. Skipped (77) without the shared data. Two runs, ~50 s and ~25 s on one thread.
source "$(dirname "$0")/common.sh"
CORA="${HALOGEN_SHARED_DATA:-/nonexistent}/ogb-format/cora"
[[ -d "$CORA" ]] || { echo "skipped: $CORA not found"; exit 77; }
"$HALOGEN_BIN" convert "$CORA" --format ogb -o "$WORK/cora.h5" >/dev/null
for np in 1 2; do "$HALOGEN_BIN" partition "$WORK/cora.h5" -k $np -o "$WORK/cora.p$np" >/dev/null; done
gat() {  # np seed epochs
  timeout 600 "${MPIRUN[@]}" -np "$1" "$HALOGEN_BIN" train "$WORK/cora.p$1" --model gat --layers 2 --hidden 8 \
    --heads 8 --dropout 0.6 --attention-dropout 0.6 --lr 0.005 --weight-decay 5e-4 --weight-decay-all-layers \
    --epochs "$3" --row-normalize --seed "$2" --quiet --metrics "$WORK/gat-np$1-seed$2.jsonl" >/dev/null
}
gat 1 0 300
gat 2 0 100
compare "$WORK/gat-np1-seed0.jsonl" "$WORK/gat-np2-seed0.jsonl" --rel 1e-4 --acc-abs 0.0072 --min-epochs 100 ||
  fail "GAT 2 ranks != 1 rank"
python3 - "$WORK/gat-np1-seed0.jsonl" <<'PY'
import json, sys
final = json.loads(open(sys.argv[1]).read().splitlines()[-1])
at_best, last = final["test_acc_at_best"], final["test_acc"]
print(f"Cora GAT, 1 rank, seed 0: test_acc_at_best {at_best:.4f} (>= 0.79), final test_acc {last:.4f} (>= 0.80)")
sys.exit(0 if at_best >= 0.79 and last >= 0.80 else 1)
PY
