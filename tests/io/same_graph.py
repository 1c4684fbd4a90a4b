"""assert_same_graph(a, b): two graph files hold equal datasets (values and dtypes) and root attributes; for the
converter tests that compare `halogen convert` with a Python reference (convert_planetoid.sh, convert_reddit.sh)."""
import h5py
import numpy as np

DATASETS = ("csr/indptr", "csr/indices", "node/feat", "node/label", "split/train", "split/valid", "split/test")
ATTRIBUTES = ("format", "format_version", "name", "num_nodes", "num_edges", "directed", "num_classes", "num_features")


def assert_same_graph(path_a, path_b):
    with h5py.File(path_a, "r") as a, h5py.File(path_b, "r") as b:
        for name in DATASETS:
            assert (name in a) == (name in b), f"{name}: present in only one of {path_a}, {path_b}"
            if name in a:
                x, y = a[name][()], b[name][()]
                assert x.dtype == y.dtype and x.shape == y.shape, f"{name}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
                assert np.array_equal(x, y), f"{name} differs: {x} vs {y}"
        for key in ATTRIBUTES:
            x, y = a.attrs.get(key), b.attrs.get(key)
            x, y = (v.decode() if isinstance(v, bytes) else v for v in (x, y))
            assert x == y, f"attribute {key}: {x!r} vs {y!r}"
