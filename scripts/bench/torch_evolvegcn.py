#!/usr/bin/env python3
"""Plain PyTorch EvolveGCN-O (node classification) on a Halogen dynamic graph file, to compare snapshots/s with
`halogen train DIR --model evolvegcn-o --task node`.

    /usr/bin/python3 scripts/bench/torch_evolvegcn.py ts.h5 --layers 1 --hidden 32 --epochs 3 --threads 1

The file is one made by `halogen generate temporal-sbm` (docs/dynamic.md): /snapshots/NNNNN/{indptr,indices}
(one N x N CSR per step; weights, if any, are ignored as Halogen ignores them), /node/feat [N, F] (the input of
every step), /node/label int [N] (classes), /split/train. The model is the one of src/nn/temporal_model.h:
  A_hat_t = D^-1/2 (A_t + I) D^-1/2        torch sparse CSR (--adjacency coo: COO), built once per snapshot
                                           (setup, not timed)
  per layer l (widths F -> hidden -> ... -> hidden), W_0^l a parameter, W_t^l = matGRU^l(W_{t-1}^l) with the
  matrix GRU of the authors' code (src/nn/evolve_gcn.h; X = Q = W_{t-1}):
      Z = sigmoid(W_Z Q + U_Z Q + B_Z), R = sigmoid(W_R Q + U_R Q + B_R),
      H~ = tanh(W_H Q + U_H (R o Q) + B_H),  W_t = (1 - Z) o Q + Z o H~
      H_t^l = relu(A_hat_t H_t^{l-1} W_t^l)  ((A_hat H) W when hidden >= d_in, else A_hat (H W), as Halogen)
  y_t = relu(H_t^L) W_head + b_head; loss = mean over the T steps of the cross-entropy over the training
  vertices (static labels); the whole sequence is one BPTT window: one Adam step (lr 0.01) per epoch.
Glorot-uniform weights, zero biases (Halogen's init rule); with --init halogen the very numbers of
`halogen train --seed SEED` (its Philox streams), so the losses of the two can be compared epoch by epoch. snapshots_per_s = epochs * T / (time of all training epochs: forward + backward + Adam; loading and
building A_hat excluded), as Halogen's "snapshots_per_s". Prints one JSON line.
Needs torch and h5py: Debian's /usr/bin/python3 (python3-torch 1.13, python3-h5py) has both; a pyenv python
may lack torch. A benchmark, not part of the test suite.
"""
import argparse
import json
import time
import warnings

import h5py
import numpy as np
import torch


def normalized_adjacency(indptr, indices, n, layout):
    """A_hat = D^-1/2 (A + I) D^-1/2 as a torch sparse CSR (or COO) tensor (rows sorted, no self-loops in the
    file)."""
    counts = np.diff(indptr)
    degree = counts.astype(np.float64) + 1.0
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    all_rows = np.concatenate([rows, np.arange(n, dtype=np.int64)])
    all_cols = np.concatenate([indices, np.arange(n, dtype=np.int64)])
    order = np.lexsort((all_cols, all_rows))
    all_rows, all_cols = all_rows[order], all_cols[order]
    values = (1.0 / np.sqrt(degree[all_rows] * degree[all_cols])).astype(np.float32)
    if layout == "coo":
        index = torch.from_numpy(np.stack([all_rows, all_cols]))
        return torch.sparse_coo_tensor(index, torch.from_numpy(values), size=(n, n)).coalesce()
    crow = np.concatenate([[0], np.cumsum(counts + 1)]).astype(np.int64)
    return torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(all_cols), torch.from_numpy(values),
                                   size=(n, n))


def load(path, layout):
    with h5py.File(path, "r") as f:
        if "snapshots" not in f or len(f["snapshots"]) == 0:
            raise SystemExit(f"{path}: /snapshots: missing or empty (not a dynamic graph file)")
        n = int(f["/csr/indptr"].shape[0]) - 1
        snapshots, edges = [], 0
        for name in sorted(f["snapshots"].keys()):
            group = f["snapshots"][name]
            indptr = group["indptr"][...].astype(np.int64)
            indices = group["indices"][...].astype(np.int64)
            edges += int(indices.size)
            snapshots.append(normalized_adjacency(indptr, indices, n, layout))
        feat = torch.from_numpy(f["/node/feat"][...].astype(np.float32))
        label = torch.from_numpy(f["/node/label"][...].astype(np.int64))
        train = torch.from_numpy(f["/split/train"][...].astype(np.int64))
    if label.dim() != 1:
        raise SystemExit(f"{path}: /node/label is not one class per vertex (a regression series?)")
    train = train[label[train] >= 0]
    return snapshots, edges, feat, label, train


def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 (src/core/rng.h) on numpy uint64 arrays holding 32-bit words."""
    mask = np.uint64(0xFFFFFFFF)
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) & mask for c in (c0, c1, c2, c3))
    k0, k1 = np.uint64(k0) & mask, np.uint64(k1) & mask
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        hi0, lo0, hi1, lo1 = p0 >> np.uint64(32), p0 & mask, p1 >> np.uint64(32), p1 & mask
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & mask, (k1 + np.uint64(0xBB67AE85)) & mask
    return c0, c1, c2, c3


def halogen_glorot(seed, index, rows, cols):
    """Tensor number `index` of a Halogen ParameterStore, as ParameterStore::initialize(seed) fills it:
    (2u - 1) * sqrt(6 / (rows + cols)), u = rng::uniform(seed, stream_id(kWeightInit = 1, index), element)."""
    s = philox4x32(1, index, 0, 0, 0x48414C4F, 0x47454E31)
    stream = int(s[0]) | (int(s[1]) << 32)
    element = np.arange(rows * cols, dtype=np.uint64)
    words = philox4x32(element, element >> np.uint64(32), stream & 0xFFFFFFFF, stream >> 32,
                       seed & 0xFFFFFFFF, seed >> 32)
    u = (words[0] >> np.uint64(8)).astype(np.float64) / 16777216.0
    bound = np.sqrt(6.0 / (rows + cols))
    return torch.from_numpy(((2.0 * u - 1.0) * bound).astype(np.float32).reshape(rows, cols))


def copy_halogen_init(model, seed):
    """Overwrites every weight with the value Halogen's EvolveGCN-O starts from (registration order: per layer
    W_0 then w_z u_z b_z w_r u_r b_r w_h u_h b_h, then head.weight, head.bias; biases zero), so the two runs
    can be compared number for number."""
    index = 0
    with torch.no_grad():
        for w0, gru in zip(model.w0, model.gru):
            for tensor in [w0, gru.w_z, gru.u_z, gru.b_z, gru.w_r, gru.u_r, gru.b_r, gru.w_h, gru.u_h, gru.b_h]:
                if tensor is not gru.b_z and tensor is not gru.b_r and tensor is not gru.b_h:
                    tensor.copy_(halogen_glorot(seed, index, *tensor.shape))
                index += 1
        model.head_w.copy_(halogen_glorot(seed, index, *model.head_w.shape))


class MatrixGRU(torch.nn.Module):
    """W_t = GRU(W_{t-1}) with rows that are matrices; W, U (d_in, d_in) from the left, B (d_in, d_out)."""

    def __init__(self, d_in, d_out):
        super().__init__()
        def square():
            return torch.nn.Parameter(torch.nn.init.xavier_uniform_(torch.empty(d_in, d_in)))
        def bias():
            return torch.nn.Parameter(torch.zeros(d_in, d_out))
        self.w_z, self.u_z, self.b_z = square(), square(), bias()
        self.w_r, self.u_r, self.b_r = square(), square(), bias()
        self.w_h, self.u_h, self.b_h = square(), square(), bias()

    def forward(self, q):
        z = torch.sigmoid(self.w_z @ q + self.u_z @ q + self.b_z)
        r = torch.sigmoid(self.w_r @ q + self.u_r @ q + self.b_r)
        h = torch.tanh(self.w_h @ q + self.u_h @ (r * q) + self.b_h)
        return (1 - z) * q + z * h


class EvolveGCNO(torch.nn.Module):
    def __init__(self, in_width, hidden, layers, classes):
        super().__init__()
        widths = [in_width] + [hidden] * layers
        self.w0 = torch.nn.ParameterList(
            torch.nn.Parameter(torch.nn.init.xavier_uniform_(torch.empty(d, hidden))) for d in widths[:-1])
        self.gru = torch.nn.ModuleList(MatrixGRU(d, hidden) for d in widths[:-1])
        self.head_w = torch.nn.Parameter(torch.nn.init.xavier_uniform_(torch.empty(hidden, classes)))
        self.head_b = torch.nn.Parameter(torch.zeros(classes))

    def forward(self, snapshots, x):
        """Outputs y_t (N, classes) for every snapshot, state W^l carried from W_0^l."""
        weights = list(self.w0)
        outputs = []
        for a_hat in snapshots:
            h = x
            for l, gru in enumerate(self.gru):
                weights[l] = gru(weights[l])
                w = weights[l]
                if w.shape[1] >= w.shape[0]:
                    h = torch.relu(torch.sparse.mm(a_hat, h) @ w)  # aggregate the narrower input first
                else:
                    h = torch.relu(torch.sparse.mm(a_hat, h @ w))
            outputs.append(torch.relu(h) @ self.head_w + self.head_b)
        return outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graph", help="dynamic graph file (.h5) from `halogen generate temporal-sbm`")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", choices=["torch", "halogen"], default="torch",
                        help="halogen: the exact initial weights of `halogen train --seed SEED` (Philox, slow for "
                             "wide layers), to compare losses epoch by epoch")
    parser.add_argument("--adjacency", choices=["csr", "coo"], default="csr",
                        help="torch sparse layout of A_hat (csr: beta in torch 1.13; coo: torch.sparse.mm's older path)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")

    setup_start = time.perf_counter()
    snapshots, edges, feat, label, train = load(args.graph, args.adjacency)
    classes = int(label.max()) + 1
    model = EvolveGCNO(feat.shape[1], args.hidden, args.layers, classes)
    if args.init == "halogen":
        copy_halogen_init(model, args.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    setup_s = time.perf_counter() - setup_start

    steps = len(snapshots)
    epoch_ms, losses = [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        optimizer.zero_grad()
        outputs = model(snapshots, feat)
        loss = sum(torch.nn.functional.cross_entropy(y[train], label[train]) for y in outputs) / steps
        loss.backward()
        optimizer.step()
        epoch_ms.append((time.perf_counter() - start) * 1e3)
        losses.append(float(loss))
    total_s = sum(epoch_ms) / 1e3
    print(json.dumps({"framework": "torch", "torch": torch.__version__, "model": "evolvegcn-o", "task": "node",
                      "threads": args.threads, "adjacency": args.adjacency, "nodes": int(feat.shape[0]), "features": int(feat.shape[1]),
                      "snapshots": steps, "edges_per_snapshot": edges / steps, "init": args.init, "layers": args.layers,
                      "hidden": args.hidden, "epochs": args.epochs, "setup_s": round(setup_s, 3),
                      "epoch_ms": [round(t, 1) for t in epoch_ms], "losses": [round(v, 5) for v in losses],
                      "snapshots_per_s": args.epochs * steps / total_s}))


if __name__ == "__main__":
    main()
