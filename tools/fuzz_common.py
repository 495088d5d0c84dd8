"""What the differential fuzzers (tools/*_fuzz.py) share: running collsim on a scenario in a
scratch folder, the algorithms each collective accepts, and the loop over seeds for a time.
"""
import json
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

OPS = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "scatter", "gather",
       "all_to_all", "send_recv", "barrier"]


# Cost models beyond alpha-beta: launch and per-op overhead, a size curve, a host's memory
# shared by its transfers (flow: a constraint of the max-min solver), slower NVLink.
COSTS = [{"launch_s": "3us", "op_overhead_s": "0.2us"},
         {"bandwidth_curve": [[1, 5e9], [1 << 20, 40e9]]},
         {"host_memory": [[1, 60e9], [1 << 20, 30e9]]},
         {"links": {"nvlink": {"efficiency": 0.8, "latency_s": "0.5us"}}}]


def network(rng, models, routing_chance):
    """A random "network": the model, alpha, sometimes a routing (else the default, auto),
    packet options, a cost model."""
    net = {"model": rng.choice(models), "alpha": rng.choice(["0us", "1us", "5us"])}
    if rng.random() < routing_chance:
        net["routing"] = rng.choice(["auto", "ecmp", "single", "dmodk"])
    if net["model"] == "packet":
        net["packet"] = rng.choice(["4KiB", "64KiB"])
        if rng.random() < 0.5:
            net["switching"] = "cut_through"
    if rng.random() < 0.25:
        net["cost"] = rng.choice(COSTS)
    return net


def document(rng, topology, gpus, net, collectives):
    """The scenario, sometimes launched as nccl-tests -g N launches (one process, N GPUs)."""
    doc = {"topology": topology, "network": net, "collectives": collectives}
    if rng.random() < 0.1:
        doc["launch"] = {"gpus_per_process": min(gpus, 8)}
    return doc


def failed(a, b, excused=""):
    """Two runs that did not both succeed: None when both did; "refused" when both failed,
    or one did with `excused` in its message; else what each said."""
    if a.returncode == 0 and b.returncode == 0:
        return None
    if (a.returncode == 0) == (b.returncode == 0) or (excused and excused in a.stderr + b.stderr):
        return "refused"
    return (f"rc {a.returncode}/{b.returncode}\n  a: {a.stderr.strip()[:200]}\n"
            f"  b: {b.stderr.strip()[:200]}")


def run(collsim, args, cwd):
    return subprocess.run([os.path.abspath(collsim)] + args, capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def valid_algorithms(collsim):
    """Each collective's algorithms, as collsim's error for an unknown one lists them."""
    valid = {}
    with tempfile.TemporaryDirectory() as d:
        for op in OPS:
            doc = {"topology": {"preset": "switch", "gpus": 4},
                   "collectives": [{"name": "a", "op": op, "algorithm": "?", "bytes": 64}]}
            (Path(d) / "q.json").write_text(json.dumps(doc))
            err = run(collsim, ["run", "q.json"], d).stderr
            valid[op] = [a.strip() for a in err.strip().split("available: ")[-1].split(",")]
    return valid


def loop(seed0, seconds, scenario, compare, agreed=("same",)):
    """For `seconds`, from seed `seed0` on: `scenario(rng)` makes a document, written to
    s.json in a scratch folder, and `compare(doc, folder, rng)` says how the two runs agreed
    (one of `agreed`), "refused", or why they differ. Prints each that differs, with its
    document, then a count of each."""
    end = time.time() + seconds
    counts = {a: 0 for a in agreed} | {"refused": 0, "differ": 0}
    seed = seed0
    while time.time() < end:
        rng = random.Random(seed)
        doc = scenario(rng)
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "s.json").write_text(json.dumps(doc))
            verdict = compare(doc, Path(d), rng)
        if verdict in counts:
            counts[verdict] += 1
        else:
            counts["differ"] += 1
            print(f"seed {seed}: {verdict}")
            print(json.dumps(doc), flush=True)
        seed += 1
    n = sum(counts.values())
    same = ", ".join(f"{counts[a]} {a}" for a in agreed)
    print(f"{n} scenarios: {same}, {counts['refused']} refused by one or both, "
          f"{counts['differ']} differ (seeds {seed0}..{seed - 1})")
