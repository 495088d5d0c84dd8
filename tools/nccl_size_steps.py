#!/usr/bin/env python3
"""Where "algorithm": "nccl" predicts less time for more data, at sizes a step apart.

tests/test_nccl_monotone.cpp checks powers of two; a step that falls between them (a pipeline
whose segment count changes, a correction that steps up) shows only at finer sizes. This
sweeps NCCL's pick with `collsim sweep --algorithms nccl` on a few machines, for each
collective, and prints every size whose time is below the previous size's by more than
0.01%; smaller falls (nanoseconds, where a size's elements split into chunks one element
apart) are only counted.

usage: tools/nccl_size_steps.py [COLLSIM [STEP [OPS]]]   (default ./build/tools/collsim, x1.15,
all_reduce,all_gather,reduce_scatter,broadcast,reduce,all_to_all; from the repository root)
"""
import csv
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

TOPOLOGIES = {
    "8x H100": "dgx-h100",
    "8x A100": {"preset": "dgx", "gpu": "a100"},
    "2x8 H100": {"preset": "cluster", "nodes": 2},
    "4x8 H100": {"preset": "cluster", "nodes": 4},
    "8x8 H100": {"preset": "cluster", "nodes": 8},
    "nvl72": {"preset": "nvl72"},
}
OPS = "all_reduce,all_gather,reduce_scatter,broadcast,reduce,all_to_all"


def plan_of(row):
    return row["plan"].split(": ", 1)[-1]


def main():
    collsim = sys.argv[1] if len(sys.argv) > 1 else "./build/tools/collsim"
    step = sys.argv[2] if len(sys.argv) > 2 else "x1.15"
    ops = (sys.argv[3] if len(sys.argv) > 3 else OPS).split(",")
    falls_total = tiny_total = 0
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "sweep.json"
        for name, topology in TOPOLOGIES.items():
            for op in ops:
                scenario.write_text(json.dumps({"topology": topology, "collectives": [
                    {"name": "x", "op": op, "algorithm": "nccl", "bytes": "1MiB"}]}))
                out = subprocess.run([collsim, "sweep", str(scenario), "--sizes", "1KiB..1GiB",
                                      "--step", step, "--algorithms", "nccl", "--format", "csv"],
                                     capture_output=True, text=True, check=True).stdout
                rows = list(csv.DictReader(io.StringIO(out)))
                falls = []
                tiny = 0
                for a, b in zip(rows, rows[1:]):
                    before, after = float(a["time_us"]), float(b["time_us"])
                    if before * (1 - 1e-4) <= after < before:
                        tiny += 1
                    elif after < before:
                        falls.append(f"{a['size']} -> {b['size']} B: {before:.3f} -> {after:.3f} us "
                                     f"({100 * (before - after) / before:.3f}%; "
                                     f"{plan_of(a)} -> {plan_of(b)})")
                falls_total += len(falls)
                tiny_total += tiny
                print(f"{name} {op}: {len(rows)} sizes, {len(falls)} falls"
                      + (f" ({tiny} more within 0.01%)" if tiny else ""))
                for f in falls:
                    print(f"  {f}")
    print(f"{falls_total} falls in all, {tiny_total} more within 0.01%")


if __name__ == "__main__":
    main()
