"""Halogen's GCN and GraphSAGE-mean as PyTorch Geometric models (needs torch and torch_geometric), with the
parameter names halogen.load_state_dict produces, so that a Halogen checkpoint runs in PyG:

    model = halogen.models.from_checkpoint("run/ckpt")       # or build GCN(...) / SAGE(...) and load_state_dict
    logits = model(data.x, data.edge_index)                   # data = halogen.to_pyg("g.h5")
    logits = model(data.x, data.edge_index, data.edge_weight) # a model trained with --edge-weight

Forward, as Halogen's (src/nn/model.h), L layers:
    X_0 = dropout(row_normalize(x) if row_normalize else x)
    X_{l+1} = dropout(relu(conv_l(X_l)))   for l < L-1;     logits = conv_{L-1}(X_{L-1})
with conv = GCNConv (Â = D^-1/2 (A+I) D^-1/2, self loops of weight 1 added) or SAGEConv (mean over neighbours
through lin_l, the vertex itself through lin_r; a vertex without neighbours aggregates zero). Without edge_weight
every edge weighs 1, as Halogen without --edge-weight; with it (Halogen's --edge-weight), A holds the weights and D
the weighted degrees (GCN, as PyG's gcn_norm), and SAGE takes the weighted mean sum_j w_ij x_j / sum_j w_ij. A
model from a checkpoint trained with --edge-weight refuses to run without edge_weight. row_normalize divides each feature row by its sum (rows summing to 0 are
kept), as `halogen train --row-normalize` does. Messages flow along edge_index (source -> target); for the
undirected graphs Halogen trains on this is the same as Halogen's rows.
"""
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv, SAGEConv

from .checkpoint import _check_layers, load_state_dict, read_checkpoint


def row_normalize(x):
    """Each row divided by its sum (computed in float64, as Halogen does); rows summing to zero unchanged."""
    sums = x.double().sum(dim=1, keepdim=True)
    inverse = torch.where(sums == 0, torch.ones_like(sums), 1.0 / sums)
    return (x.double() * inverse).to(x.dtype)


class _Stack(torch.nn.Module):
    def __init__(self, convs, dropout, row_normalize_features):
        super().__init__()
        self.convs = torch.nn.ModuleList(convs)
        self.dropout = dropout
        self.row_normalize = row_normalize_features
        self.edge_weight_required = False  # set by from_checkpoint for a --edge-weight run

    def _conv(self, conv, x, edge_index, edge_weight):
        return conv(x, edge_index) if edge_weight is None else conv(x, edge_index, edge_weight)

    def forward(self, x, edge_index, edge_weight=None):
        if edge_weight is None and self.edge_weight_required:
            raise ValueError("this model was trained with --edge-weight: pass edge_weight (data.edge_weight of "
                             "halogen.to_pyg), or every edge would weigh 1")
        if edge_weight is not None and edge_weight.numel() != edge_index.size(1):
            raise ValueError(f"edge_weight: {edge_weight.numel()} values for {edge_index.size(1)} edges")
        if self.row_normalize:
            x = row_normalize(x)
        x = F.dropout(x, p=self.dropout, training=self.training)
        for i, conv in enumerate(self.convs):
            x = self._conv(conv, x, edge_index, edge_weight)
            if i + 1 < len(self.convs):
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x


def _widths(in_channels, hidden_channels, out_channels, num_layers):
    if num_layers < 1:
        raise ValueError("num_layers must be at least 1")
    return [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]


class GCN(_Stack):
    """Halogen's `--model gcn`: num_layers GCNConv layers (keys convs.<l>.lin.weight [out, in], convs.<l>.bias)."""

    def __init__(self, in_channels, hidden_channels, out_channels, num_layers=2, dropout=0.5, row_normalize=False):
        w = _widths(in_channels, hidden_channels, out_channels, num_layers)
        super().__init__([GCNConv(w[i], w[i + 1]) for i in range(num_layers)], dropout, row_normalize)


class SAGE(_Stack):
    """Halogen's `--model sage` (GraphSAGE-mean): SAGEConv layers (keys convs.<l>.lin_l.weight / .bias for the
    neighbour mean, convs.<l>.lin_r.weight for the vertex itself)."""

    def __init__(self, in_channels, hidden_channels, out_channels, num_layers=2, dropout=0.5, row_normalize=False):
        w = _widths(in_channels, hidden_channels, out_channels, num_layers)
        super().__init__([SAGEConv(w[i], w[i + 1], aggr="mean") for i in range(num_layers)], dropout,
                         row_normalize)

    def _conv(self, conv, x, edge_index, edge_weight):
        if edge_weight is None:
            return conv(x, edge_index)
        # SAGEConv has no edge weights: the weighted mean over in-neighbours (sources of edges into a vertex),
        # zero where they weigh 0 in all, then SAGEConv's own linear maps (lin_l with bias, lin_r without).
        src, dst = edge_index[0], edge_index[1]
        w = edge_weight.to(x.dtype).reshape(-1)
        total = torch.zeros(x.size(0), 1, dtype=x.dtype, device=x.device).index_add_(0, dst, w[:, None])
        summed = torch.zeros_like(x).index_add_(0, dst, w[:, None] * x[src])
        mean = summed / torch.where(total == 0, torch.ones_like(total), total)
        return conv.lin_l(mean) + conv.lin_r(x)


def _config_value(config, names, default):
    """The first of `names` in the config dict, looked up at the top level, then in nested sections."""
    for name in names:
        if name in config:
            return config[name]
    for value in config.values():
        if isinstance(value, dict):
            found = _config_value(value, names, None)
            if found is not None:
                return found
    return default


def from_checkpoint(path):
    """The GCN or SAGE of a Halogen checkpoint (file or directory), its weights loaded, in eval mode. Sizes come
    from the weights; dropout, row normalisation and edge weights from the checkpoint's config (row_normalize,
    edge_weight: such a model must be called with edge_weight)."""
    checkpoint = read_checkpoint(path)
    model, widths = _check_layers(checkpoint)
    config = checkpoint["config"]
    row_norm = bool(_config_value(config, ("row_normalize", "row-normalize"), False))
    dropout = float(_config_value(config, ("dropout",), 0.5))
    cls = GCN if model == "gcn" else SAGE
    hidden = widths[0][1]  # unused by a 1-layer model
    net = cls(widths[0][0], hidden, widths[-1][1], num_layers=len(widths), dropout=dropout, row_normalize=row_norm)
    if any(w[1] != hidden for w in widths[:-1]):
        raise ValueError(f"{checkpoint['path']}: hidden widths differ between layers {widths}")
    net.load_state_dict(load_state_dict(checkpoint))
    net.edge_weight_required = bool(_config_value(config, ("edge_weight", "edge-weight"), False))
    return net.eval()
