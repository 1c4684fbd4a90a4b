#!/usr/bin/env bash
# One-shot GPU check, made for a lent H200 (CUDA 13, CMake, Python with PyTorch and PyG, probably no MPI/METIS/
# HDF5 development files, no network), short enough to run twice in a 15-minute loan: one run takes at most
# --budget seconds (default 290 < 300), every step has its own limit, and the limits of the steps before the
# optional last one add up to 255 s (tests/apps/gpu_check_test.sh checks this sum against the step lines), which
# leaves 35 s for env. Limits are about 3x the times of the first H200 run (docs/gpu/h200-check.json,
# steps_seconds). Steps, most important first (a step that would not fit in what is left of the budget is
# skipped, and a skipped correctness step fails the check):
#   env             prerequisites, the bundle's libraries (ldd), the GPU, PyTorch+PyG        (no limit: ~20 s)
#   gpu_tests       every tests/gpu_*_test (CUDA kernels against the CPU ones, TF32 vs FP32,   limit  60 s
#                   bitwise-repeatable SpMM, GpuDeterminism, ...) and mpi_comm_device_test on  (H200: 13 s)
#                   1 and 2 ranks; fails on a skipped test not listed in DELIBERATE_SKIPS and
#                   on a test binary the bundle (MANIFEST) or the source tree names but that
#                   did not run and report
#   parity_1rank    GCN on a 20k-vertex SBM, 1 rank: --device cuda losses against --device cpu  limit  20 s (3 s)
#   parity_2rank    the same on 2 ranks sharing the GPU (--comm auto -> host-staged MPI) against limit  25 s (2 s)
#                   2 CPU ranks and against the 1-rank GPU run; then a 3-layer GCN with
#                   --precision bf16 on 2 ranks, cuda against cpu (BF16 staging, spmm_bf16,
#                   the BF16 halo both ways, Â X kept in BF16): the first epoch within 1e-4,
#                   later ones within 1e-2 (a value the GPU sums in another order can round to
#                   the neighbouring BF16 value, 2^-8 apart, as P ranks against 1 do: train.bf16)
#   temporal_parity evolvegcn-o, tgcn, gconvgru on Chickenpox: cuda losses against cpu          limit  40 s (17 s)
#   gat_parity      GAT (4 heads x 8, attention dropout 0.6) on the parity SBM, 2 ranks: cuda   limit  25 s (4 s)
#                   losses against cpu (same dropout masks: keyed by global ids), --gat-dropout original
#                   (loss_max_rel_diff_gat) and pyg (loss_max_rel_diff_gat_pyg)
#   bench_spmm      `halogen bench spmm --device cuda`: SpMM GB/s as a share of D2D copy GB/s   limit  15 s (2 s)
#   graph           a 200k-vertex SBM (scripts/bench/pyg_gcn.py make-graph), converted        limit  20 s (2 s)
#   halogen_train   3-layer GCN, hidden 256, on that graph with --device cuda: epoch time      limit  20 s (5 s)
#   pyg_train       the same model in PyG on the same graph and GPU (clean environment)        limit  30 s (8 s)
#   products_2m     optional, last, only in what is left (>= 60 s): a 2M-vertex products-sized graph,
#                   Halogen and PyG epoch times (H200: 99 s)
# Correctness steps (gpu_tests, parity_*, temporal_parity, gat_parity when run) decide the exit status: 0 when all
# passed, 1 when any failed or was skipped for lack of time, 3 when a prerequisite is missing. Parity means
# every per-epoch loss within 1e-4 relative (why 1e-4: same ops on the same data; cuBLAS/cuSPARSE sum in another
# order than the CPU and CUDA's expf/tanhf are a few ulp from glibc's, ~1e-7..1e-6 per op, growing to ~1e-6..1e-5
# over a few epochs of Adam; a wrong op or a wrong halo moves the loss by 1e-2 or more).
#
# Output under $OUT (default $WORK/out): gpu-check.json (the summary, fields below), steps.log (every step's
# output), logs/<step>.log, halogen_metrics.jsonl. gpu-check.json holds at least:
#   passed, gpu_tests_passed (bool), loss_max_rel_diff_1rank, loss_max_rel_diff_2rank (GPU against CPU, 2 ranks),
#   loss_max_rel_diff_2rank_vs_1rank, loss_max_rel_diff_2rank_bf16 (--precision bf16, GPU against CPU, 2 ranks),
#   temporal_parity_passed, epoch_ms_halogen, epoch_ms_pyg (same graph, same GPU), epoch_ratio, spmm_gbs,
#   copy_gbs, spmm_copy_bw_share (0-1), peak_gpu_mib and estimate_gpu_mib (the trainer's peak buffer memory and
#   its prediction), gpu_tests_ran and gpu_tests_skipped (test cases; deliberate skips counted), steps {name:
#   status}, steps_seconds {name: seconds}, seconds.
# A field that was not measured is null.
#
# Binaries: a bundle made on the build machine by scripts/gpu-bundle.sh (bin/halogen, tests/, lib/, a
# relocatable OpenMPI; build/gpu-bundle or build/gpu-bundle.tar.xz). The bundle's LD_LIBRARY_PATH is set for our
# binaries only: Python (PyG, make-graph) runs in the environment this script started with, so that PyTorch
# never loads our copies of libraries.
#
# Usage: bash scripts/gpu-check.sh [--budget SECONDS] [--dry-run] [--skip-pyg] [--skip-2m] [--epochs N]
#                                   [--steps NAME,NAME]
#   --dry-run: no GPU needed: the GPU-only steps are skipped and the parity steps compare --device cpu with
#   --device cpu (losses must then agree exactly), so the script's own logic (steps, limits, comparisons, JSON,
#   exit status) runs on a build machine; ctest does this. Only --dry-run makes a dry run: without it, a machine
#   where nvidia-smi is missing, fails or lists no GPU ends the check at once with exit 3 (and /dev/nvidia* with
#   no working nvidia-smi is named as a driver problem), never with a CPU run that could say "passed".
#   --steps: run only these steps (the others are "not selected" and decide nothing), e.g. to rerun one.
#   With HALOGEN_BIN set, that binary is used instead of a bundle (tests/cmake/gpu_check.cmake).
# Environment: HALOGEN_BUNDLE (bundle dir), HALOGEN_BIN (a halogen binary; no bundle), HALOGEN_GPU_WORK (scratch,
#   default /tmp/halogen-gpu-check; generated graphs are kept and reused), OUT, HALOGEN_CHICKENPOX (Chickenpox
#   JSON), HALOGEN_GPU_CHECK_FAIL=step[,step] (fault injection for the test of this script: the named steps run
#   `false` instead of their command), HALOGEN_GPU_TESTS_DIR (the GPU test binaries; default the bundle's tests/
#   or HALOGEN_BIN's ../tests), HALOGEN_GPU_CHECK_DEV_DIR (where to look for nvidia* device nodes; default /dev) and
#   HALOGEN_NVIDIA_SMI (default nvidia-smi): both for tests/apps/gpu_check_false_pass_test.sh.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUDGET=290
DRY_RUN=0
RUN_PYG=1
RUN_2M=1
EPOCHS=20
WARMUP=3
SELECTED=""
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET=$2; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    --skip-pyg) RUN_PYG=0; shift ;;
    --skip-2m) RUN_2M=0; shift ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    --steps) SELECTED=",$2,"; shift 2 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
START=$(date +%s)
WORK=${HALOGEN_GPU_WORK:-/tmp/halogen-gpu-check}
OUT=${OUT:-$WORK/out}
LOGS=$OUT/logs
mkdir -p "$WORK" "$OUT" "$LOGS"
: >"$OUT/steps.log"
SUMMARY=$OUT/gpu-check.json
# The environment this script started with: Python runs in it (never with the bundle's libraries).
CLEAN_ENV=(env -i "HOME=${HOME:-/root}" "PATH=$PATH")
for var in LD_LIBRARY_PATH PYTHONPATH PYTHONHOME VIRTUAL_ENV CONDA_PREFIX CUDA_VISIBLE_DEVICES CUDA_HOME TMPDIR; do
  [ -n "${!var:-}" ] && CLEAN_ENV+=("$var=${!var}")
done
# Every Python of this script runs through this wrapper (exported to the steps), in that environment.
PY=$WORK/clean-python
{ echo '#!/usr/bin/env bash'; printf 'exec'; printf ' %q' "${CLEAN_ENV[@]}" python3; echo ' "$@"'; } >"$PY"
chmod +x "$PY"
py() { "$PY" "$@"; }

# ---- env: prerequisites and libraries (first, so that a machine that cannot run this says so at once) ---------
missing=()
DEV_DIR=${HALOGEN_GPU_CHECK_DEV_DIR:-/dev}
NVIDIA_SMI=${HALOGEN_NVIDIA_SMI:-nvidia-smi}
if [ "$DRY_RUN" = 0 ]; then
  # A dry run only when asked for: a GPU machine whose driver cannot be used must fail here, not pass on the CPU.
  nodes=$(cd "$DEV_DIR" 2>/dev/null && ls -d nvidia[0-9]* 2>/dev/null | tr '\n' ' ')
  if ! command -v "$NVIDIA_SMI" >/dev/null 2>&1; then
    if [ -n "$nodes" ]; then
      echo "gpu-check: $DEV_DIR has NVIDIA device nodes ($nodes) but nvidia-smi is not installed: the driver cannot be checked or used" >&2
    else
      echo "gpu-check: no GPU here (nvidia-smi not found, no $DEV_DIR/nvidia*); use --dry-run to check the script's logic on the CPU" >&2
    fi
    exit 3
  fi
  smi_out=$("$NVIDIA_SMI" --query-gpu=name,driver_version --format=csv,noheader 2>&1); smi_rc=$?
  GPUS=$(grep -c . <<<"$smi_out")
  if [ "$smi_rc" != 0 ] || [ "$GPUS" -lt 1 ]; then
    echo "gpu-check: nvidia-smi $([ "$smi_rc" != 0 ] && echo "failed (exit $smi_rc)" || echo "lists no GPU")${nodes:+ although $DEV_DIR has $nodes}: $(head -1 <<<"$smi_out")" >&2
    exit 3
  fi
fi
DEVICE=cuda
[ "$DRY_RUN" = 1 ] && DEVICE=cpu
command -v python3 >/dev/null 2>&1 || missing+=("python3")
py -c "import numpy" 2>/dev/null || missing+=("python3 numpy")
if [ -n "${HALOGEN_BIN:-}" ]; then
  HALOGEN=$HALOGEN_BIN
  [ -x "$HALOGEN" ] || missing+=("HALOGEN_BIN=$HALOGEN (not an executable)")
  TESTS_DIR=$(cd "$(dirname "$HALOGEN")/../tests" 2>/dev/null && pwd)
else
  BUNDLE=${HALOGEN_BUNDLE:-$ROOT/build/gpu-bundle}
  if [ ! -x "$BUNDLE/bin/halogen" ] && [ -f "$BUNDLE.tar.xz" ]; then
    tar -C "$(dirname "$BUNDLE")" -xJf "$BUNDLE.tar.xz" || missing+=("a readable $BUNDLE.tar.xz")
  fi
  [ -x "$BUNDLE/bin/halogen" ] || missing+=("the bundle $BUNDLE (make it with scripts/gpu-bundle.sh and carry it)")
  [ -f "$BUNDLE/lib/libhalogen_cuda.so" ] || missing+=("the CUDA backend $BUNDLE/lib/libhalogen_cuda.so")
  HALOGEN=$BUNDLE/bin/halogen
  TESTS_DIR=$BUNDLE/tests
  if [ -f "$BUNDLE/MANIFEST" ]; then
    glibc_needed=$(sed -n 's/^glibc_needed //p' "$BUNDLE/MANIFEST")
    glibc_here=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
    if [ -n "$glibc_needed" ] && [ -n "$glibc_here" ] &&
       [ "$(printf '%s\n%s\n' "$glibc_needed" "$glibc_here" | sort -V | head -1)" != "$glibc_needed" ]; then
      missing+=("glibc >= $glibc_needed for the bundle (this machine has $glibc_here)")
    fi
  fi
fi
TESTS_DIR=${HALOGEN_GPU_TESTS_DIR:-$TESTS_DIR}
if [ ${#missing[@]} -gt 0 ]; then
  printf 'gpu-check: missing prerequisite: %s\n' "${missing[@]}" >&2
  exit 3
fi
if [ -z "${HALOGEN_BIN:-}" ]; then
  # shellcheck source=/dev/null
  source "$BUNDLE/env.sh"  # LD_LIBRARY_PATH, OPAL_PREFIX, PATH for our binaries and OpenMPI
  for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$dir" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
  done
  # CUDA libraries (cuBLAS, cuSPARSE, NCCL) the toolkit lacks come from PyTorch's wheels (nvidia-*), searched
  # by the clean Python, appended after the toolkit's.
  unresolved=$(ldd "$HALOGEN" "$TESTS_DIR"/* "$BUNDLE/lib/libhalogen_cuda.so" 2>/dev/null | grep 'not found' | sort -u)
  if [ -n "$unresolved" ]; then
    for dir in $(py -c "import nvidia, glob, os; print(' '.join(sorted(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, '*', 'lib')))))" 2>/dev/null); do
      LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
    done
    unresolved=$(ldd "$HALOGEN" "$TESTS_DIR"/* "$BUNDLE/lib/libhalogen_cuda.so" 2>/dev/null | grep 'not found' | sort -u)
  fi
  export LD_LIBRARY_PATH
  if [ -n "$unresolved" ]; then
    echo "gpu-check: unresolved libraries:"; echo "$unresolved"; exit 3
  fi
fi
# One node: NCCL's bootstrap over loopback, no InfiniBand. A stuck NCCL peer ends the run within 60 s.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export HALOGEN_COMM_TIMEOUT=${HALOGEN_COMM_TIMEOUT:-60}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpiexec --oversubscribe --bind-to none"
THREADS=4  # OpenMP threads of each CPU reference rank (the H200 machine has 16 cores)
[ "$DRY_RUN" = 1 ] && THREADS=1
PYG_OK=0
if [ "$RUN_PYG" = 1 ] && [ "$DRY_RUN" = 0 ]; then
  if py -c "import torch, torch_geometric; assert torch.cuda.is_available()" 2>"$LOGS/pyg_import.err"; then
    PYG_OK=1
  else
    echo "gpu-check: PyTorch+PyG with CUDA not usable in the clean environment (see $LOGS/pyg_import.err)"
  fi
fi
export ROOT WORK OUT LOGS HALOGEN TESTS_DIR DEVICE MPIRUN EPOCHS WARMUP PY THREADS
{
  echo "host $(hostname)  $(date -u +%FT%TZ)  budget ${BUDGET}s  device $DEVICE$([ "$DRY_RUN" = 1 ] && echo ' (dry run)')"
  "$NVIDIA_SMI" --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  [ -n "${BUNDLE:-}" ] && cat "$BUNDLE/MANIFEST" 2>/dev/null
  echo "halogen $HALOGEN: $("$HALOGEN" --version 2>&1 | head -1)"
  echo "ssh: ${HALOGEN_BUNDLE_SSH:-$(command -v ssh || echo none)}; OpenMPI launcher ${OMPI_MCA_plm:-default}, pml ${OMPI_MCA_pml:-default}, btl ${OMPI_MCA_btl:-default}"
} | tee -a "$OUT/steps.log"

# ---- steps ------------------------------------------------------------------------------------------------------
declare -A STATUS RC SECS
ORDER=()
CORRECTNESS=" gpu_tests parity_1rank parity_2rank temporal_parity gat_parity "
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET - $(elapsed) )); }
# step NAME LIMIT_SECONDS command...: runs under `timeout LIMIT` when LIMIT seconds are left, else is skipped.
step() {
  local name=$1 limit=$2; shift 2
  ORDER+=("$name")
  if [ -n "$SELECTED" ] && [[ "$SELECTED" != *",$name,"* ]]; then
    STATUS[$name]="not selected (--steps)"; RC[$name]=n/a; echo "== $name: ${STATUS[$name]}"; return 1
  fi
  if [ "$(left)" -lt "$limit" ]; then
    STATUS[$name]="skipped (budget: $(left) s left, limit $limit s)"; RC[$name]=skip
    echo "== $name: ${STATUS[$name]}"; return 1
  fi
  case ",${HALOGEN_GPU_CHECK_FAIL:-}," in *",$name,"*) set -- false ;; esac
  echo "== $name (limit $limit s, at $(elapsed) s)"
  local t0; t0=$(date +%s)
  # Through bash -c so that the command may be a function of this script (exported below).
  timeout --signal=TERM --kill-after=5 "$limit" bash -c '"$@"' "$name" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  RC[$name]=$rc
  SECS[$name]=$(( $(date +%s) - t0 ))
  STATUS[$name]="rc $rc in ${SECS[$name]} s$([ "$rc" = 124 ] && echo ' (timed out)')"
  { echo "==== $name: ${STATUS[$name]}: $*"; cat "$LOGS/$name.log"; } >>"$OUT/steps.log"
  tail -n 15 "$LOGS/$name.log"
  echo "== $name: ${STATUS[$name]}"
  return "$rc"
}
skip() {  # NAME REASON
  ORDER+=("$1"); STATUS[$1]="skipped ($2)"; RC[$1]=n/a; echo "== $1: ${STATUS[$1]}"
}

# Largest relative difference of per-epoch losses between two metrics files (JSON lines with epoch and loss);
# prints it, and exits 1 when it exceeds LIMIT (default 1e-4), when the first epoch's exceeds FIRST (default
# LIMIT), or when the epochs differ.
compare_losses() {  # NAME A B [LIMIT [FIRST]]
  "$PY" - "$@" <<'EOF_PY'
import json, sys
name, file_a, file_b = sys.argv[1:4]
limit = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-4
first_limit = float(sys.argv[5]) if len(sys.argv) > 5 else limit
def losses(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return {r["epoch"]: r["loss"] for r in rows if "loss" in r and "epoch" in r}
a, b = losses(file_a), losses(file_b)
if not a or sorted(a) != sorted(b):
    print(f"{name}: epochs differ: {sorted(a)} vs {sorted(b)}"); print(f"{name}_rel_diff nan"); sys.exit(1)
rel = {e: abs(b[e] - a[e]) / max(abs(a[e]), 1e-30) for e in a}
worst, first = max(rel.values()), rel[min(rel)]
for e in sorted(a):
    print(f"{name} epoch {e}: {a[e]:.9g} vs {b[e]:.9g}")
print(f"{name}_rel_diff {worst:.3e}")
ok = worst <= limit and first <= first_limit
print(f"{name}: worst relative difference {worst:.2e}, first epoch {first:.2e} ({'ok' if ok else 'FAILED'}, "
      f"limits {limit:g} and {first_limit:g})")
sys.exit(0 if ok else 1)
EOF_PY
}
export -f compare_losses

# ---- gpu_tests ----------------------------------------------------------------------------------------------------
# Skips that are deliberate on this one-GPU machine ("binary ranks Suite.Test"); any other skipped test fails the
# step (GTEST_SKIP exits 0: a driver older than the bundled runtime once made every test skip and "pass").
DELIBERATE_SKIPS="mpi_comm_device_test 2 DeviceComm.NcclExchangeAndAllreduceMatchPredictableData"  # NCCL: a GPU per rank
# The test binaries that must run: the bundle's MANIFEST lists what it was built with; the source tree names the
# rest (tests/gpu/<name>_test.cu -> gpu_<name>_test, tests/mpi/comm_device_test.cpp -> mpi_comm_device_test).
expected_gpu_tests() {
  {
    [ -n "${BUNDLE:-}" ] && [ -f "$BUNDLE/MANIFEST" ] && sed -n 's/^test //p' "$BUNDLE/MANIFEST"
    for source in "$ROOT"/tests/gpu/*_test.cu; do [ -f "$source" ] && echo "gpu_$(basename "$source" .cu)"; done
    [ -f "$ROOT/tests/mpi/comm_device_test.cpp" ] && echo mpi_comm_device_test
  } | sort -u
}
EXPECTED_GPU_TESTS=$(expected_gpu_tests | tr '\n' ' ')
run_gpu_tests() {
  local failed=0 name ranks reports=$LOGS/gtest
  rm -rf "$reports"; mkdir -p "$reports"
  for name in $EXPECTED_GPU_TESTS; do
    [ -x "$TESTS_DIR/$name" ] || { echo "gpu_tests: MISSING $TESTS_DIR/$name (named by the bundle or the source tree)"; failed=1; }
  done
  for name in $EXPECTED_GPU_TESTS; do
    [ -x "$TESTS_DIR/$name" ] || continue
    if [ "$name" = mpi_comm_device_test ]; then
      for ranks in 1 2; do  # 2 ranks share the GPU: HostStagedComm runs, NcclComm skips (deliberately)
        echo "-- $name on $ranks rank(s)"
        $MPIRUN -np "$ranks" bash -c 'exec "$0" --gtest_brief=1 --gtest_output="json:$1-${OMPI_COMM_WORLD_RANK:-0}.json"' \
          "$TESTS_DIR/$name" "$reports/$name-$ranks" || failed=1
      done
    else
      echo "-- $name"
      "$TESTS_DIR/$name" --gtest_brief=1 --gtest_output="json:$reports/$name-1-0.json" || failed=1
    fi
  done
  # Every binary that ran must have reported (a crash writes no report), and no test may have skipped unless
  # the skip is deliberate.
  "$PY" - "$reports" "$EXPECTED_GPU_TESTS" "$DELIBERATE_SKIPS" <<'EOF_PY' || failed=1
import glob, json, os, sys
reports, expected, deliberate = sys.argv[1], sys.argv[2].split(), sys.argv[3]
allowed = set()
words = deliberate.split()
for i in range(0, len(words) - 2, 3):
    allowed.add((words[i], words[i + 1], words[i + 2]))
ran = skipped = deliberate_skips = 0
bad = []
for name in expected:
    runs = [("1", ["0"])] if name != "mpi_comm_device_test" else [("1", ["0"]), ("2", ["0", "1"])]
    for ranks, rank_ids in runs:
        for rank in rank_ids:
            path = os.path.join(reports, f"{name}-{ranks}-{rank}.json")
            if not os.path.exists(path):
                bad.append(f"{name} ({ranks} rank(s), rank {rank}) wrote no report: missing, crashed or killed")
                continue
            report = json.load(open(path))
            cases = [t for suite in report.get("testsuites", []) for t in suite.get("testsuite", [])]
            if not cases:
                bad.append(f"{name} ({ranks} rank(s)) ran no test")
            for t in cases:
                full = f"{t.get('classname')}.{t.get('name')}"
                if t.get("status") != "RUN":
                    continue
                if rank == "0":
                    ran += 1
                if t.get("result") == "SKIPPED":
                    if (name, ranks, full) in allowed:
                        deliberate_skips += rank == "0"
                    else:
                        bad.append(f"{name} ({ranks} rank(s), rank {rank}): {full} SKIPPED (not a deliberate skip)")
                    skipped += rank == "0"
for line in bad:
    print("gpu_tests: " + line)
print(f"gpu_tests_ran {ran}")
print(f"gpu_tests_skipped {skipped}")
print(f"gpu_tests: {ran} test cases ran, {skipped} skipped ({deliberate_skips} deliberate), {len(bad)} problem(s)")
sys.exit(1 if bad else 0)
EOF_PY
  return $failed
}
export EXPECTED_GPU_TESTS DELIBERATE_SKIPS BUNDLE
export -f run_gpu_tests
if [ "$DRY_RUN" = 1 ]; then skip gpu_tests "dry run"; else step gpu_tests 60 run_gpu_tests; fi

# ---- parity: GCN, --device $DEVICE against --device cpu, 1 and 2 ranks ----------------------------------------------
PARITY=$WORK/parity
parity_graph() {
  mkdir -p "$PARITY"
  if [ ! -f "$PARITY/p2/meta.json" ]; then
    "$HALOGEN" generate sbm --nodes 20000 --classes 8 --features 64 --avg-degree 12 --seed 3 -o "$PARITY/g.h5" &&
      "$HALOGEN" partition "$PARITY/g.h5" -k 1 -o "$PARITY/p1" &&
      "$HALOGEN" partition "$PARITY/g.h5" -k 2 -o "$PARITY/p2" || return 1
  fi
}
parity_train() {  # NAME RANKS DEVICE
  rm -f "$PARITY/$1.jsonl"
  $MPIRUN -np "$2" "$HALOGEN" train "$PARITY/p$2" --device "$3" --model gcn --layers 2 --hidden 64 --epochs 8 \
    --eval-every 1 --seed 5 --threads "$THREADS" --quiet --metrics "$PARITY/$1.jsonl"
}
parity_1rank() {
  parity_graph || return 1
  parity_train cpu1 1 cpu && parity_train dev1 1 "$DEVICE" || return 1
  compare_losses loss_1rank "$PARITY/cpu1.jsonl" "$PARITY/dev1.jsonl"
}
parity_2rank() {
  parity_graph || return 1
  parity_train cpu2 2 cpu && parity_train dev2 2 "$DEVICE" || return 1
  [ -f "$PARITY/dev1.jsonl" ] || parity_train dev1 1 "$DEVICE" || return 1
  local failed=0
  compare_losses loss_2rank "$PARITY/cpu2.jsonl" "$PARITY/dev2.jsonl" || failed=1
  compare_losses loss_2rank_vs_1rank "$PARITY/dev1.jsonl" "$PARITY/dev2.jsonl" || failed=1
  local device
  for device in cpu "$DEVICE"; do  # --precision bf16: layers 0 and 1 aggregate first (64 -> 64) and keep Â X in BF16
    rm -f "$PARITY/bf16-$device.jsonl"
    $MPIRUN -np 2 "$HALOGEN" train "$PARITY/p2" --device "$device" --model gcn --layers 3 --hidden 64 --epochs 8 \
      --precision bf16 --eval-every 1 --seed 5 --threads "$THREADS" --quiet --metrics "$PARITY/bf16-$device.jsonl" ||
      return 1
  done
  compare_losses loss_2rank_bf16 "$PARITY/bf16-cpu.jsonl" "$PARITY/bf16-$DEVICE.jsonl" 1e-2 1e-4 || failed=1
  return $failed
}
export PARITY
export -f parity_graph parity_train parity_1rank parity_2rank
step parity_1rank 20 parity_1rank
step parity_2rank 25 parity_2rank

# ---- temporal models on Chickenpox ----------------------------------------------------------------------------------
CHICKENPOX=${HALOGEN_CHICKENPOX:-}
for candidate in "${BUNDLE:-/nonexistent}/data/chickenpox.json" "$ROOT/shared/data/temporal/chickenpox.json" \
  "$ROOT/../shared/data/temporal/chickenpox.json"; do
  [ -z "$CHICKENPOX" ] && [ -f "$candidate" ] && CHICKENPOX=$candidate
done
temporal_parity() {
  local dir=$WORK/chickenpox failed=0 model device
  mkdir -p "$dir"
  if [ ! -f "$dir/chickenpox.p1/meta.json" ]; then
    "$HALOGEN" convert --format pgt-json "$CHICKENPOX" -o "$dir/chickenpox.h5" &&
      "$HALOGEN" partition "$dir/chickenpox.h5" -k 1 -o "$dir/chickenpox.p1" || return 1
  fi
  for model in evolvegcn-o tgcn gconvgru; do
    for device in cpu cuda; do
      rm -f "$dir/$model-$device.jsonl"
      "$HALOGEN" train "$dir/chickenpox.p1" --model "$model" --task regression --device "$device" --epochs 3 \
        --eval-every 1 --threads 2 --seed 1 --quiet --metrics "$dir/$model-$device.jsonl" || {
        echo "temporal_parity: $model --device $device failed"; failed=1; continue 2; }
    done
    compare_losses "$model" "$dir/$model-cpu.jsonl" "$dir/$model-cuda.jsonl" || failed=1
  done
  return $failed
}
export CHICKENPOX
export -f temporal_parity
if [ "$DRY_RUN" = 1 ]; then skip temporal_parity "dry run"
elif [ -z "$CHICKENPOX" ]; then skip temporal_parity "no chickenpox.json: set HALOGEN_CHICKENPOX"
else step temporal_parity 40 temporal_parity; fi

# ---- GAT: the attention kernels (SDDMM scores, edge softmax, dropout, per-head SpMM) and their halo rows ----------
# 4 heads x 8 (width 32) and 5 epochs keep the two CPU ranks within the limit (~1 s per CPU run on 2 threads).
# Both dropout placements: --gat-dropout original (per-head input masks, dropped messages: strided dropout and
# per-head products) and pyg.
gat_parity() {
  parity_graph || return 1
  local device mode failed=0
  for mode in original pyg; do
    for device in cpu "$DEVICE"; do
      rm -f "$PARITY/gat-$mode-$device.jsonl"
      $MPIRUN -np 2 "$HALOGEN" train "$PARITY/p2" --device "$device" --model gat --layers 2 --hidden 8 --heads 4 \
        --attention-dropout 0.6 --gat-dropout "$mode" --epochs 5 --eval-every 1 --seed 5 --threads "$THREADS" \
        --quiet --metrics "$PARITY/gat-$mode-$device.jsonl" || return 1
    done
    local name=gat; [ "$mode" = pyg ] && name=gat_pyg  # gat_rel_diff: the default placement
    compare_losses "$name" "$PARITY/gat-$mode-cpu.jsonl" "$PARITY/gat-$mode-$DEVICE.jsonl" || failed=1
  done
  return $failed
}
export -f gat_parity
# The help is read whole first: `grep -q` would exit at its first match, and under pipefail the SIGPIPE that a
# still-writing (slow, e.g. sanitized) halogen then gets would read as "no GAT".
train_help=$("$HALOGEN" train --help 2>/dev/null)
if grep -Eq '(^|[^a-z-])gat([^a-z-]|$)' <<<"$train_help"; then step gat_parity 25 gat_parity
else skip gat_parity "halogen train has no --model gat yet"; fi

# ---- SpMM bandwidth against device copy bandwidth --------------------------------------------------------------------
if [ "$DRY_RUN" = 1 ]; then skip bench_spmm "dry run"
else
  step bench_spmm 15 "$HALOGEN" bench spmm --device cuda --rows 1000000 --avg-degree 16 --graph rmat --width 64 256 \
    --iters 10 --warmup 2
fi

# ---- epoch time against PyG on the same graph and GPU ---------------------------------------------------------------
make_graph() {  # NAME NODES EDGES: raw/data.npz (make-graph, clean Python), converted and partitioned (1 part)
  local name=$1 dir=$WORK/$1
  [ -f "$WORK/$name.p1/meta.json" ] && [ -f "$dir/raw/data.npz" ] && { echo "reused $WORK/$name.p1"; return 0; }
  rm -rf "$dir" "$WORK/$name.h5" "$WORK/$name.p1"
  "$PY" "$ROOT/scripts/bench/pyg_gcn.py" make-graph "$dir" --nodes "$2" --edges "$3" --features 100 --classes 47 \
    --seed 0 &&
    "$HALOGEN" convert "$dir" -o "$WORK/$name.h5" --name "$name" &&
    "$HALOGEN" partition "$WORK/$name.h5" -k 1 --method contiguous -o "$WORK/$name.p1"
}
halogen_epoch() {  # NAME: median epoch_ms after the warm-up epochs, from the metrics file
  rm -f "$OUT/halogen_metrics-$1.jsonl"
  "$HALOGEN" train "$WORK/$1.p1" --device cuda --model gcn --layers 3 --hidden 256 --dropout 0.5 \
    --epochs $((EPOCHS + WARMUP)) --eval-every 1 --quiet --metrics "$OUT/halogen_metrics-$1.jsonl" 2>&1 |
    tee "$LOGS/train-$1.log"
  [ "${PIPESTATUS[0]}" = 0 ] || return 1
  "$PY" - "$OUT/halogen_metrics-$1.jsonl" "$WARMUP" <<'EOF_PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
epochs = [r for r in rows if "epoch_ms" in r and r.get("epoch", 0) > int(sys.argv[2])]
print(f"epoch_ms_halogen {statistics.median(r['epoch_ms'] for r in epochs):.3f}")
EOF_PY
  # The trainer's memory lines: "memory: ... (estimate E MiB ..." before epoch 1, "memory: peak P MiB ..." at the end.
  sed -n 's/.*memory: peak \([0-9.]*\) MiB.*/peak_gpu_mib \1/p' "$LOGS/train-$1.log" | tail -1
  sed -n 's/.*estimate \([0-9.]*\) MiB.*/estimate_gpu_mib \1/p' "$LOGS/train-$1.log" | head -1
}
pyg_epoch() {  # NAME: PyG's median epoch time on the same graph (scripts/bench/pyg_gcn.py, clean Python)
  "$PY" "$ROOT/scripts/bench/pyg_gcn.py" train "$WORK/$1" --layers 3 --hidden 256 --epochs "$EPOCHS" \
    --warmup "$WARMUP" | tee "$LOGS/pyg-$1.json"
  local ms
  ms=$(grep '^{' "$LOGS/pyg-$1.json" | tail -1 | "$PY" -c "import json, sys; print(json.load(sys.stdin)['epoch_ms_median'])") || return 1
  echo "epoch_ms_pyg $ms"
}
export -f make_graph halogen_epoch pyg_epoch
if [ "$DRY_RUN" = 1 ]; then
  skip graph "dry run"; skip halogen_train "dry run"; skip pyg_train "dry run"
else
  # 200k vertices, ~2M pairs (average degree ~20 after symmetrisation): the SBM of the README's comparison.
  if step graph 20 make_graph sbm200k 200000 2000000; then
    step halogen_train 20 halogen_epoch sbm200k
    if [ "$PYG_OK" = 1 ]; then step pyg_train 30 pyg_epoch sbm200k; else skip pyg_train "PyTorch+PyG with CUDA not usable"; fi
  fi
fi

# ---- optional, last: a 2M-vertex graph of ogbn-products' size, in whatever time is left -----------------------------
products_2m() {
  make_graph products2m 2449029 61859140 || return 1
  halogen_epoch products2m || return 1
  [ "$PYG_OK" = 1 ] && pyg_epoch products2m
  return 0
}
export PYG_OK
export -f products_2m
if [ "$DRY_RUN" = 1 ] || [ "$RUN_2M" = 0 ]; then skip products_2m "$([ "$DRY_RUN" = 1 ] && echo 'dry run' || echo '--skip-2m')"
elif [ "$(df -Pk "$WORK" | awk 'NR == 2 {print int($4 / 1048576)}')" -lt 15 ]; then skip products_2m "less than 15 GB free in $WORK"
elif [ "$(left)" -ge 60 ]; then step products_2m "$(left)" products_2m
else skip products_2m "optional: $(left) s left, needs 60 s"; fi

# ---- summary ---------------------------------------------------------------------------------------------------------
failed=0
for name in "${ORDER[@]}"; do
  case "$CORRECTNESS" in *" $name "*)
    case "${RC[$name]}" in 0|n/a) ;; *) failed=1 ;; esac ;;
  esac
done
value() {  # LOG KEY: the number after KEY in a step's log, or null
  local v; v=$(grep -h "^$2 " "$LOGS/$1.log" 2>/dev/null | tail -1 | awk '{print $2}')
  [[ "$v" =~ ^[0-9.eE+-]+$ ]] && echo "$v" || echo null
}
share=null spmm_gbs=null copy_gbs=null
if [ -f "$LOGS/bench_spmm.log" ]; then
  read -r share spmm_gbs copy_gbs < <(sed -n 's/^# spmm_copy_bw_share \([0-9.]*\) (best GB\/s \([0-9.]*\) \/ copy GB\/s \([0-9.]*\))/\1 \2 \3/p' "$LOGS/bench_spmm.log" | tail -1)
  share=${share:-null} spmm_gbs=${spmm_gbs:-null} copy_gbs=${copy_gbs:-null}
fi
gpu_tests_passed=false; [ "${RC[gpu_tests]:-}" = 0 ] && gpu_tests_passed=true
gat_passed=null
case "${RC[gat_parity]:-n/a}" in 0) gat_passed=true ;; n/a) ;; *) gat_passed=false ;; esac
temporal_passed=null
case "${RC[temporal_parity]:-n/a}" in 0) temporal_passed=true ;; n/a) ;; *) temporal_passed=false ;; esac
steps_json=$(for name in "${ORDER[@]}"; do printf '%s\t%s\n' "$name" "${STATUS[$name]}"; done | "$PY" -c '
import json, sys
print(json.dumps({n: s for n, s in (line.rstrip("\n").split("\t", 1) for line in sys.stdin)}))')
secs_json=$(for name in "${!SECS[@]}"; do printf '%s\t%s\n' "$name" "${SECS[$name]}"; done | "$PY" -c '
import json, sys
print(json.dumps({n: int(s) for n, s in (line.rstrip("\n").split("\t", 1) for line in sys.stdin if line.strip())}))')
"$PY" - "$SUMMARY" "$steps_json" "$secs_json" <<EOF_PY
import json, sys
def number(text):
    return None if text in ("", "null", "nan") else float(text)
def count(text):
    return None if text in ("", "null", "nan") else int(float(text))
halogen_ms, pyg_ms = number("$(value halogen_train epoch_ms_halogen)"), number("$(value pyg_train epoch_ms_pyg)")
summary = {
    "passed": $([ $failed = 0 ] && echo True || echo False),
    "dry_run": $([ "$DRY_RUN" = 1 ] && echo True || echo False),
    "device": "$DEVICE",
    "gpu": "$("$NVIDIA_SMI" --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" or None,
    "gpu_tests_passed": $([ "$gpu_tests_passed" = true ] && echo True || echo False),
    "loss_max_rel_diff_1rank": number("$(value parity_1rank loss_1rank_rel_diff)"),
    "loss_max_rel_diff_2rank": number("$(value parity_2rank loss_2rank_rel_diff)"),
    "loss_max_rel_diff_2rank_vs_1rank": number("$(value parity_2rank loss_2rank_vs_1rank_rel_diff)"),
    "loss_max_rel_diff_2rank_bf16": number("$(value parity_2rank loss_2rank_bf16_rel_diff)"),
    "temporal_parity_passed": $([ "$temporal_passed" = null ] && echo None || { [ "$temporal_passed" = true ] && echo True || echo False; }),
    "gat_parity_passed": $([ "$gat_passed" = null ] && echo None || { [ "$gat_passed" = true ] && echo True || echo False; }),
    "loss_max_rel_diff_gat": number("$(value gat_parity gat_rel_diff)"),
    "loss_max_rel_diff_gat_pyg": number("$(value gat_parity gat_pyg_rel_diff)"),
    "epoch_ms_halogen": halogen_ms,
    "epoch_ms_pyg": pyg_ms,
    "epoch_ratio": halogen_ms / pyg_ms if halogen_ms and pyg_ms else None,
    "graph": "sbm200k: 200000 vertices, 2000000 pairs, 100 features, 47 classes; GCN 3 layers hidden 256",
    "epoch_ms_halogen_2m": number("$(value products_2m epoch_ms_halogen)"),
    "epoch_ms_pyg_2m": number("$(value products_2m epoch_ms_pyg)"),
    "peak_gpu_mib": number("$(value halogen_train peak_gpu_mib)"),
    "estimate_gpu_mib": number("$(value halogen_train estimate_gpu_mib)"),
    "spmm_gbs": number("$spmm_gbs"),
    "copy_gbs": number("$copy_gbs"),
    "spmm_copy_bw_share": number("$share"),
    "gpu_tests_ran": count("$(value gpu_tests gpu_tests_ran)"),
    "gpu_tests_skipped": count("$(value gpu_tests gpu_tests_skipped)"),
    "steps": json.loads(sys.argv[2]),
    "steps_seconds": json.loads(sys.argv[3]),
    "seconds": $(elapsed),
    "budget_seconds": $BUDGET,
}
json.dump(summary, open(sys.argv[1], "w"), indent=1)
EOF_PY
echo
echo "== summary ($(elapsed) s of $BUDGET s): $SUMMARY"
for name in "${ORDER[@]}"; do printf '  %-16s %s\n' "$name" "${STATUS[$name]}"; done
cat "$SUMMARY"
echo
if [ $failed = 0 ]; then echo "gpu-check: PASSED"; else echo "gpu-check: FAILED (a correctness step failed or was skipped for time)"; fi
exit $failed
