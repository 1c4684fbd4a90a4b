#!/usr/bin/env bash
# The Python converters on tiny hand-made inputs with exact expected outputs:
#  - convert_planetoid.py on a CiteSeer-like Planetoid set whose test.index has a gap (a test id without a
#    row in tx): node order, zero features and label -1 for the missing row, the standard split;
#  - graph_from_arrays.py on the tiny npz fixture's arrays must give the same datasets as `halogen convert`.
# Skips (77) when python3 lacks numpy/scipy/h5py.
source "$(dirname "$0")/../common.sh"
require_python numpy scipy h5py
python3 - "$work" "$src" "$bin" <<'PY' || exit 1
import os, subprocess, sys
import h5py
import numpy as np

work, src, halogen = sys.argv[1:4]
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(src, "tests", "io"))
import planetoid_fixture  # noqa: E402

d = os.path.join(work, "planetoid")
planetoid_fixture.write(d)  # 7 nodes, test ids 6, 4 in file order, id 5 without a row in tx
script = os.path.join(src, "scripts", "convert_planetoid.py")
r = subprocess.run([sys.executable, script, d, "tiny", "--valid-size", "2", "-o", os.path.join(work, "tiny.h5")],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
g = h5py.File(os.path.join(work, "tiny.h5"), "r")
assert g.attrs["num_nodes"] == 7 and g.attrs["num_classes"] == 3
expect_feat = np.array([[1, 0], [0, 1], [2, 0], [0, 2], [4, 4], [0, 0], [6, 6]], dtype=np.float32)
assert np.array_equal(g["node/feat"][()], expect_feat), g["node/feat"][()]
assert g["node/label"][()].tolist() == [0, 1, 2, 2, 1, -1, 0], g["node/label"][()]
assert g["csr/indptr"][()].tolist() == [0, 2, 3, 4, 5, 7, 7, 8], g["csr/indptr"][()]
assert g["csr/indices"][()].tolist() == [1, 2, 0, 0, 4, 3, 6, 4], g["csr/indices"][()]
assert g["split/train"][()].tolist() == [0, 1]
assert g["split/test"][()].tolist() == [6, 4]
assert g["split/valid"][()].tolist() == [2, 3]
r = subprocess.run([halogen, "info", "--check", os.path.join(work, "tiny.h5")], capture_output=True, text=True)
assert r.returncode == 0, r.stdout + r.stderr

# graph_from_arrays.py vs halogen convert on the same arrays.
fixture = os.path.join(src, "tests", "io", "npz_deflated")
data = np.load(os.path.join(fixture, "raw", "data.npz"))
labels = np.load(os.path.join(fixture, "raw", "node-label.npz"))["node_label"].ravel()
masks = {name: np.zeros(5, dtype=bool) for name in ("train_mask", "val_mask", "test_mask")}
masks["train_mask"][[0, 1]] = True
masks["val_mask"][3] = True
masks["test_mask"][4] = True
np.savez(os.path.join(work, "arrays.npz"), edge_index=data["edge_index"], x=data["node_feat"], y=labels, **masks)
script = os.path.join(src, "scripts", "graph_from_arrays.py")
r = subprocess.run([sys.executable, script, os.path.join(work, "arrays.npz"), "-o", os.path.join(work, "py.h5")],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
r = subprocess.run([halogen, "convert", "--format", "npz", fixture, "-o", os.path.join(work, "c.h5")], capture_output=True,
                   text=True)
assert r.returncode == 0, r.stderr
a, b = h5py.File(os.path.join(work, "py.h5"), "r"), h5py.File(os.path.join(work, "c.h5"), "r")
for name in ("csr/indptr", "csr/indices", "node/feat", "node/label", "split/train", "split/valid", "split/test"):
    assert np.array_equal(a[name][()], b[name][()]), name
for key in ("num_nodes", "num_edges", "num_classes", "directed", "format_version"):
    assert a.attrs[key] == b.attrs[key], key
r = subprocess.run([halogen, "info", "--check", os.path.join(work, "py.h5")], capture_output=True, text=True)
assert r.returncode == 0, r.stdout + r.stderr
# Bad arrays: an edge id out of range is rejected with exit 2 and no file.
np.savez(os.path.join(work, "bad.npz"), edge_index=np.array([[0, 9], [1, 2]]), num_nodes=np.array([5]))
r = subprocess.run([sys.executable, script, os.path.join(work, "bad.npz"), "-o", os.path.join(work, "bad.h5")],
                   capture_output=True, text=True)
assert r.returncode == 2 and "source id 9 at edge 1 out of range [0, 5)" in r.stderr, r.stderr
assert not os.path.exists(os.path.join(work, "bad.h5"))
print("python converters: planetoid (with a missing test row) and graph_from_arrays agree with the expected files")
PY
