#!/usr/bin/env bash
# Validates `halogen plan` against measured CPU runs (docs/scaling.md, "Validation"): calibrates a profile,
# trains GCN (hidden 128, 3 layers, 1 thread per rank, 8 epochs) on an SBM (200k vertices, degree 40) and an
# RMAT (scale 17, edge factor 16) graph at P = 1 and 2, and prints predicted vs measured epoch time and
# per-rank memory as a Markdown table. Run it on an otherwise idle machine: the 25% target is about the model,
# and other jobs on the same cores change measured times several-fold.
#   scripts/plan_validate.sh [--halogen build/release/bin/halogen] [--out build/plan_validate]
set -euo pipefail
halogen=build/release/bin/halogen
out=build/plan_validate
while [ $# -gt 0 ]; do
  case "$1" in
    --halogen) halogen=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--halogen BIN] [--out DIR]" >&2; exit 2 ;;
  esac
done
halogen=$(realpath "$halogen")
mkdir -p "$out"
cd "$out"
mpirun_cmd=(mpirun --oversubscribe --bind-to none)
[ -f sbm.h5 ] || "$halogen" generate sbm --nodes 200000 --classes 8 --avg-degree 40 --features 64 -o sbm.h5 >/dev/null
[ -f rmat.h5 ] || "$halogen" generate rmat --scale 17 --edge-factor 16 --features 64 --classes 8 -o rmat.h5 >/dev/null
for g in sbm rmat; do for p in 1 2; do
  [ -d $g.p$p ] || "$halogen" partition $g.h5 --parts $p -o $g.p$p >/dev/null
done; done
"${mpirun_cmd[@]}" -np 2 "$halogen" bench profile -o profile.json --threads 1 >profile.log
model=(--model gcn --hidden 128 --layers 3)
for g in sbm rmat; do for p in 1 2; do
  "${mpirun_cmd[@]}" -np $p "$halogen" train $g.p$p "${model[@]}" --epochs 8 --eval-every 1 --threads 1 --quiet \
    --metrics train_${g}_$p.jsonl >/dev/null
  "$halogen" plan $g.p$p "${model[@]}" --profile profile.json --threads 1 --json >plan_${g}_$p.json
done; done
python3 - <<'PY'
import json, statistics
print("| graph | P | predicted epoch (ms) | measured mean_epoch_ms | ratio | predicted bytes/rank | allocated_bytes |")
print("|---|---:|---:|---:|---:|---:|---:|")
for g in ["sbm", "rmat"]:
    for p in [1, 2]:
        plan = json.loads(open(f"plan_{g}_{p}.json").readline())
        run = [json.loads(l) for l in open(f"train_{g}_{p}.jsonl") if '"final"' in l][0]
        print(f"| {g} | {p} | {plan['epoch_ms']:.0f} | {run['mean_epoch_ms']:.0f} | "
              f"{plan['epoch_ms'] / run['mean_epoch_ms']:.2f} | {plan['bytes_per_rank']} | {run['allocated_bytes']} |")
PY
