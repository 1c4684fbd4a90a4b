# Shared setup of the shell tests (sourced): bin and src (HALOGEN_BIN and HALOGEN_SOURCE_DIR from the ctest
# environment), data (HALOGEN_SHARED_DATA, may be empty), a work directory removed on exit, fail MESSAGE (one
# FAIL line, exit 1), mpirun_ ARGS... (mpirun, oversubscribed and unbound), OMP_NUM_THREADS=1, and
# require_python MODULE..., which skips the test (exit 77) when python3 lacks one of them.
set -u
bin="${HALOGEN_BIN:?run through ctest (HALOGEN_BIN is not set)}"
src="${HALOGEN_SOURCE_DIR:?run through ctest (HALOGEN_SOURCE_DIR is not set)}"
data="${HALOGEN_SHARED_DATA:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
mpirun_() { mpirun --oversubscribe --bind-to none "$@"; }
require_python() {
  local module
  for module in "$@"; do
    python3 -c "import $module" 2>/dev/null ||
      { echo "skipped: python3 lacks $module (scripts/install-deps.sh installs it)"; exit 77; }
  done
}
