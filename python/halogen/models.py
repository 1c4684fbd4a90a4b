"""Halogen's GCN and GraphSAGE-mean as PyTorch Geometric models (needs torch and torch_geometric), with the
parameter names halogen.load_state_dict produces, so that a Halogen checkpoint runs in PyG:

    model = halogen.models.from_checkpoint("run/ckpt")       # or build GCN(...) / SAGE(...) and load_state_dict
    logits = model(data.x, data.edge_index)                   # data = halogen.to_pyg("g.h5")

Forward, as Halogen's (src/nn/model.h), L layers:
    X_0 = dropout(row_normalize(x) if row_normalize else x)
    X_{l+1} = dropout(relu(conv_l(X_l)))   for l < L-1;     logits = conv_{L-1}(X_{L-1})
with conv = GCNConv (Â = D^-1/2 (A+I) D^-1/2, self loops added, edge weights not used: Halogen's GCN ignores
/csr/weight) or SAGEConv (mean over neighbours through lin_l, the vertex itself through lin_r; a vertex
without neighbours aggregates zero). row_normalize divides each feature row by its sum (rows summing to 0 are
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

    def forward(self, x, edge_index):
        if self.row_normalize:
            x = row_normalize(x)
        x = F.dropout(x, p=self.dropout, training=self.training)
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
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
    from the weights; dropout and row normalisation from the checkpoint's config (row_normalize)."""
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
    return net.eval()
