"""from_pyg / to_pyg / from_dgl (torch and torch_geometric; skipped without them)."""
import types

import numpy as np
import pytest

import halogen
from conftest import torch_geometric_or_skip

torch, torch_geometric = torch_geometric_or_skip()
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected  # noqa: E402


def random_data(num_nodes=40, num_edges=120, features=6, classes=4, seed=0):
    """A PyG Data as a user would have it: edges in one direction, with duplicates and self-loops, some
    unlabeled vertices (-1), isolated vertices (the last three), masks."""
    g = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, num_nodes - 3, (2, num_edges), generator=g)
    y = torch.randint(0, classes, (num_nodes,), generator=g)
    y[::7] = -1
    masks = torch.rand(3, num_nodes, generator=g)
    return Data(x=torch.randn(num_nodes, features, generator=g), y=y, edge_index=edge_index,
                train_mask=masks[0] < 0.3, val_mask=(masks[0] >= 0.3) & (masks[0] < 0.5),
                test_mask=masks[0] >= 0.5, num_nodes=num_nodes)


def canonical(edge_index, num_nodes):
    """What a Halogen graph file holds for these edges: symmetric, coalesced (sorted), no self-loops."""
    edge_index, _ = remove_self_loops(to_undirected(edge_index, num_nodes=num_nodes))
    return coalesce(edge_index, num_nodes=num_nodes)


def assert_same_graph(a, b):
    assert a.num_nodes == b.num_nodes
    assert torch.equal(a.edge_index, b.edge_index)
    assert torch.equal(a.x, b.x) and a.x.dtype == b.x.dtype == torch.float32
    assert torch.equal(a.y, b.y) and b.y.dtype == torch.int64
    for key in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(a[key], b[key]), key


def test_round_trip_of_a_canonical_graph_is_exact(tmp_path):
    data = random_data()
    data.edge_index = canonical(data.edge_index, data.num_nodes)
    path = str(tmp_path / "g.h5")
    assert halogen.from_pyg(data, path, name="random") == path
    back = halogen.to_pyg(path)
    assert_same_graph(data, back)
    assert back.num_classes == 4 and "edge_weight" not in back


def test_from_pyg_builds_the_graph_halogen_trains_on(tmp_path):
    data = random_data(seed=1)
    path = str(tmp_path / "g.h5")
    halogen.from_pyg(data, path)
    back = halogen.to_pyg(path)
    expected = data.clone()
    expected.edge_index = canonical(data.edge_index, data.num_nodes)
    assert_same_graph(expected, back)
    assert back.edge_index.shape[1] % 2 == 0  # every pair stored both ways


def test_edge_weights_and_regression_targets(tmp_path):
    data = Data(x=torch.ones(3, 1), y=torch.tensor([0.5, -1.25, 2.0]), edge_index=torch.tensor([[0, 1], [1, 2]]),
                edge_weight=torch.tensor([2.0, 3.0]), num_nodes=3)
    path = str(tmp_path / "w.h5")
    halogen.from_pyg(data, path)
    back = halogen.to_pyg(path)
    assert back.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    assert back.edge_weight.tolist() == [2.0, 2.0, 3.0, 3.0]
    assert back.y.dtype == torch.float32 and back.y.tolist() == [0.5, -1.25, 2.0]  # regression: floats kept


def test_multi_split_masks_need_a_column(tmp_path):
    data = random_data()
    data.train_mask = torch.stack([data.train_mask, ~data.train_mask], dim=1)
    with pytest.raises(ValueError, match="pass split=<column>"):
        halogen.from_pyg(data, str(tmp_path / "m.h5"))
    halogen.from_pyg(data, str(tmp_path / "m.h5"), split=1)
    assert torch.equal(halogen.to_pyg(str(tmp_path / "m.h5")).train_mask, data.train_mask[:, 1])


class FakeDGLGraph:
    """Only what from_dgl reads of a dgl.DGLGraph: num_nodes(), edges() -> (src, dst) tensors, ndata, edata,
    ntypes (DGL itself does not install beside Debian's torch)."""

    def __init__(self, src, dst, num_nodes, ndata, edata=None):
        self._src, self._dst, self._n = src, dst, num_nodes
        self.ndata, self.edata, self.ntypes = ndata, edata or {}, ["_N"]

    def num_nodes(self):
        return self._n

    def edges(self):
        return self._src, self._dst


def test_from_dgl_writes_the_same_file_as_from_pyg(tmp_path):
    data = random_data(seed=2)
    # DGL datasets store both directions and often self-loops (dgl.add_self_loop): both must disappear.
    loops = torch.arange(data.num_nodes)
    src = torch.cat([data.edge_index[0], data.edge_index[1], loops])
    dst = torch.cat([data.edge_index[1], data.edge_index[0], loops])
    g = FakeDGLGraph(src, dst, data.num_nodes, {"feat": data.x, "label": data.y, "train_mask": data.train_mask,
                                                "val_mask": data.val_mask, "test_mask": data.test_mask})
    halogen.from_dgl(g, str(tmp_path / "dgl.h5"))
    halogen.from_pyg(data, str(tmp_path / "pyg.h5"))
    a, b = halogen.read_graph(str(tmp_path / "dgl.h5")), halogen.read_graph(str(tmp_path / "pyg.h5"))
    for key in ("indptr", "indices", "features", "labels", "train", "valid", "test"):
        assert np.array_equal(a[key], b[key]), key
    assert a["num_classes"] == b["num_classes"] == 4


def test_from_dgl_rejects_heterogeneous_graphs(tmp_path):
    g = types.SimpleNamespace(ntypes=["paper", "author"])
    with pytest.raises(ValueError, match="heterogeneous graph"):
        halogen.from_dgl(g, str(tmp_path / "h.h5"))
