#!/usr/bin/env bash
# One-shot GPU check for a machine with an NVIDIA GPU (made for a lent H200: CUDA 13, CMake, Python with
# PyTorch and PyG, but no MPI/HDF5/METIS development files and no network). Runs, within a time budget
# (default 470 s, i.e. under 8 minutes):
#   1. the GPU tests (every CUDA kernel against its CPU version; NcclComm), from the bundle;
#   1b. every temporal model trained on Chickenpox with --device cuda and --device cpu: per-epoch losses agree;
#   2. `halogen bench spmm --device cuda` (when the bench has --device) on an ogbn-products-sized matrix;
#   3. a synthetic graph of ogbn-products' size (2,449,029 vertices, 61,859,140 pairs = ~124M stored edges,
#      100 features, 47 classes) made once by scripts/bench/pyg_gcn.py, converted and partitioned (1 part);
#   4. `halogen train --device cuda` of a 3-layer GCN, hidden 256 (when the trainer has the CUDA device);
#   5. the same model in PyG (scripts/bench/pyg_gcn.py train, GCNConv with cached normalisation);
# then prints both epoch times and their ratio. $OUT (or $WORK/out) receives three files: steps.log (every
# step's output), halogen_metrics.jsonl and summary.json; per-step logs also stay in $WORK/logs.
#
# The binaries come from a bundle made on a build machine by scripts/gpu-bundle.sh (build for sm_90, binaries
# + the shared libraries they need + a relocatable OpenMPI): build/gpu-bundle/ or build/gpu-bundle.tar.xz.
# CUDA's own libraries (cuBLAS, cuSPARSE) are the machine's; NCCL is the toolkit's or PyTorch's.
#
# Usage: bash scripts/gpu-check.sh [--budget SECONDS] [--skip-tests] [--skip-pyg] [--epochs N]
#        [--nodes N --edges M] (a smaller graph, e.g. to try the script) [--no-gpu-ok] (run without a GPU: the
#        script's own dry run on a build machine; GPU tests skip, the CUDA training fails and is reported)
# Environment: HALOGEN_BUNDLE (bundle dir), HALOGEN_GPU_WORK (scratch, default /tmp/halogen-gpu-check; the
# generated graph is kept there and reused), OUT (where logs and summary.json go).
set -uo pipefail

# ---- prerequisites (first, so that a machine that cannot run this says so at once) -----------------------------
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUDGET=470
RUN_TESTS=1
RUN_PYG=1
EPOCHS=20
WARMUP=3
NODES=2449029
EDGES=61859140
NEED_GPU=1
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --edges) EDGES=$2; shift 2 ;;
    --no-gpu-ok) NEED_GPU=0; shift ;;
    --skip-tests) RUN_TESTS=0; shift ;;
    --skip-pyg) RUN_PYG=0; shift ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
START=$(date +%s)
WORK=${HALOGEN_GPU_WORK:-/tmp/halogen-gpu-check}
OUT=${OUT:-$WORK/out}
LOGS=$WORK/logs
mkdir -p "$WORK" "$OUT" "$LOGS"
: >"$OUT/steps.log"
BUNDLE=${HALOGEN_BUNDLE:-$ROOT/build/gpu-bundle}
missing=()
GPUS=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
if [ "$NEED_GPU" = 1 ]; then
  command -v nvidia-smi >/dev/null 2>&1 || missing+=("nvidia-smi (NVIDIA driver)")
  [ "${GPUS:-0}" -ge 1 ] || missing+=("a visible GPU (nvidia-smi lists none)")
fi
if [ ! -x "$BUNDLE/bin/halogen" ] && [ -f "$BUNDLE.tar.xz" ]; then
  tar -C "$(dirname "$BUNDLE")" -xJf "$BUNDLE.tar.xz" || missing+=("a readable $BUNDLE.tar.xz")
fi
[ -x "$BUNDLE/bin/halogen" ] || missing+=("the bundle $BUNDLE (make it with scripts/gpu-bundle.sh and carry it)")
[ -f "$BUNDLE/lib/libhalogen_cuda.so" ] || missing+=("the CUDA backend $BUNDLE/lib/libhalogen_cuda.so (remake the bundle)")
command -v python3 >/dev/null 2>&1 || missing+=("python3")
python3 -c "import numpy" 2>/dev/null || missing+=("python3 numpy")
if [ -f "$BUNDLE/MANIFEST" ]; then
  glibc_needed=$(sed -n 's/^glibc_needed //p' "$BUNDLE/MANIFEST")
  glibc_here=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -n "$glibc_needed" ] && [ -n "$glibc_here" ] &&
     [ "$(printf '%s\n%s\n' "$glibc_needed" "$glibc_here" | sort -V | head -1)" != "$glibc_needed" ]; then
    missing+=("glibc >= $glibc_needed for the bundle (this machine has $glibc_here)")
  fi
fi
FREE_GB=$(df -Pk "$WORK" | awk 'NR == 2 {print int($4 / 1048576)}')
NEED_GB=$(( 12 * EDGES / 61859140 + 1 ))
[ "${FREE_GB:-0}" -ge "$NEED_GB" ] || missing+=("$NEED_GB GB free in $WORK (have ${FREE_GB} GB)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'gpu-check: missing prerequisite: %s\n' "${missing[@]}" >&2
  exit 3
fi
PYG_OK=0
if [ "$RUN_PYG" = 1 ]; then
  if python3 -c "import torch, torch_geometric; assert torch.cuda.is_available()" 2>"$LOGS/pyg_import.err"; then
    PYG_OK=1
  else
    echo "gpu-check: PyTorch+PyG with CUDA not usable (see $LOGS/pyg_import.err); the PyG comparison is skipped"
  fi
fi

# ---- environment: the bundle's libraries and OpenMPI, the machine's CUDA, some NCCL -------------------------------
# shellcheck source=/dev/null
source "$BUNDLE/env.sh"
for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" "${CUDA_HOME:-/usr/local/cuda}/lib" /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$dir" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
done
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2' && ! ls "${CUDA_HOME:-/usr/local/cuda}"/lib*/libnccl.so.2 >/dev/null 2>&1; then
  # PyTorch's wheel brings NCCL (nvidia-nccl-cu*); NCCL 2.x keeps its ABI.
  nccl_dir=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
  [ -n "$nccl_dir" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl_dir"
fi
export LD_LIBRARY_PATH
# One node: NCCL's bootstrap over loopback (sandboxed machines may have no other usable interface), no IB.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
HALOGEN="$BUNDLE/bin/halogen"
export ROOT WORK OUT BUNDLE HALOGEN GPUS
unresolved=$(ldd "$HALOGEN" "$BUNDLE"/tests/* "$BUNDLE/lib/libhalogen_cuda.so" 2>/dev/null | grep 'not found' | sort -u)
if [ -n "$unresolved" ]; then
  # CUDA libraries from PyTorch's wheels (nvidia-cusparse, nvidia-cublas, ...), after the toolkit's.
  for dir in $(python3 -c "import nvidia, glob, os; print(' '.join(sorted(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, '*', 'lib')))))" 2>/dev/null); do
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
  done
  export LD_LIBRARY_PATH
  unresolved=$(ldd "$HALOGEN" "$BUNDLE"/tests/* "$BUNDLE/lib/libhalogen_cuda.so" 2>/dev/null | grep 'not found' | sort -u)
fi
if [ -n "$unresolved" ]; then
  echo "gpu-check: unresolved libraries:"; echo "$unresolved"; exit 3
fi

declare -A STATUS
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET - $(elapsed) )); }
# step NAME NEEDED_SECONDS LIMIT_SECONDS command...: runs when NEEDED seconds are left, under `timeout LIMIT`.
step() {
  local name=$1 needed=$2 limit=$3; shift 3
  if [ "$(left)" -lt "$needed" ]; then
    STATUS[$name]="skipped (budget: $(left) s left, needs ~$needed s)"; echo "== $name: ${STATUS[$name]}"; return 1
  fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  echo "== $name (limit $limit s, at $(elapsed) s)"
  local t0; t0=$(date +%s)
  # Through bash -c so that NAME may also be a function of this script (exported below).
  timeout --signal=TERM --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  STATUS[$name]="rc $rc in $(( $(date +%s) - t0 )) s"
  { echo "==== $name: ${STATUS[$name]}: $*"; cat "$LOGS/$name.log"; } >>"$OUT/steps.log"
  tail -n 25 "$LOGS/$name.log"
  echo "== $name: ${STATUS[$name]}"
  return $rc
}

{
  echo "host $(hostname)  $(date -u +%FT%TZ)  budget ${BUDGET}s"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  cat "$BUNDLE/MANIFEST" 2>/dev/null
} | tee -a "$OUT/steps.log"

# ---- 1. GPU tests ----------------------------------------------------------------------------------------------
if [ "$RUN_TESTS" = 1 ]; then
  run_gpu_tests() {
    local failed=0
    for test in "$BUNDLE"/tests/gpu_*_test; do
      echo "-- $(basename "$test")"
      "$test" --gtest_brief=1 || failed=1
    done
    if [ -x "$BUNDLE/tests/mpi_comm_device_test" ]; then
      # 1 rank, 2 ranks (sharing a GPU: HostStagedComm runs, NcclComm needs a GPU per rank) and one per GPU.
      local ranks
      for ranks in $(printf '%s\n' 1 2 "$(( GPUS < 4 ? GPUS : 4 ))" | sort -un); do
        [ "$ranks" -ge 1 ] || continue
        echo "-- mpi_comm_device_test on $ranks rank(s)"
        mpiexec --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
          "$BUNDLE/tests/mpi_comm_device_test" --gtest_brief=1 || failed=1
      done
    fi
    return $failed
  }
  export -f run_gpu_tests
  step gpu_tests 60 150 run_gpu_tests
fi

# ---- 1b. temporal models: --device cuda against --device cpu on Chickenpox --------------------------------------
# Every temporal model (evolvegcn-o, tgcn, gconvgru) trains regression on Chickenpox (20 vertices, ~520 weekly
# snapshots, from PyTorch Geometric Temporal's JSON) for TEMPORAL_EPOCHS epochs on each device, same seed (metrics
# lines are written at evaluated epochs: --eval-every 1; --threads 2 because 20 rows gain nothing from more); the
# per-epoch training losses must agree to 1e-4 relative. Why 1e-4: the two backends run the same ops on the
# same data, but cuBLAS/cuSPARSE sum in another order than OpenBLAS/our CPU SpMM and CUDA's expf/tanhf are a
# few ulp from glibc's vector exp/tanh, so each op differs by ~1e-7..1e-6 relative; through ~460 BPTT steps and
# a few Adam updates (whose step size does not scale with the gradient's error) this grows to ~1e-6..1e-5,
# while a wrong op (a missing term, a wrong index, a gate mixed the wrong way) moves the loss by 1e-2 or more.
TEMPORAL_EPOCHS=${TEMPORAL_EPOCHS:-3}
CHICKENPOX=${HALOGEN_CHICKENPOX:-}
for candidate in "$ROOT/shared/data/temporal/chickenpox.json" "$ROOT/../shared/data/temporal/chickenpox.json"; do
  [ -z "$CHICKENPOX" ] && [ -f "$candidate" ] && CHICKENPOX=$candidate
done
if [ -n "$CHICKENPOX" ]; then
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
        if ! "$HALOGEN" train "$dir/chickenpox.p1" --model "$model" --task regression --device "$device" \
            --epochs "$TEMPORAL_EPOCHS" --eval-every 1 --threads 2 --seed 1 --metrics "$dir/$model-$device.jsonl"; then
          echo "temporal_parity: $model --device $device failed"; failed=1; continue 2
        fi
      done
      python3 - "$model" "$dir/$model-cpu.jsonl" "$dir/$model-cuda.jsonl" <<'EOF_PY' || failed=1
import json, sys
model, cpu_file, cuda_file = sys.argv[1:4]
def losses(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return {r["epoch"]: r["loss"] for r in rows if "loss" in r and "epoch" in r}
cpu, cuda = losses(cpu_file), losses(cuda_file)
if not cpu or sorted(cpu) != sorted(cuda):
    print(f"{model}: epochs differ: cpu {sorted(cpu)} cuda {sorted(cuda)}"); sys.exit(1)
worst = 0.0
for epoch in sorted(cpu):
    rel = abs(cuda[epoch] - cpu[epoch]) / max(abs(cpu[epoch]), 1e-30)
    worst = max(worst, rel)
    print(f"{model} epoch {epoch}: loss cpu {cpu[epoch]:.9g} cuda {cuda[epoch]:.9g} relative difference {rel:.2e}")
print(f"{model}: worst relative difference {worst:.2e} ({'ok' if worst <= 1e-4 else 'FAILED'}, limit 1e-4)")
sys.exit(0 if worst <= 1e-4 else 1)
EOF_PY
    done
    return $failed
  }
  export CHICKENPOX TEMPORAL_EPOCHS
  export -f temporal_parity
  step temporal_parity 45 150 temporal_parity
else
  STATUS[temporal_parity]="skipped (no chickenpox.json under $ROOT/shared/data/temporal or ../shared: set HALOGEN_CHICKENPOX)"
fi

# ---- 2. SpMM benchmark ------------------------------------------------------------------------------------------
if "$HALOGEN" bench spmm --help 2>/dev/null | grep -q -- '--device'; then
  step bench_spmm 60 90 "$HALOGEN" bench spmm --device cuda --rows 2449029 --avg-degree 50.5 --width 100 256 \
    --graph rmat --iters 20
else
  STATUS[bench_spmm]="skipped (halogen bench spmm has no --device yet)"
fi

# ---- 3. the graph (made once, reused by later runs on the same machine) -----------------------------------------
GRAPH=products-like
[ "$NODES" = 2449029 ] && [ "$EDGES" = 61859140 ] || GRAPH=sbm-$NODES-$EDGES
GRAPH_DIR=$WORK/$GRAPH
if [ ! -f "$WORK/$GRAPH.p1/meta.json" ]; then
  make_graph() {
    set -e
    rm -rf "$GRAPH_DIR" "$WORK/$GRAPH.h5" "$WORK/$GRAPH.p1"
    python3 "$ROOT/scripts/bench/pyg_gcn.py" make-graph "$GRAPH_DIR" --nodes "$NODES" --edges "$EDGES" \
      --features 100 --classes 47 --seed 0
    "$HALOGEN" convert "$GRAPH_DIR" -o "$WORK/$GRAPH.h5" --name "$GRAPH"
    "$HALOGEN" partition "$WORK/$GRAPH.h5" -k 1 --method contiguous -o "$WORK/$GRAPH.p1"
  }
  export GRAPH_DIR GRAPH NODES EDGES
  export -f make_graph
  step graph 150 300 make_graph
else
  STATUS[graph]="reused $WORK/$GRAPH.p1"
fi

# ---- 4. Halogen on the GPU ---------------------------------------------------------------------------------------
HALOGEN_MS=""
if [ -f "$WORK/$GRAPH.p1/meta.json" ]; then
  comm_flag=()
  "$HALOGEN" train --help 2>/dev/null | grep -q -- '--comm' && comm_flag=(--comm nccl)
  step halogen_train 60 150 "$HALOGEN" train "$WORK/$GRAPH.p1" --device cuda "${comm_flag[@]}" --model gcn \
    --layers 3 --hidden 256 --dropout 0.5 --epochs $((EPOCHS + WARMUP)) --eval-every 1 \
    --metrics "$OUT/halogen_metrics.jsonl"
  if [ -s "$OUT/halogen_metrics.jsonl" ]; then
    HALOGEN_MS=$(python3 - "$OUT/halogen_metrics.jsonl" "$WARMUP" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
epochs = [r for r in rows if "epoch_ms" in r and r.get("epoch", 0) > int(sys.argv[2])]
if epochs:
    print(f"{statistics.median(r['epoch_ms'] for r in epochs):.2f}")
    keys = ["spmm_ms", "gemm_ms", "halo_ms", "halo_exposed_ms", "allreduce_ms", "other_ms"]
    print("# halogen median phases: " + " ".join(f"{k} {statistics.median(r[k] for r in epochs):.1f}" for k in keys),
          file=sys.stderr)
EOF
)
  fi
  # The epoch benchmark, once it exists and knows the device.
  if "$HALOGEN" bench epoch --help 2>/dev/null | grep -q -- '--device'; then
    step bench_epoch 40 90 "$HALOGEN" bench epoch "$WORK/$GRAPH.p1" --device cuda
  fi
fi

# ---- 5. PyG -------------------------------------------------------------------------------------------------------
PYG_MS=""
if [ "$PYG_OK" = 1 ] && [ -f "$GRAPH_DIR/raw/data.npz" ]; then
  step pyg_train 60 180 python3 "$ROOT/scripts/bench/pyg_gcn.py" train "$GRAPH_DIR" --layers 3 --hidden 256 \
    --epochs "$EPOCHS" --warmup "$WARMUP"
  PYG_MS=$(grep '^{' "$LOGS/pyg_train.log" 2>/dev/null | tail -1 | python3 -c \
    "import json, sys; print(json.load(sys.stdin)['epoch_ms_median'])" 2>/dev/null)
fi

# ---- summary -------------------------------------------------------------------------------------------------------
echo
echo "== summary ($(elapsed) s)"
for name in gpu_tests temporal_parity bench_spmm graph halogen_train bench_epoch pyg_train; do
  [ -n "${STATUS[$name]:-}" ] && printf '  %-15s %s\n' "$name" "${STATUS[$name]}"
done
RATIO=""
if [ -n "$HALOGEN_MS" ] && [ -n "$PYG_MS" ]; then
  RATIO=$(python3 -c "print(f'{$HALOGEN_MS / $PYG_MS:.3f}')")
fi
echo "  epoch time (median of $EPOCHS after $WARMUP warm-up): halogen ${HALOGEN_MS:-n/a} ms, PyG ${PYG_MS:-n/a} ms, ratio halogen/PyG ${RATIO:-n/a} (target <= 0.67)"
python3 - "$OUT/summary.json" <<EOF
import json, sys
json.dump({"halogen_epoch_ms": "${HALOGEN_MS}" or None, "pyg_epoch_ms": "${PYG_MS}" or None,
           "ratio": "${RATIO}" or None, "seconds": $(elapsed)}, open(sys.argv[1], "w"))
EOF
case "${STATUS[temporal_parity]:-}" in "rc 0"*|""|skipped*) ;; *) exit 1 ;; esac
case "${STATUS[gpu_tests]:-}" in "rc 0"*|"") exit 0 ;; *) exit 1 ;; esac
