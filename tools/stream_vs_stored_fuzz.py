#!/usr/bin/env python3
"""Differential fuzzing of the streamed run: random small scenarios (switch, DGX and cluster
topologies, every collective and algorithm, subsets of ranks, channels, "after" relations,
the three network models and routings), each run as `collsim run --out A` (stored, under
the size where run streams by itself) and `collsim run --stream --out B`. Every file and
the table must be the same bytes, and both runs must succeed or fail alike. Prints each
scenario that differs, then a count.

usage: tools/stream_vs_stored_fuzz.py [COLLSIM [FIRST_SEED [SECONDS]]]   (from the repository root)
"""
import json, random, subprocess, sys, tempfile, filecmp, os, time
from pathlib import Path

COLLSIM = sys.argv[1] if len(sys.argv) > 1 else "./build/tools/collsim"
OPS = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "scatter", "gather",
       "all_to_all", "send_recv", "barrier"]




def valid_algorithms():
    """Each collective's algorithms, as collsim's error for an unknown one lists them."""
    valid = {}
    with tempfile.TemporaryDirectory() as d:
        for op in OPS:
            doc = {"topology": {"preset": "switch", "gpus": 4},
                   "collectives": [{"name": "a", "op": op, "algorithm": "?", "bytes": 64}]}
            (Path(d) / "q.json").write_text(json.dumps(doc))
            err = subprocess.run([os.path.abspath(COLLSIM), "run", "q.json"], capture_output=True,
                                 text=True, cwd=d).stderr
            valid[op] = [a.strip() for a in err.strip().split("available: ")[-1].split(",")]
    return valid


VALID = valid_algorithms()


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
        if i > 0 and rng.random() < 0.5:
            c["after"] = rng.sample([f"c{j}" for j in range(i)], rng.randint(0, i))
        cols.append(c)
    net = {"model": rng.choice(["ideal", "flow", "packet"]), "alpha": rng.choice(["0us", "1us", "5us"])}
    if rng.random() < 0.3:
        net["routing"] = rng.choice(["ecmp", "single", "dmodk"])
    if net["model"] == "packet":
        net["packet"] = rng.choice(["4KiB", "64KiB"])
    return {"topology": t, "network": net, "collectives": cols}


def run(args, cwd):
    return subprocess.run([os.path.abspath(COLLSIM)] + args, capture_output=True, text=True, cwd=cwd, timeout=120)


def same_dirs(a, b):
    fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
    if fa != fb:
        return f"files differ: {fa} vs {fb}"
    for f in fa:
        if not filecmp.cmp(a / f, b / f, shallow=False):
            return f"{f} differs"
    return None


def main():
    seed0 = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 300
    end = time.time() + seconds
    n = ok = refused = 0
    seed = seed0
    while time.time() < end:
        rng = random.Random(seed)
        doc = scenario(rng)
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            (d / "s.json").write_text(json.dumps(doc))
            tt = str(rng.choice([200000, 300]))
            a = run(["run", "s.json", "--out", "a", "--trace-transfers", tt], d)
            b = run(["run", "s.json", "--stream", "--out", "b", "--trace-transfers", tt], d)
            n += 1
            if a.returncode != 0 or b.returncode != 0:
                if (a.returncode == 0) != (b.returncode == 0) and "may overlap" not in b.stderr:
                    print(f"seed {seed}: rc {a.returncode}/{b.returncode}\n  a: {a.stderr.strip()[:200]}\n  b: {b.stderr.strip()[:200]}")
                    print(json.dumps(doc))
                refused += 1
            else:
                why = same_dirs(d / "a", d / "b")
                if why or a.stdout != b.stdout:
                    print(f"seed {seed}: {why or 'stdout differs'}")
                    print(json.dumps(doc))
                else:
                    ok += 1
        seed += 1
    print(f"{n} scenarios, {ok} identical, {refused} refused by one or both (seeds {seed0}..{seed - 1})")


main()
