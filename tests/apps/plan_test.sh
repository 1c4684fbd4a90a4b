#!/usr/bin/env bash
# `halogen plan`: exact things exactly, timing loosely.
#  - per-rank memory from a partition directory equals train's own estimate (the model of `halogen info`)
#    byte for byte, and the measured allocation within 1%;
#  - --json gives one object per rank count with the documented fields;
#  - a graph file planned at P = 1 gives the same memory as its 1-part partition;
#  - a statistics file (no graph) plans P = 1, 2, 4 with memory falling as P grows, and the shipped
#    ogbn-papers100M statistics plan on the shipped H200 profile (marked not calibrated);
#  - predicted epoch time within a factor of 10 of the measured one on a small run with a profile calibrated
#    here (loose: CI machines are shared and small runs are noisy; docs/scaling.md has the 25% validation);
#  - ranks = [1, 2] in a --config file plans what --ranks 1,2 plans;
#  - a partition asked for another P, a non-gcn time model and a profile without a link are refused (exit 2).
set -euo pipefail
bin="$1"
source_dir="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun_cmd=(mpirun -np 2 --oversubscribe --bind-to none)

"$bin" generate sbm --nodes 20000 --classes 4 --avg-degree 20 --features 32 --seed 3 -o "$work/g.h5" >/dev/null
"$bin" partition "$work/g.h5" -k 2 -o "$work/g.p2" >/dev/null
"$bin" partition "$work/g.h5" -k 1 -o "$work/g.p1" >/dev/null
"${mpirun_cmd[@]}" "$bin" bench profile -o "$work/cpu.json" --threads 1 --rows 65536 --iters 2 --triad-mib 16 \
  >"$work/profile.log"
model=(--model gcn --hidden 32 --layers 2)

"$bin" plan "$work/g.p2" "${model[@]}" --profile "$work/cpu.json" --json >"$work/p2.json"
"$bin" plan "$work/g.p1" "${model[@]}" --profile "$work/cpu.json" --json >"$work/p1.json"
"$bin" plan "$work/g.h5" "${model[@]}" --profile "$work/cpu.json" --ranks 1 --json >"$work/graph1.json"
"$bin" plan "$work/g.p2" "${model[@]}" --profile "$work/cpu.json" >"$work/table.txt"
# A TOML array for --ranks in a --config file is the comma list.
printf '[plan]\nranks = [1, 2]\nhidden = 32\n' >"$work/plan.toml"
"$bin" plan "$work/g.h5" --config "$work/plan.toml" --profile "$work/cpu.json" --json >"$work/config12.json"
"$bin" plan "$work/g.h5" --ranks 1,2 --hidden 32 --profile "$work/cpu.json" --json >"$work/list12.json"
cmp -s "$work/config12.json" "$work/list12.json" ||
  { echo "FAIL: ranks = [1, 2] in --config differs from --ranks 1,2"; diff "$work/config12.json" "$work/list12.json"; exit 1; }
"${mpirun_cmd[@]}" "$bin" train "$work/g.p2" "${model[@]}" --epochs 6 --threads 1 --quiet \
  --metrics "$work/m2.jsonl" >/dev/null
mpirun -np 1 "$bin" train "$work/g.p1" "${model[@]}" --epochs 6 --threads 1 --quiet --metrics "$work/m1.jsonl" >/dev/null

cat >"$work/stats.json" <<'JSON'
{"format": "halogen.graph_stats", "format_version": 1, "name": "tiny", "num_nodes": 20000, "num_edges": 400000,
 "num_features": 32, "num_classes": 4, "split": {"train": 12000, "valid": 4000, "test": 4000}, "edge_cut": 0.2}
JSON
"$bin" plan "$work/stats.json" "${model[@]}" --profile "$work/cpu.json" --ranks 1,2,4 --json >"$work/stats_plan.json"
"$bin" plan "$source_dir/datasets/stats/ogbn-papers100M.json" --model gcn --hidden 256 --layers 3 \
  --profile "$source_dir/profiles/h200.json" --ranks 8,64 --json >"$work/papers.json"

refused() {  # the command must exit 2 with one line naming $1
  local expect=$1
  shift
  local status=0
  "$@" >"$work/out.txt" 2>&1 || status=$?
  [ "$status" -eq 2 ] || { echo "FAIL: exit $status (want 2): $*"; cat "$work/out.txt"; exit 1; }
  grep -q -- "$expect" "$work/out.txt" || { echo "FAIL: no '$expect' in: $(cat "$work/out.txt")"; exit 1; }
}
refused "plans --ranks 2 only" "$bin" plan "$work/g.p2" "${model[@]}" --profile "$work/cpu.json" --ranks 4
# Other models: memory (as `halogen info`), no epoch time (null in JSON, '-' in the table), exit 0.
"$bin" plan "$work/g.p2" --model sage --profile "$work/cpu.json" --json >"$work/sage.json" ||
  { echo "FAIL: plan --model sage"; exit 1; }
python3 - "$work/sage.json" <<'PY' || { echo "FAIL: plan --model sage: $(cat "$work/sage.json")"; exit 1; }
import json, sys
row = json.loads(open(sys.argv[1]).readline())
assert row["model"] == "sage" and row["bytes_per_rank"] > 0 and row["epoch_ms"] is None, row
PY
"$bin" plan "$work/g.p2" --model gin --profile "$work/cpu.json" | grep -q "covers --model gcn only; the memory is gin's" ||
  { echo "FAIL: plan --model gin does not say the time is gcn's only"; exit 1; }
python3 - "$work/cpu.json" "$work/nolink.json" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
profile.pop("link", None)
json.dump(profile, open(sys.argv[2], "w"))
PY
refused "no link bandwidth" "$bin" plan "$work/g.p2" "${model[@]}" --profile "$work/nolink.json"
# bench profile writes SpMM rates per size of the dense operand; a size without its rates is named.
python3 - "$work/cpu.json" "$work/badrows.json" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
spmm = profile["rates"][0]["spmm"]
assert len(spmm["rows"]) == 2 and len(spmm["gbs"]) == 2, spmm
spmm["gbs"].pop()
json.dump(profile, open(sys.argv[2], "w"))
PY
refused 'badrows.json: rates\[0\]: spmm: "rows"' "$bin" plan "$work/g.p2" "${model[@]}" --profile "$work/badrows.json"

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def lines(name):
    return [json.loads(l) for l in open(f"{work}/{name}") if l.strip()]
def final(name):
    return [l for l in lines(name) if l.get("final")][0]
fields = ["ranks", "epoch_ms", "bytes_per_rank", "spmm_ms", "gemm_ms", "elementwise_ms", "halo_ms",
          "halo_exposed_ms", "allreduce_ms", "allreduce_exposed_ms", "optimizer_ms", "calibrated"]
failures = []
for name, ranks in [("p2.json", [2]), ("p1.json", [1]), ("graph1.json", [1]), ("stats_plan.json", [1, 2, 4]),
                    ("papers.json", [8, 64])]:
    rows = lines(name)
    if [r["ranks"] for r in rows] != ranks:
        failures.append(f"{name}: ranks {[r['ranks'] for r in rows]}, want {ranks}")
    for r in rows:
        missing = [f for f in fields if f not in r]
        if missing:
            failures.append(f"{name}: missing {missing}")
for p in (1, 2):
    plan, run = lines(f"p{p}.json")[0], final(f"m{p}.jsonl")
    # Same model as train's own estimate: equal to the byte.
    if plan["bytes_per_rank"] != run["estimated_bytes"]:
        failures.append(f"P={p}: plan {plan['bytes_per_rank']} B != train's estimate {run['estimated_bytes']} B")
    # The estimate counts every Buffer; 1% leaves room for allocator-independent extras a change might add.
    if abs(plan["bytes_per_rank"] / run["allocated_bytes"] - 1) > 0.01:
        failures.append(f"P={p}: plan {plan['bytes_per_rank']} B vs allocated {run['allocated_bytes']} B")
    ratio = plan["epoch_ms"] / run["mean_epoch_ms"]
    print(f"P={p}: predicted {plan['epoch_ms']:.1f} ms, measured {run['mean_epoch_ms']:.1f} ms, ratio {ratio:.2f}; "
          f"memory {plan['bytes_per_rank']} B = estimate, allocated {run['allocated_bytes']} B")
    # Loose on purpose: on a shared 2-core machine two oversubscribed MPI ranks of a run this small measured
    # up to 5x slower than predicted (MPI waits behind other jobs), so this catches wiring and unit errors
    # (ms vs s, a phase counted 1000x), not accuracy; the 25% validation is in docs/scaling.md.
    if not 0.1 <= ratio <= 10:
        failures.append(f"P={p}: epoch time ratio {ratio:.2f} outside [0.1, 10]")
if lines("graph1.json")[0]["bytes_per_rank"] != lines("p1.json")[0]["bytes_per_rank"]:
    failures.append("graph file at P=1 and its 1-part partition plan different memory")
stats = lines("stats_plan.json")
if not stats[0]["bytes_per_rank"] > stats[1]["bytes_per_rank"] > stats[2]["bytes_per_rank"]:
    failures.append(f"stats: memory not falling with P: {[r['bytes_per_rank'] for r in stats]}")
papers = lines("papers.json")
if any(r["calibrated"] for r in papers):
    failures.append("the shipped h200 profile must say calibrated: false")
if not papers[0]["epoch_ms"] > 0 or "fits" not in papers[0]:
    failures.append("papers100M on h200: no epoch time or no fits field")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
PY
grep -q "epoch(ms)" "$work/table.txt" || { echo "FAIL: the table has no header"; cat "$work/table.txt"; exit 1; }
echo "plan: all checks passed"
