#!/usr/bin/env python3
"""Convert a Planetoid dataset (Cora, CiteSeer, PubMed in ind.<name>.{x,tx,allx,y,ty,ally,graph,test.index})
into a Halogen graph file, with the standard split of Kipf & Welling / Yang et al.:
train = the first |y| nodes, valid = the next 500 (--valid-size), test = test.index (in file order).

    python3 scripts/convert_planetoid.py DIR NAME -o NAME.h5      e.g.  ... data/planetoid cora -o cora.h5

Node ids follow the usual loaders (PyG, Kipf's gcn): allx rows, then the test rows placed at their
test.index positions. CiteSeer has test ids without a row in tx (isolated nodes missing from the data):
they get zero features and label -1 (unlabeled). Edges are symmetrised, self-loops and duplicates removed.
Needs numpy, scipy and h5py (Debian: python3-numpy python3-scipy python3-h5py).
"""
import argparse
import os
import pickle
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_from_arrays import write_graph  # noqa: E402


def load(directory, name, part):
    path = os.path.join(directory, f"ind.{name}.{part}")
    with open(path, "rb") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # old pickles name scipy.sparse.csr
        try:
            value = pickle.load(f, encoding="latin1")  # Python-2 pickles
        except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError, IndexError) as e:
            raise ValueError(f"{path}: not a readable pickle ({e or type(e).__name__}; truncated?)") from e
    # Name the file when its object is not what the format stores (a matrix, or a dict of adjacency lists).
    if part == "graph" and not isinstance(value, dict):
        raise ValueError(f"{path}: expected a dict of adjacency lists, found {type(value).__name__}")
    if part != "graph" and not hasattr(value, "shape"):
        raise ValueError(f"{path}: expected a matrix, found {type(value).__name__}")
    return value


def dense(matrix):
    return np.asarray(matrix.todense() if hasattr(matrix, "todense") else matrix, dtype=np.float32)


def convert(directory, name, valid_size=500):
    x, y, tx, ty, allx, ally, adjacency = (load(directory, name, p) for p in ("x", "y", "tx", "ty", "allx", "ally",
                                                                                   "graph"))
    with open(os.path.join(directory, f"ind.{name}.test.index")) as f:
        test_index = np.array([int(line) for line in f if line.strip()], dtype=np.int64)
    sorted_test = np.sort(test_index)
    tx, ty = dense(tx), np.asarray(ty, dtype=np.float32)
    # CiteSeer: some ids in [min, max] of test.index have no row in tx; give them zero rows.
    full_range = np.arange(sorted_test[0], sorted_test[-1] + 1)
    if full_range.size != tx.shape[0]:
        tx_full = np.zeros((full_range.size, tx.shape[1]), dtype=np.float32)
        ty_full = np.zeros((full_range.size, ty.shape[1]), dtype=np.float32)
        tx_full[sorted_test - sorted_test[0]] = tx
        ty_full[sorted_test - sorted_test[0]] = ty
        tx, ty = tx_full, ty_full
    features = np.vstack([dense(allx), tx])
    onehot = np.vstack([np.asarray(ally, dtype=np.float32), ty])
    # The test rows are stored in sorted-id order; put each at its test.index position.
    features[test_index] = features[sorted_test]
    onehot[test_index] = onehot[sorted_test]
    bad_rows = np.nonzero(~np.isfinite(features).all(axis=1))[0]
    if bad_rows.size:  # NaN/Inf features would train to NaN
        raise ValueError(f"ind.{name}.allx/tx: node {bad_rows[0]}: feature value is not finite")
    labels = np.where(onehot.sum(axis=1) > 0, onehot.argmax(axis=1), -1).astype(np.int32)
    num_nodes = features.shape[0]

    src, dst = [], []
    for node, neighbours in adjacency.items():
        src.extend([node] * len(neighbours))
        dst.extend(neighbours)
    edge_index = np.array([src, dst], dtype=np.int64)
    # adjacency may name nodes beyond the feature rows (none in the published files): refuse rather than guess.
    if edge_index.size and edge_index.max() >= num_nodes:
        raise ValueError(f"ind.{name}.graph: node {edge_index.max()} has no feature row ({num_nodes} rows)")

    num_train = np.asarray(y).shape[0]
    train = np.arange(num_train)
    valid = np.arange(num_train, min(num_train + valid_size, num_nodes))
    return dict(num_nodes=num_nodes, edge_index=edge_index, features=features, labels=labels,
                num_classes=onehot.shape[1], train=train, valid=valid, test=test_index)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="folder holding ind.NAME.* files")
    parser.add_argument("name", help="cora, citeseer or pubmed")
    parser.add_argument("-o", "--output", required=True, help="graph file to write (.h5)")
    parser.add_argument("--valid-size", type=int, default=500, help="validation nodes after the training ones")
    args = parser.parse_args()
    try:
        graph = convert(args.directory, args.name.lower(), args.valid_size)
        indptr, indices = write_graph(args.output, directed=False, name=args.name.lower(), **graph)
    except (OSError, ValueError, pickle.UnpicklingError, EOFError, IndexError, KeyError, AttributeError,
            TypeError) as e:  # a truncated or wrong-typed pickle ends in any of these
        print(f"convert_planetoid: error: {e}", file=sys.stderr)
        return 2
    print(f"{args.output}: {graph['num_nodes']} nodes, {indices.size} stored edges, {graph['features'].shape[1]} "
          f"features, {graph['num_classes']} classes, split {graph['train'].size}/{graph['valid'].size}/"
          f"{graph['test'].size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
