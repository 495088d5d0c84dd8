#!/usr/bin/env python3
"""Differential fuzzing of the fold: random small scenarios where ranks may be alike (rings and
all-to-alls on switches, rings of GPUs, tori, DGX servers, clusters of every width with one or
several spines, every routing) and where they are not quite (a slow or late link, a subset or
a shuffled order of ranks, a skewed MoE all-to-all, an oversubscribed leaf, a cost model), each
run as `collsim run --symmetry --format json` and `collsim run --stream --format json`; and
training steps (a small model in every split of tp x pp x dp, every pipeline and ZeRO stage,
or the minimal form) folded by their replicas against the whole step. The fold must give the
full run's document bit for bit, less the schedule digest (null folded) and the line that
says what was folded; where the network breaks the symmetry it must run whole. Prints each
scenario that differs, then a count.

usage: tools/symmetry_fuzz.py [COLLSIM [FIRST_SEED [SECONDS [steps]]]]   (from the repository root;
       `steps`: training steps only)
"""
import json
import sys

from fuzz_common import document, failed, loop, network, run

COLLSIM = sys.argv[1] if len(sys.argv) > 1 else "./build/tools/collsim"
STEPS_ONLY = len(sys.argv) > 4 and sys.argv[4] == "steps"
BANDWIDTHS = ["25GB/s", "50GB/s", "450GB/s"]


def explicit_switch(rng, gpus):
    """A switch written out link by link: one link may be slower or later than the rest."""
    nodes = [{"name": "sw", "kind": "nvswitch"}] + [{"name": f"g{i}", "kind": "gpu"} for i in range(gpus)]
    links = [{"src": f"g{i}", "dst": "sw", "bandwidth": "50GB/s", "kind": "nvlink"} for i in range(gpus)]
    odd = rng.randrange(gpus)
    if rng.random() < 0.5:
        links[odd]["bandwidth"] = "40GB/s"
    else:
        links[odd]["latency"] = "1us"
    return {"nodes": nodes, "links": links}


def topology(rng):
    k = rng.choice(["switch", "explicit", "ring", "torus", "dgx", "cluster", "cluster", "cluster"])
    if k == "switch":
        t = {"preset": "switch", "gpus": rng.randint(1, 20), "bandwidth": rng.choice(BANDWIDTHS)}
        if rng.random() < 0.3:
            t["latency"] = "0.5us"
        return t, t["gpus"]
    if k == "explicit":
        g = rng.randint(2, 12)
        return explicit_switch(rng, g), g
    if k == "ring":
        g = rng.randint(2, 12)
        return {"preset": "ring", "gpus": g, "bandwidth": "50GB/s",
                "bidirectional": rng.random() < 0.7}, g
    if k == "torus":
        dims = [rng.randint(2, 4), rng.randint(2, 4)]
        return {"preset": "torus", "dims": dims, "bandwidth": "50GB/s"}, dims[0] * dims[1]
    if k == "dgx":
        g = rng.choice([2, 4, 8])
        return {"preset": "dgx-h100", "gpus_per_node": g}, g
    t = {"preset": "cluster", "nodes": rng.randint(1, 12), "gpus_per_node": rng.choice([1, 2, 4, 8]),
         "radix": rng.choice([4, 6, 8, 16, 64]), "spines": rng.choice([1, 2, 4])}
    if rng.random() < 0.2:
        t["oversubscription"] = 2
    if rng.random() < 0.2:
        t["nic_latency"] = "1us"
    if rng.random() < 0.15:
        t["pod_nodes"] = rng.choice([2, 4])
    if rng.random() < 0.25:  # switches that reduce: NCCL's pick may be CollNet or NVLS across hosts
        t["sharp"] = True
    return t, t["nodes"] * t["gpus_per_node"]


def ranks(rng, n):
    """Mostly every rank in order; else a subset, or every rank shuffled."""
    r = rng.random()
    if r < 0.7 or n < 2:
        return None
    if r < 0.85:
        return sorted(rng.sample(range(n), rng.randint(1, n)))
    return rng.sample(range(n), n)


def collective(rng, i, n):
    op = rng.choice(["all_reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                     "broadcast"])
    c = {"name": f"c{i}", "op": op, "bytes": rng.choice([4, 100, 4096, 65536, 1 << 20, 3 << 20 | 4])}
    if op in ("all_reduce", "all_gather", "reduce_scatter"):
        c["algorithm"] = rng.choice(["ring", "ring", "ring", "nccl"])
        if c["algorithm"] == "ring" and rng.random() < 0.5:
            c["channels"] = rng.choice([1, 2, 3, 4, "auto"])
        if c["algorithm"] == "ring" and rng.random() < 0.2:
            c["protocol"] = rng.choice(["LL", "LL128", "Simple"])
    elif op == "all_to_all":
        c["algorithm"] = rng.choice(["direct", "pairwise", "nccl"])
        if rng.random() < 0.25 and n >= 2:  # routed tokens: uniform, or a hot expert
            del c["bytes"]
            c["routing"] = {"tokens_per_rank": 64, "bytes_per_token": 1024, "experts": n}
            if rng.random() < 0.5:
                load = [1.0 / n] * n
                load[0] += 0.5
                c["routing"]["expert_load"] = [x / sum(load) for x in load]
    members = ranks(rng, n)
    if members is not None:
        c["ranks"] = members
    return c


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def workload(rng, n):
    """A training job on every GPU: the model form (a small dense model, tp x pp x dp = n,
    every pipeline, ZeRO, sequence parallelism) or the minimal form (every rank a replica)."""
    algorithm = rng.choice(["", "ring", "ring", "nccl"])
    if rng.random() < 0.3:
        w = {"gradients": rng.choice(["4MiB", "64MiB", "100000000"]), "compute": "2ms",
             "bucket": rng.choice(["1MiB", "8MiB", "25MB"]), "overlap": rng.random() < 0.8}
    else:
        tp = rng.choice(divisors(n))
        pp = rng.choice(divisors(n // tp))
        par = {"dp": n // tp // pp, "tp": tp, "pp": pp, "micro_batches": rng.choice([1, 2, 4])}
        pipeline = rng.choice(["1f1b", "gpipe", "interleaved"])
        if pipeline == "interleaved" and pp > 1:
            par.update(pipeline=pipeline, virtual_stages=2, micro_batches=2 * pp)
        elif pipeline != "interleaved":
            par["pipeline"] = pipeline
        par["zero"] = rng.choice([0, 0, 1, 2, 3])
        par["sequence_parallel"] = tp > 1 and rng.random() < 0.5
        w = {"model": {"layers": rng.randint(1, 4), "hidden": rng.choice([256, 1024]),
                       "vocab": 8000, "sequence": 512},
             "gpu": "h100", "mfu": 0.5, "tokens_per_gpu": rng.choice([512, 2048]),
             "bucket": rng.choice(["1MiB", "8MiB"]), "parallelism": par}
    if algorithm:
        w["algorithm"] = algorithm
    return w


def scenario(rng):
    t, n = topology(rng)
    net = network(rng, ["ideal", "flow", "flow", "packet"], routing_chance=0.5)
    if n >= 2 and (STEPS_ONLY or rng.random() < 0.3):  # a training step, by its replicas
        doc = document(rng, t, n, net, [])
        del doc["collectives"]
        doc["workload"] = workload(rng, n)
        return doc
    cols = [collective(rng, i, n) for i in range(rng.randint(1, 3))]
    return document(rng, t, n, net, cols)


def without_fold_marks(text):
    """The document less what a fold leaves out or adds: the digest and the notes."""
    doc = json.loads(text)
    doc.pop("symmetry", None)  # a training step's
    for c in doc.get("collectives", []):
        c.pop("schedule_digest", None)
        c.pop("symmetry", None)
    return doc


def compare(doc, d, rng):
    a = run(COLLSIM, ["run", "s.json", "--symmetry", "--format", "json"], d)
    b = run(COLLSIM, ["run", "s.json", "--stream", "--format", "json"], d)
    why = failed(a, b)
    if why:
        return why
    folded_doc = json.loads(a.stdout)
    folded = [c.get("symmetry", "") for c in folded_doc.get("collectives", [])]
    folded = [f for f in folded + [folded_doc.get("symmetry", "")] if f.startswith("folded")]
    if without_fold_marks(a.stdout) == without_fold_marks(b.stdout):
        if folded_doc.get("symmetry", "").startswith("folded"):
            return "step folded"
        return "folded" if folded else "same, run whole"
    return "documents differ; " + "; ".join(folded)


if __name__ == "__main__":
    loop(int(sys.argv[2]) if len(sys.argv) > 2 else 1,
         float(sys.argv[3]) if len(sys.argv) > 3 else 300, scenario, compare,
         agreed=("folded", "step folded", "same, run whole"))
