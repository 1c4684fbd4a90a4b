#!/usr/bin/env bash
# Runs `halogen train --model M --task regression --seed S` (defaults only, plus EXTRA_ARGS) for every partition
# directory given, every temporal model and seeds 0-2, on the ranks in RANKS (default "1 2", each needs DIR.pN),
# and prints one line per run: dataset, ranks, model, seed, test_mse, the two baselines, beats-mean, seconds, and
# a non-finite stop if there was one. The last line counts failures (non-finite stops, mean not beaten).
#
#   scripts/temporal/defaults_check.sh GRAPH_BASE...     (GRAPH_BASE.p1, GRAPH_BASE.p2 made by `halogen partition`)
#
# Environment: HALOGEN (build/release/bin/halogen), MODELS ("evolvegcn-o tgcn gconvgru"), SEEDS ("0 1 2"),
# RANKS ("1 2"), EXTRA_ARGS (""). scripts/temporal/make_datasets.py writes scaled datasets to check with.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
halogen=${HALOGEN:-$root/build/release/bin/halogen}
models=${MODELS:-"evolvegcn-o tgcn gconvgru"} seeds=${SEEDS:-"0 1 2"} ranks_list=${RANKS:-"1 2"}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
failures=0 runs=0
for base in "$@"; do
  for ranks in $ranks_list; do
    for model in $models; do
      for seed in $seeds; do
        start=$(date +%s.%N)
        # shellcheck disable=SC2086
        out=$(mpirun --oversubscribe --bind-to none -np "$ranks" "$halogen" train "$base.p$ranks" --model "$model" \
              --task regression --seed "$seed" --quiet ${EXTRA_ARGS:-} 2>&1)
        rc=$?
        secs=$(echo "$(date +%s.%N) - $start" | bc)
        runs=$((runs + 1))
        done_line=$(grep "^done:" <<<"$out" | tail -n 1)
        read -r mse last mean < <(sed -E 's/.*test_mse ([^ ]+) baseline_last_mse ([^ ]+) baseline_mean_mse ([^ ]+).*/\1 \2 \3/' <<<"$done_line")
        verdict=ok
        if [ "$rc" -ne 0 ] || [ -z "$done_line" ]; then
          verdict="FAILED: $(grep -m1 -i "error" <<<"$out" | cut -c1-120)"
          failures=$((failures + 1))
        elif ! python3 -c "import sys; sys.exit(0 if float('$mse') < float('$mean') else 1)"; then
          verdict="does-not-beat-mean"
          failures=$((failures + 1))
        fi
        printf '%-22s P=%s %-12s seed %s  test_mse %-10s last %-10s mean %-10s %5.1f s  %s\n' \
          "$(basename "$base")" "$ranks" "$model" "$seed" "${mse:--}" "${last:--}" "${mean:--}" "$secs" "$verdict"
      done
    done
  done
done
echo "runs $runs, failures $failures"
[ "$failures" -eq 0 ]
