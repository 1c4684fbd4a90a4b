"""Cora end to end through the `halogen` binary: PyG Data -> from_pyg -> partition -> 2-rank training ->
read_metrics, and (once `halogen predict` and `--save-best` exist) the checkpoint back in a PyG GCN and the
predictions of `halogen predict`, with the accuracy Halogen reported. Skipped without the binary, mpirun or
../shared/data; the PyG parts without torch_geometric."""
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

import halogen
from conftest import REPO, run, torch_geometric_or_skip

EPOCHS = 100  # Kipf & Welling's 200 halved for CI time; the best validation epoch comes before 100 (87 for seed 1)
# Kipf & Welling's settings otherwise, as tests/train/cora_accuracy.sh uses them.
TRAIN_ARGS = ["--model", "gcn", "--layers", "2", "--hidden", "16", "--dropout", "0.5", "--lr", "0.01",
              "--weight-decay", "5e-4", "--epochs", str(EPOCHS), "--row-normalize", "--seed", "1", "--quiet"]
# PyG and Halogen compute the logits in float32 with different summation orders (sparse aggregation order,
# BLAS blocking), so they differ by ~1e-6 relative; argmax flips only where the two largest logits are that
# close. Of Cora's 1000 test vertices we allow 2 such flips (0.2%); a wrong weight, transpose, normalisation or
# preprocessing costs tens of points.
FLIPS = 2


def supports_checkpoints(halogen_bin):
    """Whether this binary has `halogen predict` and `train --save-best` (issue 16, items 1 and 2)."""
    predict = subprocess.run([halogen_bin, "predict", "--help"], capture_output=True, text=True)
    train = subprocess.run([halogen_bin, "train", "--help"], capture_output=True, text=True)
    return predict.returncode == 0 and "--checkpoint" in predict.stdout and "--save-best" in train.stdout


@pytest.fixture(scope="module")
def cora(tmp_path_factory, halogen_bin, shared_data, mpirun):
    """Cora as a PyG Data, written back with from_pyg, partitioned for 2 ranks and trained once."""
    source = os.path.join(shared_data, "ogb-format", "cora")
    if not os.path.isdir(source):
        pytest.skip(f"{source} not found")
    work = tmp_path_factory.mktemp("cora")
    ref = str(work / "ref.h5")
    run([halogen_bin, "convert", source, "--format", "ogb", "-o", ref])
    torch_geometric_or_skip()
    data = halogen.to_pyg(ref)  # the user's PyG Data
    path = str(work / "cora.h5")
    halogen.from_pyg(data, path, name="cora")
    run([halogen_bin, "partition", path, "-k", "2", "-o", str(work / "cora.p2")])
    checkpoints = supports_checkpoints(halogen_bin)
    extra = ["--checkpoint", str(work / "ckpt"), "--save-best"] if checkpoints else []
    run(mpirun + ["-np", "2", halogen_bin, "train", str(work / "cora.p2")] + TRAIN_ARGS +
        ["--metrics", str(work / "m.jsonl")] + extra)
    return {"work": work, "ref": ref, "path": path, "data": data, "metrics": str(work / "m.jsonl"),
            "checkpoint": str(work / "ckpt") if checkpoints else None}


def test_from_pyg_of_cora_equals_halogen_convert(cora):
    with h5py.File(cora["ref"], "r") as a, h5py.File(cora["path"], "r") as b:
        for name in ("csr/indptr", "csr/indices", "node/feat", "node/label"):
            assert a[name].dtype == b[name].dtype and np.array_equal(a[name][()], b[name][()]), name
        for name in ("split/train", "split/valid", "split/test"):  # a mask keeps the set, not the file's order
            assert b[name].dtype == np.int64 and np.array_equal(np.sort(a[name][()]), b[name][()]), name
        for key in ("format", "format_version", "num_nodes", "num_edges", "num_classes", "num_features", "directed"):
            assert a.attrs[key] == b.attrs[key], key


def test_read_metrics_of_a_cora_run(cora):
    frame = halogen.read_metrics(cora["metrics"])
    records = halogen.read_metrics(cora["metrics"], as_dataframe=False)
    final = halogen.read_metrics_summary(cora["metrics"])
    assert [r["epoch"] for r in records] == list(range(1, EPOCHS + 1))
    assert final["ranks"] == 2 and final["last_epoch"] == EPOCHS
    best = next(r for r in records if r["epoch"] == final["best_epoch"])
    assert best["valid_acc"] == final["best_valid_acc"] == max(r["valid_acc"] for r in records)
    assert best["test_acc"] == final["test_acc_at_best"]
    # Kipf & Welling's GCN: 81.5%; seed 1 gives 82.0% here (81.9% after 200 epochs, docs/train.md); 0.78 allows
    # another BLAS's summation order to move the best epoch, while a broken graph file costs tens of points.
    assert final["test_acc_at_best"] >= 0.78
    header = halogen.read_metrics_header(cora["metrics"])
    assert header is None or isinstance(header["config"], dict)
    if isinstance(frame, list):
        pytest.skip("pandas is not installed: read_metrics returned a list (checked above)")
    assert len(frame) == EPOCHS and frame["epoch"].tolist() == list(range(1, EPOCHS + 1))
    assert frame.loc[frame["valid_acc"].idxmax(), "test_acc"] == final["test_acc_at_best"]
    assert frame.attrs["final"] == final and frame.attrs["header"] == header


def need_checkpoint(cora):
    if cora["checkpoint"] is None:
        pytest.skip("this halogen has no `predict` or `train --save-best` yet (issue 16 items 1-2)")
    if not any(p.endswith(".h5") for p in os.listdir(cora["checkpoint"])):
        pytest.skip(f"{cora['checkpoint']} holds no .h5 checkpoint")
    return cora["checkpoint"]


def pyg_logits(cora, checkpoint):
    torch, _ = torch_geometric_or_skip()
    data = cora["data"]
    model = halogen.models.GCN(data.num_features, 16, 7, num_layers=2, row_normalize=True)
    model.load_state_dict(halogen.load_state_dict(checkpoint))
    with torch.no_grad():
        logits = model.eval()(data.x, data.edge_index)
        assert torch.equal(halogen.models.from_checkpoint(checkpoint)(data.x, data.edge_index), logits)
    return logits


def test_pyg_gcn_from_checkpoint_has_halogens_accuracy(cora):
    checkpoint = need_checkpoint(cora)
    final = halogen.read_metrics_summary(cora["metrics"])
    assert halogen.read_checkpoint(checkpoint)["epoch"] == final["best_epoch"]  # the directory means its best
    logits = pyg_logits(cora, checkpoint)
    data = cora["data"]
    correct = int((logits.argmax(1)[data.test_mask] == data.y[data.test_mask]).sum())
    expected = round(final["test_acc_at_best"] * int(data.test_mask.sum()))
    assert abs(correct - expected) <= FLIPS, (correct, expected)


def test_halogen_predict_on_1_and_2_ranks_matches_pyg(cora, halogen_bin, mpirun):
    checkpoint = need_checkpoint(cora)
    work = cora["work"]
    run([halogen_bin, "partition", cora["path"], "-k", "1", "-o", str(work / "cora.p1")])
    run(mpirun + ["-np", "2", halogen_bin, "predict", str(work / "cora.p2"), "--checkpoint", checkpoint,
                  "--output", str(work / "pred2.h5")])
    run(mpirun + ["-np", "1", halogen_bin, "predict", str(work / "cora.p1"), "--checkpoint", checkpoint,
                  "--output", str(work / "pred1.h5")])
    one, two = halogen.read_predictions(str(work / "pred1.h5")), halogen.read_predictions(str(work / "pred2.h5"))
    assert np.array_equal(one["predicted"], two["predicted"])  # the "identical predictions"
    data = cora["data"]
    assert two["probabilities"].shape == (data.num_nodes, 7) and two["predicted"].dtype == np.int32
    test = data.test_mask.numpy()
    accuracy = float((two["predicted"][test] == data.y.numpy()[test]).mean())
    assert accuracy == halogen.read_metrics_summary(cora["metrics"])["test_acc_at_best"]
    logits = pyg_logits(cora, checkpoint)
    assert int((logits.argmax(1).numpy() != two["predicted"]).sum()) <= FLIPS
    # Softmax probabilities agree to float32 rounding of O(1) logits (see FLIPS).
    assert np.allclose(logits.softmax(1).numpy(), two["probabilities"], atol=1e-4)
    as_torch = halogen.read_predictions(str(work / "pred2.h5"), as_torch=True)
    assert as_torch["predicted"].tolist() == two["predicted"].tolist()


def test_gat_training_without_dropout_equals_pyg_gatconv(cora, halogen_bin, mpirun):
    """Halogen's GAT (8 heads x 8, the Cora settings but no dropout, so both sides are deterministic) trained on
    2 ranks for 30 epochs against PyG's GATConv trained from the same initial parameters with torch.optim.Adam
    (scripts/bench/pyg_gat.py check-forward --train-epochs): the per-epoch training losses agree to float32
    summation order. This covers the forward, every backward, the weight decay of all parameters and Adam over
    many steps, which the first loss alone does not; what is left between the two is how dropout draws its
    masks."""
    torch_geometric_or_skip()
    work = cora["work"]
    common = ["--model", "gat", "--layers", "2", "--hidden", "8", "--heads", "8", "--dropout", "0",
              "--attention-dropout", "0", "--weight-decay", "5e-4", "--weight-decay-all-layers", "--row-normalize",
              "--seed", "4", "--quiet"]
    # The initial parameters: one epoch at a learning rate that changes nothing, checkpointed.
    run(mpirun + ["-np", "2", halogen_bin, "train", str(work / "cora.p2")] + common +
        ["--lr", "1e-20", "--epochs", "1", "--checkpoint", str(work / "gat_init")])
    run(mpirun + ["-np", "2", halogen_bin, "train", str(work / "cora.p2")] + common +
        ["--lr", "0.005", "--epochs", "30", "--metrics", str(work / "gat.jsonl")])
    ours = [r["loss"] for r in halogen.read_metrics(str(work / "gat.jsonl"), as_dataframe=False)]
    pyg = run([sys.executable, os.path.join(REPO, "scripts", "bench", "pyg_gat.py"), "check-forward", cora["path"],
               str(work / "gat_init" / "last.h5"), "--heads", "8", "--hidden", "8", "--output-heads", "1",
               "--train-epochs", "30", "--lr", "0.005", "--weight-decay", "5e-4"])
    theirs = [record["loss"] for record in map(json.loads, pyg.stdout.splitlines()) if "epoch" in record]
    # Measured: within 5.9e-7 relative over 100 epochs on 1 rank. A missing weight decay term, a wrong Adam
    # step or a wrong gradient of any parameter moves the losses by 1e-3 or more within a few epochs.
    assert len(ours) == 30 and len(theirs) == 30, (len(ours), len(theirs))
    assert np.allclose(ours, theirs, rtol=1e-5, atol=0), np.abs(np.subtract(ours, theirs)).max()
