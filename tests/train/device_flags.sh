#!/usr/bin/env bash
# `halogen train --device/--comm` errors are one clear line and exit 2, never a crash or a hang:
# a build without CUDA refuses --device cuda; --comm nccl and --tf32 need --device cuda; in a CUDA build on a machine
# without a GPU, --device cuda says so (initialise_device's message).
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 200 --classes 3 --features 8 --seed 1 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 1 -o "$WORK/p1" >/dev/null
expect_error() {  # pattern args...: exit status 2 and the pattern on stderr
  local pattern=$1; shift
  local status=0
  timeout 60 "$HALOGEN_BIN" train "$WORK/p1" --epochs 1 --quiet "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  [ "$status" = 2 ] || { cat "$WORK/err"; fail "train $* exited $status (want 2)"; }
  grep -q -- "$pattern" "$WORK/err" || { cat "$WORK/err"; fail "train $*: no '$pattern' in the message"; }
}
if [ -n "${HALOGEN_HAVE_CUDA:-}" ] && command -v nvidia-smi >/dev/null 2>&1 && [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 1 ]; then
  echo "a GPU is usable: the error paths of this script do not apply"; exit 77
fi
if [ -z "${HALOGEN_HAVE_CUDA:-}" ]; then
  expect_error "this build has no CUDA backend" --device cuda
  expect_error "needs --device cuda" --comm nccl
else
  expect_error "GPU\|CUDA\|cuda" --device cuda
  expect_error "needs --device cuda" --device cpu --comm nccl
fi
expect_error "--tf32 needs --device cuda" --device cpu --tf32
# --device cpu --comm mpi|auto is accepted (CPU ranks always use MPI); so is the default device.
timeout 60 "$HALOGEN_BIN" train "$WORK/p1" --epochs 2 --quiet --device cpu --comm mpi >/dev/null
timeout 60 "$HALOGEN_BIN" train "$WORK/p1" --epochs 2 --quiet --device cpu --comm auto >/dev/null
timeout 60 "$HALOGEN_BIN" train "$WORK/p1" --epochs 2 --quiet >/dev/null
echo "device flags: OK"
