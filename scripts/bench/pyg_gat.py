#!/usr/bin/env python3
"""The same full-batch GAT in PyTorch Geometric (GATConv), to compare epoch times with `halogen bench epoch --model gat`.

Two steps, so that both frameworks train on exactly the same graph (scripts/bench/gat_vs_pyg.sh runs both):

    # 1. a synthetic SBM graph in OGB's binary raw layout (numpy only; the generator of pyg_gcn.py)
    python3 scripts/bench/pyg_gat.py make-graph DIR --nodes 200000 --edges 2000000 --features 128 --classes 16
    halogen convert DIR -o g.h5            # Halogen reads the same raw/data.npz (symmetrised, deduplicated)

    # 2. PyG: GATConv layers on the symmetrised graph, Adam, full batch; prints one JSON line
    python3 scripts/bench/pyg_gat.py train DIR --layers 2 --hidden 8 --heads 8 --epochs 10 --threads 2

train: the model mirrors Halogen's GAT (and PyG's examples/gat.py): X0 = dropout(X); hidden layers
GATConv(heads=H, concat=True, dropout=attention dropout) then dropout(elu(.)); the output layer
GATConv(heads=output heads, concat=False); self loops added by GATConv (add_self_loops=True, as Halogen);
cross-entropy on the training vertices; Adam. Epoch time = forward + backward + step of the training step (no
evaluation); the first --warmup epochs are not counted. On the CPU, torch uses --threads threads.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyg_gcn import make_graph  # noqa: E402  (the same SBM generator and layout)


def train(args):
    import torch
    import torch.nn.functional as F
    import torch_geometric
    from torch_geometric.nn import GATConv
    from torch_geometric.utils import to_undirected

    torch.set_num_threads(args.threads)
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
    edge_index = to_undirected(edge_index, num_nodes=n)  # as `halogen convert`; GATConv adds the self loops
    nnz = int(edge_index.shape[1])
    num_classes = int(y.max().item()) + 1

    class GAT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            widths = [x.shape[1]] + [args.hidden * args.heads] * (args.layers - 1)
            self.convs = torch.nn.ModuleList(
                GATConv(widths[i], args.hidden, heads=args.heads, dropout=args.attention_dropout)
                for i in range(args.layers - 1))
            self.convs.append(GATConv(widths[-1], num_classes, heads=args.output_heads, concat=False,
                                      dropout=args.attention_dropout))

        def forward(self, h, adj):
            h = F.dropout(h, p=args.dropout, training=self.training)
            for i, conv in enumerate(self.convs):
                h = conv(h, adj)
                if i + 1 < len(self.convs):
                    h = F.dropout(F.elu(h), p=args.dropout, training=self.training)
            return h

    torch.manual_seed(args.seed)
    model = GAT().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times, losses = [], []
    model.train()
    for epoch in range(args.warmup + args.epochs):
        sync()
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        out = model(x, edge_index)
        loss = F.cross_entropy(out[train_idx], y[train_idx])
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))  # the scalar is read every epoch, as Halogen prints it
        sync()
        if epoch >= args.warmup:
            times.append(1e3 * (time.perf_counter() - started))
    print(json.dumps({
        "framework": "pyg", "model": "gat", "epoch_ms_mean": round(float(np.mean(times)), 2),
        "epoch_ms_median": round(float(np.median(times)), 2), "epochs_timed": len(times),
        "first_loss": round(losses[0], 4), "last_loss": round(losses[-1], 4), "nodes": n, "nnz_symmetric": nnz,
        "layers": args.layers, "hidden": args.hidden, "heads": args.heads, "output_heads": args.output_heads,
        "threads": torch.get_num_threads(), "device": str(device), "torch": torch.__version__,
        "pyg": torch_geometric.__version__,
    }), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("make-graph", help="write a synthetic SBM graph in OGB's raw npz layout")
    make.add_argument("directory")
    make.add_argument("--nodes", type=int, default=200000)
    make.add_argument("--edges", type=int, default=2000000, help="vertex pairs, each stored once")
    make.add_argument("--features", type=int, default=128)
    make.add_argument("--classes", type=int, default=16)
    make.add_argument("--homophily", type=float, default=0.8)
    make.add_argument("--signal", type=float, default=1.0)
    make.add_argument("--seed", type=int, default=0)
    run = commands.add_parser("train", help="time a full-batch GAT in PyG on a make-graph directory")
    run.add_argument("directory")
    run.add_argument("--layers", type=int, default=2)
    run.add_argument("--hidden", type=int, default=8, help="width per head")
    run.add_argument("--heads", type=int, default=8)
    run.add_argument("--output-heads", type=int, default=1)
    run.add_argument("--epochs", type=int, default=10, help="timed epochs")
    run.add_argument("--warmup", type=int, default=2, help="untimed epochs first")
    run.add_argument("--lr", type=float, default=0.005)
    run.add_argument("--weight-decay", type=float, default=5e-4)
    run.add_argument("--dropout", type=float, default=0.6)
    run.add_argument("--attention-dropout", type=float, default=0.6)
    run.add_argument("--threads", type=int, default=2)
    run.add_argument("--device", default="cpu")
    run.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "make-graph":
        make_graph(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
