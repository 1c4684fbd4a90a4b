#!/usr/bin/env python3
"""Write a Halogen graph file (.h5) from NumPy arrays -- the way in for PyG / DGL / NumPy users.

As a module:
    from graph_from_arrays import write_graph
    write_graph("cora.h5", num_nodes=data.num_nodes, edge_index=data.edge_index.numpy(),
                features=data.x.numpy(), labels=data.y.numpy(),
                train=data.train_mask.nonzero().view(-1).numpy(), valid=..., test=...)

As a command, from an .npz holding `edge_index` (2, E) and optionally `x`/`node_feat` (N, F), `y`/`node_label`
(N,) (negative or NaN = unlabeled), `train`/`valid`/`test` id arrays or `train_mask`/`val_mask`/`test_mask`
boolean masks, `edge_weight` (E,), `num_nodes`:
    python3 scripts/graph_from_arrays.py arrays.npz -o graph.h5 [--directed] [--name NAME]

The graph is built exactly as `halogen convert` builds it: symmetrised unless directed, self-loops and
duplicate edges removed (a duplicate keeps its largest weight), rows sorted. The file is written to a
temporary name and renamed when complete. Needs numpy and h5py.
"""
import argparse
import os
import sys

import numpy as np


def build_csr(num_nodes, src, dst, weight=None, directed=False):
    """Returns (indptr, indices, weight) with sorted, duplicate-free rows and no self-loops."""
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
    rows, cols = key // num_nodes, key % num_nodes
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


def write_graph(path, num_nodes, edge_index, features=None, labels=None, num_classes=None, train=None, valid=None,
                test=None, directed=False, name="", edge_weight=None, orig_id=None):
    """Writes the graph file `path` atomically. labels: int array (N,), negative = unlabeled (-1)."""
    import h5py

    edge_index = np.asarray(edge_index)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index: expected shape (2, E), found {edge_index.shape}")
    indptr, indices, weight = build_csr(num_nodes, edge_index[0], edge_index[1], edge_weight, directed)
    if labels is not None:
        labels = np.asarray(labels, dtype=np.float64).ravel()
        labels = np.where(np.isnan(labels) | (labels < 0), -1, labels).astype(np.int32)
        if labels.shape != (num_nodes,):
            raise ValueError(f"labels: expected shape ({num_nodes},), found {labels.shape}")
        if num_classes is None:
            num_classes = int(labels.max()) + 1 if labels.size else 0
        if labels.max(initial=-1) >= num_classes:
            raise ValueError(f"labels: label {labels.max()} out of range [-1, {num_classes})")
    splits = {s: _ids(s, ids, num_nodes) for s, ids in (("train", train), ("valid", valid), ("test", test))}

    def write(f, name, array):
        # As `halogen convert` writes: chunked (about 1 MiB of whole rows per chunk) with HDF5's Fletcher-32
        # checksum, which Halogen requires of every dataset that holds data (graph file version 2).
        array = np.asarray(array)
        if array.size == 0:
            f.create_dataset(name, data=array)
            return
        row_bytes = array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
        rows = max(1, min(array.shape[0], (1 << 20) // max(row_bytes, 1)))
        f.create_dataset(name, data=array, chunks=(rows,) + array.shape[1:], fletcher32=True)

    directory = os.path.dirname(os.path.abspath(path))
    temp = os.path.join(directory, "." + os.path.basename(path) + f".tmp.{os.getpid()}")
    try:
        with h5py.File(temp, "w") as f:
            attrs = {"format": "halogen.graph", "version": 2, "name": name, "num_nodes": num_nodes,
                     "num_edges": indices.size, "directed": int(bool(directed)),
                     "num_classes": int(num_classes or 0)}
            for key, value in attrs.items():
                f.attrs[key] = np.int64(value) if isinstance(value, int) else value
            write(f, "/csr/indptr", indptr)
            write(f, "/csr/indices", indices)
            if weight is not None:
                write(f, "/csr/weight", weight.astype(np.float32))
            if features is not None:
                features = np.asarray(features, dtype=np.float32)
                if features.ndim != 2 or features.shape[0] != num_nodes:
                    raise ValueError(f"features: expected shape ({num_nodes}, F), found {features.shape}")
                if not np.isfinite(features).all():
                    raise ValueError("features: not all finite")
                write(f, "/node/feat", features)
                f.attrs["num_features"] = np.int64(features.shape[1])
            else:
                f.attrs["num_features"] = np.int64(0)
            if labels is not None:
                write(f, "/node/label", labels)
            if orig_id is not None:
                write(f, "/node/orig_id", np.asarray(orig_id, dtype=np.int64))
            for split, ids in splits.items():
                write(f, "/split/" + split, ids)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.remove(temp)
    return indptr, indices


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arrays", help=".npz with edge_index and optional x, y, splits or masks")
    parser.add_argument("-o", "--output", required=True, help="graph file to write (.h5)")
    parser.add_argument("--directed", action="store_true", help="keep edges as given (default: symmetrise)")
    parser.add_argument("--name", default=None, help="graph name (default: the input file's stem)")
    args = parser.parse_args()
    try:
        z = np.load(args.arrays)

        def get(*names):
            return next((z[n] for n in names if n in z.files), None)

        edge_index = get("edge_index")
        if edge_index is None:
            raise ValueError("no edge_index array")
        features = get("x", "node_feat", "features")
        labels = get("y", "node_label", "labels")
        num_nodes = get("num_nodes")
        if num_nodes is not None:
            num_nodes = int(np.asarray(num_nodes).ravel()[0])
        elif features is not None:
            num_nodes = features.shape[0]
        elif labels is not None:
            num_nodes = np.asarray(labels).shape[0]
        else:
            num_nodes = int(edge_index.max()) + 1 if edge_index.size else 0
        splits = {}
        for split, mask_names in (("train", ("train_mask",)), ("valid", ("val_mask", "valid_mask")),
                                  ("test", ("test_mask",))):
            ids = get(split, "val" if split == "valid" else split)
            mask = get(*mask_names)
            splits[split] = ids if ids is not None else (np.flatnonzero(mask) if mask is not None else None)
        name = args.name if args.name is not None else os.path.splitext(os.path.basename(args.arrays))[0]
        indptr, indices = write_graph(args.output, num_nodes, edge_index, features, labels, None, splits["train"],
                                      splits["valid"], splits["test"], args.directed, name, get("edge_weight"))
    except (ValueError, KeyError, OSError) as e:
        print(f"graph_from_arrays: error: {args.arrays}: {e}", file=sys.stderr)
        return 2
    print(f"{args.output}: {num_nodes} nodes, {indices.size} stored edges")
    return 0


if __name__ == "__main__":
    sys.exit(main())
