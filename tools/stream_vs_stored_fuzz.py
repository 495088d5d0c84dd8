#!/usr/bin/env python3
"""Differential fuzzing of the streamed run: random small scenarios (switch, DGX and cluster
topologies, every collective and algorithm, subsets of ranks, channels, "after" relations,
the three network models and routings), each run as `collsim run --out A` (stored, under
the size where run streams by itself) and `collsim run --stream --out B`. Every file and
the table must be the same bytes, and both runs must succeed or fail alike. Prints each
scenario that differs, then a count.

usage: tools/stream_vs_stored_fuzz.py [COLLSIM [FIRST_SEED [SECONDS]]]   (from the repository root)
"""
import filecmp
import os
import sys

from fuzz_common import OPS, document, failed, loop, network, run, valid_algorithms

COLLSIM = sys.argv[1] if len(sys.argv) > 1 else "./build/tools/collsim"
VALID = valid_algorithms(COLLSIM)


def topology(rng):
    k = rng.choice(["switch", "cluster", "dgx", "cluster1"])
    if k == "switch":
        return {"preset": "switch", "gpus": rng.randint(1, 24), "bandwidth": rng.choice(["50GB/s", "450GB/s"])}
    if k == "dgx":
        return "dgx-h100"
    if k == "cluster1":
        return {"preset": "cluster", "nodes": rng.randint(2, 12), "gpus_per_node": 1, "radix": 8,
                "spines": rng.choice([1, 2, 4])}
    return {"preset": "cluster", "nodes": rng.randint(1, 6), "gpus_per_node": rng.choice([2, 4, 8]),
            "radix": rng.choice([4, 8, 64]), "spines": rng.choice([1, 2])}


def gpus_of(t):
    if t == "dgx-h100":
        return 8
    if t["preset"] == "switch":
        return t["gpus"]
    return t["nodes"] * t.get("gpus_per_node", 8)


def scenario(rng):
    t = topology(rng)
    n = gpus_of(t)
    cols = []
    for i in range(rng.randint(1, 5)):
        c = {"name": f"c{i}", "op": rng.choice(OPS)}
        a = rng.choice(VALID[c["op"]] + [None])
        if a:
            c["algorithm"] = a
        if c["op"] != "barrier":
            c["bytes"] = rng.choice([0, 4, 100, 4096, 65536, 1 << 20, 3 << 20, 12345676])
        if rng.random() < 0.4 and n > 1:
            m = rng.randint(1, n)
            c["ranks"] = sorted(rng.sample(range(n), m)) if rng.random() < 0.5 else rng.sample(range(n), m)
        if c.get("algorithm") == "ring" and rng.random() < 0.5:
            c["channels"] = rng.choice([1, 2, 3, "auto"])
        if c.get("algorithm") not in (None, "nccl") and rng.random() < 0.15:
            c["protocol"] = rng.choice(["LL", "LL128", "Simple"])
        if i > 0 and rng.random() < 0.5:
            c["after"] = rng.sample([f"c{j}" for j in range(i)], rng.randint(0, i))
        cols.append(c)
    net = network(rng, ["ideal", "flow", "packet"], routing_chance=0.3)
    return document(rng, t, n, net, cols)



def same_dirs(a, b):
    fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
    if fa != fb:
        return f"files differ: {fa} vs {fb}"
    for f in fa:
        if not filecmp.cmp(a / f, b / f, shallow=False):
            return f"{f} differs"
    return None


def compare(doc, d, rng):
    tt = str(rng.choice([200000, 300]))
    a = run(COLLSIM, ["run", "s.json", "--out", "a", "--trace-transfers", tt], d)
    b = run(COLLSIM, ["run", "s.json", "--stream", "--out", "b", "--trace-transfers", tt], d)
    why = failed(a, b, excused="may overlap")
    if why:
        return why
    return same_dirs(d / "a", d / "b") or ("stdout differs" if a.stdout != b.stdout else "same")


if __name__ == "__main__":
    loop(int(sys.argv[2]) if len(sys.argv) > 2 else 1,
         float(sys.argv[3]) if len(sys.argv) > 3 else 300, scenario, compare)
