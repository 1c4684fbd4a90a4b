#!/usr/bin/env python3
"""The same full-batch GCN in PyTorch Geometric, to compare epoch times with `halogen train --device cuda`.

Two steps, so that both frameworks train on exactly the same graph:

    # 1. a synthetic graph the size of ogbn-products, in OGB's binary raw layout (numpy only)
    python3 scripts/bench/pyg_gcn.py make-graph DIR --nodes 2449029 --edges 61859140 --features 100 --classes 47
    halogen convert DIR -o g.h5            # Halogen reads the same raw/data.npz (symmetrised, deduplicated)

    # 2. PyG: GCNConv(cached=True) layers on the symmetrised graph, Adam, full batch; prints one JSON line
    python3 scripts/bench/pyg_gcn.py train DIR --layers 3 --hidden 256 --epochs 20 --warmup 3

make-graph: a stochastic block model: labels uniform over the classes, each edge joins a uniform random
vertex to a vertex of the same class with probability --homophily (else to a uniform vertex), no self loops;
features = class mean + N(0, 1) noise; splits of ogbn-products' sizes (8% train, 1.6% valid, rest test).
Edges are stored once per pair as OGB does (both tools symmetrise). Deterministic per --seed.

train: the model mirrors Halogen's GCN: X0 = dropout(X); per layer Z = GCNConv(X) (self loops, symmetric
normalisation, cached), then dropout(relu(Z)) between layers; cross-entropy on the training vertices; Adam.
The adjacency is a torch.sparse CSR tensor (PyG's sparse-matrix path) unless --adjacency edge_index asks for
the gather/scatter message-passing path. Epoch time = forward + backward + step of the training step (no
evaluation), with torch.cuda.synchronize() around each epoch; the first --warmup epochs (which build the
cached normalisation) are not counted.
"""
import argparse
import json
import os
import sys
import time

import numpy as np


# ---- make-graph (numpy only) ---------------------------------------------------------------------------------
def make_graph(args):
    rng = np.random.default_rng(args.seed)
    n, m, c, f = args.nodes, args.edges, args.classes, args.features
    started = time.time()
    labels = rng.integers(0, c, size=n, dtype=np.int64)
    # Vertices sorted by class, so that "a uniform vertex of class k" is order[start[k] + floor(u * count[k])].
    order = np.argsort(labels, kind="stable")
    count = np.bincount(labels, minlength=c)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    src = rng.integers(0, n, size=m, dtype=np.int64)
    dst = rng.integers(0, n, size=m, dtype=np.int64)
    inside = rng.random(m) < args.homophily
    cls = labels[src[inside]]
    dst[inside] = order[start[cls] + np.floor(rng.random(cls.shape[0]) * count[cls]).astype(np.int64)]
    loops = src == dst
    dst[loops] = (dst[loops] + 1) % n
    edge_index = np.stack([src, dst])
    del src, dst, inside, cls, loops
    means = rng.standard_normal((c, f), dtype=np.float32) * np.float32(args.signal / np.sqrt(max(f, 1)))
    features = rng.standard_normal((n, f), dtype=np.float32)
    features += means[labels]
    raw = os.path.join(args.directory, "raw")
    split = os.path.join(args.directory, "split", "sales_ranking")
    os.makedirs(raw, exist_ok=True)
    os.makedirs(split, exist_ok=True)
    np.savez(os.path.join(raw, "data.npz"), edge_index=edge_index, node_feat=features,
             num_nodes_list=np.array([n], dtype=np.int64), num_edges_list=np.array([m], dtype=np.int64))
    np.savez(os.path.join(raw, "node-label.npz"), node_label=labels.reshape(n, 1))
    perm = rng.permutation(n)
    n_train, n_valid = int(round(0.08 * n)), int(round(0.016 * n))
    for name, ids in (("train", perm[:n_train]), ("valid", perm[n_train:n_train + n_valid]),
                      ("test", perm[n_train + n_valid:])):
        with open(os.path.join(split, name + ".csv"), "w") as out:
            out.write("\n".join(map(str, np.sort(ids).tolist())))
            out.write("\n")
    print(json.dumps({"made": args.directory, "nodes": n, "edges_once": m, "features": f, "classes": c,
                      "seconds": round(time.time() - started, 1)}), flush=True)


# ---- train (PyTorch + PyG) ---------------------------------------------------------------------------------
def train(args):
    import torch
    import torch.nn.functional as F
    import torch_geometric
    from torch_geometric.nn import GCNConv
    from torch_geometric.utils import to_undirected

    device = torch.device(args.device)
    raw = os.path.join(args.directory, "raw")
    data = np.load(os.path.join(raw, "data.npz"))
    n = int(data["node_feat"].shape[0])
    x = torch.from_numpy(data["node_feat"]).to(device)
    edge_index = torch.from_numpy(data["edge_index"]).to(device)
    y = torch.from_numpy(np.load(os.path.join(raw, "node-label.npz"))["node_label"].reshape(-1)).to(device)
    split_dir = os.path.join(args.directory, "split")
    scheme = os.path.join(split_dir, sorted(os.listdir(split_dir))[0])
    train_idx = torch.from_numpy(np.loadtxt(os.path.join(scheme, "train.csv"), dtype=np.int64)).to(device)
    # Symmetrise and deduplicate, as `halogen convert` does (GCNConv adds the self loops).
    edge_index = to_undirected(edge_index, num_nodes=n)
    nnz = int(edge_index.shape[1])
    num_classes = int(y.max().item()) + 1

    adjacency_kind = args.adjacency
    adjacency = edge_index
    if adjacency_kind == "csr":
        try:
            from torch_geometric.utils import to_torch_csr_tensor
            adjacency = to_torch_csr_tensor(edge_index, size=(n, n))
        except Exception as error:  # older PyG: fall back to message passing, and say so
            print(f"# csr adjacency unavailable ({error}); using edge_index", file=sys.stderr)
            adjacency_kind = "edge_index"
    del edge_index

    widths = [x.shape[1]] + [args.hidden] * (args.layers - 1) + [num_classes]

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList(GCNConv(widths[i], widths[i + 1], cached=True)
                                             for i in range(args.layers))

        def forward(self, h, adj):
            h = F.dropout(h, p=args.dropout, training=self.training)
            for i, conv in enumerate(self.convs):
                h = conv(h, adj)
                if i + 1 < len(self.convs):
                    h = F.dropout(F.relu(h), p=args.dropout, training=self.training)
            return h

    torch.manual_seed(args.seed)
    model = GCN().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times, losses = [], []
    model.train()
    for epoch in range(args.warmup + args.epochs):
        sync()
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        out = model(x, adjacency)
        loss = F.cross_entropy(out[train_idx], y[train_idx])
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))  # the scalar is read every epoch, as Halogen prints it
        sync()
        if epoch >= args.warmup:
            times.append(1e3 * (time.perf_counter() - started))
    result = {
        "framework": "pyg", "epoch_ms_mean": round(float(np.mean(times)), 2),
        "epoch_ms_median": round(float(np.median(times)), 2), "epochs_timed": len(times),
        "first_loss": round(losses[0], 4), "last_loss": round(losses[-1], 4), "nodes": n, "nnz_symmetric": nnz,
        "layers": args.layers, "hidden": args.hidden, "adjacency": adjacency_kind, "device": str(device),
        "torch": torch.__version__, "pyg": torch_geometric.__version__,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "max_memory_gib": round(torch.cuda.max_memory_allocated(device) / 2**30, 2) if device.type == "cuda" else None,
    }
    print(json.dumps(result), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("make-graph", help="write a synthetic graph in OGB's raw npz layout")
    make.add_argument("directory")
    make.add_argument("--nodes", type=int, default=2449029)
    make.add_argument("--edges", type=int, default=61859140, help="vertex pairs, each stored once")
    make.add_argument("--features", type=int, default=100)
    make.add_argument("--classes", type=int, default=47)
    make.add_argument("--homophily", type=float, default=0.8)
    make.add_argument("--signal", type=float, default=1.0)
    make.add_argument("--seed", type=int, default=0)
    run = commands.add_parser("train", help="time a full-batch GCN in PyG on a make-graph directory")
    run.add_argument("directory")
    run.add_argument("--layers", type=int, default=3)
    run.add_argument("--hidden", type=int, default=256)
    run.add_argument("--epochs", type=int, default=20, help="timed epochs")
    run.add_argument("--warmup", type=int, default=3, help="untimed epochs first")
    run.add_argument("--lr", type=float, default=0.01)
    run.add_argument("--dropout", type=float, default=0.5)
    run.add_argument("--adjacency", choices=["csr", "edge_index"], default="csr")
    run.add_argument("--device", default="cuda")
    run.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "make-graph":
        make_graph(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
