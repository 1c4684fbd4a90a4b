#!/usr/bin/env bash
# scripts/gpu-check.sh's own logic on a machine without a GPU (--dry-run, HALOGEN_BIN instead of a bundle):
#   1. a clean dry run exits 0 and writes gpu-check.json with every required field, the parity differences
#      measured (--device cpu against --device cpu: exactly 0) and the GPU-only figures null;
#   2. a failing correctness step (fault injection: HALOGEN_GPU_CHECK_FAIL=parity_2rank) exits non-zero, and
#      the summary says which step failed and passed = false;
#   3. a budget too small for the correctness steps skips them and exits non-zero (unchecked is not passed).
set -uo pipefail
: "${HALOGEN_BIN:?run through ctest (HALOGEN_BIN is not set)}"
ROOT=${HALOGEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/halogen-gpu-check-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run_check() {  # OUTDIR extra args...: runs the script, prints its output on failure of the caller's check
  local out=$1; shift
  OUT=$out HALOGEN_GPU_WORK=$WORK/scratch HALOGEN_BIN=$HALOGEN_BIN timeout 300 bash "$ROOT/scripts/gpu-check.sh" \
    --dry-run "$@" >"$out.log" 2>&1
}
field_check() {  # JSON python-expression...: each expression (on `s`, the summary) must be true
  local json=$1; shift
  python3 - "$json" "$@" <<'EOF_PY'
import json, sys
s = json.load(open(sys.argv[1]))
required = ["passed", "gpu_tests_passed", "loss_max_rel_diff_1rank", "loss_max_rel_diff_2rank", "epoch_ms_halogen",
            "epoch_ms_pyg", "spmm_copy_bw_share", "steps", "seconds"]
missing = [k for k in required if k not in s]
if missing: sys.exit(f"missing fields {missing} in {sys.argv[1]}")
for expression in sys.argv[2:]:
    if not eval(expression, {"s": s}): sys.exit(f"false: {expression}\n{json.dumps(s, indent=1)}")
EOF_PY
}

# 1. clean dry run
run_check "$WORK/ok"; status=$?
[ "$status" = 0 ] || { cat "$WORK/ok.log"; fail "dry run exited $status (want 0)"; }
field_check "$WORK/ok/gpu-check.json" 's["passed"] is True' 's["dry_run"] is True' \
  's["gpu_tests_passed"] is False' 's["loss_max_rel_diff_1rank"] == 0.0' 's["loss_max_rel_diff_2rank"] == 0.0' \
  's["loss_max_rel_diff_2rank_vs_1rank"] is not None' 's["loss_max_rel_diff_2rank_bf16"] == 0.0' \
  's["loss_max_rel_diff_gat"] == 0.0 and s["loss_max_rel_diff_gat_pyg"] == 0.0' \
  's["epoch_ms_halogen"] is None and s["epoch_ms_pyg"] is None and s["spmm_copy_bw_share"] is None' \
  's["steps"]["parity_1rank"].startswith("rc 0")' 's["steps"]["gpu_tests"].startswith("skipped")' \
  's["seconds"] <= s["budget_seconds"]' || { cat "$WORK/ok.log"; fail "summary of the clean dry run"; }
# The per-step limits (before the optional last step) add up to what the script's header says, and that sum
# plus the header's allowance for env fits the default budget (290 s, under the 300 s a run may take).
limits=$(grep -o 'step [a-z_0-9]* [0-9]* ' "$ROOT/scripts/gpu-check.sh" | awk '{s += $3} END {print s}')
documented=$(sed -n 's/.*optional last one add up to \([0-9]*\) s.*/\1/p' "$ROOT/scripts/gpu-check.sh" | head -1)
env_allowance=$(sed -n 's/.*which$//; s/^# leaves \([0-9]*\) s for env.*/\1/p' "$ROOT/scripts/gpu-check.sh" | head -1)
budget=$(sed -n 's/^BUDGET=\([0-9]*\)$/\1/p' "$ROOT/scripts/gpu-check.sh")
[ "$limits" = "$documented" ] || fail "step limits add up to $limits s but the header says ${documented:-nothing}"
[ -n "$env_allowance" ] && [ $((limits + env_allowance)) -le "$budget" ] && [ "$budget" -lt 300 ] ||
  fail "limits $limits s + env ${env_allowance:-?} s do not fit the budget ${budget:-?} s (< 300)"

# 2. a failing correctness step
HALOGEN_GPU_CHECK_FAIL=parity_2rank run_check "$WORK/bad"; status=$?
[ "$status" != 0 ] || { cat "$WORK/bad.log"; fail "an injected parity failure exited 0"; }
field_check "$WORK/bad/gpu-check.json" 's["passed"] is False' 's["steps"]["parity_2rank"].startswith("rc 1")' \
  's["steps"]["parity_1rank"].startswith("rc 0")' || { cat "$WORK/bad.log"; fail "summary after a failure"; }
grep -q "gpu-check: FAILED" "$WORK/bad.log" || fail "no FAILED line after a failure"

# 3. no time for the correctness steps: skipped, and that is a failure
run_check "$WORK/short" --budget 10; status=$?
[ "$status" != 0 ] || { cat "$WORK/short.log"; fail "a run that checked nothing exited 0"; }
field_check "$WORK/short/gpu-check.json" 's["passed"] is False' 's["steps"]["parity_1rank"].startswith("skipped (budget")' \
  || { cat "$WORK/short.log"; fail "summary of a run without time"; }
echo "gpu-check dry runs: OK (step limits $limits s)"
