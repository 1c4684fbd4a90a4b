#!/usr/bin/env bash
# `halogen info DIR` predicts the per-rank buffer memory that `halogen train` then reports as its peak, within
# 5%, for a dense-feature GCN, SAGE, GIN (fixed and learned eps), APPNP (K = 10) and GAT (8 heads x 8, 1 output
# head: its per-edge attention buffers; with --gat-dropout original, the default, and pyg) and GCNII (64 layers of
# width 64: one activation buffer with a single halo region) model on 2 ranks.
# Its breakdown by what holds the memory adds up to the total, and the metrics header records the same plan.
set -euo pipefail
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun_cmd=(mpirun -np 2 --oversubscribe --bind-to none)

"$bin" generate sbm --nodes 6000 --classes 4 --features 48 --seed 3 -o "$work/g.h5" >/dev/null
"$bin" partition "$work/g.h5" -k 2 -o "$work/g.p2" >/dev/null

check() {
  local model=$1 hidden=$2 layers=$3
  local extra=("${@:4}")  # options for both info and train
  local measured
  "$bin" info "$work/g.p2" --model "$model" --hidden "$hidden" --layers "$layers" "${extra[@]}" >"$work/info"
  "${mpirun_cmd[@]}" "$bin" train "$work/g.p2" --device cpu --model "$model" --hidden "$hidden" --layers "$layers" \
    "${extra[@]}" --epochs 2 --quiet --metrics "$work/m.jsonl" >"$work/train" 2>&1
  measured=$(sed -n 's/^memory: peak \([0-9.]*\) MiB.*/\1/p' "$work/train")
  [ -n "$measured" ] || { cat "$work/train"; echo "FAIL: train printed no peak"; exit 1; }
  python3 - "$work/info" "$measured" "$model" "$work/m.jsonl" <<'PY'
import json, re, sys
info, measured, model = open(sys.argv[1]).read(), float(sys.argv[2]), sys.argv[3]
m = re.search(r"max per rank ([0-9.]+) MiB", info)
if not m:
    sys.exit("FAIL: info printed no prediction:\n" + info)
predicted = float(m.group(1))
names = ["structure", "halo", "features", "activations", "gradients", "workspace", "parameters", "optimizer"]
items = {}
for name in names + ["total"]:
    line = re.search(r"^  " + name + r" +([0-9.]+) MiB", info, re.M)
    if not line:
        sys.exit(f"FAIL: {model}: no breakdown line '{name}':\n" + info)
    items[name] = float(line.group(1))
parts = sum(items[n] for n in names)
if abs(parts - items["total"]) > 0.1 * len(names) or abs(items["total"] - predicted) > 0.05:
    sys.exit(f"FAIL: {model}: the breakdown adds up to {parts} MiB, total {items['total']}, predicted {predicted}")
lines = [json.loads(l) for l in open(sys.argv[4])]
header, final = lines[0], lines[-1]
plan = header.get("memory_plan")
if not plan or set(plan) != set(names + ["total"]) or plan["total"] != sum(plan[n] for n in names):
    sys.exit(f"FAIL: {model}: metrics header memory_plan {plan}")
# The header's plan: each part the max over ranks, so its total is at least the largest rank's estimate.
if plan["total"] < final["estimated_bytes"] or abs(plan["total"] / 2**20 - predicted) > 0.05 * predicted:
    sys.exit(f"FAIL: {model}: memory_plan total {plan['total']} vs estimate {final['estimated_bytes']}")
ratio = predicted / measured
print(f"{model}: predicted {predicted} MiB, measured peak {measured} MiB, ratio {ratio:.3f}; "
      f"structure {items['structure']} workspace {items['workspace']} MiB")
sys.exit(0 if 0.95 <= ratio <= 1.05 else 1)
PY
}
check gcn 64 2
check gcn 64 3 --recompute
check sage 32 3
check gin 32 2
check gin 32 2 --gin-eps-learn
check appnp 64 2
check gat 8 2
check gat 8 2 --gat-dropout pyg
check gcnii 64 64
# The GPU's plan (info --device cuda): its matrices store one value per entry (cuSPARSE), which the CPU computes
# from the degrees, so for GCN it is larger by about 4 bytes per stored entry.
cpu_plan=$("$bin" info "$work/g.p2" --model gcn --hidden 16 | sed -n 's/.*max per rank \([0-9.]*\) MiB.*/\1/p')
gpu_plan=$("$bin" info "$work/g.p2" --model gcn --hidden 16 --device cuda | sed -n 's/.*max per rank \([0-9.]*\) MiB.*/\1/p')
python3 -c "import sys; c, g = float('$cpu_plan'), float('$gpu_plan'); sys.exit(0 if g > c else 1)" ||
  { echo "FAIL: info --device cuda plans $gpu_plan MiB, not more than the CPU's $cpu_plan MiB"; exit 1; }
echo "gcn: info plans $cpu_plan MiB on the CPU, $gpu_plan MiB on cuda (stored edge values)"
echo "info memory: all checks passed"
