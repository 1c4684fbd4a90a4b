#!/usr/bin/env python3
"""DGL full-batch GCN, GraphSAGE or GAT on a Halogen graph file, to compare peak memory and CPU epoch times with
`halogen train` (scripts/bench/memory_vs_dgl.sh: GCN; scripts/bench/dgl_vs_halogen.sh: all three).

    V/bin/python scripts/bench/dgl_gcn.py g.h5 --layers 2 --hidden 64 --epochs 5 --warmup 1 --threads 2
    V/bin/python scripts/bench/dgl_gcn.py g.h5 --model sage --hidden 128
    V/bin/python scripts/bench/dgl_gcn.py g.h5 --model gat --hidden 8 --heads 8 --output-heads 1 --dropout 0.6 \
        --attention-dropout 0.6

Needs DGL 2.1 with torch 2.2 (DGL's CPU wheels are built against one torch version), h5py and numpy < 2, in a
venv of its own (scripts/bench/memory_vs_dgl.sh runs it with /tmp/dglenv/bin/python unless DGL_PYTHON says):

    python3.11 -m venv V && V/bin/pip install torch==2.2.1 dgl==2.1.0 torchdata==0.7.1 'numpy<2' h5py pydantic pandas pyyaml

(`import dgl` 2.1 imports torchdata, pydantic, pandas and yaml besides its declared dependencies; pip brings
scipy, networkx, requests, tqdm and psutil with dgl; torch imports setuptools, which a Python 3.11 venv has but
a 3.12 one does not: there add setuptools to the list.) The CPU-only torch wheel
(--index-url https://download.pytorch.org/whl/cpu) saves ~2.5 GB of CUDA libraries and gives the same CPU figures.

Reads the file's /csr/indptr, /csr/indices, /node/feat, /node/label and /split/{train,valid,test}; the graph is
dgl.add_self_loop(dgl.remove_self_loop(G)) for gcn and gat, dgl.remove_self_loop(G) for sage (its mean is over
the neighbours; the vertex itself has its own weight). Models (--model, as Halogen's):
  gcn (Kipf & Welling): X0 = dropout(X); per layer dgl.nn.GraphConv(in, out, norm='both')
      (D^-1/2 (A + I) D^-1/2 X W + b, Xavier weights); ReLU and dropout (--dropout, 0.5) between layers;
  sage (GraphSAGE-mean): the same with dgl.nn.SAGEConv(in, out, aggregator_type='mean')
      (X W_self + mean_{u in N(v)} X_u W_neigh + b);
  gat (Velickovic et al.): hidden layers dgl.nn.GATConv(in, --hidden, num_heads=--heads, feat_drop=--dropout,
      attn_drop=--attention-dropout, activation=ELU), heads concatenated; the output layer GATConv(in, classes,
      num_heads=--output-heads, same dropouts), heads averaged. feat_drop drops each layer's input once for all
      heads: Halogen's `--gat-dropout pyg` placement.
Cross-entropy on the training vertices with a label (>= 0); Adam
(lr 0.01, weight decay 5e-4 on the first layer, Halogen's defaults). One epoch = the training step (forward,
backward, optimizer step) + one evaluation forward with dropout off (model.eval(), torch.no_grad()) giving
train/valid/test accuracy, because each epoch of `halogen train` includes an evaluation. The first --warmup
epochs are not timed (the JSON line has the timed epochs' mean, median, minimum and each one, "epoch_ms"); torch
and DGL's kernels use --threads threads (torch.set_num_threads and OMP_NUM_THREADS, set before torch is imported). Prints one JSON line: {"framework": "dgl", "mean_epoch_ms": ...,
"peak_rss_mib": ...} where peak_rss_mib is getrusage(RUSAGE_SELF).ru_maxrss: the process's high-water mark,
loading included (the loader converts each array once, and h5py's arrays become the tensors where the stored
type fits; the CSR arrays and the graphs before the self loops are freed before training; DGL's graph, the features and the model stay alive, as in any user's script).
"import_rss_mib" is the same figure right after the imports (the libraries alone, ~0.5 GiB with torch 2.2).
--verbose prints each epoch's loss and accuracies to stderr. A benchmark, not part of the test suite.
"""
import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graph")
    parser.add_argument("--model", choices=("gcn", "sage", "gat"), default="gcn")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--heads", type=int, default=8, help="gat: heads of each hidden layer, concatenated")
    parser.add_argument("--output-heads", type=int, default=1, help="gat: heads of the output layer, averaged")
    parser.add_argument("--attention-dropout", type=float, default=0.6, help="gat: on the attention coefficients")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="on the first layer's parameters")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="one line per epoch on stderr")
    args = parser.parse_args()
    if min(args.layers, args.epochs, args.threads, args.heads, args.output_heads) < 1 or args.warmup < 0:
        parser.error("--layers, --epochs, --threads, --heads and --output-heads must be >= 1, --warmup >= 0")
    return args


ARGS = parse_args()
# DGL's own C++ kernels (SpMM, SDDMM) size their OpenMP teams from OMP_NUM_THREADS: set it before any import.
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import dgl  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

IMPORT_RSS_KIB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the libraries alone, before any data


def load(path, self_loops=True):
    """(graph, with one self loop per vertex if self_loops else none, features, labels int64,
    {split: vertex ids with a label})."""
    with h5py.File(path, "r") as f:
        # Read once, converting only where the stored type differs (astype(copy=False)); torch.from_numpy shares.
        indptr = torch.from_numpy(f["/csr/indptr"][...].astype(np.int64, copy=False))
        indices = torch.from_numpy(f["/csr/indices"][...].astype(np.int64, copy=False))
        feat = torch.from_numpy(f["/node/feat"][...].astype(np.float32, copy=False))
        label = torch.from_numpy(f["/node/label"][...].astype(np.int64, copy=False))
        splits = {name: torch.from_numpy(f[f"/split/{name}"][...].astype(np.int64, copy=False))
                  for name in ("train", "valid", "test")}
    n = indptr.numel() - 1
    # Row v of the file's CSR lists v's neighbours. Taken as the in-edges of v (DGL's 'csc': indptr over
    # destinations), so that v aggregates its row as Halogen's A_hat X does; the graph files of undirected
    # graphs are symmetric (both directions stored), so reading the rows as sources ('csr') would give the same
    # graph. Empty edge ids: 0..E-1 in row order.
    g = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.int64))), num_nodes=n)
    del indptr, indices  # only the graph refers to them now
    g = dgl.remove_self_loop(g)
    if self_loops:
        g = dgl.add_self_loop(g)  # the intermediate graphs die here
    splits = {name: ids[label[ids] >= 0] for name, ids in splits.items()}
    return g, feat, label, splits


class GCN(torch.nn.Module):
    """GCN (make_layer = GraphConv) or GraphSAGE-mean (SAGEConv): dropout on the input, ReLU + dropout between."""

    def __init__(self, widths, dropout, make_layer):
        super().__init__()
        self.layers = torch.nn.ModuleList(make_layer(i, o) for i, o in zip(widths[:-1], widths[1:]))
        self.dropout = dropout

    def forward(self, g, x):
        x = F.dropout(x, self.dropout, self.training)
        for i, layer in enumerate(self.layers):
            x = layer(g, x)
            if i + 1 < len(self.layers):
                x = F.dropout(F.relu(x), self.dropout, self.training)
        return x


class GAT(torch.nn.Module):
    """widths: [in, hidden per head, ..., classes]; GATConv's feat_drop is the dropout on each layer's input."""

    def __init__(self, widths, heads, output_heads, dropout, attention_dropout):
        super().__init__()
        self.layers = torch.nn.ModuleList()
        width_in = widths[0]
        for width in widths[1:-1]:
            self.layers.append(dgl.nn.GATConv(width_in, width, heads, feat_drop=dropout, attn_drop=attention_dropout,
                                              activation=F.elu))
            width_in = width * heads
        self.layers.append(dgl.nn.GATConv(width_in, widths[-1], output_heads, feat_drop=dropout,
                                          attn_drop=attention_dropout))

    def forward(self, g, x):
        for layer in self.layers[:-1]:
            x = layer(g, x).flatten(1)  # (n, heads, width) -> (n, heads * width)
        return self.layers[-1](g, x).mean(1)


def make_model(args, widths):
    if args.model == "gat":
        return GAT(widths, args.heads, args.output_heads, args.dropout, args.attention_dropout)
    if args.model == "sage":
        return GCN(widths, args.dropout, lambda i, o: dgl.nn.SAGEConv(i, o, aggregator_type="mean"))
    # GraphConv: Xavier-uniform weight, zero bias; multiplies by W before aggregating when out < in.
    return GCN(widths, args.dropout, lambda i, o: dgl.nn.GraphConv(i, o, norm="both"))


def main():
    args = ARGS
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    g, feat, label, splits = load(args.graph, self_loops=args.model != "sage")
    gc.collect()  # the loader's temporaries (h5py buffers, the graphs before the self loops) go before training
    classes = int(label.max()) + 1
    widths = [feat.shape[1]] + [args.hidden] * (args.layers - 1) + [classes]
    model = make_model(args, widths)
    optimizer = torch.optim.Adam([
        {"params": model.layers[0].parameters(), "weight_decay": args.weight_decay},
        {"params": [p for layer in model.layers[1:] for p in layer.parameters()], "weight_decay": 0.0},
    ], lr=args.lr)
    train = splits["train"]
    train_label = label[train]
    times, acc, loss = [], {}, None
    for epoch in range(args.warmup + args.epochs):
        start = time.perf_counter()
        model.train()
        optimizer.zero_grad()
        out = model(g, feat)
        loss = F.cross_entropy(out[train], train_label)
        loss.backward()
        optimizer.step()
        del out
        model.eval()
        with torch.no_grad():
            pred = model(g, feat).argmax(dim=1)
            acc = {name: float((pred[ids] == label[ids]).float().mean()) if ids.numel() else 0.0
                   for name, ids in splits.items()}
        del pred
        elapsed = (time.perf_counter() - start) * 1e3
        if epoch >= args.warmup:
            times.append(elapsed)
        if args.verbose:
            print(f"epoch {epoch + 1 - args.warmup:3d}{' (warmup)' if epoch < args.warmup else ''} "
                  f"loss {float(loss):.4f} train {acc['train']:.4f} valid {acc['valid']:.4f} "
                  f"test {acc['test']:.4f} | {elapsed:.1f} ms", file=sys.stderr)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"framework": "dgl", "dgl": dgl.__version__, "torch": torch.__version__,
                      "model": args.model, "threads": args.threads, "layers": args.layers, "hidden": args.hidden,
                      "nodes": g.num_nodes(), "edges": g.num_edges(), "epochs": args.epochs,
                      "mean_epoch_ms": sum(times) / len(times), "median_epoch_ms": statistics.median(times),
                      "min_epoch_ms": min(times), "epoch_ms": times,
                      "peak_rss_mib": peak_kib / 1024.0,
                      "import_rss_mib": IMPORT_RSS_KIB / 1024.0, "final_loss": float(loss),
                      "train_acc": acc["train"], "valid_acc": acc["valid"], "test_acc": acc["test"]}))


if __name__ == "__main__":
    main()
