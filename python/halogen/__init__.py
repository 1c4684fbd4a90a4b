"""halogen: the Python side of Halogen (distribution `halogen-gnn`). numpy and h5py only, torch optional.

    halogen.from_pyg(data, "g.h5") / halogen.from_dgl(g, "g.h5")   a PyG Data / DGL graph as a graph file
    halogen.to_pyg("g.h5")                                       a graph file as a PyG Data
    halogen.write_graph / read_graph                             the graph file from / to numpy arrays
    halogen.read_metrics("m.jsonl")                              `--metrics` as a pandas DataFrame
    halogen.read_predictions("pred.h5")                          `halogen predict` output as numpy arrays
    halogen.load_state_dict("ckpt/")                             a checkpoint as a PyG state dict
    halogen.models.GCN / SAGE / from_checkpoint                  the matching PyG models (torch_geometric)

See docs/python.md.
"""
from .checkpoint import load_state_dict, read_checkpoint, resolve_checkpoint
from .graph_file import build_csr, read_graph, validate_graph, write_graph
from .interop import from_arrays, from_dgl, from_pyg, to_pyg
from .metrics import read_metrics, read_metrics_header, read_metrics_summary
from .predictions import read_predictions

__version__ = "0.1.0"

__all__ = ["build_csr", "from_arrays", "from_dgl", "from_pyg", "load_state_dict", "read_checkpoint",
           "read_graph", "read_metrics", "read_metrics_header", "read_metrics_summary", "read_predictions",
           "resolve_checkpoint", "to_pyg", "validate_graph", "write_graph"]


def __getattr__(name):  # `halogen.models` imports torch and torch_geometric only when asked for
    if name == "models":
        import importlib

        return importlib.import_module(".models", __name__)
    raise AttributeError(f"module 'halogen' has no attribute {name!r}")
