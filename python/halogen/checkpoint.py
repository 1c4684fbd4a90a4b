"""Halogen checkpoints (`halogen train --checkpoint DIR [--save-best]`) as PyTorch Geometric state dicts.

A checkpoint is an HDF5 file: root attributes format="halogen.checkpoint" (earlier "halogen-checkpoint"),
format_version=1, model ("gcn" | "sage"), epoch, config (a JSON string: layers, hidden, dropout, row_normalize, ...), graph_checksum; each
parameter of layer l is a float32 dataset /layers/<l>/<name>: weight [in, out], bias [out] and, for SAGE,
weight_self [in, out] (optimizer state may sit beside them and is not read here). A checkpoint directory means
its best file (`best.h5`, else the one `.h5` with "best" in its name) if there is one, else `last.h5` (else its
only `.h5` file).

Halogen's layers compute Z = X W (+ ...) + b with W stored [in, out]; torch.nn.Linear stores [out, in], so every
weight is transposed. Key names, for halogen.models.GCN / SAGE (a torch.nn.ModuleList `convs` of PyG layers):
  gcn:  convs.<l>.lin.weight   = W^T           convs.<l>.bias       = b        (torch_geometric.nn.GCNConv)
  sage: convs.<l>.lin_l.weight = W^T (neigh.)  convs.<l>.lin_l.bias = b        (torch_geometric.nn.SAGEConv,
        convs.<l>.lin_r.weight = W_self^T                                        aggr="mean", root_weight=True)
"""
import collections
import glob
import json
import os

import numpy as np

FORMAT = "halogen.checkpoint"
EARLIER_FORMATS = ("halogen-checkpoint",)  # the same layout, named before 2026-12
FORMAT_VERSION = 1


def resolve_checkpoint(path):
    """The checkpoint file meant by `path`: the file itself, or in a directory its best file if there is one,
    else `last.h5`, else its only `.h5` file. ValueError naming the directory when it holds no checkpoint."""
    if not os.path.isdir(path):
        if not os.path.exists(path):
            raise ValueError(f"{path}: no such checkpoint file or directory")
        return path
    best = os.path.join(path, "best.h5")
    if os.path.isfile(best):
        return best
    candidates = sorted(glob.glob(os.path.join(path, "*best*.h5")))
    if len(candidates) == 1:
        return candidates[0]
    if len(candidates) > 1:
        raise ValueError(f"{path}: several best checkpoints ({', '.join(map(os.path.basename, candidates))}); "
                         "name one file")
    last = os.path.join(path, "last.h5")
    if os.path.isfile(last):
        return last
    others = sorted(glob.glob(os.path.join(path, "*.h5")))  # hidden temporaries (.name.h5.tmp.PID) never match
    if len(others) == 1:
        return others[0]
    raise ValueError(f"{path}: no checkpoint in this directory (neither best.h5 nor last.h5"
                     + (f"; several others: {', '.join(map(os.path.basename, others))})" if others else ")"))


def read_checkpoint(path):
    """Reads a checkpoint (file or directory, see resolve_checkpoint) into a dict: path (the file read), model,
    epoch, config (dict), graph_checksum, format_version, layers (a list, one dict {name: float32 array} per
    layer, in layer order). ValueError for a file that is not a Halogen checkpoint of a supported version."""
    import h5py

    file = resolve_checkpoint(path)

    def text(value):
        return value.decode() if isinstance(value, bytes) else value

    with h5py.File(file, "r") as f:
        if text(f.attrs.get("format")) not in (FORMAT,) + EARLIER_FORMATS:
            raise ValueError(f'{file}: not a Halogen checkpoint (root attribute format is not "{FORMAT}")')
        version = int(f.attrs.get("format_version", -1))
        if version != FORMAT_VERSION:
            raise ValueError(f"{file}: checkpoint format_version {version} is not supported (reads {FORMAT_VERSION})")
        if "layers" not in f:
            raise ValueError(f"{file}: no /layers group")
        indices = sorted(f["layers"].keys(), key=lambda k: int(k) if k.isdigit() else -1)
        if [str(i) for i in range(len(indices))] != indices:
            raise ValueError(f"{file}: /layers: expected groups 0..L-1, found {indices}")
        layers = [{name: f[f"layers/{i}/{name}"][()] for name, item in f[f"layers/{i}"].items()
                   if isinstance(item, h5py.Dataset)} for i in range(len(indices))]
        config = text(f.attrs.get("config", "{}"))
        checksum = f.attrs.get("graph_checksum")
        return {
            "path": file,
            "model": text(f.attrs.get("model", "")),
            "epoch": int(f.attrs["epoch"]) if "epoch" in f.attrs else None,
            "config": json.loads(config) if config else {},
            "graph_checksum": text(checksum.item() if isinstance(checksum, np.ndarray) else checksum),
            "format_version": version,
            "layers": layers,
        }


def _check_layers(checkpoint):
    """(model, [(in, out)] per layer) after checking each layer's tensors and that widths chain."""
    model, file, layers = checkpoint["model"], checkpoint["path"], checkpoint["layers"]
    if model not in ("gcn", "sage"):
        raise ValueError(f"{file}: model {model!r}: only gcn and sage checkpoints map to PyG layers")
    needed = ("weight", "bias", "weight_self") if model == "sage" else ("weight", "bias")
    widths = []
    for i, layer in enumerate(layers):
        for name in needed:
            if name not in layer:
                raise ValueError(f"{file}: /layers/{i}/{name} missing (model {model})")
        weight = layer["weight"]
        if weight.ndim != 2:
            raise ValueError(f"{file}: /layers/{i}/weight: expected [in, out], found {list(weight.shape)}")
        if layer["bias"].shape != (weight.shape[1],):
            raise ValueError(f"{file}: /layers/{i}/bias: expected [{weight.shape[1]}], "
                             f"found {list(layer['bias'].shape)}")
        if model == "sage" and layer["weight_self"].shape != weight.shape:
            raise ValueError(f"{file}: /layers/{i}/weight_self: expected {list(weight.shape)}, found "
                             f"{list(layer['weight_self'].shape)}")
        if widths and widths[-1][1] != weight.shape[0]:
            raise ValueError(f"{file}: /layers/{i}/weight: {weight.shape[0]} inputs after a layer of "
                             f"{widths[-1][1]} outputs")
        widths.append(weight.shape)
    if not widths:
        raise ValueError(f"{file}: no layers")
    return model, widths


def load_state_dict(checkpoint, as_torch=True):
    """The parameters of a GCN or SAGE checkpoint (a path, or a dict from read_checkpoint) as an OrderedDict
    for halogen.models.GCN / SAGE (key names in this module's docstring): torch tensors when torch is
    installed and `as_torch`, else numpy arrays. Usage:
        model = halogen.models.GCN(in_channels, hidden, num_classes, num_layers=2)
        model.load_state_dict(halogen.load_state_dict("run/ckpt"))"""
    if not isinstance(checkpoint, dict):
        checkpoint = read_checkpoint(checkpoint)
    model, _ = _check_layers(checkpoint)
    state = collections.OrderedDict()
    for i, layer in enumerate(checkpoint["layers"]):
        weight = np.ascontiguousarray(layer["weight"].T, dtype=np.float32)
        bias = np.ascontiguousarray(layer["bias"], dtype=np.float32)
        if model == "gcn":
            state[f"convs.{i}.bias"] = bias
            state[f"convs.{i}.lin.weight"] = weight
        else:
            state[f"convs.{i}.lin_l.weight"] = weight
            state[f"convs.{i}.lin_l.bias"] = bias
            state[f"convs.{i}.lin_r.weight"] = np.ascontiguousarray(layer["weight_self"].T, dtype=np.float32)
    if as_torch:
        try:
            import torch
        except ImportError:
            return state
        state = collections.OrderedDict((k, torch.from_numpy(v)) for k, v in state.items())
    return state
