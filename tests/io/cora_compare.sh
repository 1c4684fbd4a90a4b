#!/usr/bin/env bash
# Cora two ways: `halogen convert` on the OGB-layout copy and scripts/convert_planetoid.py on the original
# Planetoid pickles must give the same graph file contents, with the published sizes
# (2708 nodes, 10556 stored edges, 1433 features, 7 classes, split 140/500/1000). Skips (77) without
# ../shared/data or without numpy/scipy/h5py.
source "$(dirname "$0")/../common.sh"
if [ -z "$data" ] || [ ! -d "$data/ogb-format/cora" ] || [ ! -d "$data/planetoid" ]; then
  echo "skipped: shared data not found (HALOGEN_SHARED_DATA=$data)"; exit 77
fi
require_python numpy scipy h5py
"$bin" convert --format ogb "$data/ogb-format/cora" -o "$work/ogb.h5" || { echo "FAIL: convert"; exit 1; }
python3 "$HALOGEN_SOURCE_DIR/scripts/convert_planetoid.py" "$data/planetoid" cora -o "$work/planetoid.h5" ||
  { echo "FAIL: convert_planetoid.py"; exit 1; }
"$bin" info --check "$work/planetoid.h5" >/dev/null || { echo "FAIL: the script's file does not pass info --check"; exit 1; }
python3 - "$work/ogb.h5" "$work/planetoid.h5" <<'PY'
import sys
import h5py
import numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
for f in (a, b):
    assert f.attrs["num_nodes"] == 2708, f.attrs["num_nodes"]
    assert f.attrs["num_edges"] == 10556, f.attrs["num_edges"]
    assert f.attrs["num_classes"] == 7, f.attrs["num_classes"]
    assert f["node/feat"].shape == (2708, 1433), f["node/feat"].shape
    assert [f["split/" + s].shape[0] for s in ("train", "valid", "test")] == [140, 500, 1000]
for key in ("num_nodes", "num_edges", "directed", "num_classes"):
    assert a.attrs[key] == b.attrs[key], key
for name in ("csr/indptr", "csr/indices", "node/feat", "node/label", "split/train", "split/valid", "split/test"):
    assert np.array_equal(a[name][()], b[name][()]), name + " differs"
print("cora: OGB-layout conversion and Planetoid script agree (2708 nodes, 10556 edges, 1433 features, 7 classes)")
PY
