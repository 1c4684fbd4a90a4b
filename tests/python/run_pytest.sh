#!/usr/bin/env bash
# The Python package (python/, `halogen-gnn`) as a user installs it: a venv made with --system-site-packages
# (Debian's python refuses a plain `pip install`; numpy, h5py, torch, pandas and pytest come from Debian), then
# `pip install ./python` and `pytest python/tests` against the installed package and this build's `halogen`.
# torch_geometric 2.3.1 (the newest release for Debian's torch 1.13; pure Python) is installed into the venv from
# PyPI when torch is there and PyG is not; offline, the PyG tests skip and say so.
# The venv is $HALOGEN_PYENV, else ./pyenv in ctest's working directory (the build directory), and is reused.
# Skipped (77) without a python that has numpy, h5py and pytest (PYTHON, else /usr/bin/python3, else python3).
set -u
src="${HALOGEN_SOURCE_DIR:?HALOGEN_SOURCE_DIR not set}"
python="${PYTHON:-/usr/bin/python3}"
[ -x "$python" ] || python="$(command -v python3)"
"$python" -c "import numpy, h5py, pytest, venv" 2>/dev/null ||
  { echo "SKIP: $python lacks numpy, h5py, pytest or venv (scripts/install-deps.sh installs them)"; exit 77; }
venv="${HALOGEN_PYENV:-$PWD/pyenv}"
fail() { echo "FAIL: $*"; exit 1; }

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv --system-site-packages "$venv" || fail "python3 -m venv --system-site-packages $venv"
fi
# --no-build-isolation: the build backend (setuptools) comes from the system, so this step needs no network.
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation "$src/python" ||
  fail "pip install $src/python"
has() { "$venv/bin/python" -c "import $1" 2>/dev/null; }
if has torch && ! has torch_geometric; then
  # --no-deps: its import-time needs (tqdm, jinja2, psutil, pyparsing, scipy) are Debian packages; pip would
  # otherwise pull scikit-learn and friends from PyPI for nothing.
  timeout 300 "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
    torch_geometric==2.3.1 || echo "WARNING: torch_geometric could not be installed (offline?); PyG tests will skip"
fi
cd "$src/python" || fail "cd $src/python"
exec "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider tests
