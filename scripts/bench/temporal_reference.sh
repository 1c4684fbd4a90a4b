#!/usr/bin/env bash
# Halogen's temporal regression models against a plain-PyTorch reference of the same models on the same data
# and protocol (issue 30): for every graph file, model and seed, `halogen train GRAPH.p2 --model M --task
# regression --seed S` on 2 ranks (defaults only) and scripts/bench/torch_temporal.py GRAPH.h5 --model M --seed S
# (the same definitions, defaults, window, split, target scaling, Adam and clipping; its own initial weights
# from torch's RNG). Prints one line per run, then a markdown table of the mean test MSE over the seeds.
#
#   scripts/bench/temporal_reference.sh GRAPH.h5...     (GRAPH.p2 beside each: `halogen partition GRAPH.h5
#                                                         --parts 2 -o GRAPH.p2`)
#
# Environment (defaults): HALOGEN (build/release/bin/halogen), PYTHON (/tmp/torchenv/bin/python; needs torch and
# h5py, /usr/bin/python3 has torch 1.13 + h5py), MODELS ("evolvegcn-o tgcn gconvgru"), SEEDS ("0 1 2"),
# EXTRA_ARGS ("": given to both programs, e.g. "--epochs 5"), REFERENCE_ARGS ("": to the reference only; "--init
# halogen" starts it from Halogen's very weights, whose epoch losses then agree to float rounding, so that the
# table shows what is left once the seeds' different weights are taken out), OMP_NUM_THREADS (1; the reference runs
# --threads 1). mpirun as root needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (exported here).
# Table: dataset | model | Halogen mean test MSE (seeds) | reference mean test MSE (seeds) | Halogen/reference |
# training-mean baseline | within 5% (Halogen's mean at most 1.05 x the reference's). The last line counts
# runs that failed and rows over 5%; the exit status is 1 when there is one.
# A comparison, not a test: each program's figures vary with its seed (different initial weights).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
halogen=${HALOGEN:-$root/build/release/bin/halogen}
python=${PYTHON:-/tmp/torchenv/bin/python}
models=${MODELS:-"evolvegcn-o tgcn gconvgru"} seeds=${SEEDS:-"0 1 2"}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

[ $# -ge 1 ] || { echo "usage: temporal_reference.sh GRAPH.h5... (GRAPH.p2 beside each)" >&2; exit 2; }
[ -x "$halogen" ] || { echo "temporal_reference: $halogen: no halogen binary (set HALOGEN=...)" >&2; exit 2; }
"$python" -c "import torch, h5py" 2>/dev/null ||
  { echo "temporal_reference: $python lacks torch or h5py (set PYTHON=...)" >&2; exit 2; }

json_field() { "$python" -c "import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
# mean of the numbers given; the numbers joined by " / " (5 significant digits, no exponent below 1e5)
mean_of() { "$python" -c "import sys; v = [float(x) for x in sys.argv[1:]]; print(sum(v) / len(v))" "$@"; }
list_of() { "$python" -c "import sys; print(' / '.join('%.5g' % float(x) if abs(float(x)) < 1e5 else '%.0f' % float(x) for x in sys.argv[1:]))" "$@"; }

failures=0 over=0 rows=()
for graph in "$@"; do
  parts=${graph%.h5}.p2 dataset=$(basename "${graph%.h5}")
  if [ ! -f "$graph" ] || [ ! -f "$parts/meta.json" ]; then
    echo "temporal_reference: $graph or $parts/meta.json missing" >&2
    failures=$((failures + 1))
    continue
  fi
  for model in $models; do
    halogen_mse=() reference_mse=() mean_baseline=-
    for seed in $seeds; do
      start=$(date +%s.%N)
      # shellcheck disable=SC2086
      out=$(mpirun --oversubscribe --bind-to none -np 2 "$halogen" train "$parts" --model "$model" --task regression \
            --seed "$seed" --quiet ${EXTRA_ARGS:-} 2>&1)
      rc=$?
      halogen_s=$(echo "$(date +%s.%N) - $start" | bc)
      done_line=$(grep "^done:" <<<"$out" | tail -n 1)
      if [ "$rc" -ne 0 ] || [ -z "$done_line" ]; then
        echo "$dataset $model seed $seed: halogen FAILED: $(grep -m1 -i error <<<"$out" | cut -c1-160)"
        failures=$((failures + 1))
        continue
      fi
      # each figure by its name (the done: line also carries *_original fields between them)
      mse=$(sed -E 's/.* test_mse ([^ ]+).*/\1/' <<<" $done_line")
      mean=$(sed -E 's/.* baseline_mean_mse ([^ ]+).*/\1/' <<<" $done_line")
      # shellcheck disable=SC2086
      ref=$("$python" "$root/scripts/bench/torch_temporal.py" "$graph" --model "$model" --seed "$seed" --threads 1 \
            ${EXTRA_ARGS:-} ${REFERENCE_ARGS:-} 2>&1 | tail -n 1)
      if ! ref_mse=$(json_field "$ref" test_mse 2>/dev/null); then
        echo "$dataset $model seed $seed: reference FAILED: $(cut -c1-160 <<<"$ref")"
        failures=$((failures + 1))
        continue
      fi
      halogen_mse+=("$mse") reference_mse+=("$ref_mse") mean_baseline=$mean
      printf '%-16s %-12s seed %s  halogen %-10s %5.1f s | reference %-10.6g %5.1f s | mean baseline %s (reference %.6g)\n' \
        "$dataset" "$model" "$seed" "$mse" "$halogen_s" "$ref_mse" "$(json_field "$ref" seconds)" "$mean" \
        "$(json_field "$ref" baseline_mean_mse)"
    done
    [ ${#halogen_mse[@]} -gt 0 ] || continue
    h=$(mean_of "${halogen_mse[@]}") r=$(mean_of "${reference_mse[@]}")
    ratio=$("$python" -c "import sys; print('%.3f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$h" "$r")
    verdict=yes
    if ! "$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1.05 * float(sys.argv[2]) else 1)" "$h" "$r"; then
      verdict=no over=$((over + 1))
    fi
    rows+=("$(printf '| %s | %s | %s (%s) | %s (%s) | %s | %s | %s |' "$dataset" "$model" "$(list_of "$h")" \
              "$(list_of "${halogen_mse[@]}")" "$(list_of "$r")" "$(list_of "${reference_mse[@]}")" "$ratio" \
              "$(list_of "$mean_baseline")" "$verdict")")
  done
done
echo
echo "| dataset | model | Halogen mean test MSE (seeds $seeds; 2 ranks) | reference mean test MSE (seeds) | Halogen/reference | training-mean baseline | within 5% |"
echo "|---|---|---|---|---|---|---|"
for row in "${rows[@]}"; do echo "$row"; done
echo
echo "failed runs $failures, rows over 5% $over"
[ "$failures" -eq 0 ] && [ "$over" -eq 0 ]
