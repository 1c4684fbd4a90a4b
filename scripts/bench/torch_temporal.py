#!/usr/bin/env python3
"""Plain PyTorch reference (PyTorch Geometric Temporal style) of Halogen's temporal regression models, on the same
graph file, window, split, target scaling, optimiser and defaults as `halogen train DIR --model M --task
regression` (issue 30: "a reference to compare with"):

    /tmp/torchenv/bin/python scripts/bench/torch_temporal.py cp.h5 --model tgcn --seed 0

The file is a Halogen dynamic graph file (`halogen convert x.json` of a PGT JSON, docs/dynamic.md):
/node/label float [T, N] (the series), /snapshots/NNNNN/{indptr,indices[,weight]} (one N x N CSR per step; the
weights are ignored, as Halogen's temporal models ignore them). Everything below follows the C++ (file names in
brackets); the defaults are those `halogen train` resolves for --task regression (apps/cmd_train.cpp:
temporal_defaults, temporal_config).

Task [src/train/regression_task.cpp, temporal_task.cpp]: steps s = 0 .. T-lags-1; step s reads snapshot
s+lags-1 and x_s = [z_s .. z_{s+lags-1}] (N, lags), oldest first, and predicts z_{s+lags}. The first
floor(train_fraction * (T - lags)) steps train, the rest are the test weeks. --target-scaling per-node: z = (y -
mean_v) / std_v per vertex over t < lags + train_steps (population std; std <= 1e-7 max(1, |mean|) -> 1).
Loss of a step: sum_v (y_v - z_v)^2 / N; of a window: the mean over its steps. test_mse = sum over the test
steps and vertices of ((y - z) std_v)^2 / (test steps * N), i.e. in the file's units; baseline_last_mse
predicts y_{t-1}, baseline_mean_mse the vertex's mean of the training targets y_{lags} .. y_{lags+train-1}.

Graph operators [src/graph/local_graph.h]; deg_i = the stored neighbours of i in snapshot t (self-loops
skipped), edge weights ignored:
  gcn (evolvegcn-o, tgcn)   A_hat = D^-1/2 (A + I) D^-1/2, A_hat[i,j] = 1/sqrt((deg_i+1)(deg_j+1))
  chebyshev (gconvgru)      L~ = -D^-1/2 A D^-1/2 (lambda_max 2), L~[i,j] = -1/sqrt(deg_i deg_j), no diagonal
Models [src/nn/temporal_model.h, evolvegcn_o.cpp, evolve_gcn.h, tgcn.cpp, gconvgru.cpp, relu_linear_head.h];
weights are (in, out), y = x W; every model ends with y_t = relu(h_t) W_head + b_head (width 1):
  evolvegcn-o  per layer l (widths lags -> hidden ...): W_t = matGRU(W_{t-1}), W_0 a parameter,
               Z = sig(W_Z Q + U_Z Q + B_Z), R = sig(W_R Q + U_R Q + B_R), H~ = tanh(W_H Q + U_H (R o Q) + B_H),
               W_t = (1 - Z) o Q + Z o H~;  H^l = relu(A_hat H^{l-1} W_t)
  tgcn         C = A_hat x [W_z|W_r|W_h] + b; Z = sig([C_z, H] L_z + c_z), R = sig([C_r, H] L_r + c_r),
               H~ = tanh([C_h, H o R] L_h + c_h), H_t = Z o H + (1 - Z) o H~
  gconvgru     Ch_K(v) = sum_{k<K} T_k(v) Theta_k + b (T_0 = v, T_1 = L~ v, T_k = 2 L~ T_{k-1} - T_{k-2});
               Z = sig(Ch_xz(x) + Ch_hz(H)), R = sig(Ch_xr(x) + Ch_hr(H)), H~ = tanh(Ch_xh(x) + Ch_hh(H o R)),
               H_t = Z o H + (1 - Z) o H~
Init [src/nn/parameters.cpp]: Glorot-uniform U(-b, b), b = sqrt(6 / (rows + cols)) of the tensor as Halogen
stores it (tgcn: the stacked (lags, 3h) convolution weight and each (2h, h) gate weight; gconvgru: PyG's
per-gate bound sqrt(6 / (fan_in + h)) for every Theta_k), biases zero; drawn from torch's RNG seeded by --seed
(an independent reference, not Halogen's numbers). --init halogen copies instead the very weights of `halogen
train --seed SEED` (its Philox streams, torch_evolvegcn.halogen_glorot): the epoch losses then agree with
Halogen's --metrics to about 6 digits over the first epochs (the check that every definition above matches).
Training [src/train/temporal_workload.cpp, trainer.cpp, src/nn/adam.cpp]: every epoch starts from the zero state
(evolvegcn-o: W_0) and walks the training steps in BPTT windows of --window steps (default: one window;
evolvegcn-o: ceil(train_steps / 15)); the state is carried from window to window but detached at the start of
each (truncated BPTT; evolvegcn-o's first window backpropagates into W_0). One Adam step per window (torch's
Adam: betas 0.9/0.999, eps 1e-8, weight decay 0; gradients zeroed, not set to None, so that evolvegcn-o's W_0
steps on its moments in every window as in Halogen) after torch's clip_grad_norm_(--clip-grad-norm, default 1).
test_mse is that of the evaluation after the last epoch: all steps from the zero state, the test steps scored.

Prints one JSON line (model, seed, test_mse, baseline_last_mse, baseline_mean_mse, epochs, seconds = training
and evaluation wall time, loading excluded; losses = the epoch losses, the mean step loss in z units as
Halogen's metrics "loss"). Needs torch and h5py (/tmp/torchenv/bin/python: torch 2.2; /usr/bin/python3: torch
1.13). A reference for scripts/bench/temporal_reference.sh, not part of the test suite.
"""
import argparse
import json
import math
import time

import h5py
import numpy as np
import torch

# W_t = GRU(W_{t-1}) with matrix rows (nn/evolve_gcn.h); its weights drawn as glorot() below draws them
from torch_evolvegcn import MatrixGRU, halogen_glorot

MODELS = ("evolvegcn-o", "tgcn", "gconvgru")
# apps/cmd_train.cpp temporal_defaults(): epochs, windows per epoch (--task regression, no --window), clip, lr.
TEMPORAL_DEFAULTS = {"tgcn": (50, 0, 1.0, 0.01), "gconvgru": (50, 0, 1.0, 0.01), "evolvegcn-o": (50, 15, 1.0, 0.01)}


# ---- data ------------------------------------------------------------------------------------------------------

def graph_operator(indptr, indices, n, normalization, layout):
    """Halogen's normalised adjacency of one snapshot (graph/local_graph.cpp, unweighted): gcn = D^-1/2 (A + I)
    D^-1/2 with deg = stored neighbours without self-loops; chebyshev = -D^-1/2 A D^-1/2, no diagonal. Row i
    aggregates over row i's stored columns, as the C++ does (the files are symmetric unless --directed)."""
    counts = np.diff(indptr)
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    cols = indices.astype(np.int64)
    keep = rows != cols  # a stored self-loop is skipped (gcn adds its own)
    rows, cols = rows[keep], cols[keep]
    degree = np.bincount(rows, minlength=n).astype(np.float64)
    if normalization == "gcn":
        values = 1.0 / np.sqrt((degree[rows] + 1.0) * (degree[cols] + 1.0))
        rows = np.concatenate([rows, np.arange(n, dtype=np.int64)])
        cols = np.concatenate([cols, np.arange(n, dtype=np.int64)])
        values = np.concatenate([values, 1.0 / (degree + 1.0)])
    else:
        values = -1.0 / np.sqrt(degree[rows] * degree[cols])
    values = torch.from_numpy(values.astype(np.float32))
    if layout == "dense":
        dense = torch.zeros(n, n, dtype=torch.float32)
        dense[torch.from_numpy(rows), torch.from_numpy(cols)] = values
        return dense
    index = torch.from_numpy(np.stack([rows, cols]))
    return torch.sparse_coo_tensor(index, values, size=(n, n)).coalesce()


def load(path, normalization, layout):
    """The series y [T, N] (float64, file units) and one operator per snapshot (identical snapshots share one)."""
    with h5py.File(path, "r") as f:
        if "snapshots" not in f or len(f["snapshots"]) == 0:
            raise SystemExit(f"{path}: /snapshots: missing or empty (not a dynamic graph file)")
        if "/node/label" not in f or f["/node/label"].ndim != 2 or f["/node/label"].dtype.kind != "f":
            raise SystemExit(f"{path}: /node/label: expected a float [T, N] series for --task regression")
        series = f["/node/label"][...].astype(np.float64)
        n = series.shape[1]
        names = sorted(f["snapshots"].keys())
        if len(names) != series.shape[0]:
            raise SystemExit(f"{path}: {series.shape[0]} target rows but {len(names)} snapshots")
        operators, cache = [], {}
        for name in names:
            group = f["snapshots"][name]
            indptr = group["indptr"][...].astype(np.int64)
            indices = group["indices"][...].astype(np.int64)
            key = (indptr.tobytes(), indices.tobytes())
            if key not in cache:
                cache[key] = graph_operator(indptr, indices, n, normalization, layout)
            operators.append(cache[key])
    return series, operators


class RegressionData:
    """src/train/regression_task.cpp on one rank holding every vertex."""

    def __init__(self, series, lags, train_fraction, scaling):
        periods, self.n = series.shape
        if not 1 <= lags < periods:
            raise SystemExit(f"--lags {lags} needs more than {lags} time steps, the series has {periods}")
        self.lags, self.steps = lags, periods - lags
        self.train = int(math.floor(train_fraction * self.steps))
        if not 1 <= self.train < self.steps:
            raise SystemExit(f"--train-fraction {train_fraction} of {self.steps} steps leaves no training or no test step")
        self.series = series
        seen = series[: lags + self.train]
        shift, scale = np.zeros(self.n), np.ones(self.n)
        if scaling == "per-node":
            shift = seen.mean(axis=0)
            std = np.sqrt(((seen - shift) ** 2).mean(axis=0))  # population std, as the C++ (double)
            scale = np.where(std > 1e-7 * np.maximum(1.0, np.abs(shift)), std, 1.0)
        self.scale = scale
        z = ((series - shift) / scale).astype(np.float32)  # what the model learns
        self.z = torch.from_numpy(z)
        # inputs[s] (N, lags) = [z_s .. z_{s+lags-1}] per vertex, oldest first
        self.inputs = [self.z[s: s + lags].t().contiguous() for s in range(self.steps)]
        self.mean = series[lags: lags + self.train].mean(axis=0)  # training-mean baseline, file units

    def snapshot_of(self, step):
        return step + self.lags - 1

    def target(self, step):
        return self.z[step + self.lags].unsqueeze(1)  # (N, 1)

    def baselines(self):
        t = np.arange(self.train, self.steps) + self.lags
        y = self.series[t]
        count = len(t) * self.n
        return (float(((self.series[t - 1] - y) ** 2).sum() / count), float(((self.mean - y) ** 2).sum() / count))


# ---- models ----------------------------------------------------------------------------------------------------

def glorot(rows, cols, bound_rows=None, bound_cols=None):
    """U(-b, b), b = sqrt(6 / (bound_rows + bound_cols)) (default: the tensor's own shape), as Halogen's store."""
    bound = math.sqrt(6.0 / ((bound_rows or rows) + (bound_cols or cols)))
    return torch.nn.Parameter(torch.empty(rows, cols).uniform_(-bound, bound))


def zeros(*shape):
    return torch.nn.Parameter(torch.zeros(*shape))


def aggregate(op, x):
    return torch.sparse.mm(op, x) if op.is_sparse else op @ x


class ReluLinearHead(torch.nn.Module):
    """y = relu(h) W + b (nn/relu_linear_head.h)."""

    def __init__(self, hidden, out):
        super().__init__()
        self.weight, self.bias = glorot(hidden, out), zeros(out)

    def forward(self, h):
        return torch.relu(h) @ self.weight + self.bias


class EvolveGCNO(torch.nn.Module):
    """State: the current W^l of every layer; None = at W_0 (the parameters: gradients reach W_0)."""

    def __init__(self, in_width, hidden, layers):
        super().__init__()
        widths = [in_width] + [hidden] * layers
        self.w0 = torch.nn.ParameterList(glorot(d, hidden) for d in widths[:-1])
        self.gru = torch.nn.ModuleList(MatrixGRU(d, hidden) for d in widths[:-1])
        self.head = ReluLinearHead(hidden, 1)

    def initial_state(self, n):
        return None

    def detach(self, state):
        return None if state is None else [w.detach() for w in state]

    def forward(self, op, x, state):
        weights = list(self.w0) if state is None else state
        new_state, h = [], x
        for l, gru in enumerate(self.gru):
            w = gru(weights[l])
            new_state.append(w)
            if w.shape[1] < w.shape[0]:  # hidden < d_in: A_hat (H W), else (A_hat H) W (the C++'s order)
                h = torch.relu(aggregate(op, h @ w))
            else:
                h = torch.relu(aggregate(op, h) @ w)
        return self.head(h), new_state


class NodeStateModel(torch.nn.Module):
    """A recurrent model whose state is one (n, hidden) matrix, zero at the start of an epoch."""

    def initial_state(self, n):
        return torch.zeros(n, self.h)

    def detach(self, state):
        return state.detach()


class TGCN(NodeStateModel):
    def __init__(self, in_width, hidden):
        super().__init__()
        self.h = hidden
        self.conv_weight, self.conv_bias = glorot(in_width, 3 * hidden), zeros(3 * hidden)  # [W_z | W_r | W_h]
        self.lin_weight = torch.nn.ParameterList(glorot(2 * hidden, hidden) for _ in range(3))  # L_z, L_r, L_h
        self.lin_bias = torch.nn.ParameterList(zeros(hidden) for _ in range(3))
        self.head = ReluLinearHead(hidden, 1)

    def forward(self, op, x, state):
        c_z, c_r, c_h = torch.split(aggregate(op, x) @ self.conv_weight + self.conv_bias, self.h, dim=1)
        (l_z, l_r, l_h), (b_z, b_r, b_h) = self.lin_weight, self.lin_bias
        z = torch.sigmoid(torch.cat([c_z, state], 1) @ l_z + b_z)
        r = torch.sigmoid(torch.cat([c_r, state], 1) @ l_r + b_r)
        candidate = torch.tanh(torch.cat([c_h, state * r], 1) @ l_h + b_h)
        new_state = z * state + (1 - z) * candidate
        return self.head(new_state), new_state


class ChebConv(torch.nn.Module):
    """sum_{k<K} T_k(v) Theta_k + b under L~ (PyG ChebConv, sym, lambda_max 2)."""

    def __init__(self, in_width, hidden, k):
        super().__init__()
        self.theta = torch.nn.ParameterList(glorot(in_width, hidden) for _ in range(k))
        self.bias = zeros(hidden)

    def forward(self, basis):
        return sum(t @ theta for t, theta in zip(basis, self.theta)) + self.bias


def chebyshev_basis(op, v, k):
    basis = [v]
    if k > 1:
        basis.append(aggregate(op, v))
    for _ in range(2, k):
        basis.append(2 * aggregate(op, basis[-1]) - basis[-2])
    return basis


class GConvGRU(NodeStateModel):
    def __init__(self, in_width, hidden, k):
        super().__init__()
        self.h, self.k = hidden, k
        self.x_z, self.x_r, self.x_h = (ChebConv(in_width, hidden, k) for _ in range(3))
        self.h_z, self.h_r, self.h_h = (ChebConv(hidden, hidden, k) for _ in range(3))
        self.head = ReluLinearHead(hidden, 1)

    def forward(self, op, x, state):
        tx, th = chebyshev_basis(op, x, self.k), chebyshev_basis(op, state, self.k)
        z = torch.sigmoid(self.x_z(tx) + self.h_z(th))
        r = torch.sigmoid(self.x_r(tx) + self.h_r(th))
        candidate = torch.tanh(self.x_h(tx) + self.h_h(chebyshev_basis(op, state * r, self.k)))
        new_state = z * state + (1 - z) * candidate
        return self.head(new_state), new_state


def copy_halogen_init(model, seed):
    """Overwrites every weight with the value `halogen train --seed SEED` starts from (its ParameterStore in
    registration order, Philox streams: torch_evolvegcn.halogen_glorot), to check the definitions step by step
    against Halogen's losses. Not the default: the reference draws its own weights."""

    def draw(index, rows, cols, factor=1.0):
        return (halogen_glorot(seed, index, rows, cols) * np.float32(factor)).float()

    with torch.no_grad():
        if isinstance(model, EvolveGCNO):  # per layer W_0, w_z u_z b_z w_r u_r b_r w_h u_h b_h; head
            index = 0
            for w0, gru in zip(model.w0, model.gru):
                w0.copy_(draw(index, *w0.shape))
                for k, name in enumerate(["w_z", "u_z", "b_z", "w_r", "u_r", "b_r", "w_h", "u_h", "b_h"]):
                    if k % 3 != 2:
                        getattr(gru, name).copy_(draw(index + 1 + k, *getattr(gru, name).shape))
                index += 10
        elif isinstance(model, TGCN):  # conv_weight, conv_bias, (linear_g.weight, linear_g.bias) x 3; head
            model.conv_weight.copy_(draw(0, *model.conv_weight.shape))
            for g, weight in enumerate(model.lin_weight):
                weight.copy_(draw(2 + 2 * g, *weight.shape))
            index = 8
        else:  # conv_x.theta{k} (in, 3h), 3 biases, conv_h_zr.theta{k} (h, 2h), 2 biases, conv_h_h.theta{k}, 1
            k, h, in_width = model.k, model.h, model.x_z.theta[0].shape[0]
            groups = [([model.x_z, model.x_r, model.x_h], in_width, 3), ([model.h_z, model.h_r], h, 2),
                      ([model.h_h], h, 1)]
            index = 0
            for convs, rows, gates in groups:
                factor = math.sqrt((rows + gates * h) / (rows + h))  # gconvgru.cpp rescale_to_pyg_glorot
                for j in range(k):
                    stacked = draw(index + j, rows, gates * h, factor if gates > 1 else 1.0)
                    for g, conv in enumerate(convs):
                        conv.theta[j].copy_(stacked[:, g * h:(g + 1) * h])
                index += k + gates
        model.head.weight.copy_(draw(index, *model.head.weight.shape))


def make_model(args, in_width):
    if args.model == "evolvegcn-o":
        return EvolveGCNO(in_width, args.hidden, args.layers)
    if args.model == "tgcn":
        return TGCN(in_width, args.hidden)
    return GConvGRU(in_width, args.hidden, args.cheb_k)


# ---- training --------------------------------------------------------------------------------------------------

def train_epoch(model, optimizer, data, operators, window, clip):
    """One epoch of truncated BPTT (temporal_workload.cpp step_local); returns the mean step loss."""
    state = model.initial_state(data.n)
    total = 0.0
    for w0 in range(0, data.train, window):
        k = min(window, data.train - w0)
        state = model.detach(state)
        # Zeros, not None: a parameter no gradient reaches in this window (evolvegcn-o's W_0 after the epoch's
        # first window) still takes an Adam step on its moments, as in Halogen, whose store always has gradients
        # (torch >= 2.0's default set_to_none=True would skip it).
        optimizer.zero_grad(set_to_none=False)
        loss = 0.0
        for s in range(w0, w0 + k):
            y, state = model(operators[data.snapshot_of(s)], data.inputs[s], state)
            step_loss = ((y - data.target(s)) ** 2).sum() / data.n
            total += float(step_loss)
            loss = loss + step_loss / k
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
    return total / data.train


@torch.no_grad()
def evaluate(model, data, operators):
    """All steps from the zero state; the test steps' squared error in the file's units."""
    state = model.initial_state(data.n)
    scale = torch.from_numpy(data.scale).unsqueeze(1)
    total = 0.0
    for s in range(data.steps):
        y, state = model(operators[data.snapshot_of(s)], data.inputs[s], state)
        if s >= data.train:
            total += float((((y.double() - data.target(s).double()) * scale) ** 2).sum())
    return total / ((data.steps - data.train) * data.n)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graph", help="Halogen dynamic graph file (.h5) with a /node/label float [T, N] series")
    parser.add_argument("--model", choices=MODELS, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, help="default 50 (temporal_defaults)")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--layers", type=int, default=1, help="evolvegcn-o only")
    parser.add_argument("--lags", type=int, default=4)
    parser.add_argument("--train-fraction", type=float, default=0.9)
    parser.add_argument("--lr", type=float, help="default 0.01")
    parser.add_argument("--clip-grad-norm", type=float, help="default 1 (0: off)")
    parser.add_argument("--window", type=int, help="BPTT window in steps; 0: the whole training sequence "
                        "(default: evolvegcn-o ceil(train_steps / 15), others 0)")
    parser.add_argument("--windows", type=int, help="windows per epoch when --window is not given "
                        "(default: evolvegcn-o 15, others 1)")
    parser.add_argument("--cheb-k", type=int, default=2, help="gconvgru: Chebyshev terms K")
    parser.add_argument("--target-scaling", choices=["per-node", "none"], default="per-node")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--init", choices=["torch", "halogen"], default="torch",
                        help="halogen: the very initial weights of `halogen train --seed SEED` (to check the "
                             "definitions: the epoch losses then agree with Halogen's to float rounding)")
    parser.add_argument("--adjacency", choices=["auto", "dense", "sparse"], default="auto",
                        help="torch layout of the graph operators (auto: dense up to 4096 vertices; same math)")
    args = parser.parse_args()
    if args.model != "evolvegcn-o" and args.layers != 1:
        raise SystemExit("--layers applies to evolvegcn-o only (tgcn and gconvgru are one recurrent cell)")
    if args.cheb_k < 1:
        raise SystemExit("--cheb-k must be at least 1")
    epochs, windows, clip, lr = TEMPORAL_DEFAULTS[args.model]
    epochs = epochs if args.epochs is None else args.epochs
    clip = clip if args.clip_grad_norm is None else args.clip_grad_norm
    lr = lr if args.lr is None else args.lr
    windows = windows if args.windows is None else args.windows
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    setup_start = time.perf_counter()
    with h5py.File(args.graph, "r") as f:
        n = f["/node/label"].shape[1] if "/node/label" in f else 0
    layout = args.adjacency if args.adjacency != "auto" else ("dense" if n <= 4096 else "sparse")
    series, operators = load(args.graph, "chebyshev" if args.model == "gconvgru" else "gcn", layout)
    data = RegressionData(series, args.lags, args.train_fraction, args.target_scaling)
    if args.window is not None:
        if not 0 <= args.window <= data.train:
            raise SystemExit(f"--window {args.window} is longer than the training sequence ({data.train} steps)")
        window = args.window if args.window > 0 else data.train
    else:
        window = max(1, -(-data.train // windows)) if windows > 1 else data.train
    model = make_model(args, args.lags)
    if args.init == "halogen":
        copy_halogen_init(model, args.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    setup_s = time.perf_counter() - setup_start

    start = time.perf_counter()
    losses = [train_epoch(model, optimizer, data, operators, window, clip) for _ in range(epochs)]
    test_mse = evaluate(model, data, operators)
    seconds = time.perf_counter() - start
    last, mean = data.baselines()
    print(json.dumps({"framework": "torch", "torch": torch.__version__, "model": args.model, "task": "regression",
                      "seed": args.seed, "test_mse": test_mse, "baseline_last_mse": last, "baseline_mean_mse": mean,
                      "epochs": epochs, "seconds": round(seconds, 3), "setup_s": round(setup_s, 3),
                      "nodes": data.n, "train_steps": data.train, "test_steps": data.steps - data.train,
                      "window": window, "hidden": args.hidden, "layers": args.layers, "lags": args.lags,
                      "cheb_k": args.cheb_k, "lr": lr, "clip_grad_norm": clip, "target_scaling": args.target_scaling,
                      "threads": args.threads, "adjacency": layout, "init": args.init,
                      "losses": [round(v, 6) for v in losses]}))


if __name__ == "__main__":
    main()
