#!/usr/bin/env bash
# Peak memory and epoch time of a 2-layer GCN, Halogen against DGL 2.1, side by side on the same graph file,
# 1 process x 2 threads each, 5 epochs, each epoch a training step plus an evaluation of train/valid/test accuracy.
#
#   scripts/bench/memory_vs_dgl.sh GRAPH.h5 [HIDDEN]          (HIDDEN: default 64)
#
# Halogen: partitions GRAPH into one part (GRAPH.p1/, made once and reused), then
#   OMP_NUM_THREADS=2 /usr/bin/time -v halogen train GRAPH.p1 --hidden H --epochs 5 --seed 0
# and takes /usr/bin/time's "Maximum resident set size" and the `done:` line's mean epoch (over all 5 epochs:
# Halogen allocates its buffers before epoch 1). DGL: scripts/bench/dgl_gcn.py (GraphConv norm='both', same
# dropout, Adam and weight decay) under /usr/bin/time -v, 5 timed epochs after 1 untimed warmup epoch.
# Peak RSS is /usr/bin/time's for both processes (for DGL it includes ~0.5 GiB of torch and DGL libraries).
# Prints the plan of `halogen info GRAPH.p1 --hidden H` (its "max per rank" line), then one row per framework
# (mean epoch ms, peak RSS MiB) and the ratios halogen/dgl; the logs and DGL's JSON line stay in WORKDIR.
#
# Environment (defaults): HALOGEN (build/release/bin/halogen), DGL_PYTHON (/tmp/dglenv/bin/python: a venv with
# dgl==2.1.0 and torch==2.2.1, made as scripts/bench/dgl_gcn.py's docstring says), WORKDIR (a new mktemp -d,
# removed after a successful run). Needs GNU time at /usr/bin/time (Debian/Ubuntu package `time`).
# A benchmark, not a test: the epoch times depend on the machine and its load; run it on an idle machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "memory_vs_dgl: $*" >&2; exit 1; }

graph="${1:?usage: $0 GRAPH.h5 [HIDDEN]}"
hidden="${2:-64}"
halogen=${HALOGEN:-$root/build/release/bin/halogen}
python=${DGL_PYTHON:-/tmp/dglenv/bin/python}
epochs=5 threads=2

[ -f "$graph" ] || die "$graph: no such graph file"
[[ "$hidden" =~ ^[1-9][0-9]*$ ]] || die "HIDDEN must be a positive integer, not '$hidden'"
[ -x "$halogen" ] || die "$halogen: no halogen binary (build it, or set HALOGEN=...)"
/usr/bin/time --version 2>&1 | grep -q GNU || die "/usr/bin/time is not GNU time (apt-get install time)"
"$python" -c "import dgl, h5py" 2>/dev/null ||
  die "$python cannot import dgl and h5py (set DGL_PYTHON=...; scripts/bench/dgl_gcn.py says how to make the venv)"

if [ -n "${WORKDIR:-}" ]; then work=$WORKDIR; keep=1; else work=$(mktemp -d); keep=0; fi
mkdir -p "$work"
parts="${graph%/}.p1"

# Maximum resident set size of a `/usr/bin/time -v -o FILE` report, in MiB.
max_rss_mib() { awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$1"; }

if [ ! -d "$parts" ]; then
  "$halogen" partition "$graph" -k 1 -o "$parts" >"$work/partition.log" 2>&1 ||
    die "halogen partition $graph failed (log: $work/partition.log)"
fi
plan=$("$halogen" info "$parts" --hidden "$hidden" 2>"$work/info.log" | grep "max per rank" | sed 's/^ *//') ||
  die "halogen info $parts --hidden $hidden failed or printed no 'max per rank' line (log: $work/info.log)"

OMP_NUM_THREADS=$threads /usr/bin/time -v -o "$work/halogen.time" "$halogen" train "$parts" --hidden "$hidden" \
  --device cpu --epochs "$epochs" --seed 0 >"$work/halogen.log" 2>&1 || die "halogen train failed (log: $work/halogen.log)"
halogen_ms=$(sed -n 's/.*done:.*mean epoch \([0-9.]*\) ms.*/\1/p' "$work/halogen.log" | tail -1)
halogen_mib=$(max_rss_mib "$work/halogen.time")
if [ -z "$halogen_ms" ] || [ -z "$halogen_mib" ]; then
  die "halogen train printed no 'done: ... mean epoch X ms' line or no max RSS (log: $work/halogen.log)"
fi

OMP_NUM_THREADS=$threads /usr/bin/time -v -o "$work/dgl.time" "$python" "$root/scripts/bench/dgl_gcn.py" "$graph" \
  --hidden "$hidden" --epochs "$epochs" --threads "$threads" >"$work/dgl.json" 2>"$work/dgl.log" ||
  die "scripts/bench/dgl_gcn.py failed (log: $work/dgl.log)"
dgl_line=$(grep '^{' "$work/dgl.json" | tail -1) || die "dgl_gcn.py printed no JSON line (log: $work/dgl.log)"
dgl_ms=$("$python" -c 'import json, sys; print("%.1f" % json.loads(sys.argv[1])["mean_epoch_ms"])' "$dgl_line")
dgl_mib=$(max_rss_mib "$work/dgl.time")
[ -n "$dgl_mib" ] || die "no max RSS in $work/dgl.time"

echo "# GCN, 2 layers, hidden $hidden, $epochs epochs (train step + evaluation), 1 process x $threads threads: $graph"
echo "# halogen plan: $plan"
echo "# dgl: $dgl_line"
printf "%-10s %10.1f ms %10.1f MiB\n" halogen "$halogen_ms" "$halogen_mib" dgl "$dgl_ms" "$dgl_mib"
awk -v hm="$halogen_ms" -v dm="$dgl_ms" -v hr="$halogen_mib" -v dr="$dgl_mib" \
  'BEGIN { printf "ratio (halogen/dgl)  time %.2fx  memory %.2fx\n", hm / dm, hr / dr }'
[ "$keep" = 1 ] || rm -rf "$work"
