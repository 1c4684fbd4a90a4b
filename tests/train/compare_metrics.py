#!/usr/bin/env python3
"""Compare two --metrics files of `halogen train` epoch by epoch.

usage: compare_metrics.py A.jsonl B.jsonl --rel TOL [--from-epoch E] [--final]
The header line (the run's configuration) is skipped. The loss and every evaluation figure (train/valid/test accuracy, test_mse, test_map, ...: every number that is
not a time or halo_bytes) of every epoch present in both files (from epoch E on) must agree within relative tolerance TOL
(0 = bitwise); with --final, best_epoch, best_valid_acc and test_acc_at_best too.
Exit 0 when they agree, 1 (with the first differences printed) otherwise.
"""
import argparse
import json
import sys


def load(path):
    epochs, final = {}, None
    with open(path) as f:
        for line in f:
            obj = json.loads(line)
            if "config" in obj:  # the header line (run configuration, version, hosts): not an epoch
                continue
            if obj.get("final"):
                final = obj
            else:
                epochs[obj["epoch"]] = obj
    return epochs, final


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rel", type=float, required=True)
    parser.add_argument("--from-epoch", type=int, default=1)
    parser.add_argument("--final", action="store_true")
    parser.add_argument("--min-epochs", type=int, default=1)
    # Accuracies (keys ending in _acc or _acc_at_best) may also differ by this much absolutely: with the sums
    # reassociated, a vertex whose two top logits are within rounding of each other can flip while the losses
    # still agree to 1e-6. Give it one vertex of the smallest split evaluated (1/split size); default 0.
    parser.add_argument("--acc-abs", type=float, default=0.0)
    args = parser.parse_args()
    a_epochs, a_final = load(args.a)
    b_epochs, b_final = load(args.b)
    common = sorted(e for e in a_epochs if e in b_epochs and e >= args.from_epoch)
    errors = []
    if len(common) < args.min_epochs:
        errors.append(f"only {len(common)} common epochs (want >= {args.min_epochs})")
    worst = 0.0

    def check(where, x, y, absolute_floor=0.0):
        nonlocal worst
        diff = abs(x - y)
        if where.endswith("_acc") or where.endswith("_acc_at_best"):
            if diff <= args.acc_abs:
                return
        scale = max(abs(x), abs(y), absolute_floor)
        rel = diff / scale if scale > 0 else 0.0
        worst = max(worst, rel)
        if rel > args.rel:
            errors.append(f"{where}: {x!r} vs {y!r} (relative {rel:.3g} > {args.rel})")

    def figures(record):  # every number that is not a time, a rate or a communication volume
        return {k for k, v in record.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "epoch"
                and not k.endswith("_ms") and not k.startswith("compute_ms_")
                and k not in ("snapshots_per_s", "slowest_rank", "halo_bytes")}

    for e in common:
        keys = figures(a_epochs[e])
        if keys != figures(b_epochs[e]):
            errors.append(f"epoch {e}: different figures {sorted(keys ^ figures(b_epochs[e]))}")
        for key in sorted(keys & figures(b_epochs[e])):
            check(f"epoch {e} {key}", a_epochs[e][key], b_epochs[e][key], 1.0 if key != "loss" else 0.0)
    if args.final:
        if a_final is None or b_final is None:
            errors.append("a final record is missing")
        else:
            if a_final["best_epoch"] != b_final["best_epoch"]:
                errors.append(f"best_epoch {a_final['best_epoch']} vs {b_final['best_epoch']}")
            for key in ("best_valid_acc", "test_acc_at_best"):
                check(f"final {key}", a_final[key], b_final[key], 1.0)
    print(f"{args.a} vs {args.b}: {len(common)} epochs, worst relative difference {worst:.3g}")
    for error in errors[:10]:
        print("  " + error)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
