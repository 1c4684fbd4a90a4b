#!/usr/bin/env python3
"""Gather the scaling runs into one CSV.

Input: runs.jsonl written by run_scaling.sh, one JSON object per run:
  experiment (strong | weak | method | halo | dataset), graph, graph_file, P, method, run (empty for a
  partition-only entry), threads, graph_s, partition_s, train_s, partition_dir, metrics (JSON-lines file of
  `halogen train --metrics`).
Each run's partition_dir/meta.json adds the partition statistics (cut edges, total and max halo rows), and its
metrics file adds one CSV row per epoch record ({"epoch": ...}); the final record ({"final": true, ...}) is
copied into every row of its run with the prefix final_. A partition-only entry gives one row with empty epoch
columns.

Output: one CSV, one row per (run, epoch), columns: the run's fields, the partition statistics, then the epoch
record's fields (epoch, loss, train_acc, valid_acc, test_acc, epoch_ms, spmm_ms, gemm_ms, halo_ms,
halo_exposed_ms, allreduce_ms, other_ms, eval_ms, ...) and final_* fields.

Usage: gather.py runs.jsonl -o scaling.csv
"""
import argparse
import csv
import json
import os
import sys

RUN_FIELDS = ["experiment", "graph", "P", "method", "run", "threads", "graph_s", "partition_s", "train_s"]
PART_FIELDS = ["num_nodes", "num_edges", "cut_edges", "halo_total", "halo_max", "send_max", "balance_vertices"]


def partition_stats(part_dir):
    """Statistics of a partition directory from its meta.json (empty dict when it has none)."""
    path = os.path.join(part_dir, "meta.json")
    if not part_dir or not os.path.exists(path):
        return {}
    with open(path) as f:
        meta = json.load(f)
    parts = meta.get("parts", [])
    graph = meta.get("graph", {})
    stats = {
        "num_nodes": graph.get("num_nodes", meta.get("num_nodes")),
        "num_edges": graph.get("num_edges", meta.get("num_edges")),
        "halo_total": sum(p.get("halo", 0) for p in parts),
        "halo_max": max((p.get("halo", 0) for p in parts), default=0),
        "send_max": max((p.get("send", 0) for p in parts), default=0),
    }
    statistics = meta.get("statistics", {})
    for key in ("cut_edges", "halo_rows_total", "halo_rows_max", "balance_vertices"):
        if key in statistics:
            stats[{"halo_rows_total": "halo_total", "halo_rows_max": "halo_max"}.get(key, key)] = statistics[key]
    return stats


def read_jsonl(path):
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if line:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"gather: error: {path}:{number}: not JSON ({e})")


def gather(runs_path):
    rows = []
    for run in read_jsonl(runs_path):
        base = {k: run.get(k, "") for k in RUN_FIELDS}
        base.update(partition_stats(run.get("partition_dir", "")))
        metrics = run.get("metrics") or ""
        if not run.get("run"):
            rows.append(base)
            continue
        if not os.path.exists(metrics):
            sys.exit(f"gather: error: {metrics}: metrics file of run {run['run']} is missing")
        records = list(read_jsonl(metrics))
        final = next((r for r in reversed(records) if r.get("final") is True), None)
        if final is None:
            sys.exit(f"gather: error: {metrics}: no final record (did run {run['run']} finish?)")
        final_fields = {f"final_{k}": v for k, v in final.items() if k != "final" and not isinstance(v, (dict, list))}
        epochs = [r for r in records if "epoch" in r and r.get("final") is not True]
        for record in epochs:
            row = dict(base)
            row.update({k: v for k, v in record.items() if not isinstance(v, (dict, list))})
            row.update(final_fields)
            rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", help="runs.jsonl written by run_scaling.sh")
    parser.add_argument("-o", "--output", required=True, help="CSV file to write")
    args = parser.parse_args()
    rows = gather(args.runs)
    columns = RUN_FIELDS + PART_FIELDS
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    with open(args.output, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    runs = len({(r["experiment"], r["run"], r["P"], r["method"], r["graph"]) for r in rows})
    print(f"gather: {len(rows)} rows from {runs} runs -> {args.output}")


if __name__ == "__main__":
    main()
