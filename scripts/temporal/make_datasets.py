#!/usr/bin/env python3
"""Temporal regression datasets for tuning and checking the temporal defaults (issue 30), as PyTorch Geometric
Temporal JSON (`halogen convert --format pgt-json`). Standard library only.

  make_datasets.py OUTDIR [--data ../shared/data/temporal]

writes into OUTDIR:
  chickenpox_x100.json   Chickenpox with its series scaled by 100 and shifted by +500 (needs --data)
  pedalme_x100.json      PedalMe (weighted edges) scaled by 100 and shifted by +1000 (needs --data)
  diffusion_x100.json    a synthetic graph: 120 nodes on a ring with random chords, 400 steps of a diffusion
                         process with per-node seasonality and noise, then scaled by 100 and shifted by +300
  diffusion.json         the same series unscaled
Unscaled published data behaves like these: targets with variances in the hundreds to tens of thousands.
"""
import argparse
import json
import math
import os
import random


def scaled(series, factor, shift):
    return [[v * factor + shift for v in row] for row in series]


def diffusion(nodes=120, steps=400, seed=7):
    rng = random.Random(seed)
    edges = set()
    for v in range(nodes):  # a ring, plus 2 random chords per node
        edges.add((v, (v + 1) % nodes))
        for _ in range(2):
            w = rng.randrange(nodes)
            if w != v:
                edges.add((v, w))
    edges |= {(b, a) for a, b in edges}
    neighbours = [[] for _ in range(nodes)]
    for a, b in edges:
        neighbours[a].append(b)
    phase = [rng.uniform(0, 2 * math.pi) for _ in range(nodes)]
    level = [rng.uniform(-1, 1) for _ in range(nodes)]
    y = [rng.gauss(0, 1) for _ in range(nodes)]
    series = []
    for t in range(steps):
        mixed = [sum(y[w] for w in neighbours[v]) / len(neighbours[v]) for v in range(nodes)]
        y = [0.5 * y[v] + 0.3 * mixed[v] + 0.6 * math.sin(2 * math.pi * t / 26 + phase[v]) + 0.2 * level[v]
             + 0.3 * rng.gauss(0, 1) for v in range(nodes)]
        series.append([round(v, 5) for v in y])
    return sorted([list(e) for e in edges]), series


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../../shared/data/temporal"))
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)

    def write(name, obj):
        with open(os.path.join(args.outdir, name), "w") as f:
            json.dump(obj, f)
        print(os.path.join(args.outdir, name))

    chickenpox = os.path.join(args.data, "chickenpox.json")
    if os.path.exists(chickenpox):
        d = json.load(open(chickenpox))
        d["FX"] = scaled(d["FX"], 100.0, 500.0)
        write("chickenpox_x100.json", d)
    pedalme = os.path.join(args.data, "pedalme_london.json")
    if os.path.exists(pedalme):
        d = json.load(open(pedalme))
        d["X"] = scaled(d["X"], 100.0, 1000.0)
        write("pedalme_x100.json", d)
    edges, series = diffusion()
    write("diffusion.json", {"edges": edges, "FX": series})
    write("diffusion_x100.json", {"edges": edges, "FX": scaled(series, 100.0, 300.0)})


if __name__ == "__main__":
    main()
