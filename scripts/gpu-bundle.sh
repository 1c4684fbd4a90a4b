#!/usr/bin/env bash
# Packs a CUDA build into a self-contained directory for a GPU machine that has the NVIDIA driver and CUDA
# toolkit but none of our other dependencies (MPI, HDF5, METIS, OpenBLAS, ...): scripts/gpu-check.sh runs it.
#
#   cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALOGEN_CUDA=ON   # sm_90 by default
#   scripts/gpu-bundle.sh [--no-build] [--no-archive] [BUILD_DIR=build/gpu] [BUNDLE_DIR=build/gpu-bundle]
#   scripts/gpu-bundle.sh build/release      # the release preset's build works too (CUDA on, sm_90)
#
# The bundle:
#   bin/halogen, tests/gpu_*_test, tests/mpi_comm_device_test
#   lib/libhalogen_cuda.so  the CUDA backend, which bin/halogen opens at run time from ../lib/ (kernels/device.h)
#   lib/        every shared library those binaries, OpenMPI's launcher and OpenMPI's plugins load (per ldd),
#               except the C library family (the machine's glibc must be at least MANIFEST's glibc_needed) and
#               the large CUDA libraries (cuBLAS/cuBLASLt, cuSPARSE, nvJitLink, NCCL, the driver), which the
#               GPU machine has; the small CUDA runtime is included
#   openmpi/    a relocatable copy of OpenMPI (launcher, plugins, help files), used through OPAL_PREFIX
#   pmix/       PMIx's plugins and help files
#   env.sh      `source` it: LD_LIBRARY_PATH, OPAL_PREFIX, PMIx paths, PATH
#   MANIFEST    commit, build type, CUDA architectures, glibc needed, sizes
#   data/       chickenpox.json when ../shared/data has it (the temporal parity step of gpu-check.sh)
# and, next to it, BUNDLE_DIR.tar.xz (what a device run carries: the working tree plus carried files must stay
# under 64 MiB). scripts/gpu-check.sh runs from the source tree beside it (scripts/bench/pyg_gcn.py, ../shared/data
# for Chickenpox) and uses bin/halogen, tests/ and OpenMPI from the bundle. Ends by checking that ldd resolves every library of the bundled binaries inside the bundle
# (CUDA's excepted).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_FIRST=1
ARCHIVE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD_FIRST=0; shift ;;
    --no-archive) ARCHIVE=0; shift ;;  # the directory only (tests/apps/gpu_bundle_relocated_test.sh)
    *) break ;;
  esac
done
BUILD=$(realpath -m "${1:-$ROOT/build/gpu}")
OUT=$(realpath -m "${2:-$ROOT/build/gpu-bundle}")

fail() { echo "gpu-bundle: $*" >&2; exit 1; }
[ -f "$BUILD/CMakeCache.txt" ] || fail "$BUILD is not a CMake build directory"
grep -Eq '^CMAKE_CUDA_COMPILER:[A-Z]+=.+' "$BUILD/CMakeCache.txt" ||
  fail "$BUILD was configured without CUDA (configure with -DHALOGEN_CUDA=ON)"
archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:STRING=//p' "$BUILD/CMakeCache.txt")
case " $archs " in *90*) ;; *) fail "$BUILD builds for CUDA architectures '$archs'; the H200 needs 90" ;; esac
command -v ompi_info >/dev/null || fail "ompi_info not found (OpenMPI is what gets bundled)"

if [ "$BUILD_FIRST" = 1 ]; then
  targets=(halogen halogen_cuda)
  for source in "$ROOT"/tests/gpu/*_test.cu; do targets+=("gpu_$(basename "$source" .cu)"); done
  [ -f "$ROOT/tests/mpi/comm_device_test.cpp" ] && targets+=(mpi_comm_device_test)
  cmake --build "$BUILD" -j "${BUILD_JOBS:-2}" --target "${targets[@]}"
fi

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/tests" "$OUT/lib"
cp "$BUILD/bin/halogen" "$OUT/bin/"
[ -f "$BUILD/lib/libhalogen_cuda.so" ] || fail "$BUILD/lib/libhalogen_cuda.so (the CUDA backend) was not built"
cp "$BUILD/lib/libhalogen_cuda.so" "$OUT/lib/"
for test in "$BUILD"/tests/gpu_*_test "$BUILD"/tests/mpi_comm_device_test; do
  [ -x "$test" ] && [ -f "$test" ] && cp "$test" "$OUT/tests/"
done
# Chickenpox (220 KB; gpu-check.sh's temporal parity step), when the development data is beside the checkout.
for candidate in "$ROOT/shared/data/temporal/chickenpox.json" "$ROOT/../shared/data/temporal/chickenpox.json"; do
  if [ -f "$candidate" ]; then mkdir -p "$OUT/data" && cp "$candidate" "$OUT/data/"; break; fi
done

# ---- OpenMPI, laid out relative to its prefix so that OPAL_PREFIX relocates it ----------------------------------
ompi_path() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
prefix=$(ompi_path prefix)
relative() { local path=$1; [ "${path#"$prefix"/}" != "$path" ] || fail "OpenMPI's $path is not under its prefix $prefix"; echo "${path#"$prefix"/}"; }
bindir=$(relative "$(ompi_path bindir)")
pkglibdir=$(relative "$(ompi_path pkglibdir)")
pkgdatadir=$(relative "$(ompi_path pkgdatadir)")
mkdir -p "$OUT/openmpi/$bindir" "$OUT/openmpi/$pkglibdir" "$OUT/openmpi/$pkgdatadir"
for tool in orterun orted; do cp -L "$prefix/$bindir/$tool" "$OUT/openmpi/$bindir/"; done
ln -s orterun "$OUT/openmpi/$bindir/mpiexec"
ln -s orterun "$OUT/openmpi/$bindir/mpirun"
cp -L "$prefix/$pkglibdir"/*.so "$OUT/openmpi/$pkglibdir/"
cp -rL "$prefix/$pkgdatadir/." "$OUT/openmpi/$pkgdatadir/"
# PMIx (OpenMPI 4 uses an external one on Debian): its few plugins and help files.
pmix_lib=$(ldd "$OUT/openmpi/$pkglibdir"/mca_pmix_ext*.so 2>/dev/null | awk '/libpmix/ {print $3; exit}')
if [ -n "$pmix_lib" ]; then
  pmix_prefix=$(dirname "$(dirname "$(realpath "$pmix_lib")")")
  mkdir -p "$OUT/pmix/lib" "$OUT/pmix/share"
  [ -d "$pmix_prefix/lib/pmix" ] && cp -rL "$pmix_prefix/lib/pmix" "$OUT/pmix/lib/"
  [ -d "$pmix_prefix/share/pmix" ] && cp -rL "$pmix_prefix/share/pmix" "$OUT/pmix/share/"
fi

# ---- shared libraries (ldd gives the transitive closure of each object) -----------------------------------------
# Not bundled: the C library family (the machine's own must be used) and the large CUDA libraries.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libcuda\.so|libnvidia-|libcublas|libcublasLt|libcusparse|libnvJitLink|libnccl)'
objects=("$OUT"/bin/* "$OUT"/tests/* "$OUT/lib/libhalogen_cuda.so" "$OUT/openmpi/$bindir"/orte* "$OUT/openmpi/$pkglibdir"/*.so)
[ -d "$OUT/pmix/lib/pmix" ] && objects+=("$OUT"/pmix/lib/pmix/*.so)
ldd "${objects[@]}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    [ -f "$OUT/lib/$name" ] || cp -L "$path" "$OUT/lib/$name"
  done

cat >"$OUT/env.sh" <<EOF
# Source me: makes the bundled binaries find their libraries and OpenMPI its launcher, plugins and help.
HALOGEN_BUNDLE=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
export HALOGEN_BUNDLE
export LD_LIBRARY_PATH="\$HALOGEN_BUNDLE/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export OPAL_PREFIX="\$HALOGEN_BUNDLE/openmpi"
export PMIX_PREFIX="\$HALOGEN_BUNDLE/pmix"
export PMIX_MCA_mca_base_component_path="\$HALOGEN_BUNDLE/pmix/lib/pmix"
export PATH="\$HALOGEN_BUNDLE/openmpi/$bindir:\$HALOGEN_BUNDLE/bin:\$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Sandboxed kernels (gVisor) may lack process_vm_readv: shared-memory transport without single-copy.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# A bare GPU machine has no /etc/openmpi (Debian's defaults, which OPAL_PREFIX does not relocate) and maybe no
# ssh/rsh. OpenMPI 4.1's rsh launcher then refuses to start even on one node, and without Debian's defaults it
# picks UCX/OFI, whose modules are not bundled. So the launcher and the transports are set here: 'isolated'
# starts processes on this node only (no agent needed), ob1 over self/vader/tcp, no OFI MTL, no UCX one-sided.
export OMPI_MCA_plm=isolated OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_mtl=^ofi OMPI_MCA_osc=^ucx,pt2pt
# Debian's openmpi-mca-params.conf also turns off the verbs/openib BTL's warning on machines without it.
export OMPI_MCA_btl_base_warn_component_unused=0
HALOGEN_BUNDLE_SSH=\$(command -v ssh 2>/dev/null); [ -x "\$HALOGEN_BUNDLE_SSH" ] || HALOGEN_BUNDLE_SSH=none
export HALOGEN_BUNDLE_SSH
# PMIx looks for its plugins in its build-time path too, where a GPU machine may hold another PMIx: their load
# errors (and the zlib warning that follows) are noise, the bundled plugins are used.
export PMIX_MCA_mca_base_component_show_load_errors=0 PMIX_MCA_pcompress_base_silence_warning=1
EOF

glibc_needed=$(objdump -T "$OUT"/bin/* "$OUT"/tests/* "$OUT"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' |
  sed 's/GLIBC_//' | sort -uV | tail -1)
{
  echo "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+changes')"
  echo "built $(date -u +%FT%TZ) on $(hostname) from $BUILD"
  echo "build_type $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt") cuda_architectures $archs"
  echo "nvcc $(sed -n 's/^set(CMAKE_CUDA_COMPILER_VERSION "\(.*\)")/\1/p' "$BUILD"/CMakeFiles/*/CMakeCUDACompiler.cmake | head -1)"
  echo "glibc_needed $glibc_needed"
  echo "openmpi $(ompi_info --parsable --version 2>/dev/null | head -1)"
  # Every test binary of the bundle: scripts/gpu-check.sh fails when one of them did not run and report.
  for test in "$OUT"/tests/*; do [ -x "$test" ] && echo "test $(basename "$test")"; done
} >"$OUT/MANIFEST"

# ---- check: everything but CUDA resolves inside the bundle --------------------------------------------------------
unresolved=$(env LD_LIBRARY_PATH="$OUT/lib" ldd "$OUT"/bin/* "$OUT"/tests/* "$OUT/lib/libhalogen_cuda.so" 2>/dev/null |
  awk '$2 == "=>" {print $1, $3}' | grep -Ev "$skip" | grep -v " $OUT/lib/" | sort -u || true)
if [ -n "$unresolved" ]; then
  echo "gpu-bundle: resolved outside the bundle (or not found):" >&2
  echo "$unresolved" >&2
  exit 1
fi

if [ "$ARCHIVE" = 1 ]; then
  XZ_OPT=${XZ_OPT:--6 -T2} tar -C "$(dirname "$OUT")" -cJf "$OUT.tar.xz" "$(basename "$OUT")"
  echo "bundle $OUT: $(du -sh "$OUT" | cut -f1), archive $OUT.tar.xz: $(du -h "$OUT.tar.xz" | cut -f1)"
else
  echo "bundle $OUT: $(du -sh "$OUT" | cut -f1) (no archive)"
fi
cat "$OUT/MANIFEST"
