#!/usr/bin/env python3
"""Write a synthetic dataset in OGB's raw node-property layout, for measuring `halogen convert` at scale:

    python3 scripts/make_ogb_layout.py DIR --nodes 1000000 --edges 12000000 --features 16 --classes 10

DIR/raw/{edge,node-feat,node-label,num-node-list,num-edge-list}.csv.gz and DIR/split/random/{train,valid,test}
.csv.gz, exactly as OGB ships them (edges once per pair, no header; ~1% of labels NaN). Edges are uniform
random pairs (they may repeat, as in real data). Deterministic per --seed. Needs numpy.
"""
import argparse
import gzip
import os

import numpy as np


def write_rows(path, rows, fmt, chunk=1 << 20):
    with gzip.open(path, "wb", compresslevel=1) as f:
        for start in range(0, rows.shape[0], chunk):
            block = rows[start:start + chunk]
            line = fmt * block.shape[0]
            f.write((line % tuple(block.ravel().tolist())).encode())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--edges", type=int, default=12_000_000)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    raw = os.path.join(args.directory, "raw")
    split = os.path.join(args.directory, "split", "random")
    os.makedirs(raw, exist_ok=True)
    os.makedirs(split, exist_ok=True)
    n = args.nodes
    with gzip.open(os.path.join(raw, "num-node-list.csv.gz"), "wt") as f:
        f.write(f"{n}\n")
    with gzip.open(os.path.join(raw, "num-edge-list.csv.gz"), "wt") as f:
        f.write(f"{args.edges}\n")
    edges = rng.integers(0, n, size=(args.edges, 2), dtype=np.int64)
    write_rows(os.path.join(raw, "edge.csv.gz"), edges, "%d,%d\n")
    del edges
    features = rng.standard_normal((n, args.features)).astype(np.float32)
    write_rows(os.path.join(raw, "node-feat.csv.gz"), features, ",".join(["%.4f"] * args.features) + "\n",
               chunk=1 << 16)
    del features
    labels = rng.integers(0, args.classes, size=n)
    with gzip.open(os.path.join(raw, "node-label.csv.gz"), "wt", compresslevel=1) as f:
        unlabeled = rng.random(n) < 0.01
        f.write("".join("nan\n" if u else f"{l}\n" for l, u in zip(labels.tolist(), unlabeled.tolist())))
    order = rng.permutation(n)
    parts = {"train": order[: n * 6 // 10], "valid": order[n * 6 // 10: n * 8 // 10], "test": order[n * 8 // 10:]}
    for name, ids in parts.items():
        with gzip.open(os.path.join(split, f"{name}.csv.gz"), "wt", compresslevel=1) as f:
            f.write("".join(f"{i}\n" for i in np.sort(ids).tolist()))
    print(f"{args.directory}: {n} nodes, {args.edges} edges, {args.features} features, {args.classes} classes")


if __name__ == "__main__":
    main()
