#!/usr/bin/env bash
# The CUDA backend is loaded only when a command asks for a GPU (kernels/device.h):
#   1. `halogen` links no CUDA library (ldd), and `halogen --version` stays small: maximum resident set under
#      30 MiB (it was 264 MiB when the executable linked cuBLAS, cuSPARSE and NCCL);
#   2. CPU commands (--version, generate, partition, info, train --device cpu, and train without --device on a
#      machine without the NVIDIA driver) map no CUDA library and do not open the backend (LD_DEBUG=libs lists
#      every library the dynamic loader opens, dlopen included);
#   3. without a usable GPU, `train --device cuda` fails with exit status 2 and ONE line naming the reason,
#      both when the backend loads (CUDA build, no GPU) and when it cannot be loaded (HALOGEN_CUDA_LIBRARY
#      pointing at a missing file; a build without the backend).
# Needs HALOGEN_BIN (ctest environment) and GNU time (/usr/bin/time; scripts/install-deps.sh installs it).
set -euo pipefail
: "${HALOGEN_BIN:?run through ctest (HALOGEN_BIN is not set)}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/halogen-cuda-loading.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=1
fail() { echo "FAIL: $*" >&2; exit 1; }
CUDA_LIBS='lib(cudart|cusparse|cublas|cublasLt|nvJitLink|nccl|halogen_cuda)\.so'

# ---- 1. no CUDA library linked; small resident set ---------------------------------------------------------------
if ldd "$HALOGEN_BIN" | grep -E "$CUDA_LIBS"; then fail "halogen links CUDA libraries (above)"; fi
[ -x /usr/bin/time ] || fail "/usr/bin/time (GNU time) is missing: run scripts/install-deps.sh"
/usr/bin/time -f '%M' -o "$WORK/rss" "$HALOGEN_BIN" --version >/dev/null
rss_kib=$(tail -n 1 "$WORK/rss")
echo "halogen --version: maximum resident set ${rss_kib} KiB"
# 30 MiB is the issue's bound: the program with MPI, HDF5, OpenBLAS and OpenMP mapped, but no CUDA library
# (those alone made it 264 MiB).
[ "$rss_kib" -lt $((30 * 1024)) ] || fail "halogen --version used ${rss_kib} KiB (limit 30 MiB)"

# ---- 2. CPU commands never open a CUDA library ---------------------------------------------------------------------
no_cuda() {  # command...: runs it with LD_DEBUG=libs; fails when any CUDA library (or the backend) was opened
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$WORK/ld" "$HALOGEN_BIN" "$@" >"$WORK/out" 2>"$WORK/err" ||
    { cat "$WORK/err"; fail "halogen $* failed"; }
  if cat "$WORK"/ld.* | grep -E "file=[^ ]*$CUDA_LIBS"; then fail "halogen $* opened CUDA libraries (above)"; fi
  rm -f "$WORK"/ld.*
}
no_cuda --version
no_cuda generate sbm --nodes 200 --classes 3 --features 8 --seed 1 -o "$WORK/g.h5"
no_cuda partition "$WORK/g.h5" -k 1 -o "$WORK/p1"
no_cuda info "$WORK/g.h5"
no_cuda train "$WORK/p1" --epochs 1 --quiet --device cpu
# Without --device, train uses a GPU when there is one; a machine without the NVIDIA driver has none, and the
# backend is not loaded to find that out.
if [ ! -e /dev/nvidiactl ] && [ ! -e /dev/dxg ]; then no_cuda train "$WORK/p1" --epochs 1 --quiet; fi

# ---- 3. --device cuda without a GPU: one line, exit 2 ---------------------------------------------------------------
one_line_error() {  # pattern: `train --device cuda` exits 2 with exactly one stderr line matching the pattern
  local pattern=$1 status=0
  timeout 120 "$HALOGEN_BIN" train "$WORK/p1" --epochs 1 --quiet --device cuda >"$WORK/out" 2>"$WORK/err" ||
    status=$?
  [ "$status" = 2 ] || { cat "$WORK/err"; fail "train --device cuda exited $status (want 2)"; }
  [ "$(wc -l <"$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "train --device cuda: not one line"; }
  grep -Eq "^halogen: error: .*($pattern)" "$WORK/err" || { cat "$WORK/err"; fail "no '$pattern' in the message"; }
  echo "train --device cuda${HALOGEN_CUDA_LIBRARY:+ (HALOGEN_CUDA_LIBRARY=$HALOGEN_CUDA_LIBRARY)}: $(cat "$WORK/err")"
}
if command -v nvidia-smi >/dev/null 2>&1 && [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 1 ]; then
  echo "a GPU is usable: the no-GPU errors are not checked here"
else
  # A build with the backend loads it and finds no device; a build without says so.
  one_line_error "no usable CUDA device|this build has no CUDA backend"
fi
HALOGEN_CUDA_LIBRARY="$WORK/missing/libhalogen_cuda.so" one_line_error "cannot load the CUDA backend.*$WORK/missing"
echo "cuda loading: OK"
