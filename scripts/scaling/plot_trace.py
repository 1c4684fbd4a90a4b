#!/usr/bin/env python3
"""Draw a `halogen train --trace` file as a PNG: one band per rank, one row per lane (compute, halo in flight,
halo wait, allreduce, allreduce wait), for a window of epochs. Needs matplotlib.

usage: plot_trace.py TRACE.json OUT.png [--epochs FIRST LAST] [--title TEXT]
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {
    "spmm": "#4c72b0", "gemm": "#55a868", "elementwise": "#8c8c8c", "optimizer": "#937860",
    "halo in flight": "#dd8452", "halo post/wait": "#c44e52",
    "allreduce in flight": "#8172b3", "allreduce wait": "#da8bc3",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("out")
    parser.add_argument("--epochs", nargs=2, type=int, metavar=("FIRST", "LAST"))
    parser.add_argument("--title", default="")
    args = parser.parse_args()

    events = json.load(open(args.trace))["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    lanes = {}
    for e in events:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            lanes[(e["pid"], e["tid"])] = e["args"]["name"]
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        sys.exit(f"{args.trace}: no spans")
    epochs = sorted({e["args"]["epoch"] for e in spans})
    first, last = args.epochs if args.epochs else (epochs[min(1, len(epochs) - 1)], epochs[min(2, len(epochs) - 1)])
    spans = [e for e in spans if first <= e["args"]["epoch"] <= last]
    if not spans:
        sys.exit(f"{args.trace}: no spans in epochs {first}..{last}")
    t0 = min(e["ts"] for e in spans)

    ranks = sorted(processes)
    n_lanes = 5
    fig, ax = plt.subplots(figsize=(12, 1.1 + 0.42 * n_lanes * len(ranks)))
    yticks, ylabels = [], []
    for i, rank in enumerate(ranks):
        for lane in range(n_lanes):
            y = (len(ranks) - 1 - i) * (n_lanes + 1) + (n_lanes - 1 - lane)
            yticks.append(y)
            ylabels.append(f"{processes[rank]}: {lanes.get((rank, lane), lane)}")
            for e in spans:
                if e["pid"] == rank and e["tid"] == lane:
                    ax.broken_barh([((e["ts"] - t0) / 1e3, e["dur"] / 1e3)], (y - 0.4, 0.8),
                                   facecolors=COLORS.get(e["name"], "#333333"), linewidth=0)
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels, fontsize=8)
    ax.set_xlabel("ms")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    ax.legend(handles, list(COLORS), loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4, fontsize=8)
    ax.set_title(args.title or f"{args.trace}: epochs {first}-{last}", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}: {len(spans)} spans, epochs {first}-{last}, {len(ranks)} ranks")


if __name__ == "__main__":
    main()
