#!/usr/bin/env bash
# Epoch time and peak RSS of GCN, GraphSAGE and GAT, Halogen against DGL, on the same graph file, 1 process x 2
# threads each, full batch, each epoch a training step plus an evaluation of train/valid/test accuracy.
#
#   scripts/bench/dgl_vs_halogen.sh GRAPH.h5 [PARTS]     (PARTS: GRAPH's 1-part partition, default GRAPH minus
#                                                          .h5 plus .p1, made with `halogen partition -k 1` if absent)
#
# The models (the same on both sides; 2 layers, Adam lr 0.01, weight decay 5e-4 on the first layer, seed 0):
#   gcn   halogen train --model gcn --hidden 128          DGL GraphConv(norm='both') on G + self loops, ReLU +
#                                                          dropout 0.5 between layers and on the input
#   sage  halogen train --model sage --hidden 128         DGL SAGEConv(aggregator_type='mean') on G, as gcn
#   gat   halogen train --model gat --hidden 8 --heads 8 --output-heads 1 --dropout 0.6 --attention-dropout 0.6
#         --gat-dropout pyg                              DGL GATConv, 8 heads x 8 (ELU, concatenated) then 1 head,
#                                                          feat_drop 0.6 and attn_drop 0.6, on G + self loops
# DGL's feat_drop drops each layer's input once for all heads, which is Halogen's --gat-dropout pyg (Halogen's
# default, original, draws a mask per head: more work); GAT_DROPOUT=original times that instead.
# Halogen: OMP_NUM_THREADS=2 /usr/bin/time -v halogen train PARTS ... --metrics FILE; DGL: scripts/bench/dgl_gcn.py
# --model M under /usr/bin/time -v. Epoch time: the median of the epochs after the first WARMUP (per-epoch epoch_ms
# of Halogen's metrics, the JSON line's epoch_ms of DGL's). Peak RSS: /usr/bin/time's "Maximum resident set size"
# of each process (loading included; for DGL ~0.5 GiB of it is the torch and DGL libraries).
# Prints the versions (halogen --version, python, torch, dgl), the machine (CPU, cores, load), one line per engine
# and model, and a markdown table with the ratios Halogen/DGL. Logs, metrics and DGL's JSON lines stay in WORKDIR.
#
# Environment (defaults): HALOGEN (build/release/bin/halogen), DGL_PYTHON or PYTHON (/tmp/dglenv/bin/python: a venv
# with dgl==2.1.0 and torch==2.2.1, made as scripts/bench/dgl_gcn.py's docstring says), MODELS ("gcn sage gat"),
# EPOCHS (5 timed epochs), WARMUP (1 untimed epoch before them), THREADS (2), GAT_DROPOUT (pyg), PRECISIONS
# (Halogen's --precision values to time, "fp32"; "fp32 bf16" adds a BF16 row per model, against DGL's FP32), WORKDIR (a new
# mktemp -d, removed after a successful run). Needs GNU time at /usr/bin/time (Debian/Ubuntu package `time`).
# A benchmark, not a test: the times depend on the machine and its load; run it on an idle machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "dgl_vs_halogen: $*" >&2; exit 1; }

graph="${1:?usage: $0 GRAPH.h5 [PARTS]}"
parts="${2:-${graph%.h5}.p1}"
halogen=${HALOGEN:-$root/build/release/bin/halogen}
python=${DGL_PYTHON:-${PYTHON:-/tmp/dglenv/bin/python}}
models=${MODELS:-gcn sage gat}
epochs=${EPOCHS:-5} warmup=${WARMUP:-1} threads=${THREADS:-2} gat_dropout=${GAT_DROPOUT:-pyg}
precisions=${PRECISIONS:-fp32}

[ -f "$graph" ] || die "$graph: no such graph file"
[ -x "$halogen" ] || die "$halogen: no halogen binary (build it, or set HALOGEN=...)"
[[ "$epochs" =~ ^[1-9][0-9]*$ ]] || die "EPOCHS must be a positive integer, not '$epochs'"
[[ "$warmup" =~ ^[0-9]+$ ]] || die "WARMUP must be a non-negative integer, not '$warmup'"
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || die "THREADS must be a positive integer, not '$threads'"
[[ "$gat_dropout" =~ ^(pyg|original)$ ]] || die "GAT_DROPOUT must be pyg or original, not '$gat_dropout'"
for model in $models; do
  [[ "$model" =~ ^(gcn|sage|gat)$ ]] || die "MODELS: '$model' is not one of gcn, sage, gat"
done
for precision in $precisions; do
  [[ "$precision" =~ ^(fp32|bf16)$ ]] || die "PRECISIONS: '$precision' is not fp32 or bf16"
done
/usr/bin/time --version 2>&1 | grep -q GNU || die "/usr/bin/time is not GNU time (apt-get install time)"
versions=$("$python" -c 'import sys, dgl, h5py, torch; print(sys.version.split()[0], torch.__version__, dgl.__version__)' \
  2>/dev/null) ||
  die "$python cannot import dgl, torch and h5py (set DGL_PYTHON=...; scripts/bench/dgl_gcn.py says how to make the venv)"

if [ -n "${WORKDIR:-}" ]; then work=$WORKDIR; keep=1; else work=$(mktemp -d); keep=0; fi
mkdir -p "$work"

# Maximum resident set size of a `/usr/bin/time -v -o FILE` report, in MiB.
max_rss_mib() { awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$1"; }
# Median of the numbers on stdin, one a line.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

if [ ! -f "$parts/meta.json" ]; then
  "$halogen" partition "$graph" -k 1 -o "$parts" >"$work/partition.log" 2>&1 ||
    die "halogen partition $graph failed (log: $work/partition.log)"
fi

model_options() {  # the model's options, the same for both engines (Halogen's spelling; dgl_gcn.py takes them too)
  case $1 in
    gcn | sage) echo "--model $1 --layers 2 --hidden 128 --dropout 0.5" ;;
    gat) echo "--model gat --layers 2 --hidden 8 --heads 8 --output-heads 1 --dropout 0.6 --attention-dropout 0.6" ;;
  esac
}

read -r python_version torch_version dgl_version <<<"$versions"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'): $("$halogen" --version) | python $python_version, torch $torch_version, dgl $dgl_version"
echo "# machine: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) before the runs"
echo "# graph: $graph ($parts), $epochs timed epochs after $warmup warm-up, 1 process x $threads threads, seed 0"
rows=()
for model in $models; do
  read -ra options <<<"$(model_options "$model")"
  gat_options=()
  [ "$model" = gat ] && gat_options=(--gat-dropout "$gat_dropout")

  halogen_rows=()  # "precision ms MiB" per Halogen run
  for precision in $precisions; do
    name=halogen-$model-$precision
    OMP_NUM_THREADS=$threads /usr/bin/time -v -o "$work/$name.time" "$halogen" train "$parts" "${options[@]}" \
      "${gat_options[@]}" --precision "$precision" --device cpu --threads "$threads" --epochs $((warmup + epochs)) \
      --seed 0 --quiet --metrics "$work/$name.jsonl" >"$work/$name.log" 2>&1 ||
      die "halogen train --model $model --precision $precision failed (log: $work/$name.log)"
    halogen_ms=$("$python" -c 'import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    if "epoch_ms" in row and row["epoch"] > int(sys.argv[2]): print(row["epoch_ms"])' \
      "$work/$name.jsonl" "$warmup" | median)
    halogen_mib=$(max_rss_mib "$work/$name.time")
    if [ -z "$halogen_ms" ] || [ -z "$halogen_mib" ]; then
      die "no epoch_ms after the warm-up in $work/$name.jsonl or no max RSS in $work/$name.time"
    fi
    halogen_rows+=("$precision $halogen_ms $halogen_mib")
  done

  OMP_NUM_THREADS=$threads /usr/bin/time -v -o "$work/dgl-$model.time" "$python" "$root/scripts/bench/dgl_gcn.py" \
    "$graph" "${options[@]}" --epochs "$epochs" --warmup "$warmup" --threads "$threads" \
    >"$work/dgl-$model.json" 2>"$work/dgl-$model.log" || die "dgl_gcn.py --model $model failed (log: $work/dgl-$model.log)"
  dgl_line=$(grep '^{' "$work/dgl-$model.json" | tail -1) || die "dgl_gcn.py printed no JSON line ($work/dgl-$model.json)"
  dgl_ms=$("$python" -c 'import json, sys; print("%.1f" % json.loads(sys.argv[1])["median_epoch_ms"])' "$dgl_line")
  dgl_mib=$(max_rss_mib "$work/dgl-$model.time")
  [ -n "$dgl_mib" ] || die "no max RSS in $work/dgl-$model.time"

  for row in "${halogen_rows[@]}"; do
    read -r precision halogen_ms halogen_mib <<<"$row"
    label=$model
    [ "$precision" = fp32 ] || label="$model $precision"
    printf "%-10s %-8s %10s ms %10s MiB\n" "$label" halogen "$halogen_ms" "$halogen_mib"
    rows+=("$(awk -v m="$label" -v hm="$halogen_ms" -v dm="$dgl_ms" -v hr="$halogen_mib" -v dr="$dgl_mib" 'BEGIN {
      printf "| %s | %.0f ms | %.0f ms | %.2fx | %.0f MiB | %.0f MiB | %.2fx |", m, hm, dm, hm / dm, hr, dr, hr / dr }')")
  done
  printf "%-10s %-8s %10s ms %10s MiB\n" "$model" dgl "$dgl_ms" "$dgl_mib"
done

echo
echo "| model | Halogen epoch | DGL epoch | time Halogen/DGL | Halogen peak RSS | DGL peak RSS | RSS Halogen/DGL |"
echo "|---|---|---|---|---|---|---|"
printf "%s\n" "${rows[@]}"
[ "$keep" = 1 ] || rm -rf "$work"
