#!/usr/bin/env bash
# Before/after figures of the epoch loop, the two binaries run back to back on the same data (issue 13):
#   - GCN on a 200,000-vertex SBM (average degree 40, 128 features, 16 classes), 2 layers, hidden 128, 10 epochs:
#     1 rank x 2 threads and 2 ranks x 1 thread; mean over epochs 3-10 of epoch_ms, other_ms, eval_ms, and the
#     exposed halo and exposed allreduce shares of epoch_ms;
#   - EvolveGCN-O on Chickenpox (regression, lags 4, window 93, 2 ranks x 1 thread, 20 epochs): snapshots/s.
# usage: scripts/bench/engine_before_after.sh BEFORE_BIN AFTER_BIN [WORKDIR]     (prints a Markdown table)
# Each binary partitions its own copy of the data (the shard format may differ between them). Run it on an idle
# machine: the figures are wall-clock times.
set -euo pipefail
before="${1:?usage: $0 BEFORE_BIN AFTER_BIN [WORKDIR]}"
after="${2:?usage: $0 BEFORE_BIN AFTER_BIN [WORKDIR]}"
work="${3:-$(mktemp -d)}"
data="${HALOGEN_SHARED_DATA:-$(cd "$(dirname "$0")/../.." && pwd)/../shared/data}/temporal/chickenpox.json"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none)
mkdir -p "$work"

summary() {  # summary METRICS: "epoch other eval halo_exposed% allreduce_exposed%" (means over epochs 3..)
  python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
e = [r for r in rows if "epoch" in r and not r.get("final") and r["epoch"] >= 3]  # not the header
m = lambda k: sum(r.get(k, r.get("allreduce_ms", 0.0) if k == "allreduce_exposed_ms" else 0.0) for r in e) / len(e)
ep = m("epoch_ms")
print(f"{ep:.1f} | {m('other_ms'):.1f} ({100*m('other_ms')/ep:.0f}%) | {m('eval_ms'):.1f} ({100*m('eval_ms')/ep:.0f}%)"
      f" | {100*m('halo_exposed_ms')/ep:.1f}% | {100*m('allreduce_exposed_ms')/ep:.1f}%")
PY
}
final() { python3 -c "import json,sys; print(round([json.loads(l) for l in open(sys.argv[1])][-1][sys.argv[2]], 1))" "$1" "$2"; }

echo "| binary | run | epoch ms | other ms (share) | eval ms (share) | halo exposed | allreduce exposed |"
echo "|---|---|---|---|---|---|---|"
for tag in before after; do
  bin=$before; [ "$tag" = after ] && bin=$after
  d="$work/$tag"
  mkdir -p "$d"
  [ -f "$d/sbm.h5" ] || "$bin" generate sbm --nodes 200000 --avg-degree 40 --features 128 --classes 16 --seed 1 \
    -o "$d/sbm.h5" >/dev/null
  for p in 1 2; do [ -d "$d/sbm.p$p" ] || "$bin" partition "$d/sbm.h5" -k $p -o "$d/sbm.p$p" >/dev/null; done
  gcn=(--model gcn --layers 2 --hidden 128 --epochs 10 --quiet)
  "${mpi[@]}" -np 1 "$bin" train "$d/sbm.p1" "${gcn[@]}" --threads 2 --metrics "$d/gcn1.jsonl" >/dev/null
  echo "| $tag | GCN 1 rank x 2 threads | $(summary "$d/gcn1.jsonl") |"
  "${mpi[@]}" -np 2 "$bin" train "$d/sbm.p2" "${gcn[@]}" --threads 1 --metrics "$d/gcn2.jsonl" >/dev/null
  echo "| $tag | GCN 2 ranks x 1 thread | $(summary "$d/gcn2.jsonl") |"
done
echo
if [ -f "$data" ]; then
  echo "| binary | EvolveGCN-O on Chickenpox (2 ranks x 1 thread, window 93) | snapshots/s |"
  echo "|---|---|---|"
  for tag in before after; do
    bin=$before; [ "$tag" = after ] && bin=$after
    d="$work/$tag"
    [ -f "$d/cp.h5" ] || "$bin" convert --format pgt-json "$data" -o "$d/cp.h5" >/dev/null
    [ -d "$d/cp.p2" ] || "$bin" partition "$d/cp.h5" -k 2 -o "$d/cp.p2" >/dev/null
    "${mpi[@]}" -np 2 "$bin" train "$d/cp.p2" --model evolvegcn-o --task regression --lags 4 --window 93 \
      --epochs 20 --eval-every 20 --threads 1 --quiet --metrics "$d/egcn.jsonl" >/dev/null
    echo "| $tag | test_mse $(final "$d/egcn.jsonl" test_mse) | $(final "$d/egcn.jsonl" snapshots_per_s) |"
  done
fi
