#!/usr/bin/env python3
"""How well a calibration fitted on one published nccl-tests log predicts, per log in data/nccl-tests.

For each log: `collsim calibrate --nccl-tests LOG` on the machine it ran on (NCCL's pick,
the default network model, the log's launch mode), then its in-sample, held-out (fitted on
every other size, predicting the rest) and uncalibrated MAPE as calibrate reports them, and
`collsim compare` with that file against every other log of the same kind of machine.
Prints Markdown tables.

usage: tools/nccl_fit_check.py [COLLSIM]   (default ./build/tools/collsim; from the repository root)
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nccl_log_bands import FILTERS, MACHINES  # noqa: E402  (one list of the logs' machines)

# Logs of the same kind of machine (8 x H100 servers, one node or several on 400 Gb/s
# InfiniBand; 8 x A100), which one log's calibration should predict.
GROUPS = [["h100x8_all_reduce_default", "h100x8_all_reduce_ring"],
          ["a100x8_all_reduce_default"],
          ["h100_2x8_all_reduce_default", "h100_4x8_all_reduce_default",
           "h100_8x8_all_reduce_default", "h100_4x8_vm_all_reduce_default"]]


def topology_arg(log):
    t = MACHINES[log]
    return t if isinstance(t, str) else json.dumps(t)


def calibrate(collsim, log, out):
    cmd = [collsim, "calibrate", "--nccl-tests", f"data/nccl-tests/{log}.txt",
           "--topology", topology_arg(log), "--out", str(out)]
    if "nccl_algo" in FILTERS.get(log, {}):
        cmd += ["--nccl-algo", FILTERS[log]["nccl_algo"]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(Path(out).read_text())["fit"], ""


def compare(collsim, log, calibration, tmp):
    collective = {"name": "ar", "op": "all_reduce", "algorithm": "nccl", "bytes": "1GiB"}
    collective.update(FILTERS.get(log, {}))
    scenario = Path(tmp) / f"{log}.json"
    scenario.write_text(json.dumps({"topology": MACHINES[log], "collectives": [collective]}))
    cmd = [collsim, "compare", str(scenario), "--nccl-tests", f"data/nccl-tests/{log}.txt",
           "--format", "json"]
    if calibration:
        cmd += ["--calibration", str(calibration)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    doc = json.loads(r.stdout)
    steady = [abs(row["error_pct"]) for row in doc["rows"] if not row["disturbed"]]
    return doc["mape_pct"], sum(steady) / len(steady) if steady else float("nan")


def mapes(collsim, log, calibration, tmp):
    """'all sizes / undisturbed sizes' (docs/validation.md, "Disturbed sizes")."""
    every, steady = compare(collsim, log, calibration, tmp)
    return f"{every:.1f}% / {steady:.1f}%"


def main():
    collsim = sys.argv[1] if len(sys.argv) > 1 else "./build/tools/collsim"
    print("| fitted on | terms kept | in sample | held out | uncalibrated "
          "| predicts: MAPE all / undisturbed sizes (uncalibrated) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for group in GROUPS:
            for log in group:
                out = Path(tmp) / f"{log}.cal.json"
                fit, error = calibrate(collsim, log, out)
                if fit is None:
                    print(f"| {log} | refused: {error} | | | | |")
                    continue
                others = []
                for other in group:
                    if other != log:
                        others.append(f"{other}: {mapes(collsim, other, out, tmp)} "
                                      f"({mapes(collsim, other, None, tmp)})")
                print(f"| {log} | {fit['terms']} | {fit['mape_pct']:.1f}% | "
                      f"{fit['heldout_mape_pct']:.1f}% | {fit['defaults_mape_pct']:.1f}% | "
                      f"{'; '.join(others) or '-'} |")


if __name__ == "__main__":
    main()
