#!/usr/bin/env bash
# `halogen convert --format reddit` (io/convert_reddit.cpp) against the graph_from_arrays snippet of
# datasets/README.md, dataset by dataset, on a tiny reddit_data.npz + reddit_graph.npz made with numpy/scipy
# (scipy.sparse.save_npz of a COO matrix, compressed and not; float64 and float32 features; duplicate edges,
# a self-loop, both directions of one edge, an isolated node, a node of no split, a negative label).
# Also: the directory is detected, --name is stored, and a CSR-saved graph is one error line naming the file.
# Skips (77) when python3 lacks numpy/scipy/h5py.
source "$(dirname "$0")/../common.sh"
require_python numpy scipy h5py
python3 - "$work" "$src" "$bin" <<'PY' || exit 1
import os, subprocess, sys
import h5py
import numpy as np
import scipy.sparse as sp

work, src, halogen = sys.argv[1:4]
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(src, "scripts"))
sys.path.insert(0, os.path.join(src, "tests", "io"))
from graph_from_arrays import write_graph  # noqa: E402
from same_graph import assert_same_graph  # noqa: E402


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


def make(directory, compressed, feature_dtype):
    os.makedirs(directory)
    n = 7
    rng = np.random.default_rng(7)
    feature = rng.standard_normal((n, 3)).astype(feature_dtype)
    label = np.array([3, 0, 1, -1, 2, 0, 1], dtype=np.int64)
    node_types = np.array([1, 1, 2, 3, 3, 0, 1], dtype=np.int64)  # node 5 in no split
    np.savez(os.path.join(directory, "reddit_data.npz"), feature=feature, label=label, node_types=node_types,
             node_ids=np.arange(n))
    # Node 6 isolated; (0, 1) twice, (2, 0) and (0, 2), a self-loop on 3.
    row = np.array([0, 0, 2, 0, 3, 4, 1, 5], dtype=np.int32)
    col = np.array([1, 1, 0, 2, 3, 1, 4, 4], dtype=np.int32)
    adj = sp.coo_matrix((np.ones(row.size, dtype=np.float32), (row, col)), shape=(n, n))
    sp.save_npz(os.path.join(directory, "reddit_graph.npz"), adj, compressed=compressed)


def snippet(directory, output, name="reddit"):
    """datasets/README.md's code, with the directory and output as arguments."""
    data = np.load(os.path.join(directory, "reddit_data.npz"))
    adj = sp.load_npz(os.path.join(directory, "reddit_graph.npz")).tocoo()
    types = data["node_types"]
    write_graph(output, num_nodes=data["feature"].shape[0], edge_index=np.vstack([adj.row, adj.col]),
                features=data["feature"].astype(np.float32), labels=data["label"].astype(np.int32),
                train=np.flatnonzero(types == 1), valid=np.flatnonzero(types == 2),
                test=np.flatnonzero(types == 3), name=name)


for compressed in (False, True):
    for dtype in (np.float64, np.float32):
        tag = f"reddit-{'z' if compressed else 'stored'}-{np.dtype(dtype).name}"
        d = os.path.join(work, tag)
        make(d, compressed, dtype)
        snippet(d, os.path.join(work, tag + ".py.h5"))
        flags = ("--format", "reddit") if compressed else ()  # detected: a directory with reddit_data.npz
        r = run(halogen, "convert", d, "-o", os.path.join(work, tag + ".h5"), *flags)
        assert r.returncode == 0, f"{tag}: {r.stdout}{r.stderr}"
        assert_same_graph(os.path.join(work, tag + ".py.h5"), os.path.join(work, tag + ".h5"))
        r = run(halogen, "info", "--check", os.path.join(work, tag + ".h5"))
        assert r.returncode == 0, r.stdout + r.stderr
with h5py.File(os.path.join(work, tag + ".h5"), "r") as g:  # the known values
    assert g["csr/indptr"][()].tolist() == [0, 2, 4, 5, 5, 7, 8, 8], g["csr/indptr"][()]
    assert g["csr/indices"][()].tolist() == [1, 2, 0, 4, 0, 1, 5, 4], g["csr/indices"][()]
    assert g["node/label"][()].tolist() == [3, 0, 1, -1, 2, 0, 1] and g.attrs["num_classes"] == 4
    assert [g["split/" + s][()].tolist() for s in ("train", "valid", "test")] == [[0, 1, 6], [2], [3, 4]]
# --name is stored (the snippet's name argument).
snippet(d, os.path.join(work, "named.py.h5"), name="reddit-tiny")
r = run(halogen, "convert", d, "--name", "reddit-tiny", "-o", os.path.join(work, "named.h5"))
assert r.returncode == 0, r.stderr
assert_same_graph(os.path.join(work, "named.py.h5"), os.path.join(work, "named.h5"))
# A graph saved as CSR has no row/col: one line naming the file.
bad = os.path.join(work, "csr")
make(bad, True, np.float32)
graph = os.path.join(bad, "reddit_graph.npz")
sp.save_npz(graph, sp.load_npz(graph).tocsr())
r = run(halogen, "convert", bad, "-o", os.path.join(work, "bad.h5"))
lines = r.stderr.strip().splitlines()
assert r.returncode != 0 and len(lines) == 1 and graph in lines[0] and "COO" in lines[0], r.stderr
print("reddit: halogen convert equals the datasets/README.md snippet (stored and deflated npz, float64 and float32)")
PY
