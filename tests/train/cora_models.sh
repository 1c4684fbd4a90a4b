#!/usr/bin/env bash
# APPNP and GIN on Cora (Planetoid split). APPNP with the paper's settings (MLP 64 hidden, K 10, alpha 0.1,
# dropout 0.5, lr 0.01, weight decay 5e-3 on the first layer, 300 epochs, row-normalised features): mean
# test_acc_at_best over seeds 0-2 >= 82% on 1 rank (the paper reports 83.3%), and the 2-rank run of seed 0 equals
# the 1-rank run (losses and accuracies, 1e-4 relative: the sums are reassociated, nothing else differs; an
# accuracy may differ by one vertex of the 140 training vertices, 0.0072, since a vertex whose top two logits
# are within rounding can flip: seen once, epoch 105, test 0.799 vs 0.8 with the losses within 3e-7). GIN
# (the README's settings, seed 0: 79.3%; seeds 0-4 range 77.8-80.0%) must reach 76%, a bound below any seed
# seen that a model ignoring the graph cannot meet (the MLP alone, --model appnp --appnp-k 0:
# 61.9%). Skipped (77) without the shared data.
# Five runs of ~10-30 s each on one thread (more on a loaded machine).
source "$(dirname "$0")/common.sh"
CORA="${HALOGEN_SHARED_DATA:-/nonexistent}/ogb-format/cora"
[[ -d "$CORA" ]] || { echo "skipped: $CORA not found"; exit 77; }
"$HALOGEN_BIN" convert "$CORA" --format ogb -o "$WORK/cora.h5" >/dev/null
# --vertex-order gid: each row then sums its neighbours in the same order on 1 and 2 ranks up to the owned/halo
# split, as before RCM existed. With the default rcm the two runs reassociate more sums (each part's own RCM
# order), and over 300 APPNP epochs (10 propagations each, dropout) that rounding grows to 3.7e-4 relative by
# epoch 216: still "equal up to summation order", but no longer within this test's 1e-4. rcm partitions are
# held to P = 1 by train.partition_invariance and mpi_train_partition_invariance_test, and to gid partitions by
# train.vertex_order.
for np in 1 2; do
  "$HALOGEN_BIN" partition "$WORK/cora.h5" -k $np --vertex-order gid -o "$WORK/cora.p$np" >/dev/null
done
appnp() {  # np seed
  timeout 600 "${MPIRUN[@]}" -np "$1" "$HALOGEN_BIN" train "$WORK/cora.p$1" --model appnp --hidden 64 --appnp-k 10 \
    --appnp-alpha 0.1 --dropout 0.5 --lr 0.01 --weight-decay 5e-3 --epochs 300 --row-normalize --seed "$2" --quiet \
    --metrics "$WORK/appnp-np$1-seed$2.jsonl" >/dev/null
}
for seed in 0 1 2; do appnp 1 $seed; done
appnp 2 0
compare "$WORK/appnp-np1-seed0.jsonl" "$WORK/appnp-np2-seed0.jsonl" --rel 1e-4 --acc-abs 0.0072 --final || fail "APPNP 2 ranks != 1 rank"
timeout 600 "$HALOGEN_BIN" train "$WORK/cora.p1" --model gin --layers 2 --hidden 64 --gin-eps-learn --dropout 0.5 \
  --lr 0.01 --weight-decay 5e-3 --epochs 200 --row-normalize --seed 0 --quiet --metrics "$WORK/gin.jsonl" >/dev/null
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
final = lambda f: json.loads(open(f).read().splitlines()[-1])["test_acc_at_best"]
accs = [final(f"{work}/appnp-np1-seed{s}.jsonl") for s in range(3)]
mean = sum(accs) / 3
gin = final(f"{work}/gin.jsonl")
print(f"Cora APPNP, 1 rank: test_acc_at_best per seed {[round(a, 4) for a in accs]}, mean {mean:.4f} (>= 0.82)")
print(f"Cora GIN, 1 rank, seed 0: test_acc_at_best {gin:.4f} (>= 0.76)")
sys.exit(0 if mean >= 0.82 and gin >= 0.76 else 1)
PY
