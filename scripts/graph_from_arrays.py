#!/usr/bin/env python3
"""Write a Halogen graph file (.h5) from NumPy arrays -- the way in for PyG / DGL / NumPy users.

The code lives in the `halogen` Python package (python/halogen/graph_file.py; `pip install ./python`); this
script is a thin command-line wrapper around it, and keeps working without installing the package.

As a module (prefer `halogen.write_graph`, or `halogen.from_pyg(data, "cora.h5")` for a PyG Data):
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

# The package in this repository (python/halogen) first, so that the script matches the checkout it is in.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from halogen.graph_file import build_csr, write_graph  # noqa: E402  (build_csr: re-exported for importers)

__all__ = ["build_csr", "write_graph"]


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
