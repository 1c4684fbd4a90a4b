#!/usr/bin/env bash
# scripts/gpu-check.sh must never report a pass that did not happen (issue: "GPU first run: no false pass").
# Runs the check's logic on a CPU machine, with a fake nvidia-smi and fake GPU test binaries (shell scripts that
# write GoogleTest JSON reports, one per name the source tree gives), and requires:
#   0. the honest case passes: every expected binary ran and reported, the only skip is the deliberate one
#      (mpi_comm_device_test's NCCL test on 2 ranks sharing one GPU) -> gpu_tests rc 0;
#   1. a skipped test -> fails, naming the test;
#   2. a missing test binary -> fails, naming it (also: a binary that exits 0 without a report);
#   3. a device without a driver: /dev/nvidia* present but nvidia-smi missing, or nvidia-smi failing -> exit 3
#      before any step; and no GPU at all without --dry-run -> exit 3 (never a silent CPU dry run);
#   4. in a CUDA build on a machine without a usable GPU, the real GPU tests (which skip) -> fails.
set -uo pipefail
: "${HALOGEN_BIN:?run through ctest (HALOGEN_BIN is not set)}"
ROOT=${HALOGEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/halogen-gpu-false-pass.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A fake nvidia-smi that sees one H200, and one whose driver is gone.
mkdir -p "$WORK/bin" "$WORK/dev-with-gpu" "$WORK/dev-empty"
printf '#!/bin/sh\necho "NVIDIA H200, 570.00, 143771 MiB"\n' >"$WORK/bin/nvidia-smi-ok"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." >&2\nexit 9\n' \
  >"$WORK/bin/nvidia-smi-broken"
chmod +x "$WORK"/bin/*
: >"$WORK/dev-with-gpu/nvidia0"

# Fake GoogleTest binaries: MODE (file NAME.mode beside it) pass | skip | silent (exits 0, writes no report).
make_fake_tests() {  # DIR
  local dir=$1 source name
  mkdir -p "$dir"
  names=()
  for source in "$ROOT"/tests/gpu/*_test.cu; do names+=("gpu_$(basename "$source" .cu)"); done
  names+=(mpi_comm_device_test)
  for name in "${names[@]}"; do
    cat >"$dir/$name" <<'EOF_FAKE'
#!/usr/bin/env bash
out=""
for arg in "$@"; do case $arg in --gtest_output=json:*) out=${arg#--gtest_output=json:} ;; esac; done
mode=$(cat "$0.mode" 2>/dev/null || echo pass)
[ "$mode" = silent ] && exit 0
result=COMPLETED; [ "$mode" = skip ] && result=SKIPPED
case "$(basename "$0")" in
  mpi_comm_device_test)
    nccl=COMPLETED; [ "${OMPI_COMM_WORLD_SIZE:-1}" = 2 ] && nccl=SKIPPED  # one GPU for 2 ranks: deliberate
    cases="{\"name\": \"NcclExchangeAndAllreduceMatchPredictableData\", \"classname\": \"DeviceComm\", \"status\": \"RUN\", \"result\": \"$nccl\"},
           {\"name\": \"HostStagedExchangeAndAllreduceMatchPredictableData\", \"classname\": \"DeviceComm\", \"status\": \"RUN\", \"result\": \"$result\"}" ;;
  *) cases="{\"name\": \"Works\", \"classname\": \"Fake\", \"status\": \"RUN\", \"result\": \"$result\"}" ;;
esac
[ -n "$out" ] && echo "{\"testsuites\": [{\"name\": \"Fake\", \"testsuite\": [$cases]}]}" >"$out"
echo "[  PASSED  ] (fake)"
EOF_FAKE
    chmod +x "$dir/$name"
  done
}

run_check() {  # NAME [env assignments...] -- [args...]: exit status in $status, output in $WORK/NAME.log
  local name=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  env OUT="$WORK/$name" HALOGEN_GPU_WORK="$WORK/scratch" HALOGEN_BIN="$HALOGEN_BIN" \
    HALOGEN_NVIDIA_SMI="$WORK/bin/nvidia-smi-ok" HALOGEN_GPU_CHECK_DEV_DIR="$WORK/dev-with-gpu" "${envs[@]}" \
    timeout 240 bash "$ROOT/scripts/gpu-check.sh" --skip-pyg --steps gpu_tests "$@" >"$WORK/$name.log" 2>&1
  status=$?
}
expect_failure() {  # NAME PATTERN: the run failed and its output (or the gpu_tests log) names PATTERN
  [ "$status" != 0 ] || { cat "$WORK/$1.log"; fail "$1: exited 0 (a false pass)"; }
  grep -q -- "$2" "$WORK/$1.log" "$WORK/$1/logs/gpu_tests.log" 2>/dev/null ||
    { cat "$WORK/$1.log"; fail "$1: exited $status but without '$2'"; }
  echo "ok: $1 fails (exit $status): $(grep -h -m1 -- "$2" "$WORK/$1.log" "$WORK/$1/logs/gpu_tests.log" 2>/dev/null | head -1)"
}

FAKES=$WORK/tests
make_fake_tests "$FAKES"

# 0. honest: passes (so that the failures below are caused by what each case injects)
run_check honest HALOGEN_GPU_TESTS_DIR="$FAKES"
[ "$status" = 0 ] || { cat "$WORK/honest.log"; cat "$WORK/honest/logs/gpu_tests.log" 2>/dev/null; fail "honest fake run exited $status"; }
python3 - "$WORK/honest/gpu-check.json" <<'EOF_PY' || fail "summary of the honest run"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["passed"] is True and s["gpu_tests_passed"] is True, s
assert s["gpu_tests_ran"] >= 3 and s["gpu_tests_skipped"] == 1, s  # the deliberate NCCL skip on 2 ranks
assert s["steps"]["parity_1rank"].startswith("not selected"), s
assert "gpu_tests" in s["steps_seconds"], s
EOF_PY
echo "ok: honest fake run passes with one deliberate skip"

# 1. a skipped test
echo skip >"$FAKES/gpu_smoke_test.mode"
run_check skipped HALOGEN_GPU_TESTS_DIR="$FAKES"
expect_failure skipped "gpu_smoke_test (1 rank(s), rank 0): Fake.Works SKIPPED"
python3 -c "import json, sys; s = json.load(open('$WORK/skipped/gpu-check.json')); sys.exit(s['passed'] or s['gpu_tests_passed'])" ||
  fail "skipped: the summary says passed"
rm "$FAKES/gpu_smoke_test.mode"

# 2. a missing binary, and one that exits 0 without reporting
mv "$FAKES/gpu_train_parity_test" "$WORK/parked"
run_check missing HALOGEN_GPU_TESTS_DIR="$FAKES"
expect_failure missing "MISSING .*gpu_train_parity_test"
mv "$WORK/parked" "$FAKES/gpu_train_parity_test"
echo silent >"$FAKES/gpu_kernels_gat_test.mode"
run_check silent HALOGEN_GPU_TESTS_DIR="$FAKES"
expect_failure silent "gpu_kernels_gat_test (1 rank(s), rank 0) wrote no report"
rm "$FAKES/gpu_kernels_gat_test.mode"

# 3. a device without a driver, and no GPU at all: exit 3 before any step, no summary that could say passed
run_check no_smi HALOGEN_GPU_TESTS_DIR="$FAKES" HALOGEN_NVIDIA_SMI="$WORK/bin/not-there"
expect_failure no_smi "has NVIDIA device nodes (nvidia0 ) but nvidia-smi is not installed"
[ "$status" = 3 ] || fail "no_smi: exit $status (want 3)"
run_check broken_driver HALOGEN_GPU_TESTS_DIR="$FAKES" HALOGEN_NVIDIA_SMI="$WORK/bin/nvidia-smi-broken"
expect_failure broken_driver "nvidia-smi failed (exit 9) although $WORK/dev-with-gpu has nvidia0"
[ "$status" = 3 ] || fail "broken_driver: exit $status (want 3)"
run_check no_gpu HALOGEN_NVIDIA_SMI="$WORK/bin/not-there" HALOGEN_GPU_CHECK_DEV_DIR="$WORK/dev-empty"
expect_failure no_gpu "no GPU here"
[ "$status" = 3 ] || fail "no_gpu: exit $status (want 3)"
for name in no_smi broken_driver no_gpu; do
  [ ! -f "$WORK/$name/gpu-check.json" ] || fail "$name wrote a summary"
done

# 4. the real GPU tests of a CUDA build, on a machine without a usable GPU: they skip, and that must fail
real_tests=$(cd "$(dirname "$HALOGEN_BIN")/../tests" 2>/dev/null && pwd)
if [ -n "$real_tests" ] && [ -x "$real_tests/gpu_smoke_test" ]; then
  smoke=$("$real_tests/gpu_smoke_test" --gtest_brief=1 2>&1)  # whole (grep -q's early exit would SIGPIPE it)
  if grep -q "no usable CUDA device" <<<"$smoke"; then
    run_check real
    expect_failure real "SKIPPED (not a deliberate skip)"
    grep -q "no usable CUDA device: cudaGetDeviceCount" "$WORK/real/logs/gpu_tests.log" ||
      fail "real: the skip does not say why in CUDA's words"
  else
    echo "note: a GPU is usable here: case 4 (real tests skipping) does not apply"
  fi
else
  echo "note: no CUDA test binaries in this build: case 4 not run"
fi
echo "gpu-check false-pass cases: OK"
