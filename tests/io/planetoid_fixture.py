"""The tiny CiteSeer-like Planetoid set of the converter tests (python_converters.sh, convert_planetoid.sh).

7 nodes: allx = nodes 0..3 (x = the first 2 = train), test ids 6, 4 (file order), and id 5 missing from tx (as
CiteSeer's isolated test nodes are): it gets zero features and label -1. Expected results are in the tests.
"""
import collections
import os
import pickle

import numpy as np
import scipy.sparse as sp


def write(directory, name="tiny", protocol=2, defaultdict=False):
    """Writes ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index} into `directory` (made if absent)."""
    os.makedirs(directory, exist_ok=True)
    f = lambda rows: sp.csr_matrix(np.array(rows, dtype=np.float32))
    onehot = lambda labels: np.eye(3, dtype=np.float32)[labels]
    graph = {0: [1, 2], 1: [0], 2: [0, 2], 3: [4], 4: [3, 6], 6: [4, 6], 5: []}
    if defaultdict:  # as the published files store it
        graph = collections.defaultdict(list, graph)
    parts = {
        "x": f([[1, 0], [0, 1]]), "y": onehot([0, 1]),
        "allx": f([[1, 0], [0, 1], [2, 0], [0, 2]]), "ally": onehot([0, 1, 2, 2]),
        "tx": f([[6, 6], [4, 4]]), "ty": onehot([0, 1]),  # row j belongs to test.index[j]: nodes 6, 4
        "graph": graph,
    }
    for part, obj in parts.items():
        with open(os.path.join(directory, f"ind.{name}.{part}"), "wb") as out:
            pickle.dump(obj, out, protocol=protocol)
    with open(os.path.join(directory, f"ind.{name}.test.index"), "w") as out:
        out.write("6\n4\n")
