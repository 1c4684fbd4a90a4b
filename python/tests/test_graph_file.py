"""halogen.write_graph / read_graph / validate_graph: the graph file of docs/io.md, numpy and h5py only."""
import os

import h5py
import numpy as np
import pytest

import halogen
from conftest import run


def tiny(path, **kwargs):
    # 5 vertices; edges given once, one duplicate (0,1) with two weights, one self-loop (2,2); vertex 4 isolated.
    edge_index = np.array([[0, 1, 0, 2, 3, 1], [1, 2, 1, 2, 0, 3]])
    features = np.arange(15, dtype=np.float32).reshape(5, 3)
    labels = np.array([0, 2, -1, 1, np.nan])
    return halogen.write_graph(path, 5, edge_index, features=features, labels=labels, train=[0, 1], valid=[3],
                               test=[4], name="tiny", edge_weight=np.array([1, 2, 5, 9, 3, 4], np.float32), **kwargs)


def test_csr_is_built_as_halogen_convert_builds_it(tmp_path):
    path = str(tmp_path / "tiny.h5")
    tiny(path)
    with h5py.File(path, "r") as f:
        # Strings as io/h5.cpp writes them: fixed-length UTF-8 (h5py reads them as bytes).
        assert f.attrs["format"] == b"halogen.graph" and f.attrs["name"] == b"tiny" and f.attrs["format_version"] == 2
        assert (f.attrs["num_nodes"], f.attrs["num_edges"], f.attrs["num_classes"], f.attrs["num_features"],
                f.attrs["directed"]) == (5, 8, 3, 3, 0)
        # Symmetrised, sorted rows, the self-loop dropped, the duplicate (0,1) keeping its largest weight (5).
        assert f["csr/indptr"][()].tolist() == [0, 2, 5, 6, 8, 8]
        assert f["csr/indices"][()].tolist() == [1, 3, 0, 2, 3, 1, 0, 1]
        assert f["csr/weight"][()].tolist() == [5, 3, 5, 2, 4, 2, 3, 4]
        assert f["csr/indices"].dtype == np.int64 and f["csr/indptr"].dtype == np.int64
        assert f["node/label"].dtype == np.int32 and f["node/label"][()].tolist() == [0, 2, -1, 1, -1]
        assert f["node/feat"].dtype == np.float32 and f["node/feat"].shape == (5, 3)
        assert [f["split/" + s][()].tolist() for s in ("train", "valid", "test")] == [[0, 1], [3], [4]]
        assert f["split/train"].dtype == np.int64
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")], "temporary file left behind"


def test_read_graph_round_trip(tmp_path):
    path = str(tmp_path / "tiny.h5")
    tiny(path)
    g = halogen.read_graph(path)
    assert g["name"] == "tiny" and g["num_nodes"] == 5 and g["num_edges"] == 8 and not g["directed"]
    assert g["features"].tolist() == np.arange(15, dtype=np.float32).reshape(5, 3).tolist()
    assert g["num_features"] == 3 and g["num_classes"] == 3


def test_directed_keeps_edges_as_given(tmp_path):
    path = str(tmp_path / "d.h5")
    halogen.write_graph(path, 3, np.array([[0, 2], [1, 1]]), directed=True)
    g = halogen.read_graph(path)
    assert g["directed"] and g["indptr"].tolist() == [0, 1, 1, 2] and g["indices"].tolist() == [1, 1]


@pytest.mark.parametrize("kwargs, message", [
    (dict(edge_index=np.array([[0, 5], [1, 2]])), "source id 5 at edge 1 out of range [0, 5)"),
    (dict(labels=[0, 1, 7, 0, 0], num_classes=3), "label 7 out of range [-1, 3)"),
    (dict(train=[0, 0]), "train: duplicate node ids"),
    (dict(features=np.full((5, 2), np.nan, np.float32)), "/node/feat: row 0: not finite"),
    (dict(features=np.ones((4, 2), np.float32)), "/node/feat: expected shape [5, F]"),
])
def test_bad_arrays_are_rejected_and_nothing_is_written(tmp_path, kwargs, message):
    path = str(tmp_path / "bad.h5")
    args = dict(edge_index=np.array([[0, 1], [1, 2]]))
    args.update(kwargs)
    edge_index = args.pop("edge_index")
    with pytest.raises(ValueError) as error:
        halogen.write_graph(path, 5, edge_index, **args)
    assert message in str(error.value)
    assert os.listdir(tmp_path) == []


def test_validate_graph_catches_what_halogen_readers_catch():
    base = {"num_nodes": 3, "directed": False, "num_classes": 0, "indptr": np.array([0, 1, 2, 2]),
            "indices": np.array([1, 0])}
    halogen.validate_graph(base)
    with pytest.raises(ValueError, match="not symmetric"):
        halogen.validate_graph(dict(base, indices=np.array([1, 2])))
    with pytest.raises(ValueError, match="not sorted or duplicated"):
        halogen.validate_graph(dict(base, indptr=np.array([0, 2, 2, 2]), indices=np.array([2, 1]), directed=True))
    with pytest.raises(ValueError, match="self-loop on row 1"):
        halogen.validate_graph(dict(base, indptr=np.array([0, 0, 1, 1]), indices=np.array([1]), directed=True))


def test_halogen_info_check_accepts_the_file(tmp_path, halogen_bin):
    path = str(tmp_path / "tiny.h5")
    tiny(path)
    out = run([halogen_bin, "info", path, "--check"]).stdout
    assert "nodes     5" in out and "split     train 2  valid 1  test 1" in out, out
