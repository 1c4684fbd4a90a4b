#!/usr/bin/env bash
# Installs every dependency of Halogen on Debian 12 / Ubuntu 22.04+: idempotent and non-interactive.
# The CUDA toolkit is used when present (nvcc on PATH or in /usr/local/cuda) but never installed or required.
# Run as root or with sudo available.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ccache time
  libopenmpi-dev openmpi-bin
  libmetis-dev libhdf5-dev libopenblas-dev zlib1g-dev
  libptscotch-dev libscotchparmetis-dev  # `partition --method ptscotch` (the 64-bit scotch-int64 build)
  libcli11-dev nlohmann-json3-dev libgtest-dev
  libcurl4-openssl-dev libssl-dev libzip-dev  # `halogen download`: HTTP(S), SHA-256, zip archives
  libxxhash-dev  # file fingerprints (XXH3) in partitions and checkpoints
  python3 python3-numpy python3-scipy python3-h5py python3-matplotlib
  python3-venv python3-pytest python3-pandas python3-torch python3-tqdm python3-jinja2
  clang libclang-rt-dev libomp-dev  # libFuzzer harness of the input readers (scripts/fuzz.sh, preset fuzz)
  slurm-wlm munge
  iproute2 util-linux  # the emulated cluster (scripts/cluster/cluster.sh: ip netns, tc, nsenter, unshare)
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all Debian packages present"
fi

# The scripts run with whatever `python3` is first on PATH; when that is not Debian's (pyenv, conda, venv),
# give it the same modules from PyPI.
if ! python3 -c 'import numpy, scipy, h5py, matplotlib' 2>/dev/null; then
  echo "install-deps: adding numpy scipy h5py matplotlib to $(command -v python3)"
  python3 -m pip install -q numpy scipy h5py matplotlib
fi

# The Python package's tests (ctest python.pytest, tests/python/run_pytest.sh) run in a venv made with
# --system-site-packages from Debian's python3 and its torch 1.13; they install torch_geometric==2.3.1 (pure
# Python, the newest release for torch 1.13) into that venv from PyPI themselves (its import-time needs, tqdm and
# jinja2, are the Debian packages above).

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: CUDA toolkit found; the CUDA backend will be built"
else
  echo "install-deps: no CUDA toolkit; building the CPU backend only"
fi
