# Shared setup of the training end-to-end tests (sourced). Needs HALOGEN_BIN (ctest environment).
set -euo pipefail
: "${HALOGEN_BIN:?run through ctest (HALOGEN_BIN is not set)}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/halogen-train-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
MPIRUN=(mpirun --oversubscribe --bind-to none)
export OMP_NUM_THREADS=1
compare() { python3 "$HERE/compare_metrics.py" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
