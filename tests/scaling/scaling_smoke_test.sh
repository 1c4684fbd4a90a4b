#!/usr/bin/env bash
# scripts/scaling/run_scaling.sh end to end on tiny graphs (P = 1, 2): the one command produces the CSV, the
# Markdown tables and the four PNGs, and the CSV holds every experiment with the columns the plots read.
# Timings are not checked (benchmarks are not tests).
#
# Usage: scaling_smoke_test.sh HALOGEN_BIN        (exit 77 = skipped: python3 lacks matplotlib)
set -uo pipefail
bin=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
if ! python3 -c 'import matplotlib' 2>/dev/null; then
  echo "SKIP: python3 has no matplotlib (scripts/install-deps.sh installs it)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/halogen-scaling-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$root/scripts/scaling/run_scaling.sh" --halogen "$bin" --out "$work/out" --img "$work/img" --ranks "1 2" \
  --nodes 1500 --nodes-per-rank 600 --features 8 --epochs 4 --train-args "--hidden 8" --method-ranks "2 4" \
  --threads 1 >"$work/run.log" 2>&1 || fail "run_scaling.sh exited $?: $(tail -n 20 "$work/run.log")"

for png in epoch_time phases halo_volume time_to_accuracy; do
  f="$work/img/scaling_$png.png"
  [ -s "$f" ] || fail "no $f"
  [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$f is not a PNG"
done
[ -s "$work/out/tables.md" ] || fail "no tables.md"
python3 - "$work/out/scaling.csv" <<'PY' || fail "scaling.csv check"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def runs(experiment):
    return {(r["graph"], r["method"], r["P"]) for r in rows if r["experiment"] == experiment}
assert runs("strong") == {("sbm-1500", "metis", "1"), ("sbm-1500", "metis", "2")}, runs("strong")
assert runs("weak") == {("sbm-600", "metis", "1"), ("sbm-1200", "metis", "2")}, runs("weak")
assert len(runs("halo")) == 6, runs("halo")  # 3 methods x P in {2, 4}
assert runs("method") == {("sbm-1500", "random", "2"), ("sbm-1500", "contiguous", "2")}, runs("method")
for r in rows:
    if r["experiment"] in ("strong", "weak", "method"):
        assert r["epoch"] and float(r["epoch_ms"]) > 0 and r["valid_acc"] != "", r
        assert r["final_ranks"] == r["P"], r
    if r["experiment"] == "halo" and r["P"] == "2":
        assert int(r["halo_total"]) > 0, r
epochs = [r for r in rows if r["experiment"] == "strong" and r["P"] == "2"]
assert sorted(int(r["epoch"]) for r in epochs) == [1, 2, 3, 4], epochs
print(f"scaling.csv: {len(rows)} rows")
PY
echo "scaling smoke: passed"
