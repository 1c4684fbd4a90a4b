"""The output of `halogen predict` (docs/python.md): one HDF5 file in global vertex order holding either
`probabilities` float32 [N, C] and `predicted` int32 [N], or `embeddings` float32 [N, H]."""
import numpy as np


def read_predictions(path, as_torch=False):
    """Every dataset at the root of the predictions file `path` as a dict of numpy arrays (torch tensors with
    `as_torch`), e.g. {"probabilities": (N, C) float32, "predicted": (N,) int32} or {"embeddings": (N, H)};
    row i is global vertex i of the graph file.
    ValueError when the file holds neither probabilities nor embeddings, or their row counts disagree."""
    import h5py

    with h5py.File(path, "r") as f:
        arrays = {name: f[name][()] for name, item in f.items() if isinstance(item, h5py.Dataset)}
    if "probabilities" not in arrays and "embeddings" not in arrays:
        raise ValueError(f"{path}: neither /probabilities nor /embeddings (not a `halogen predict` output?)")
    if "probabilities" in arrays and arrays["probabilities"].ndim != 2:
        raise ValueError(f"{path}: /probabilities: expected shape [N, C], found {list(arrays['probabilities'].shape)}")
    if "embeddings" in arrays and arrays["embeddings"].ndim != 2:
        raise ValueError(f"{path}: /embeddings: expected shape [N, H], found {list(arrays['embeddings'].shape)}")
    rows = {name: a.shape[0] for name, a in arrays.items() if a.ndim >= 1}
    if len(set(rows.values())) > 1:
        raise ValueError(f"{path}: datasets disagree on the number of vertices: {rows}")
    if as_torch:
        import torch

        arrays = {name: torch.from_numpy(np.ascontiguousarray(a)) for name, a in arrays.items()}
    return arrays
