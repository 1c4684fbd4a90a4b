"""PyTorch Geometric and DGL graphs to and from Halogen graph files.

Edge direction: a Halogen CSR row r lists the vertices r aggregates from. `from_pyg` stores PyG's edge (s, t) in
row s and `to_pyg` gives it back as (s, t), so a round trip keeps `edge_index`; for the undirected graphs
Halogen trains on (the default: edges are symmetrised) both orders hold every edge anyway.
"""
import numpy as np

from .graph_file import read_graph, write_graph


def _numpy(value):
    """A torch tensor (any device), numpy array or sequence as a numpy array; None stays None."""
    if value is None:
        return None
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _mask_ids(name, mask, num_nodes, split):
    """Node ids of a boolean mask (N,) or one column of (N, S) masks (PyG's multi-split datasets)."""
    mask = _numpy(mask)
    if mask is None:
        return None
    if mask.ndim == 2:
        if split is None:
            raise ValueError(f"{name}: {mask.shape[1]} splits (shape {mask.shape}); pass split=<column> to pick one")
        mask = mask[:, split]
    if mask.dtype != np.bool_:
        raise ValueError(f"{name}: expected a boolean mask, found {mask.dtype}")
    if mask.shape != (num_nodes,):
        raise ValueError(f"{name}: expected shape ({num_nodes},), found {mask.shape}")
    return np.flatnonzero(mask)


def _labels_or_targets(y, num_nodes):
    """(labels, targets): integer y -> class labels (negative = unlabeled); floating y -> regression targets."""
    y = _numpy(y)
    if y is None:
        return None, None
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_:
        if y.shape != (num_nodes,):
            raise ValueError(f"y: expected class ids of shape ({num_nodes},), found {y.shape} (multi-label "
                             "targets are not supported)")
        return y.astype(np.int64), None
    return None, y.astype(np.float32)


def from_arrays(path, num_nodes, edge_index, x=None, y=None, train_mask=None, val_mask=None, test_mask=None,
                edge_weight=None, num_classes=None, directed=False, name="", split=None):
    """Writes a graph file from arrays or tensors; masks are boolean (N,) (or (N, S) with `split`)."""
    num_nodes = int(num_nodes)
    labels, targets = _labels_or_targets(y, num_nodes)
    indptr, indices = write_graph(
        path, num_nodes, _numpy(edge_index), features=_numpy(x), labels=labels, targets=targets,
        num_classes=num_classes, train=_mask_ids("train_mask", train_mask, num_nodes, split),
        valid=_mask_ids("val_mask", val_mask, num_nodes, split),
        test=_mask_ids("test_mask", test_mask, num_nodes, split), directed=directed, name=name,
        edge_weight=_numpy(edge_weight))
    return path


def from_pyg(data, path, directed=False, name="", num_classes=None, split=None):
    """Writes the torch_geometric.data.Data `data` as the Halogen graph file `path` (returns `path`).

    Reads data.x (features, optional), data.y (int64 class ids, negative = unlabeled; a floating y becomes
    regression targets), data.edge_index (2, E), data.edge_weight (or a 1-d data.edge_attr) as /csr/weight,
    and data.train_mask / val_mask / test_mask (boolean; (N, S) masks need `split`). The graph is symmetrised,
    deduplicated and stripped of self-loops unless `directed` (as `halogen convert` does); Halogen's GCN adds
    its own self-loops. num_classes defaults to max(y) + 1."""
    num_nodes = data.num_nodes
    edge_weight = getattr(data, "edge_weight", None)
    if edge_weight is None:
        edge_attr = _numpy(getattr(data, "edge_attr", None))
        if edge_attr is not None and (edge_attr.ndim == 1 or (edge_attr.ndim == 2 and edge_attr.shape[1] == 1)):
            edge_weight = edge_attr.reshape(-1)
    return from_arrays(path, num_nodes, data.edge_index, x=getattr(data, "x", None), y=getattr(data, "y", None),
                       train_mask=getattr(data, "train_mask", None), val_mask=getattr(data, "val_mask", None),
                       test_mask=getattr(data, "test_mask", None), edge_weight=edge_weight,
                       num_classes=num_classes, directed=directed, name=name, split=split)


def _first(mapping, *keys):
    for key in keys:
        if key in mapping:
            return mapping[key]
    return None


def from_dgl(g, path, directed=False, name="", num_classes=None, split=None):
    """Writes the DGL graph `g` as the Halogen graph file `path` (returns `path`).

    Uses g.num_nodes(), g.edges() (source, destination), g.ndata['feat'] (or 'x', 'features'),
    g.ndata['label'] (or 'y', 'labels'), g.ndata['train_mask'], ['val_mask'] (or 'valid_mask'), ['test_mask'],
    and g.edata['weight'] (or 'w', 'edge_weight') when present. DGL stores an undirected graph as both directions
    (often with self-loops added); the graph is symmetrised, deduplicated and stripped of self-loops unless
    `directed`, as `halogen convert` does. Only homogeneous graphs are supported."""
    if hasattr(g, "ntypes") and len(g.ntypes) > 1:
        raise ValueError(f"from_dgl: heterogeneous graph with node types {list(g.ntypes)}; convert one "
                         "homogeneous graph (dgl.to_homogeneous)")
    src, dst = g.edges()
    src, dst = _numpy(src), _numpy(dst)
    ndata, edata = g.ndata, g.edata
    return from_arrays(path, g.num_nodes(), np.stack([src, dst]), x=_first(ndata, "feat", "x", "features"),
                       y=_first(ndata, "label", "y", "labels"), train_mask=_first(ndata, "train_mask"),
                       val_mask=_first(ndata, "val_mask", "valid_mask"), test_mask=_first(ndata, "test_mask"),
                       edge_weight=_first(edata, "weight", "w", "edge_weight"), num_classes=num_classes,
                       directed=directed, name=name, split=split)


def to_pyg(path):
    """Reads the graph file `path` (validated as Halogen's readers do) as a torch_geometric.data.Data:
    x float32 (N, F), y int64 (N,) class ids (-1 = unlabeled; float32 for regression files),
    edge_index int64 (2, E) with every stored edge (row, column) = (source, target), edge_weight float32 (E,)
    when the file has /csr/weight, train_mask / val_mask / test_mask bool (N,), num_nodes, and num_classes.
    Dynamic graphs' /snapshots are not read (ValueError)."""
    import torch
    from torch_geometric.data import Data

    graph = read_graph(path)
    if graph["num_snapshots"]:
        raise ValueError(f"{path}: a dynamic graph ({graph['num_snapshots']} snapshots); to_pyg reads static graphs")
    n = graph["num_nodes"]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph["indptr"]))
    data = Data(edge_index=torch.from_numpy(np.stack([rows, graph["indices"]])), num_nodes=n)
    if graph["features"] is not None:
        data.x = torch.from_numpy(graph["features"])
    if graph["labels"] is not None:
        labels = graph["labels"]
        data.y = torch.from_numpy(labels.astype(np.int64) if np.issubdtype(labels.dtype, np.integer) else labels)
    if graph["weight"] is not None:
        data.edge_weight = torch.from_numpy(graph["weight"])
    for split, key in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(graph[split])] = True
        data[key] = mask
    data.num_classes = graph["num_classes"]
    return data
