#!/usr/bin/env bash
# Scaling experiments in one command: strong and weak scaling over P ranks on generated SBM graphs (and on the
# published datasets whose graph files are present), the halo volume of METIS / random / contiguous partitions
# over P, and time-to-accuracy including preprocessing. Writes
#   OUT/runs.jsonl         one line per run (what was run, preprocessing times, where its metrics are)
#   OUT/metrics/*.jsonl    `halogen train --metrics` of every run
#   OUT/scaling.csv        everything gathered into one table (scripts/scaling/gather.py)
#   IMG/*.png              the plots (scripts/scaling/plot_scaling.py), and OUT/tables.md (Markdown tables)
#
# Usage: scripts/scaling/run_scaling.sh [options]
#   --halogen BIN        halogen binary                                   default: build/release/bin/halogen
#   --out DIR            results directory                                default: build/scaling
#   --img DIR            where the PNGs go                                default: docs/img
#   --ranks "1 2 4"      rank counts P (mpiexec -np P; --oversubscribe when P > cores)
#   --nodes N            strong scaling: SBM vertices                     default: 40000
#   --nodes-per-rank N   weak scaling: SBM vertices per rank              default: 10000
#   --features F         SBM feature width                                default: 64
#                        (SBM: 16 classes, mean degree 16, homophily 0.6, signal 0.5: a GCN climbs to ~0.76
#                        validation accuracy over ~50 epochs, so time-to-accuracy has a curve to show)
#   --epochs E           training epochs per run                          default: 50
#   --train-args "..."   extra `halogen train` arguments                  default: "--hidden 64"
#   --method-ranks "2 4 8 16"  P of the partition-only halo-volume sweep
#   --datasets DIR       directory of converted graph files (NAME.h5, see datasets/README.md) to add to the
#                        strong-scaling runs                               default: none
#   --convert NAME=INPUT a published dataset to convert (timed, counted as preprocessing) and add to the
#                        strong-scaling runs, e.g. cora=../shared/data/ogb-format/cora (repeatable)
#   --threads N          OpenMP threads per rank                          default: max(1, cores / P)
#   --quick              tiny sizes (a smoke run of the whole chain, about a minute)
#   --launcher "CMD"     how to start P ranks; {P} is replaced           default: "mpiexec --oversubscribe --bind-to none -np {P}"
# Threads: each rank gets OMP_NUM_THREADS = max(1, cores / P), so P ranks never use more cores than the machine
# (on a machine shared with other work, --threads 1: OpenMP teams spin-wait badly on cores they do not own).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
halogen="$root/build/release/bin/halogen"
out="$root/build/scaling"
img="$root/docs/img"
ranks="1 2 4"
nodes=40000
nodes_per_rank=10000
features=64
epochs=50
train_args="--hidden 64"
method_ranks="2 4 8 16"
datasets=""
converts=()
launcher="mpiexec --oversubscribe --bind-to none -np {P}"
threads_per_rank=""
while [ $# -gt 0 ]; do
  case "$1" in
    --halogen) halogen=$2; shift ;;
    --out) out=$2; shift ;;
    --img) img=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --nodes) nodes=$2; shift ;;
    --nodes-per-rank) nodes_per_rank=$2; shift ;;
    --features) features=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --train-args) train_args=$2; shift ;;
    --method-ranks) method_ranks=$2; shift ;;
    --datasets) datasets=$2; shift ;;
    --convert) converts+=("$2"); shift ;;
    --launcher) launcher=$2; shift ;;
    --threads) threads_per_rank=$2; shift ;;
    --quick) nodes=4000; nodes_per_rank=1000; features=16; epochs=10; method_ranks="2 4" ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_scaling: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$halogen" ] || { echo "run_scaling: error: $halogen is not an executable (use --halogen)" >&2; exit 2; }
halogen=$(realpath "$halogen")
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
cores=$(nproc)
if [ -n "$threads_per_rank" ]; then threads_note="$threads_per_rank OpenMP thread(s) per rank"
else threads_note="OpenMP threads per rank = max(1, $cores / P)"; fi
mkdir -p "$out/graphs" "$out/parts" "$out/metrics" "$out/logs" "$img"
: >"$out/runs.jsonl"
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
started_utc=$(date -u +%FT%TZ)
log() { echo "run_scaling: $*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

# make_graph NAME NODES -> $out/graphs/NAME.h5 (always made anew, so a file never outlives a change of the
# generator's parameters), sets graph_s (seconds it took, counted as preprocessing).
make_graph() {
  local name=$1 n=$2 start
  graph="$out/graphs/$name.h5"
  start=$(now)
  "$halogen" generate sbm --nodes "$n" --classes 16 --avg-degree 16 --homophily 0.6 --signal 0.5 --features "$features" \
    --seed 1 --name "$name" -o "$graph" >"$out/logs/generate-$name.log" 2>&1 ||
    { echo "run_scaling: error: generating $graph failed; see $out/logs/generate-$name.log" >&2; exit 1; }
  graph_s=$(elapsed "$start")
}

# make_parts GRAPH NAME P METHOD -> $out/parts/NAME.METHOD.pP, sets part_dir and partition_s.
make_parts() {
  local g=$1 name=$2 p=$3 method=$4 start
  part_dir="$out/parts/$name.$method.p$p"
  start=$(now)
  "$halogen" partition "$g" -k "$p" --method "$method" -o "$part_dir" --force >"$out/logs/partition-$name.$method.p$p.log" 2>&1 ||
    { echo "run_scaling: error: partitioning $g failed; see $out/logs/partition-$name.$method.p$p.log" >&2; exit 1; }
  partition_s=$(elapsed "$start")
}

# train EXPERIMENT NAME P METHOD: runs `halogen train` on $part_dir with P ranks and records the run.
train() {
  local experiment=$1 name=$2 p=$3 method=$4 run threads start train_s
  run="$experiment.$name.$method.p$p"
  threads=${threads_per_rank:-$((cores / p))}; [ "$threads" -ge 1 ] || threads=1
  log "train $run ($p ranks x $threads threads)"
  start=$(now)
  # shellcheck disable=SC2086  # launcher and train_args are word lists on purpose
  OMP_NUM_THREADS=$threads ${launcher//\{P\}/$p} "$halogen" train "$part_dir" --epochs "$epochs" \
    --metrics "$out/metrics/$run.jsonl" $train_args >"$out/logs/train-$run.log" 2>&1 ||
    { echo "run_scaling: error: training $run failed; see $out/logs/train-$run.log" >&2; tail -n 5 "$out/logs/train-$run.log" >&2; exit 1; }
  train_s=$(elapsed "$start")
  record "$experiment" "$name" "$p" "$method" "$run" "$threads" "$train_s"
}

# record EXPERIMENT NAME P METHOD RUN THREADS TRAIN_S: one line of runs.jsonl (RUN empty: partition only).
record() {
  printf '{"experiment": "%s", "graph": "%s", "graph_file": "%s", "P": %s, "method": "%s", "run": "%s", "threads": %s, "graph_s": %s, "partition_s": %s, "train_s": %s, "partition_dir": "%s", "metrics": "%s"}\n' \
    "$1" "$2" "$graph" "$3" "$4" "$5" "${6:-0}" "$graph_s" "$partition_s" "${7:-0}" "$part_dir" \
    "${5:+$out/metrics/$5.jsonl}" >>"$out/runs.jsonl"
}

# 1. Strong scaling: one graph, P ranks, METIS.
make_graph "sbm-$nodes" "$nodes"
strong_graph=$graph strong_graph_s=$graph_s
for p in $ranks; do
  graph=$strong_graph graph_s=$strong_graph_s
  make_parts "$graph" "sbm-$nodes" "$p" metis
  train strong "sbm-$nodes" "$p" metis
done

# 2. Weak scaling: nodes_per_rank x P vertices on P ranks.
for p in $ranks; do
  n=$((nodes_per_rank * p))
  make_graph "sbm-$n" "$n"
  make_parts "$graph" "sbm-$n" "$p" metis
  train weak "sbm-$n" "$p" metis
done

# 3. Halo volume of the three partitioners over P (partition only), and their epoch time at the largest P.
graph=$strong_graph graph_s=$strong_graph_s
for method in metis random contiguous; do
  for p in $method_ranks; do
    make_parts "$graph" "sbm-$nodes" "$p" "$method"
    record halo "sbm-$nodes" "$p" "$method" "" 0 0
  done
done
largest=$(echo $ranks | tr ' ' '\n' | sort -n | tail -n 1)
if [ "$largest" -gt 1 ]; then
  for method in random contiguous; do
    make_parts "$graph" "sbm-$nodes" "$largest" "$method"
    train method "sbm-$nodes" "$largest" "$method"
  done
fi

# 4. Published datasets (--convert NAME=INPUT, converted here; --datasets DIR/*.h5, converted before), strong
#    scaling with METIS.
dataset_runs() {
  local name=$1
  for p in $ranks; do
    make_parts "$graph" "$name" "$p" metis
    train dataset "$name" "$p" metis
  done
}
for spec in "${converts[@]}"; do
  name=${spec%%=*} input=${spec#*=}
  graph="$out/graphs/$name.h5"
  start=$(now)
  log "convert $input -> $graph"
  "$halogen" convert "$input" -o "$graph" --name "$name" >"$out/logs/convert-$name.log" 2>&1 ||
    { echo "run_scaling: error: converting $input failed; see $out/logs/convert-$name.log" >&2; exit 1; }
  graph_s=$(elapsed "$start")
  dataset_runs "$name"
done
if [ -n "$datasets" ]; then
  for g in "$datasets"/*.h5; do
    [ -f "$g" ] || continue
    graph=$g graph_s=0
    dataset_runs "$(basename "$g" .h5)"
  done
fi

python3 "$here/gather.py" "$out/runs.jsonl" -o "$out/scaling.csv"
python3 "$here/plot_scaling.py" "$out/scaling.csv" --img "$img" --tables "$out/tables.md"
# Where and when: numbers from a shared or loaded machine must say so.
{
  echo "Machine: $cores cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1))," \
       "run $started_utc .. $(date -u +%FT%TZ), load average (1/5/15 min) at start $load_start, at end" \
       "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown); $threads_note."
  echo
  cat "$out/tables.md"
} >"$out/tables.md.tmp" && mv "$out/tables.md.tmp" "$out/tables.md"
log "done: $out/scaling.csv, $out/tables.md, $img/scaling_*.png"
