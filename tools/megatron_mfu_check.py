#!/usr/bin/env python3
"""Megatron-LM's weak-scaling table against collsim, with one row's kernel efficiency.

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", Table 1: GPT models from 1.7B to 1T parameters on up to 3072 A100s (Selene:
DGX A100 nodes, NVLink 300 GB/s a direction, eight 200 Gb/s HDR NICs per node), sequence
2048, vocabulary 51200, full activation recomputation, TFLOP/s per GPU counted with their
formula 96 B s l h^2 (1 + s/6h + V/16lh) (recomputation included).

The kernel efficiency (the scenario's "mfu") is fitted on ONE row (--row, default the
first) so that the simulated TFLOP/s per GPU matches it; every other row is then predicted
with that efficiency, nothing else fitted. Assumed where the table is silent: micro-batches
of one sequence (m = B / DP), plain 1F1B, gradients all-reduced after the backward in one
buffer (Megatron 2021 did not overlap them), tied embeddings. A row whose step is over
collsim's task bound simulates fewer data-parallel replicas (each replica's step is the
same; the DP all-reduce's ring then has fewer members: 2(K-1)/K of the traffic per GPU
instead of the real K's) and the table says how many. Prints a Markdown table.

usage: tools/megatron_mfu_check.py [--row NAME] [COLLSIM]   (from the repository root)
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PEAK = 312e12  # A100 dense bf16
SEQ, VOCAB = 2048, 51200
# name, heads, hidden, layers, tp, pp, gpus, batch (sequences), TFLOP/s per GPU, % of peak
ROWS = [
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137, 44),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138, 44),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142, 46),
    ("18B", 48, 6144, 40, 8, 1, 256, 1024, 135, 43),
    ("39B", 64, 8192, 48, 8, 2, 512, 1536, 138, 44),
    ("76B", 80, 10240, 60, 8, 4, 1024, 1792, 140, 45),
    ("145B", 96, 12288, 80, 8, 8, 1536, 2304, 148, 47),
    ("310B", 128, 16384, 96, 8, 16, 1920, 2160, 155, 50),
    ("530B", 128, 20480, 105, 8, 35, 2520, 2520, 163, 52),
    ("1T", 160, 25600, 128, 8, 64, 3072, 3072, 163, 52),
]


def paper_flops(row):
    """Their FLOPs per step (recomputation counted, the head once)."""
    _, _, h, l, _, _, _, batch, _, _ = row
    return 96 * batch * SEQ * l * h * h * (1 + SEQ / (6 * h) + VOCAB / (16 * l * h))


def scenario(row, efficiency, dp):
    name, heads, h, l, tp, pp, gpus, batch, _, _ = row
    real_dp = gpus // (tp * pp)
    micro = batch // real_dp if pp > 1 else 1  # without PP the split changes nothing timed
    nodes = max(1, (tp * pp * dp + 7) // 8)
    return {
        "name": f"megatron-{name}",
        "topology": {"preset": "cluster", "nodes": nodes, "gpus_per_node": 8, "gpu": "a100"},
        "network": {"model": "flow"},
        "workload": {
            "model": {"name": f"gpt-{name}", "layers": l, "hidden": h, "heads": heads,
                      "vocab": VOCAB, "sequence": SEQ, "tied_embeddings": True},
            "gpu": "a100", "mfu": efficiency,
            "tokens_per_gpu": batch * SEQ // gpus,
            "overlap": False, "bucket": None,
            "parallelism": {"tp": tp, "pp": pp, "dp": dp, "micro_batches": micro,
                            "recompute": "full", "sequence_parallel": False},
        },
    }


def run(collsim, doc, tmp):
    path = Path(tmp) / "scenario.json"
    path.write_text(json.dumps(doc))
    r = subprocess.run([collsim, "run", str(path), "--format", "json"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(r.stdout)["workload"], ""


def simulate(collsim, row, efficiency, tmp):
    """The step at the largest number of replicas collsim builds: (TFLOP/s per GPU, DP, job)."""
    real_dp = row[6] // (row[4] * row[5])
    tried = []
    for dp in sorted({real_dp, 32, 16, 8, 4, 2, 1}, reverse=True):
        if dp > real_dp:
            continue
        job, err = run(collsim, scenario(row, efficiency, dp), tmp)
        if job:
            return paper_flops(row) / (row[6] * job["step_s"]) / 1e12, dp, job
        tried.append(err.splitlines()[-1] if err else "?")
    raise RuntimeError(f"even at dp 1: {tried[-1].split(': ', 2)[-1].split(';')[0]}")


def fit(collsim, row, tmp):
    """The kernel efficiency at which the row's simulated TFLOP/s is the published one."""
    target = row[8]
    e0, e1 = 0.4, 0.6
    t0 = simulate(collsim, row, e0, tmp)[0]
    for _ in range(8):
        t1 = simulate(collsim, row, e1, tmp)[0]
        if abs(t1 - target) < 1e-4 * target:
            break
        e0, e1, t0 = e1, e1 + (target - t1) * (e1 - e0) / (t1 - t0), t1
    return e1


def main():
    args = sys.argv[1:]
    row_name = ROWS[0][0]
    if args[:1] == ["--row"]:
        row_name, args = args[1], args[2:]
    collsim = args[0] if args else "./build/tools/collsim"
    fitted_row = next(r for r in ROWS if r[0] == row_name)
    with tempfile.TemporaryDirectory() as tmp:
        efficiency = fit(collsim, fitted_row, tmp)
        print(f"kernel efficiency fitted on {row_name}: {100 * efficiency:.1f}% of peak\n")
        print("| model | TP | PP | DP (simulated) | micro-batches | published TFLOP/s (% of peak) "
              "| predicted TFLOP/s (% of peak) | off | end-to-end MFU (model FLOPs) | bubble | exposed comm |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        errors = []
        for row in ROWS:
            name, _, _, _, tp, pp, gpus, _, tflops, pct = row
            try:
                predicted, dp, job = simulate(collsim, row, efficiency, tmp)
            except RuntimeError as e:
                print(f"| {name} | {tp} | {pp} | - | - | {tflops} ({pct}%) | not simulated: {e} | | | | |")
                continue
            off = 100 * (predicted / tflops - 1)
            if row is not fitted_row:
                errors.append(abs(off))
            micro = job["parallelism"]["micro_batches"]
            step = job["step_s"]
            print(f"| {name}{' (fitted)' if row is fitted_row else ''} | {tp} | {pp} "
                  f"| {gpus // (tp * pp)} ({dp}) | {micro} | {tflops} ({pct}%) "
                  f"| {predicted:.0f} ({100 * predicted * 1e12 / PEAK:.0f}%) | {off:+.1f}% "
                  f"| {100 * job['end_to_end_mfu']:.1f}% | {100 * job['idle_s'] / step:.1f}% "
                  f"| {100 * job['exposed_comm_s'] / step:.1f}% |")
        if errors:
            print(f"\nmean |off| over the {len(errors)} predicted rows: "
                  f"{sum(errors) / len(errors):.1f}%, largest {max(errors):.1f}%")


if __name__ == "__main__":
    main()
