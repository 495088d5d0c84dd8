#!/usr/bin/env python3
"""How far "algorithm": "nccl" is from every published nccl-tests log in data/nccl-tests.

Each log is compared (collsim compare) with the uncalibrated defaults on the machine it ran
on, and the mean absolute percentage error is printed by size band, as a Markdown table:
all sizes, below 64 KiB, 64 KiB to 64 MiB (where training traffic lives), 64 MiB and up,
and over the sizes that were not disturbed (their out-of-place and in-place times agree:
docs/validation.md, "Disturbed sizes").

usage: tools/nccl_log_bands.py [COLLSIM [MODEL]]   (default ./build/tools/collsim and the
scenario's default network model; run from the repository root)
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

KIB, MIB = 1 << 10, 1 << 20
TOP = 1 << 62

# The machine of each log (data/README.md), as a collsim topology.
MACHINES = {
    "h100x8_all_reduce_default": "dgx-h100",
    "h100x8_all_reduce_ring": "dgx-h100",
    "a100x8_all_reduce_default": {"preset": "dgx", "gpu": "a100"},
    "h100_2x8_all_reduce_default": {"preset": "cluster", "nodes": 2},
    "h100_4x8_all_reduce_default": {"preset": "cluster", "nodes": 4},
    "h100_4x8_vm_all_reduce_default": {"preset": "cluster", "nodes": 4},
    "h100_8x8_all_reduce_default": {"preset": "cluster", "nodes": 8},
}
# What NCCL was allowed to pick (the log's NCCL_ALGO).
FILTERS = {"h100x8_all_reduce_ring": {"nccl_algo": "ring"}}
BANDS = [(0, TOP), (0, 64 * KIB), (64 * KIB, 64 * MIB), (64 * MIB, TOP)]


def mape(rows, lo, hi):
    errors = [abs(r["error_pct"]) for r in rows if lo <= r["bytes"] < hi]
    return (sum(errors) / len(errors), len(errors)) if errors else (None, 0)


def main():
    collsim = sys.argv[1] if len(sys.argv) > 1 else "./build/tools/collsim"
    network = {"network": {"model": sys.argv[2]}} if len(sys.argv) > 2 else {}
    print("| log | all sizes | < 64 KiB | 64 KiB - 64 MiB | >= 64 MiB | undisturbed |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for log, topology in MACHINES.items():
            collective = {"name": "ar", "op": "all_reduce", "algorithm": "nccl", "bytes": "1GiB"}
            collective.update(FILTERS.get(log, {}))
            scenario = Path(tmp) / f"{log}.json"
            scenario.write_text(
                json.dumps({"topology": topology, **network, "collectives": [collective]}))
            out = subprocess.run([collsim, "compare", str(scenario), "--nccl-tests",
                                  f"data/nccl-tests/{log}.txt", "--format", "json"],
                                 capture_output=True, text=True, check=True).stdout
            doc = json.loads(out)
            rows = doc["rows"]
            cells = []
            for lo, hi in BANDS:
                m, n = mape(rows, lo, hi)
                cells.append(f"{m:.1f}% ({n})" if n else "-")
            steady = doc["steady"]
            # null where every size was disturbed: no error to average
            cells.append(f"{steady['mape_pct']:.1f}% ({steady['sizes']})"
                         if steady["mape_pct"] is not None else "-")
            print(f"| {log} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
