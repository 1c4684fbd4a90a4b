#!/usr/bin/env python3
"""The same full-batch GAT in PyTorch Geometric (GATConv), to compare epoch times with `halogen bench epoch --model gat`.

Two steps, so that both frameworks train on exactly the same graph (scripts/bench/gat_vs_pyg.sh runs both):

    # 1. a synthetic SBM graph in OGB's binary raw layout (numpy only; the generator of pyg_gcn.py)
    python3 scripts/bench/pyg_gat.py make-graph DIR --nodes 200000 --edges 2000000 --features 128 --classes 16
    halogen convert DIR -o g.h5            # Halogen reads the same raw/data.npz (symmetrised, deduplicated)

    # 2. PyG: GATConv layers on the symmetrised graph, Adam, full batch; prints one JSON line
    python3 scripts/bench/pyg_gat.py train DIR --layers 2 --hidden 8 --heads 8 --epochs 10 --threads 2

Two more, on a Halogen graph file (h5py) with Planetoid-style splits, for the accuracy comparison in docs/train.md:

    # PyG's own run of the Cora protocol (8x8 heads, dropout 0.6, lr 0.005, weight decay 5e-4, 300 epochs,
    # row-normalised features): test accuracy at the best validation epoch per seed, and the mean; with
    # --gat-dropout original, the same parameters with the reference code's dropout placement
    python3 scripts/bench/pyg_gat.py accuracy cora.h5 --seeds 5 --threads 1 [--gat-dropout original]

    # the same model in PyG loaded with a Halogen checkpoint's parameters (a run with --dropout 0
    # --attention-dropout 0 --lr 1e-20 --epochs 1 --checkpoint ck): loss and accuracies to compare with its metrics
    python3 scripts/bench/pyg_gat.py check-forward cora.h5 ck/last.h5 --heads 8 --output-heads 2
    # ... and trained on from there without dropout, one loss per epoch, to compare with a Halogen run of the same
    # seed with --dropout 0 --attention-dropout 0 (python/tests/test_cora.py does this for 30 epochs)
    python3 scripts/bench/pyg_gat.py check-forward cora.h5 ck/last.h5 --train-epochs 100 --lr 0.005

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


def load_h5_graph(path):
    import h5py
    import torch
    with h5py.File(path, "r") as f:
        indptr, indices = f["/csr/indptr"][:], f["/csr/indices"][:]
        x = torch.tensor(f["/node/feat"][:])
        y = torch.tensor(f["/node/label"][:].astype(np.int64))
        splits = {k: torch.tensor(f["/split/" + k][:].astype(np.int64)) for k in ("train", "valid", "test")}
    x = x / x.sum(1, keepdim=True).clamp(min=1)  # --row-normalize
    rows = np.repeat(np.arange(x.shape[0]), np.diff(indptr))
    edge_index = torch.tensor(np.stack([indices, rows]).astype(np.int64))  # source -> destination (row)
    return x, y, edge_index, splits


def gat_model(in_width, classes, hidden, heads, output_heads, attention_dropout):
    import torch
    from torch_geometric.nn import GATConv
    return torch.nn.ModuleList([GATConv(in_width, hidden, heads=heads, dropout=attention_dropout),
                                GATConv(hidden * heads, classes, heads=output_heads, concat=False,
                                        dropout=attention_dropout)])


def gat_forward(convs, x, edge_index, dropout, training):
    import torch.nn.functional as F
    convs.train(training)
    h = F.dropout(x, dropout, training)
    h = F.dropout(F.elu(convs[0](h, edge_index)), dropout, training)
    return convs[1](h, edge_index)


def original_layer(conv, x, edge_index, dropout, training, concat):
    """GATConv's parameters with the dropout of Velickovic et al.'s reference code (halogen --gat-dropout
    original): an independent mask on the layer's input per head, and dropout on the transformed features before
    aggregation (the scores use them undropped). Without dropout this is GATConv's own forward. edge_index must
    hold the self loops (source -> destination)."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.utils import softmax
    heads, width, n = conv.heads, conv.out_channels, x.shape[0]
    weight = conv.lin_src.weight.reshape(heads, width, -1)  # (heads, width, in)
    rows, cols = x.nonzero(as_tuple=True)
    values = x[rows, cols].unsqueeze(0).expand(heads, -1)  # the input's nonzeros, once per head
    values = F.dropout(values, dropout, training)
    z = torch.zeros(n, heads, width).index_add_(0, rows, (values[:, :, None] * weight[:, :, cols].transpose(1, 2))
                                                 .transpose(0, 1))
    src, dst = edge_index
    e = F.leaky_relu((z * conv.att_src[0]).sum(-1)[src] + (z * conv.att_dst[0]).sum(-1)[dst], conv.negative_slope)
    alpha = F.dropout(softmax(e, dst, num_nodes=n), conv.dropout, training)
    messages = F.dropout(z, dropout, training)
    out = torch.zeros(n, heads, width).index_add_(0, dst, alpha[:, :, None] * messages[src])
    return (out.reshape(n, -1) if concat else out.mean(1)) + conv.bias


def original_forward(convs, x, edge_index, dropout, training):
    import torch.nn.functional as F
    convs.train(training)
    h = F.elu(original_layer(convs[0], x, edge_index, dropout, training, True))
    return original_layer(convs[1], h, edge_index, dropout, training, False)


def accuracy(args):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    x, y, edge_index, splits = load_h5_graph(args.graph)
    forward = gat_forward
    if args.gat_dropout == "original":
        from torch_geometric.utils import add_self_loops, remove_self_loops
        edge_index = add_self_loops(remove_self_loops(edge_index)[0], num_nodes=x.shape[0])[0]
        forward = original_forward
    results = []
    for seed in range(args.seeds):
        torch.manual_seed(seed)
        convs = gat_model(x.shape[1], int(y.max()) + 1, 8, 8, 1, 0.6)
        optimizer = torch.optim.Adam(convs.parameters(), lr=0.005, weight_decay=5e-4)
        best_valid, test_at_best = -1.0, 0.0
        for _ in range(args.epochs):
            optimizer.zero_grad()
            out = forward(convs, x, edge_index, 0.6, True)
            F.cross_entropy(out[splits["train"]], y[splits["train"]]).backward()
            optimizer.step()
            with torch.no_grad():
                pred = forward(convs, x, edge_index, 0.6, False).argmax(1)
            acc = {k: float((pred[v] == y[v]).float().mean()) for k, v in splits.items()}
            if acc["valid"] > best_valid:  # the first best, as Halogen's test_acc_at_best
                best_valid, test_at_best = acc["valid"], acc["test"]
        results.append(test_at_best)
        print(json.dumps({"seed": seed, "best_valid_acc": round(best_valid, 4),
                          "test_acc_at_best": round(test_at_best, 4), "final_test_acc": round(acc["test"], 4)}),
              flush=True)
    print(json.dumps({"mean_test_acc_at_best": round(float(np.mean(results)), 4), "seeds": args.seeds,
                      "standard_error": round(float(np.std(results, ddof=1) / np.sqrt(len(results))), 4)
                      if len(results) > 1 else None, "gat_dropout": args.gat_dropout}))


def check_forward(args):
    import h5py
    import torch
    import torch.nn.functional as F
    x, y, edge_index, splits = load_h5_graph(args.graph)
    convs = gat_model(x.shape[1], int(y.max()) + 1, args.hidden, args.heads, args.output_heads, 0.0)
    with h5py.File(args.checkpoint, "r") as ck:
        for layer, conv in enumerate(convs):
            tensor = lambda name: torch.tensor(ck[f"layers/{layer}/{name}"][:]).reshape(-1)
            heads, width = conv.heads, conv.out_channels
            conv.lin_src.weight.data = tensor("weight").reshape(-1, heads * width).t().contiguous()
            conv.att_src.data = tensor("att_src").reshape(1, heads, width)
            conv.att_dst.data = tensor("att_dst").reshape(1, heads, width)
            conv.bias.data = tensor("bias")
    if args.train_epochs > 0:
        # Training from the checkpoint's parameters without dropout (deterministic): one JSON line per epoch with
        # the training loss before the step, as Halogen's --metrics "loss" of a run with --dropout 0
        # --attention-dropout 0 and the same seed (whose initial parameters the checkpoint holds).
        optimizer = torch.optim.Adam(convs.parameters(), lr=args.lr, weight_decay=args.weight_decay)
        for epoch in range(1, args.train_epochs + 1):
            optimizer.zero_grad()
            out = gat_forward(convs, x, edge_index, 0.0, True)
            loss = F.cross_entropy(out[splits["train"]], y[splits["train"]])
            loss.backward()
            optimizer.step()
            print(json.dumps({"epoch": epoch, "loss": float(loss)}), flush=True)
    with torch.no_grad():
        out = gat_forward(convs, x, edge_index, 0.0, False)
    pred = out.argmax(1)
    print(json.dumps({"train_loss": float(F.cross_entropy(out[splits["train"]], y[splits["train"]])),
                      "valid_loss": float(F.cross_entropy(out[splits["valid"]], y[splits["valid"]])),
                      **{k + "_acc": float((pred[v] == y[v]).float().mean()) for k, v in splits.items()}}))


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
    acc = commands.add_parser("accuracy", help="PyG GAT on a Halogen graph file, Cora protocol, per seed")
    acc.add_argument("graph")
    acc.add_argument("--seeds", type=int, default=5)
    acc.add_argument("--epochs", type=int, default=300)
    acc.add_argument("--threads", type=int, default=1)
    acc.add_argument("--gat-dropout", choices=["pyg", "original"], default="pyg",
                     help="pyg: PyG's GATConv example (one input mask, dropout after ELU); original: Velickovic et "
                          "al.'s reference code (a mask per head on each layer's input, dropout on the transformed "
                          "features), as halogen --gat-dropout original")
    check = commands.add_parser("check-forward", help="PyG GAT loaded with a Halogen checkpoint: loss, accuracies")
    check.add_argument("graph")
    check.add_argument("checkpoint")
    check.add_argument("--hidden", type=int, default=8)
    check.add_argument("--heads", type=int, default=8)
    check.add_argument("--output-heads", type=int, default=1)
    check.add_argument("--train-epochs", type=int, default=0,
                       help="first train this many epochs without dropout (Adam, --lr, --weight-decay), printing "
                            "each epoch's loss")
    check.add_argument("--lr", type=float, default=0.005)
    check.add_argument("--weight-decay", type=float, default=5e-4)
    args = parser.parse_args()
    {"make-graph": make_graph, "train": train, "accuracy": accuracy, "check-forward": check_forward}[args.command](args)


if __name__ == "__main__":
    main()
