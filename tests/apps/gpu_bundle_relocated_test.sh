#!/usr/bin/env bash
# The GPU bundle (scripts/gpu-bundle.sh) starts on a bare machine: no ssh or rsh, no /etc/openmpi, no system
# OpenMPI or PMIx. The bundle of this build is made in a fresh prefix, then, inside a mount namespace that hides
# /etc/openmpi, Debian's OpenMPI and PMIx library directories and ssh/rsh (tmpfs and bind mounts, private to
# the namespace), with only the bundle's env.sh sourced:
#   - `halogen --version` runs, and a graph is generated and partitioned by the bundle's halogen;
#   - a singleton `halogen train` (1 part) runs (OpenMPI starts its local daemon: the launcher must not need ssh);
#   - `mpiexec -np 2 halogen train --device cpu` runs through the bundle's mpiexec, 3 epochs;
#   - control: with env.sh's launcher/transport variables unset, the same mpiexec fails (so the namespace really
#     hides what a bare machine lacks, and the variables are what makes the bundle start).
# Needs root (mount namespaces); exits 77 (ctest: skipped) only when `unshare -m` itself is refused.
set -uo pipefail
: "${HALOGEN_BIN:?run through ctest (HALOGEN_BIN is not set)}"
ROOT=${HALOGEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=$(cd "$(dirname "$HALOGEN_BIN")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/halogen-bundle-relocated.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! unshare -m true 2>/dev/null; then
  echo "SKIP: unshare -m is not permitted here (mount namespaces need root or user namespaces)"
  exit 77
fi
archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:STRING=//p' "$BUILD/CMakeCache.txt")
case " $archs " in *90*) ;; *) echo "SKIP: this build targets CUDA architectures '$archs'; the bundle is for sm_90"; exit 77 ;; esac
bash "$ROOT/scripts/gpu-bundle.sh" --no-build --no-archive "$BUILD" "$WORK/prefix/bundle" >"$WORK/bundle.log" 2>&1 ||
  { cat "$WORK/bundle.log"; fail "scripts/gpu-bundle.sh"; }

ompi_libdir=$(ompi_info --path libdir --parsable 2>/dev/null | sed -n 's/^path:libdir://p')
pmix_dirs=$(ls -d /usr/lib/*/pmix* 2>/dev/null | tr '\n' ' ')
cat >"$WORK/inside.sh" <<EOF_INSIDE
set -u
: >"$WORK/not-executable"
hide_dir() { [ -d "\$1" ] && mount -t tmpfs none "\$1" && echo "hidden: \$1"; }
hide_dir /etc/openmpi
hide_dir "$ompi_libdir"
for dir in $pmix_dirs; do hide_dir "\$dir"; done
for tool in ssh rsh; do
  path=\$(command -v \$tool 2>/dev/null) && mount --bind "$WORK/not-executable" "\$path" && echo "hidden: \$path"
done
cd "$WORK"
export -n OMPI_MCA_rmaps_base_oversubscribe
source "$WORK/prefix/bundle/env.sh"
[ "\$HALOGEN_BUNDLE_SSH" = none ] || { echo "env.sh still sees ssh: \$HALOGEN_BUNDLE_SSH"; exit 1; }
[ -z "\$(ls /etc/openmpi 2>/dev/null)" ] || { echo "/etc/openmpi is not hidden"; exit 1; }
echo "--- version"
halogen --version || exit 1
halogen generate sbm --nodes 1500 --classes 4 --features 8 --avg-degree 6 --seed 2 -o g.h5 >gen.log 2>&1 || { cat gen.log; exit 1; }
halogen partition g.h5 -k 1 -o p1 >p1.log 2>&1 && halogen partition g.h5 -k 2 -o p2 >p2.log 2>&1 || { cat p1.log p2.log; exit 1; }
echo "--- singleton"
timeout 120 halogen train p1 --device cpu --epochs 2 --threads 1 || exit 1
echo "--- mpiexec 2 ranks"
timeout 120 mpiexec --oversubscribe --bind-to none -np 2 halogen train p2 --device cpu --epochs 3 --threads 1 \
  --metrics two.jsonl || exit 1
echo "--- control: mpiexec without env.sh's launcher and transport variables"
unset OMPI_MCA_plm OMPI_MCA_pml OMPI_MCA_btl OMPI_MCA_mtl OMPI_MCA_osc
if timeout 120 mpiexec --oversubscribe --bind-to none -np 2 halogen train p2 --device cpu --epochs 1 --threads 1 \
  >control.log 2>&1; then
  echo "control: mpiexec ran without the variables (the namespace hides nothing that matters?)"; exit 1
fi
echo "control failed as it should: \$(grep -m1 -E 'rsh|ssh|ucx|not found|error' control.log)"
EOF_INSIDE
unshare -m bash "$WORK/inside.sh" >"$WORK/inside.log" 2>&1; status=$?
[ "$status" = 0 ] || { cat "$WORK/inside.log"; fail "the relocated bundle did not start (exit $status)"; }
grep -q "^hidden: /etc/openmpi" "$WORK/inside.log" || [ ! -d /etc/openmpi ] || { cat "$WORK/inside.log"; fail "/etc/openmpi was not hidden"; }
python3 - "$WORK/two.jsonl" <<'EOF_PY' || { cat "$WORK/inside.log"; fail "metrics of the 2-rank run"; }
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
epochs = [r for r in rows if "epoch" in r and "loss" in r]
assert len(epochs) == 3, rows
EOF_PY
grep -E "^(hidden|control)" "$WORK/inside.log"
echo "relocated bundle: OK (version, singleton, 2 ranks through the bundle's mpiexec without ssh and /etc/openmpi)"
