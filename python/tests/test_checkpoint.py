"""load_state_dict / models / read_predictions against the checkpoint and predictions layouts (docs/python.md),
on files written here with h5py, so that the PyG mapping is checked even where no `halogen` binary writes
them: a PyG model loaded from a checkpoint must compute Halogen's forward (src/nn/model.h), evaluated here by an
independent dense float64 numpy implementation."""
import json
import os

import h5py
import numpy as np
import pytest

import halogen


def write_checkpoint(path, model, widths, row_normalize=True, seed=0, epoch=7, edge_weight=False):
    rng = np.random.default_rng(seed)
    params = []
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "halogen-checkpoint"
        f.attrs["format_version"] = np.int64(1)
        f.attrs["model"] = model
        f.attrs["epoch"] = np.int64(epoch)
        config = {"model": model, "layers": len(widths) - 1, "hidden": widths[1], "dropout": 0.5,
                  "row_normalize": row_normalize}
        if edge_weight:
            config["edge_weight"] = True  # as Halogen writes it: only when set
        f.attrs["config"] = json.dumps(config)
        f.attrs["graph_checksum"] = "0123abcd"
        for layer, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
            p = {"weight": rng.standard_normal((fan_in, fan_out)).astype(np.float32),
                 "bias": rng.standard_normal(fan_out).astype(np.float32)}
            if model == "sage":
                p["weight_self"] = rng.standard_normal((fan_in, fan_out)).astype(np.float32)
            for name, value in p.items():
                f[f"layers/{layer}/{name}"] = value
            f[f"layers/{layer}/adam_m"] = np.zeros(3, np.float32)  # optimizer state beside them is ignored
            params.append(p)
    return params


def halogen_forward(model, params, indptr, indices, x, row_normalize, weight=None):
    """Halogen's evaluation forward in float64, from the contracts of src/nn/graph_conv.h and model.h (weighted:
    docs/train.md, "Weighted edges")."""
    n = indptr.size - 1
    a = np.zeros((n, n))
    a[np.repeat(np.arange(n), np.diff(indptr)), indices] = 1 if weight is None else weight
    deg = a.sum(1)
    if model == "gcn":
        d = 1 / np.sqrt(deg + 1)
        prop = d[:, None] * (a + np.eye(n)) * d[None, :]
    else:
        prop = a / np.where(deg == 0, 1, deg)[:, None]  # (weighted) mean over neighbours; none -> 0
    h = x.astype(np.float64)
    if row_normalize:
        s = h.sum(1, keepdims=True)
        h = h / np.where(s == 0, 1, s)
    for layer, p in enumerate(params):
        z = prop @ h @ p["weight"] + p["bias"]
        if model == "sage":
            z += h @ p["weight_self"]
        h = np.maximum(z, 0) if layer + 1 < len(params) else z
    return h


def graph(tmp_path, weighted=False):
    rng = np.random.default_rng(3)
    edge_index = rng.integers(0, 28, (2, 80))  # vertices 28, 29 isolated
    x = rng.random((30, 5)).astype(np.float32)
    x[4] = 0  # a row summing to zero stays zero under row normalisation
    weight = rng.uniform(0.1, 3.0, 80).astype(np.float32) if weighted else None
    path = str(tmp_path / "g.h5")
    halogen.write_graph(path, 30, edge_index, features=x, edge_weight=weight)
    return path, halogen.read_graph(path)


def test_resolve_checkpoint_prefers_best(tmp_path):
    write_checkpoint(str(tmp_path / "last.h5"), "gcn", [5, 4, 3])
    assert halogen.resolve_checkpoint(str(tmp_path)) == str(tmp_path / "last.h5")
    write_checkpoint(str(tmp_path / "best.h5"), "gcn", [5, 4, 3])
    assert halogen.resolve_checkpoint(str(tmp_path)) == str(tmp_path / "best.h5")
    os.makedirs(tmp_path / "empty")
    with pytest.raises(ValueError, match="no checkpoint in this directory"):
        halogen.resolve_checkpoint(str(tmp_path / "empty"))
    os.makedirs(tmp_path / "other")
    write_checkpoint(str(tmp_path / "other" / "run.h5"), "gcn", [5, 4, 3])
    assert halogen.resolve_checkpoint(str(tmp_path / "other")) == str(tmp_path / "other" / "run.h5")
    write_checkpoint(str(tmp_path / "other" / "run2.h5"), "gcn", [5, 4, 3])
    with pytest.raises(ValueError, match="several others: run.h5, run2.h5"):
        halogen.resolve_checkpoint(str(tmp_path / "other"))


def test_state_dict_keys_shapes_and_transposes(tmp_path):
    path = str(tmp_path / "c.h5")
    params = write_checkpoint(path, "sage", [5, 4, 3])
    state = halogen.load_state_dict(path, as_torch=False)
    assert list(state) == ["convs.0.lin_l.weight", "convs.0.lin_l.bias", "convs.0.lin_r.weight",
                           "convs.1.lin_l.weight", "convs.1.lin_l.bias", "convs.1.lin_r.weight"]
    assert np.array_equal(state["convs.1.lin_l.weight"], params[1]["weight"].T)
    assert np.array_equal(state["convs.0.lin_r.weight"], params[0]["weight_self"].T)
    c = halogen.read_checkpoint(path)
    assert (c["model"], c["epoch"], c["graph_checksum"], c["config"]["row_normalize"]) == ("sage", 7, "0123abcd", True)


def test_checkpoint_errors_name_the_file_and_tensor(tmp_path):
    path = str(tmp_path / "c.h5")
    write_checkpoint(path, "gcn", [5, 4, 3])
    with h5py.File(path, "a") as f:
        del f["layers/1/bias"]
    with pytest.raises(ValueError, match=r"c.h5: /layers/1/bias missing \(model gcn\)"):
        halogen.load_state_dict(path)
    with h5py.File(path, "a") as f:
        f.attrs["format"] = "something-else"
    with pytest.raises(ValueError, match="not a Halogen checkpoint"):
        halogen.read_checkpoint(path)


@pytest.mark.parametrize("model, widths, row_normalize", [("gcn", [5, 8, 3], True), ("gcn", [5, 4, 4, 3], False),
                                                          ("sage", [5, 8, 3], True), ("sage", [5, 3], False)])
def test_pyg_model_computes_halogens_forward(tmp_path, model, widths, row_normalize):
    from conftest import torch_geometric_or_skip

    torch, _ = torch_geometric_or_skip()
    path, g = graph(tmp_path)
    params = write_checkpoint(str(tmp_path / "c.h5"), model, widths, row_normalize)
    net = halogen.models.from_checkpoint(str(tmp_path / "c.h5"))
    assert isinstance(net, halogen.models.GCN if model == "gcn" else halogen.models.SAGE) and not net.training
    data = halogen.to_pyg(path)
    with torch.no_grad():
        ours = net(data.x, data.edge_index).double().numpy()
    expected = halogen_forward(model, params, g["indptr"], g["indices"], g["features"], row_normalize)
    # float32 against float64 through at most 3 layers of O(1) weights and values: ~1e-6 relative; a wrong
    # transpose, normalisation or missing term is off by O(1).
    assert np.allclose(ours, expected, rtol=1e-4, atol=1e-4), np.abs(ours - expected).max()
    # The plain constructor + load_state_dict path of the README.
    cls = halogen.models.GCN if model == "gcn" else halogen.models.SAGE
    plain = cls(widths[0], widths[1], widths[-1], num_layers=len(widths) - 1, row_normalize=row_normalize)
    plain.load_state_dict(halogen.load_state_dict(str(tmp_path / "c.h5")))
    with torch.no_grad():
        assert torch.equal(plain.eval()(data.x, data.edge_index), net(data.x, data.edge_index))


def test_read_predictions(tmp_path):
    path = str(tmp_path / "p.h5")
    probabilities = np.random.default_rng(0).random((6, 3)).astype(np.float32)
    with h5py.File(path, "w") as f:
        f["probabilities"] = probabilities
        f["predicted"] = probabilities.argmax(1).astype(np.int32)
    p = halogen.read_predictions(path)
    assert np.array_equal(p["probabilities"], probabilities) and p["predicted"].dtype == np.int32
    assert p["predicted"].tolist() == probabilities.argmax(1).tolist()
    with h5py.File(path, "a") as f:
        del f["predicted"]
        f["predicted"] = np.zeros(5, np.int32)
    with pytest.raises(ValueError, match="disagree on the number of vertices"):
        halogen.read_predictions(path)
    with h5py.File(str(tmp_path / "e.h5"), "w") as f:
        f["embeddings"] = np.ones((4, 2), np.float32)
    assert halogen.read_predictions(str(tmp_path / "e.h5"))["embeddings"].shape == (4, 2)


@pytest.mark.parametrize("model, widths", [("gcn", [5, 8, 3]), ("sage", [5, 8, 3]), ("sage", [5, 4, 4, 3])])
def test_pyg_model_computes_halogens_weighted_forward(tmp_path, model, widths):
    """A checkpoint trained with --edge-weight: the PyG model, given data.edge_weight, computes Halogen's
    weighted forward (GCN's weighted degrees, SAGE's weighted mean), and refuses to run without the weights."""
    from conftest import torch_geometric_or_skip

    torch, _ = torch_geometric_or_skip()
    path, g = graph(tmp_path, weighted=True)
    assert g["weight"] is not None and np.ptp(g["weight"]) > 1  # weights that matter
    params = write_checkpoint(str(tmp_path / "c.h5"), model, widths, True, edge_weight=True)
    net = halogen.models.from_checkpoint(str(tmp_path / "c.h5"))
    data = halogen.to_pyg(path)
    with torch.no_grad():
        ours = net(data.x, data.edge_index, data.edge_weight).double().numpy()
        unweighted = halogen.models.from_checkpoint(str(tmp_path / "c.h5"))
        unweighted.edge_weight_required = False
        plain = unweighted(data.x, data.edge_index).double().numpy()
    expected = halogen_forward(model, params, g["indptr"], g["indices"], g["features"], True, g["weight"])
    assert np.allclose(ours, expected, rtol=1e-4, atol=1e-4), np.abs(ours - expected).max()
    assert not np.allclose(plain, expected, rtol=1e-2, atol=1e-2)  # the weights change the answer
    with pytest.raises(ValueError, match="trained with --edge-weight: pass edge_weight"):
        net(data.x, data.edge_index)
