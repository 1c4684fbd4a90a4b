#!/usr/bin/env python3
"""Plain PyTorch full-batch GCN on a Halogen graph file, to compare CPU epoch times with `halogen train`.

    python3 scripts/bench/torch_gcn.py g.h5 --layers 2 --hidden 128 --epochs 10 --warmup 2 --threads 2

Same model as Halogen's GCN: A_hat = D^-1/2 (A + I) D^-1/2 (a torch sparse COO matrix, or CSR with --adjacency csr; built once);
X0 = dropout(X); per layer Z = A_hat (X W) when the layer narrows (out < in), else (A_hat X) W, plus bias;
dropout(relu(Z)) between layers; cross-entropy on the training vertices; Adam (lr 0.01, weight decay 5e-4
on the first layer). Epoch time = forward + backward + optimizer step (no evaluation), torch.set_num_threads
(--threads). Prints one JSON line: {"framework": "torch", "mean_epoch_ms": ..., ...}.
Needs h5py and torch (Debian: python3-h5py python3-torch); a benchmark, not part of the test suite.
"""
import argparse
import json
import time

import h5py
import numpy as np
import torch


def load(path, layout):
    with h5py.File(path, "r") as f:
        indptr = f["/csr/indptr"][...].astype(np.int64)
        indices = f["/csr/indices"][...].astype(np.int64)
        feat = torch.from_numpy(f["/node/feat"][...].astype(np.float32))
        label = torch.from_numpy(f["/node/label"][...].astype(np.int64))
        train = torch.from_numpy(f["/split/train"][...].astype(np.int64))
    n = indptr.size - 1
    degree = np.diff(indptr).astype(np.float64) + 1.0  # + self-loop
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    # A + I in CSR: insert the diagonal into each row (rows of a graph file are sorted, no self loops).
    all_rows = np.concatenate([rows, np.arange(n, dtype=np.int64)])
    all_cols = np.concatenate([indices, np.arange(n, dtype=np.int64)])
    order = np.lexsort((all_cols, all_rows))
    all_rows, all_cols = all_rows[order], all_cols[order]
    values = (1.0 / np.sqrt(degree[all_rows] * degree[all_cols])).astype(np.float32)
    crow = np.zeros(n + 1, dtype=np.int64)
    np.add.at(crow, all_rows + 1, 1)
    crow = np.cumsum(crow)
    if layout == "csr":
        a_hat = torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(all_cols),
                                        torch.from_numpy(values), size=(n, n))
    else:
        index = torch.from_numpy(np.stack([all_rows, all_cols]))
        a_hat = torch.sparse_coo_tensor(index, torch.from_numpy(values), size=(n, n)).coalesce()
    train = train[label[train] >= 0]
    return a_hat, feat, label, train


class GCN(torch.nn.Module):
    def __init__(self, widths, dropout):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(i, o) for i, o in zip(widths[:-1], widths[1:]))
        for layer in self.layers:
            torch.nn.init.xavier_uniform_(layer.weight)
            torch.nn.init.zeros_(layer.bias)
        self.dropout = dropout

    def forward(self, a_hat, x):
        x = torch.nn.functional.dropout(x, self.dropout, self.training)
        for i, layer in enumerate(self.layers):
            if layer.out_features < layer.in_features:
                z = torch.sparse.mm(a_hat, x @ layer.weight.t()) + layer.bias
            else:
                z = layer(torch.sparse.mm(a_hat, x))
            if i + 1 < len(self.layers):
                z = torch.nn.functional.dropout(torch.relu(z), self.dropout, self.training)
            x = z
        return x


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graph")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--adjacency", choices=["coo", "csr"], default="coo",
                        help="torch sparse layout of A_hat (coo: torch.sparse.mm's mature path; csr: beta in 1.13)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    a_hat, feat, label, train = load(args.graph, args.adjacency)
    classes = int(label.max()) + 1
    widths = [feat.shape[1]] + [args.hidden] * (args.layers - 1) + [classes]
    model = GCN(widths, args.dropout)
    optimizer = torch.optim.Adam([
        {"params": model.layers[0].parameters(), "weight_decay": 5e-4},
        {"params": [p for layer in model.layers[1:] for p in layer.parameters()], "weight_decay": 0.0},
    ], lr=0.01)
    model.train()
    times = []
    for epoch in range(args.warmup + args.epochs):
        start = time.perf_counter()
        optimizer.zero_grad()
        out = model(a_hat, feat)
        loss = torch.nn.functional.cross_entropy(out[train], label[train])
        loss.backward()
        optimizer.step()
        elapsed = (time.perf_counter() - start) * 1e3
        if epoch >= args.warmup:
            times.append(elapsed)
    print(json.dumps({"framework": "torch", "torch": torch.__version__, "threads": args.threads,
                      "nodes": int(feat.shape[0]), "edges": int(a_hat.values().numel() - feat.shape[0]), "adjacency": args.adjacency,
                      "layers": args.layers, "hidden": args.hidden, "mean_epoch_ms": sum(times) / len(times),
                      "min_epoch_ms": min(times), "loss": float(loss)}))


if __name__ == "__main__":
    main()
