"""Shared fixtures: the halogen binary, mpirun and the shared data, each found from the environment ctest sets
(HALOGEN_BIN, HALOGEN_SHARED_DATA) or from the repository layout; tests that need a missing one skip."""
import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env_path(name, default):
    value = os.environ.get(name) or default
    return value if value and os.path.exists(value) else None


@pytest.fixture(scope="session")
def halogen_bin():
    path = _env_path("HALOGEN_BIN", os.path.join(REPO, "build", "release", "bin", "halogen"))
    if path is None:
        pytest.skip("no halogen binary (set HALOGEN_BIN or build build/release)")
    return path


@pytest.fixture(scope="session")
def shared_data():
    path = _env_path("HALOGEN_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared", "data"))
    if path is None:
        pytest.skip("no shared data (set HALOGEN_SHARED_DATA)")
    return path


@pytest.fixture(scope="session")
def mpirun():
    """The mpirun command line prefix (without -np), allowed to run as root and to oversubscribe."""
    exe = shutil.which("mpirun")
    if exe is None:
        pytest.skip("no mpirun on PATH")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return [exe, "--oversubscribe", "--bind-to", "none"]


def run(args, **kwargs):
    """Runs a command, failing the test with its output when it exits non-zero."""
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    command = " ".join(map(str, args))
    assert result.returncode == 0, f"{command}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def torch_geometric_or_skip():
    """(torch, torch_geometric), or skips the test saying which is missing."""
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    pyg = pytest.importorskip("torch_geometric", reason="torch_geometric is not installed (pip install "
                              "--no-build-isolation --no-deps torch_geometric==2.3.1)")
    return torch, pyg
