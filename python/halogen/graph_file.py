"""The Halogen graph file (docs/io.md): one HDF5 file per graph, format="halogen.graph" format_version=2.

    /            attrs format="halogen.graph" format_version=2 name num_nodes num_edges directed num_classes num_features
    /csr/indptr  int64 [N+1]      /csr/indices int64 [E]      /csr/weight float32 [E]   (optional)
    /node/feat   float32 [N,F]    /node/label int32 [N] (-1 = unlabeled), or float32 [N] / [T,N] for regression
    /node/orig_id int64 [N]       (optional)
    /split/train, /split/valid, /split/test   int64 node ids

`write_graph` builds the graph exactly as `halogen convert` does (symmetrised unless directed, self-loops and
duplicate edges removed, a duplicate keeping its largest weight, rows sorted), checks it with the rules every
Halogen reader applies (`validate_graph`) and writes it atomically: to a hidden temporary name in the same
directory, renamed when complete. Every dataset that holds data is chunked (about 1 MiB of whole rows) with
HDF5's Fletcher-32 checksum, which Halogen requires (format_version 2; docs/io.md "Integrity"). Needs numpy and h5py only.
"""
import os

import numpy as np

FORMAT = "halogen.graph"
VERSION = 2


def build_csr(num_nodes, src, dst, weight=None, directed=False):
    """Returns (indptr int64 [N+1], indices int64 [E], weight float32 [E] or None): rows sorted, without
    duplicates (a duplicate keeps its largest weight) or self-loops; symmetrised unless `directed`.
    Row r holds the edges (r, c) with src == r, dst == c (and (c, r) when symmetrised)."""
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    if src.shape != dst.shape:
        raise ValueError("edge_index: source and target arrays differ in length")
    for name, ids in (("source", src), ("target", dst)):
        bad = np.flatnonzero((ids < 0) | (ids >= num_nodes))
        if bad.size:
            raise ValueError(f"edge_index: {name} id {ids[bad[0]]} at edge {bad[0]} out of range [0, {num_nodes})")
    if weight is not None:
        weight = np.asarray(weight, dtype=np.float32).ravel()
        if weight.shape != src.shape:
            raise ValueError(f"edge_weight: expected {src.size} values (one per edge), found {weight.size}")
    if not directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        if weight is not None:
            weight = np.concatenate([weight, weight])
    keep = src != dst
    src, dst = src[keep], dst[keep]
    key = src * np.int64(num_nodes) + dst
    if weight is None:
        key = np.unique(key)
    else:
        weight = weight[keep]
        order = np.lexsort((-weight, key))  # by key, largest weight first
        key, weight = key[order], weight[order]
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        key, weight = key[first], weight[first]
    rows, cols = (key // num_nodes, key % num_nodes) if num_nodes else (key, key)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=num_nodes), out=indptr[1:])
    return indptr, cols.astype(np.int64), weight


def _ids(name, ids, num_nodes):
    ids = np.asarray([] if ids is None else ids, dtype=np.int64).ravel()
    if ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
        raise ValueError(f"{name}: node id out of range [0, {num_nodes})")
    if np.unique(ids).size != ids.size:
        raise ValueError(f"{name}: duplicate node ids")
    return ids


def validate_graph(graph, where=""):
    """The checks every Halogen reader applies (io/graph_file.cpp), on a dict as returned by read_graph.
    Raises ValueError naming `where`, the dataset and the first bad index."""
    at = (where + ": ") if where else ""
    n = int(graph["num_nodes"])
    indptr, indices = graph["indptr"], graph["indices"]
    if indptr.shape != (n + 1,):
        raise ValueError(f"{at}/csr/indptr: expected shape [{n + 1}], found {list(indptr.shape)}")
    if indptr[0] != 0 or indptr[-1] != indices.size:
        raise ValueError(f"{at}/csr/indptr: must start at 0 and end at {indices.size}")
    step = np.diff(indptr)
    if (step < 0).any():
        raise ValueError(f"{at}/csr/indptr: decreases at index {int(np.flatnonzero(step < 0)[0]) + 1}")
    bad = np.flatnonzero((indices < 0) | (indices >= n))
    if bad.size:
        raise ValueError(f"{at}/csr/indices: index {bad[0]}: column {indices[bad[0]]} out of range [0, {n})")
    rows = np.repeat(np.arange(n, dtype=np.int64), step)
    key = rows * np.int64(max(n, 1)) + indices
    bad = np.flatnonzero(np.diff(key) <= 0)
    if bad.size:
        raise ValueError(f"{at}/csr/indices: index {bad[0] + 1} (row {rows[bad[0] + 1]}): columns not sorted "
                         "or duplicated")
    loops = np.flatnonzero(rows == indices)
    if loops.size:
        raise ValueError(f"{at}/csr/indices: index {loops[0]}: self-loop on row {rows[loops[0]]}")
    if graph.get("weight") is not None and graph["weight"].shape != indices.shape:
        raise ValueError(f"{at}/csr/weight: expected shape [{indices.size}]")
    if not graph["directed"]:
        transposed = np.sort(indices * np.int64(max(n, 1)) + rows)
        if not np.array_equal(transposed, key):
            raise ValueError(f"{at}/csr: attribute directed=0 but the adjacency is not symmetric")
    features = graph.get("features")
    if features is not None:
        if features.ndim != 2 or features.shape[0] != n:
            raise ValueError(f"{at}/node/feat: expected shape [{n}, F], found {list(features.shape)}")
        finite = np.isfinite(features)
        if not finite.all():
            raise ValueError(f"{at}/node/feat: row {int(np.argwhere(~finite)[0][0])}: not finite")
    labels = graph.get("labels")
    if labels is not None:
        if np.issubdtype(labels.dtype, np.integer):
            if labels.shape != (n,):
                raise ValueError(f"{at}/node/label: expected shape [{n}], found {list(labels.shape)}")
            c = int(graph["num_classes"])
            bad = np.flatnonzero((labels < -1) | (labels >= c))
            if bad.size:
                raise ValueError(f"{at}/node/label: index {bad[0]}: label {labels[bad[0]]} out of range [-1, {c})")
        else:
            if labels.shape[-1:] != (n,) or labels.ndim > 2:
                raise ValueError(f"{at}/node/label: expected shape [{n}] or [T, {n}], found {list(labels.shape)}")
            if not np.isfinite(labels).all():
                raise ValueError(f"{at}/node/label: not finite")
    for split in ("train", "valid", "test"):
        _ids(f"{at}/split/{split}", graph.get(split), n)


def _features_compress_well(features):
    """Whether deflate pays (io/graph_file.cpp's rule): the first MiB shrinks to less than half."""
    import zlib

    sample = features.reshape(-1)[: (1 << 20) // 4].tobytes()
    return len(sample) >= 4096 and 2 * len(zlib.compress(sample, 1)) < len(sample)



def _write(f, name, array, compress=False):
    """As `halogen convert` writes a dataset: chunked (about 1 MiB of whole rows per chunk) with HDF5's
    Fletcher-32 checksum (after gzip when `compress`); an empty dataset holds no bytes and carries none."""
    array = np.asarray(array)
    if array.size == 0:
        f.create_dataset(name, data=array)
        return
    row_bytes = array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
    rows = max(1, min(array.shape[0], (1 << 20) // max(row_bytes, 1)))
    extra = {"compression": "gzip", "compression_opts": 1} if compress else {}
    f.create_dataset(name, data=array, chunks=(rows,) + array.shape[1:], fletcher32=True, **extra)

def write_graph(path, num_nodes, edge_index, features=None, labels=None, num_classes=None, train=None, valid=None,
                test=None, directed=False, name="", edge_weight=None, orig_id=None, targets=None):
    """Writes the graph file `path` atomically and returns (indptr, indices).

    edge_index: int array (2, E), row 0 = source, row 1 = target (the CSR row is the source); symmetrised
    unless `directed`. features: (N, F), finite. labels: class ids (N,), negative or NaN = unlabeled (-1);
    num_classes defaults to max label + 1. targets: float regression targets (N,) or (T, N), instead of labels.
    train/valid/test: node id arrays (unique). edge_weight: (E,) stored as /csr/weight. orig_id: (N,) int64."""
    import h5py

    num_nodes = int(num_nodes)
    edge_index = np.asarray(edge_index)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index: expected shape (2, E), found {edge_index.shape}")
    if labels is not None and targets is not None:
        raise ValueError("labels and targets: give one (class labels or regression targets), not both")
    indptr, indices, weight = build_csr(num_nodes, edge_index[0], edge_index[1], edge_weight, directed)
    graph = {"num_nodes": num_nodes, "directed": bool(directed), "indptr": indptr, "indices": indices,
             "weight": weight, "num_classes": 0}
    if features is not None:
        features = np.ascontiguousarray(features, dtype=np.float32)
        graph["features"] = features
    if labels is not None:
        labels = np.asarray(labels, dtype=np.float64).ravel()
        if labels.shape != (num_nodes,):
            raise ValueError(f"labels: expected shape ({num_nodes},), found {labels.shape}")
        labels = np.where(np.isnan(labels) | (labels < 0), -1, labels).astype(np.int32)
        if num_classes is None:
            num_classes = int(labels.max()) + 1 if labels.size else 0
        graph["labels"] = labels
    if targets is not None:
        graph["labels"] = np.ascontiguousarray(targets, dtype=np.float32)
    graph["num_classes"] = int(num_classes or 0)
    for split, ids in (("train", train), ("valid", valid), ("test", test)):
        graph[split] = _ids(split, ids, num_nodes)
    validate_graph(graph, path)
    if orig_id is not None:
        orig_id = np.asarray(orig_id, dtype=np.int64).ravel()
        if orig_id.shape != (num_nodes,):
            raise ValueError(f"orig_id: expected shape ({num_nodes},), found {orig_id.shape}")

    directory = os.path.dirname(os.path.abspath(path))
    temp = os.path.join(directory, "." + os.path.basename(path) + f".tmp.{os.getpid()}")
    try:
        with h5py.File(temp, "w") as f:
            attrs = {"format": FORMAT, "format_version": VERSION, "name": name, "num_nodes": num_nodes,
                     "num_edges": int(indices.size), "directed": int(bool(directed)),
                     "num_classes": graph["num_classes"],
                     "num_features": int(features.shape[1]) if features is not None else 0}
            for key, value in attrs.items():
                if isinstance(value, int):
                    f.attrs[key] = np.int64(value)
                else:  # as io/h5.cpp writes strings: fixed length (at least 1), UTF-8, null-terminated
                    raw = value.encode()
                    f.attrs.create(key, raw, dtype=h5py.string_dtype("utf-8", max(len(raw), 1)))
            _write(f, "/csr/indptr", indptr)
            _write(f, "/csr/indices", indices)
            if weight is not None:
                _write(f, "/csr/weight", weight.astype(np.float32))
            if features is not None:
                _write(f, "/node/feat", features, compress=_features_compress_well(features))
            if "labels" in graph:
                _write(f, "/node/label", graph["labels"])
            if orig_id is not None:
                _write(f, "/node/orig_id", orig_id)
            for split in ("train", "valid", "test"):
                _write(f, "/split/" + split, graph[split])
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.remove(temp)
    return indptr, indices


def read_graph(path, validate=True):
    """Reads a graph file into a dict of numpy arrays and attributes:
    name, num_nodes, num_edges, directed (bool), num_classes, num_features, indptr, indices, weight (or None),
    features (N, F) float32 (or None), labels (int32 (N,) class ids, or float32 targets; or None), orig_id (or None),
    train, valid, test (int64 ids), num_snapshots. `validate` applies validate_graph (ValueError on a violation)."""
    import h5py

    with h5py.File(path, "r") as f:
        fmt = f.attrs.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt != FORMAT:
            raise ValueError(f'{path}: not a Halogen graph file (root attribute format is not "{FORMAT}")')
        version = int(f.attrs.get("format_version", f.attrs.get("version", -1)))  # files before 2026-12: version
        if version != VERSION:
            raise ValueError(f"{path}: graph file format_version {version} is not supported (reads {VERSION})")
        name = f.attrs.get("name", "")
        graph = {
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "num_nodes": int(f.attrs["num_nodes"]),
            "num_edges": int(f.attrs["num_edges"]),
            "directed": bool(int(f.attrs["directed"])),
            "num_classes": int(f.attrs["num_classes"]),
            "indptr": f["/csr/indptr"][()].astype(np.int64, copy=False),
            "indices": f["/csr/indices"][()].astype(np.int64, copy=False),
            "weight": f["/csr/weight"][()] if "/csr/weight" in f else None,
            "features": f["/node/feat"][()] if "/node/feat" in f else None,
            "labels": f["/node/label"][()] if "/node/label" in f else None,
            "orig_id": f["/node/orig_id"][()] if "/node/orig_id" in f else None,
            "num_snapshots": len(f["/snapshots"]) if "/snapshots" in f else 0,
        }
        for split in ("train", "valid", "test"):
            key = "/split/" + split
            graph[split] = f[key][()].astype(np.int64, copy=False) if key in f else np.zeros(0, np.int64)
    graph["num_features"] = graph["features"].shape[1] if graph["features"] is not None else 0
    if graph["num_edges"] != graph["indices"].size:
        raise ValueError(f"{path}: attribute num_edges {graph['num_edges']} != {graph['indices'].size} entries "
                         "in /csr/indices")
    if validate:
        validate_graph(graph, path)
    return graph
