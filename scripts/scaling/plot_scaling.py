#!/usr/bin/env python3
"""Plots and Markdown tables of the scaling experiments (CSV from gather.py).

Writes into --img:
  scaling_epoch_time.png       epoch time vs P: strong scaling (fixed graph; ideal = T1 / P) and weak scaling
                               (vertices proportional to P; ideal = flat)
  scaling_phases.png           stacked per-phase breakdown of an epoch vs P (SpMM, GEMM, exposed halo exchange,
                               allreduce, other), strong and weak
  scaling_halo_volume.png      halo rows (total over ranks, and the busiest rank) vs P for METIS, random and
                               contiguous partitions of the same graph
  scaling_time_to_accuracy.png validation accuracy vs wall time from the start of preprocessing (graph file +
                               partition, then training epochs and evaluations) for each P
and the same numbers as Markdown tables into --tables.

Epoch times are the median over epochs after the first (the first pays one-time costs: page faults, caches).

Usage: plot_scaling.py scaling.csv --img docs/img --tables build/scaling/tables.md
"""
import argparse
import csv
import os
import statistics
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

PHASES = [("spmm_ms", "SpMM"), ("gemm_ms", "GEMM"), ("halo_exposed_ms", "halo (exposed)"),
          ("allreduce_ms", "allreduce"), ("other_ms", "other")]
METHOD_STYLE = {"metis": ("tab:blue", "o", 6), "random": ("tab:red", "s", 9), "contiguous": ("tab:green", "^", 5)}


def number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def runs_of(rows, experiment):
    """{(graph, method, P): [epoch rows ordered by epoch]} for one experiment (training runs only)."""
    runs = defaultdict(list)
    for row in rows:
        if row["experiment"] == experiment and row.get("run") and number(row.get("epoch")) is not None:
            runs[(row["graph"], row["method"], int(row["P"]))].append(row)
    for epochs in runs.values():
        epochs.sort(key=lambda r: number(r["epoch"]))
    return runs


def steady(epochs, key):
    """Median of `key` over the epochs after the first (all of them when there is only one)."""
    values = [number(r.get(key)) for r in (epochs[1:] if len(epochs) > 1 else epochs)]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def epoch_time_plot(rows, img, tables):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, experiment, title in ((axes[0], ("strong", "dataset"), "Strong scaling (fixed graph)"),
                                  (axes[1], ("weak",), "Weak scaling (vertices ∝ P)")):
        series = defaultdict(dict)
        for exp in experiment:
            runs = runs_of(rows, exp)
            for (graph, method, p), epochs in runs.items():
                # Weak scaling: one series over graphs of different sizes, named by the smallest run's size/rank.
                label = graph
                if exp == "weak":
                    graph0, _, p0 = min(runs, key=lambda k: k[2])
                    label = f"{int(number(runs[(graph0, method, p0)][0]['num_nodes']) / p0)} vertices / rank"
                series[label][p] = (steady(epochs, "epoch_ms"), epochs)
        for label, points in sorted(series.items()):
            ps = sorted(points)
            times = [points[p][0] for p in ps]
            line, = ax.plot(ps, times, marker="o", label=label)
            base_p, base_t = ps[0], times[0]
            ideal = [base_t * base_p / p for p in ps] if "strong" in experiment else [base_t for _ in ps]
            ax.plot(ps, ideal, linestyle="--", color=line.get_color(), alpha=0.5,
                    label="ideal" if len(series) == 1 else f"ideal ({label})")
            rows_md = []
            for p, t in zip(ps, times):
                phase = "  ".join(f"{steady(points[p][1], k):.1f}" for k, _ in PHASES)
                if "strong" in experiment:
                    speedup = base_t / t
                    rows_md.append(f"| {p} | {t:.1f} | {speedup:.2f} | {speedup * base_p / p:.0%} | {phase} |")
                else:
                    nodes = int(number(points[p][1][0]["num_nodes"]))
                    rows_md.append(f"| {p} | {nodes} | {t:.1f} | {base_t / t:.0%} | {phase} |")
            kind = "Strong" if "strong" in experiment else "Weak"
            header = ("| P | epoch (ms) | speedup | efficiency | spmm gemm halo-exposed allreduce other (ms) |\n"
                      "|---:|---:|---:|---:|---|" if kind == "Strong" else
                      "| P | vertices | epoch (ms) | efficiency | spmm gemm halo-exposed allreduce other (ms) |\n"
                      "|---:|---:|---:|---:|---|")
            tables.append(f"**{kind} scaling, {label}** (median epoch time over epochs 2..E)\n\n{header}\n" +
                          "\n".join(rows_md) + "\n")
        ax.set_xscale("log", base=2)
        if "strong" in experiment:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("ranks P")
        ax.set_ylabel("epoch time (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        all_p = sorted({p for points in series.values() for p in points})
        if all_p:
            ax.set_xticks(all_p)
            ax.set_xticklabels([str(p) for p in all_p])
    fig.tight_layout()
    path = os.path.join(img, "scaling_epoch_time.png")
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def phases_plot(rows, img):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, experiment, title in ((axes[0], "strong", "Strong scaling: epoch breakdown"),
                                  (axes[1], "weak", "Weak scaling: epoch breakdown")):
        runs = runs_of(rows, experiment)
        keys = sorted(runs, key=lambda k: k[2])
        labels = [str(k[2]) for k in keys]
        bottom = [0.0] * len(keys)
        for (key, name), color in zip(PHASES, ["tab:blue", "tab:orange", "tab:red", "tab:purple", "tab:gray"]):
            values = [max(steady(runs[k], key), 0.0) for k in keys]
            ax.bar(labels, values, bottom=bottom, label=name, color=color)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_xlabel("ranks P")
        ax.set_ylabel("time per epoch (ms, slowest rank)")
        ax.set_title(title)
        ax.grid(True, axis="y", alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles[::-1], names[::-1], loc="center right", fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.87, 1))
    path = os.path.join(img, "scaling_phases.png")
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def halo_plot(rows, img, tables):
    data = defaultdict(dict)
    graph = ""
    for row in rows:
        if row["experiment"] == "halo":
            data[row["method"]][int(row["P"])] = (number(row["halo_total"]), number(row["halo_max"]),
                                                  number(row.get("cut_edges")))
            graph = row["graph"]
    # Training with each partitioner at the largest P of the method runs (METIS's run is the strong-scaling one).
    method_runs = runs_of(rows, "method")
    trained = {}
    if method_runs:
        p_max = max(k[2] for k in method_runs)
        trained = {m: epochs for (g, m, p), epochs in method_runs.items() if p == p_max and g == graph}
        trained.update({m: epochs for (g, m, p), epochs in runs_of(rows, "strong").items()
                        if p == p_max and g == graph and m not in trained})
    fig, axes = plt.subplots(1, 2 if trained else 1, figsize=(12 if trained else 6.5, 4.4), squeeze=False)
    ax = axes[0][0]
    for method in ("metis", "random", "contiguous"):
        if method not in data:
            continue
        color, marker, size = METHOD_STYLE[method]
        ps = sorted(data[method])
        ax.plot(ps, [data[method][p][0] for p in ps], marker=marker, markersize=size, color=color,
                label=f"{method}: total")
        ax.plot(ps, [data[method][p][1] for p in ps], marker=marker, markersize=size, color=color, linestyle="--",
                label=f"{method}: busiest rank")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    all_p = sorted({p for m in data.values() for p in m})
    if all_p:
        ax.set_xticks(all_p)
        ax.set_xticklabels([str(p) for p in all_p])
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}" if str(v)[0] in "25" else ""))
    ax.set_xlabel("parts P")
    ax.set_ylabel("halo rows (vertices received per epoch and layer)")
    ax.set_title(f"Halo volume vs P, {graph}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if trained:
        ax = axes[0][1]
        methods = [m for m in ("metis", "random", "contiguous") if m in trained]
        bottom = [0.0] * len(methods)
        for (key, name), color in zip(PHASES, ["tab:blue", "tab:orange", "tab:red", "tab:purple", "tab:gray"]):
            values = [max(steady(trained[m], key), 0.0) for m in methods]
            ax.bar(methods, values, bottom=bottom, label=name, color=color)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_ylabel("time per epoch (ms, slowest rank)")
        ax.set_title(f"Epoch time by partitioner, P = {p_max}")
        ax.grid(True, axis="y", alpha=0.3)
        handles, names = ax.get_legend_handles_labels()
        ax.legend(handles[::-1], names[::-1], fontsize=8)
        lines = [f"**Partitioner vs epoch time, {graph}, P = {p_max}** (median over epochs 2..E, ms)\n",
                 "| method | halo rows total / busiest | epoch | halo (total) | halo (exposed) | spmm | allreduce |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for m in methods:
            v = data.get(m, {}).get(p_max)
            lines.append(f"| {m} | " + (f"{v[0]:.0f} / {v[1]:.0f}" if v else "") + " | " +
                         " | ".join(f"{steady(trained[m], k):.1f}" for k in
                                    ("epoch_ms", "halo_ms", "halo_exposed_ms", "spmm_ms", "allreduce_ms")) + " |")
        tables.append("\n".join(lines) + "\n")
    fig.tight_layout()
    path = os.path.join(img, "scaling_halo_volume.png")
    fig.savefig(path, dpi=130)
    plt.close(fig)
    if data:
        lines = [f"**Halo volume, {graph}** (halo rows: total over ranks / busiest rank; cut edges)\n",
                 "| P | " + " | ".join(m for m in ("metis", "random", "contiguous") if m in data) + " |",
                 "|---:|" + "---:|" * len(data)]
        for p in all_p:
            cells = []
            for m in ("metis", "random", "contiguous"):
                if m in data:
                    v = data[m].get(p)
                    cells.append(f"{v[0]:.0f} / {v[1]:.0f}; cut {v[2]:.0f}" if v else "")
            lines.append(f"| {p} | " + " | ".join(cells) + " |")
        tables.append("\n".join(lines) + "\n")
    return path


def time_to_accuracy_plot(rows, img, tables):
    """One panel per graph of the strong-scaling and dataset runs: validation accuracy vs wall time."""
    by_graph = defaultdict(dict)
    for experiment in ("strong", "dataset"):
        for (graph, method, p), epochs in runs_of(rows, experiment).items():
            by_graph[graph][p] = epochs
    graphs = sorted(by_graph, key=lambda g: (not g.startswith("sbm"), g))
    fig, axes = plt.subplots(1, max(len(graphs), 1), figsize=(6.5 * max(len(graphs), 1), 4.4), squeeze=False)
    for ax, graph in zip(axes[0], graphs):
        runs = by_graph[graph]
        best = max((number(r.get("valid_acc")) or 0.0 for epochs in runs.values() for r in epochs), default=0.0)
        target = round(0.98 * best, 3)
        lines = []
        for p in sorted(runs):
            epochs = runs[p]
            pre = (number(epochs[0].get("graph_s")) or 0.0) + (number(epochs[0].get("partition_s")) or 0.0)
            t, times, accs, reached = pre, [], [], None
            for r in epochs:
                t += ((number(r.get("epoch_ms")) or 0.0) + (number(r.get("eval_ms")) or 0.0)) / 1e3
                acc = number(r.get("valid_acc"))
                if acc is None:
                    continue
                times.append(t)
                accs.append(acc)
                if reached is None and acc >= target:
                    reached = (t, number(r["epoch"]))
            line, = ax.plot(times, accs, label=f"P = {p}")
            ax.axvline(pre, color=line.get_color(), linestyle=":", alpha=0.6)
            if reached:
                ax.plot([reached[0]], [target], marker="o", color=line.get_color())
            lines.append(f"| {p} | {pre:.2f} | " + (f"{reached[0] - pre:.2f} | {reached[0]:.2f} | {reached[1]:.0f} |"
                                                     if reached else "not reached | | |"))
        ax.axhline(target, color="black", linestyle="--", alpha=0.4, label=f"target {target:.3f}")
        tables.append(f"**Time to accuracy, {graph}** (target: validation accuracy {target:.3f} = 98% of the best "
                      "seen; preprocessing = graph file + partition, training = epochs + evaluations)\n\n"
                      "| P | preprocessing (s) | training to target (s) | total (s) | epoch |\n"
                      "|---:|---:|---:|---:|---:|\n" + "\n".join(lines) + "\n")
        ax.set_xlim(left=0)
        ax.set_xlabel("wall time from the start of preprocessing (s)\n(dotted: training starts)")
        ax.set_ylabel("validation accuracy")
        ax.set_title(f"Time to accuracy incl. preprocessing, {graph}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(img, "scaling_time_to_accuracy.png")
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="scaling.csv from gather.py")
    parser.add_argument("--img", default="docs/img", help="directory for the PNG files")
    parser.add_argument("--tables", help="Markdown file for the tables (default: print them)")
    args = parser.parse_args()
    rows = load(args.csv)
    os.makedirs(args.img, exist_ok=True)
    tables = []
    paths = [epoch_time_plot(rows, args.img, tables), phases_plot(rows, args.img), halo_plot(rows, args.img, tables),
             time_to_accuracy_plot(rows, args.img, tables)]
    text = "\n".join(tables)
    if args.tables:
        with open(args.tables, "w") as f:
            f.write(text)
    else:
        print(text)
    for path in paths:
        print(f"plot_scaling: wrote {path}")


if __name__ == "__main__":
    main()
