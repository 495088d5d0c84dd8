"""The Python module against the command line: the same documents, errors as exceptions."""
import json
import os
import pathlib
import subprocess

import pytest

import collsim

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "dgx-h100-allreduce.json"
# The command line next to the module: build/python/collsim*.so -> build/tools/collsim.
CLI = pathlib.Path(collsim.__file__).resolve().parents[1] / "tools" / "collsim"


def cli_json(*args):
    out = subprocess.run([str(CLI), *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_run_returns_what_the_cli_prints():
    assert collsim.run(str(SCENARIO)) == cli_json("run", str(SCENARIO), "--format", "json")


def test_run_streamed_returns_what_run_stream_prints(tmp_path):
    assert collsim.run(SCENARIO, stream=True) == cli_json("run", str(SCENARIO), "--stream",
                                                          "--format", "json")
    # As on the command line: the files of a streamed run are those of the stored run.
    collsim.run(SCENARIO, stream=True, out=tmp_path / "streamed")
    collsim.run(SCENARIO, out=tmp_path / "stored")
    names = sorted(p.name for p in (tmp_path / "stored").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "streamed").iterdir())
    for name in names:
        assert (tmp_path / "streamed" / name).read_bytes() == (tmp_path / "stored" / name).read_bytes()
    # A folded run plays one rank's ops: no files from it.
    with pytest.raises(collsim.InputError, match="--out"):
        collsim.run(SCENARIO, symmetry=True, out=tmp_path / "folded")
    assert not (tmp_path / "folded").exists()


def test_run_with_symmetry_returns_what_run_symmetry_prints():
    ring = {"topology": {"preset": "switch", "gpus": 64, "bandwidth": "450GB/s"},
            "network": {"model": "ideal", "alpha": "5us"},
            "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "ring",
                             "bytes": 64 * 4 * 1024}]}
    folded = collsim.run(ring, symmetry=True)
    note = folded["collectives"][0]["symmetry"]
    assert note.startswith("folded: 64 ranks alike")
    assert folded["collectives"][0]["schedule_digest"] is None
    plain = collsim.run(ring)
    del folded["collectives"][0]["symmetry"]
    folded["collectives"][0]["schedule_digest"] = plain["collectives"][0]["schedule_digest"]
    assert folded == plain


def test_run_takes_a_path_or_a_dict():
    doc = json.loads(SCENARIO.read_text())
    from_path = collsim.run(SCENARIO)  # a pathlib.Path is a path too
    from_dict = collsim.run(doc)
    # The dict has no file name, so the scenario is named "scenario"; the rest is equal.
    from_path.pop("scenario")
    from_dict.pop("scenario")
    assert from_dict == from_path
    assert from_path["collectives"][0]["time_s"] > 0


def test_a_dict_changes_what_runs():
    doc = json.loads(SCENARIO.read_text())
    small = dict(doc, collectives=[dict(doc["collectives"][0], bytes="1MiB")])
    big = dict(doc, collectives=[dict(doc["collectives"][0], bytes="1GiB")])
    # 1 GiB: 4.25 ms; 1 MiB: 74 us, mostly the 14 steps' alpha.
    assert collsim.run(big)["collectives"][0]["time_s"] > 50 * collsim.run(small)["collectives"][0]["time_s"]


def test_errors_carry_the_json_path():
    doc = {"topology": "dgx-h100", "collectives": [{"op": "all_reduce", "bytes": -5}]}
    with pytest.raises(collsim.InputError) as e:
        collsim.run(doc)
    assert e.value.path == "collectives[0].bytes"
    assert e.value.message.startswith('expected a size like "64MiB"')
    assert str(e.value) == e.value.path + ": " + e.value.message
    assert isinstance(e.value, ValueError)
    with pytest.raises(collsim.InputError, match="no such scenario file"):
        collsim.run("no/such/file.json")


def test_sweep_returns_what_the_cli_prints():
    args = dict(sizes="1MiB,16MiB", algorithms="ring,binomial_tree")
    expected = cli_json("sweep", str(SCENARIO), "--sizes", "1MiB,16MiB",
                        "--algorithms", "ring,binomial_tree", "--format", "json")
    assert collsim.sweep(SCENARIO, **args) == expected
    # Lists work as well as the CLI's comma strings.
    assert collsim.sweep(SCENARIO, sizes=[1 << 20, 16 << 20],
                         algorithms=["ring", "binomial_tree"]) == expected


def refs(value):
    """Every "$ref" under a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs(item)


def test_schema_returns_what_the_cli_prints():
    # The scenario schema with the topology schema inside: every reference local, so that
    # jsonschema.validate(doc, collsim.schema()) needs no other file.
    whole = collsim.schema()
    for ref in refs(whole):
        assert ref.startswith("#/")
        target = whole
        for part in ref[2:].split("/"):
            target = target[part]  # resolves inside the document
    cli = cli_json("schema")
    assert whole["properties"].keys() == cli["properties"].keys()
    topology = collsim.schema("topology")
    assert whole["definitions"]["topology"]["oneOf"] == topology["oneOf"]
    for name, definition in topology["definitions"].items():
        assert whole["definitions"][name] == definition
    assert collsim.schema("topology") == cli_json("schema", "topology")
    assert "ring" in collsim.schema()["definitions"]["algorithm"]["enum"]
    with pytest.raises(ValueError, match="scenario"):
        collsim.schema("workload")


def test_topology_summary():
    flat = collsim.topology("cluster-8x8")
    thin = collsim.topology("cluster-8x8-2to1")
    assert flat == cli_json("topo", "cluster-8x8", "--format", "json")
    assert flat["name"] != thin["name"]
    assert [t["kind"] for t in flat["tiers"]] == ["leaf", "spine"]
    assert flat["tiers"][0]["oversubscription"] == pytest.approx(1)
    assert thin["tiers"][0]["oversubscription"] == pytest.approx(2)
    assert flat["injection"]["scale_out_Bps"] == pytest.approx(50e9)
    # A scenario file gives its topology; so does a dict.
    assert collsim.topology(SCENARIO)["name"] == "dgx-h100"
    assert collsim.topology({"preset": "switch", "gpus": 4, "bandwidth": "10GB/s"})["gpus"] == 4
    with pytest.raises(collsim.InputError) as e:
        collsim.topology({"preset": "switch", "gpus": 0, "bandwidth": "10GB/s"})
    assert e.value.path == "topology.gpus"


def test_a_training_step_returns_what_the_cli_prints():
    workload = ROOT / "scenarios" / "workload-ddp-speedup.json"
    doc = collsim.run(workload)
    assert doc == cli_json("run", str(workload), "--format", "json")
    # 8 GPUs, 10 MB of gradients: 20 ms / 8 + 2 x 7 x (5 us + 10 MB / 8 / 25 GB/s).
    assert doc["workload"][0]["step_s"] == pytest.approx(2.5e-3 + 14 * (5e-6 + 10e6 / 8 / 25e9))
    # Where each step went, per GPU: compute, then the DP all-reduce not hidden behind it
    # (none is, without overlap), then the bubble; they add up to the step.
    for job in doc["workload"]:
        kinds = job["kinds"]
        assert [(k["category"], k["op"]) for k in kinds] == [
            ("compute", None), ("dp", "all_reduce"), ("bubble", None)]
        assert kinds[1]["exposed_s"] == pytest.approx(kinds[1]["busy_s"])
        assert sum(k["exposed_s"] for k in kinds) == pytest.approx(job["step_s"])
        assert sum(k["share"] for k in kinds) == pytest.approx(1)


@pytest.mark.parametrize("sizes", [[-5], [0], [2**62], [2**50 + 1], [2**70]])
def test_sweep_sizes_are_checked_as_the_cli_checks_them(sizes):
    with pytest.raises(collsim.InputError) as e:
        collsim.sweep(SCENARIO, sizes=sizes)
    assert e.value.path == "sizes[0]"


def test_sweep_refuses_more_sizes_than_a_sweep_takes():
    with pytest.raises(collsim.InputError, match="more than the 4096"):
        collsim.sweep(SCENARIO, sizes=list(range(1, 5000)))
    with pytest.raises(collsim.InputError, match="more than the 4096") as e:
        collsim.sweep(SCENARIO, sizes="1B..1TiB", step="x1.0000001")
    assert e.value.path == "step"


@pytest.mark.parametrize("call", [
    lambda: collsim.run(5),
    lambda: collsim.run([str(SCENARIO)]),
    lambda: collsim.sweep(SCENARIO, sizes=["1KiB"]),
    lambda: collsim.sweep(SCENARIO, sizes=5),
    lambda: collsim.sweep(SCENARIO, sizes=[True]),
    lambda: collsim.sweep(SCENARIO, algorithms=[1, 2]),
    lambda: collsim.topology(3.5),
])
def test_wrong_argument_types_raise_type_error(call):
    with pytest.raises(TypeError):
        call()


def test_a_bytes_path_is_a_path():
    assert collsim.run(os.fsencode(SCENARIO)) == collsim.run(SCENARIO)
    with pytest.raises(collsim.InputError) as e:
        collsim.run(b"/no/such/scenario.json")
    assert e.value.path == "/no/such/scenario.json"  # not b'/no/such/...'


def test_ctrl_c_stops_a_long_run_within_a_second(tmp_path):
    import signal
    import threading
    import time
    # A 4,096-GPU ring all-reduce: about 5 s of work (streamed), far past the signal.
    big = {"topology": {"preset": "switch", "gpus": 4096, "bandwidth": "450GB/s"},
           "network": {"model": "ideal"},
           "collectives": [{"name": "a", "op": "all_reduce", "bytes": "1GiB", "algorithm": "ring"}]}
    for delay in (0.2, 1.5):
        timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            collsim.run(big)
        assert time.monotonic() - started < delay + 1.0
    # The module is usable afterwards: the stop request was cleared.
    assert collsim.run(SCENARIO)["collectives"][0]["time_s"] > 0


def test_a_model_step_reports_its_end_to_end_mfu():
    # Llama 3 8B on one DGX H100, TP 2 x DP 4: the kernels' efficiency goes in ("mfu"),
    # the step's MFU comes out, model FLOPs over GPUs x peak x step.
    doc = collsim.run({"topology": "dgx-h100", "network": {"model": "flow"},
                       "workload": {"model": "llama3-8b", "mfu": 0.5, "tokens_per_gpu": 4096,
                                    "parallelism": {"tp": 2, "dp": 4}}})
    job = doc["workload"]
    assert job["mfu"] == 0.5
    assert job["end_to_end_mfu"] == pytest.approx(
        job["flops_per_step"] / (8 * 989e12 * job["step_s"]), rel=1e-12)
    assert job["tokens_per_s_per_gpu"] == pytest.approx(4096 / job["step_s"], rel=1e-12)
    assert 0.3 < job["end_to_end_mfu"] < 0.5


def test_plan_returns_what_the_cli_prints():
    scenario = ROOT / "scenarios" / "nccl-dgx-h100.json"
    assert collsim.plan(scenario) == cli_json("plan", str(scenario), "--format", "json")


def test_compare_with_an_nccl_tests_log_returns_what_the_cli_prints():
    scenario = ROOT / "scenarios" / "nccl-dgx-h100.json"
    log = ROOT / "data" / "nccl-tests" / "h100x8_all_reduce_ring.txt"
    doc = collsim.compare(scenario, nccl_tests=log, collective="forced-ring", sizes="1KiB:1GiB")
    assert doc == cli_json("compare", str(scenario), "--nccl-tests", str(log), "--collective",
                           "forced-ring", "--sizes", "1KiB:1GiB", "--format", "json")
    # One flat record per size, in the range asked for: what pandas.DataFrame takes.
    assert doc["rows"] and all(1024 <= r["bytes"] <= 1 << 30 for r in doc["rows"])
    assert all(isinstance(v, (int, float, str)) for r in doc["rows"] for v in r.values())
    with pytest.raises(collsim.InputError) as e:
        collsim.compare(scenario, nccl_tests=log, collective="no-such")
    assert "no-such" in str(e.value)


def test_workload_sweep_returns_what_the_cli_prints():
    scenario = ROOT / "scenarios" / "workload-ddp-buckets.json"
    doc = collsim.workload_sweep(scenario, set=["workload.bucket=10MB,25MB,100MB"])
    assert doc == cli_json("workload-sweep", str(scenario), "--set",
                           "workload.bucket=10MB,25MB,100MB", "--format", "json")
    assert len(doc["points"]) == 3
    with pytest.raises(collsim.InputError):
        collsim.workload_sweep(scenario)  # neither set nor splits
    # Every point refused (a misspelt field): bad input, as the CLI's exit status 2 says.
    with pytest.raises(collsim.InputError) as e:
        collsim.workload_sweep(scenario, set=["workload.nope=1,2"])
    assert e.value.path == "set" and "every point" in str(e.value)


def test_a_dict_with_nan_raises_input_error_naming_it():
    # json.dumps would write NaN, which the parser then refused at a column of text the
    # user never wrote; then json.dumps' own ValueError named the value but no field.
    doc = json.loads((ROOT / "scenarios" / "workload-ddp-buckets.json").read_text())
    doc["workload"]["compute"] = float("nan")
    with pytest.raises(collsim.InputError) as e:
        collsim.run(doc)
    assert e.value.path == "workload.compute" and "finite number" in e.value.message
    # The same for a topology given as a dict (it reported "malformed JSON at column 46").
    nan_switch = {"preset": "switch", "gpus": 4, "bandwidth": float("nan")}
    with pytest.raises(collsim.InputError) as e:
        collsim.topology(nan_switch)
    assert e.value.path == "bandwidth"
    log = ROOT / "data" / "nccl-tests" / "h100x8_all_reduce_default.txt"
    with pytest.raises(collsim.InputError) as e:
        collsim.calibrate(log, topology=nan_switch)
    assert e.value.path == "bandwidth"
    # A value of no JSON type (a set) raised json.dumps' TypeError, naming no field.
    with pytest.raises(collsim.InputError) as e:
        collsim.topology({"preset": "ring", "gpus": 8, "bandwidth": {1, 2}})
    assert e.value.path == "bandwidth" and "set" in e.value.message


def test_a_negative_gpu_count_for_a_log_is_refused_as_the_cli_refuses_it():
    # ranks=-1 was taken for "not given"; the CLI's --ranks takes 1 to 2^20.
    log = ROOT / "data" / "nccl-tests" / "h100x8_all_reduce_default.txt"
    for call in (lambda: collsim.calibrate(log, topology="dgx-h100", ranks=-7),
                 lambda: collsim.compare(ROOT / "scenarios" / "nccl-dgx-h100.json",
                                         nccl_tests=log, ranks=-1)):
        with pytest.raises(collsim.InputError) as e:
            call()
        assert e.value.path == "ranks" and "1 to 1048576" in str(e.value)
    # Past int's range: pybind's "incompatible function arguments" before.
    for call in (lambda: collsim.compare(ROOT / "scenarios" / "nccl-dgx-h100.json",
                                         nccl_tests=log, ranks=2**40),
                 lambda: collsim.sweep(ROOT / "scenarios" / "nccl-dgx-h100.json",
                                       ranks=[2**40])):
        with pytest.raises(collsim.InputError) as e:
            call()
        assert e.value.path == "ranks" and "1099511627776" in str(e.value)


def test_calibrate_writes_what_the_cli_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # the same date in both
    log = ROOT / "data" / "nccl-tests" / "h100x8_all_reduce_default.txt"
    cli_file = tmp_path / "cli.json"
    subprocess.run([str(CLI), "calibrate", "--nccl-tests", str(log), "--topology", "dgx-h100",
                    "--out", str(cli_file)], check=True, capture_output=True)
    py_file = tmp_path / "py.json"
    doc = collsim.calibrate(log, topology="dgx-h100", out=py_file)
    assert doc == json.loads(cli_file.read_text())
    assert py_file.read_bytes() == cli_file.read_bytes()
    assert doc["fit"]["heldout_mape_pct"] < doc["fit"]["defaults_mape_pct"]
    # The file is a calibration compare takes: fitted on this log, it predicts it better.
    scenario = {"topology": "dgx-h100",
                "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "nccl",
                                 "bytes": "1GiB"}]}
    fitted = collsim.compare(scenario, nccl_tests=log, calibration=py_file)
    plain = collsim.compare(scenario, nccl_tests=log)
    assert fitted["mape_pct"] < plain["mape_pct"]
    with pytest.raises(collsim.InputError) as e:
        collsim.calibrate([log], topology="dgx-h100", terms="launch,speed")
    assert e.value.path == "terms" and "speed" in str(e.value)
    # NCCL held to a protocol, as the CLI's --nccl-proto: recorded, and fitted under it.
    held = collsim.calibrate(log, topology="dgx-h100", nccl_proto="simple")
    assert held["provenance"]["nccl_proto"] == "simple"
    assert held["fit"]["defaults_mape_pct"] != doc["fit"]["defaults_mape_pct"]
    with pytest.raises(collsim.InputError) as e:
        collsim.calibrate(log, topology="dgx-h100", algorithm="ring", nccl_proto="simple")
    assert e.value.path == "nccl_proto"


@pytest.mark.parametrize("scenario", ["dgx-h100-allreduce.json", "workload-ddp-buckets.json"])
def test_run_writes_what_run_out_writes(tmp_path, scenario):
    path = ROOT / "scenarios" / scenario
    subprocess.run([str(CLI), "run", str(path), "--out", str(tmp_path / "cli")], check=True,
                   capture_output=True)
    doc = collsim.run(path, out=tmp_path / "py")
    cli_files = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert "report.html" in cli_files
    assert sorted(p.name for p in (tmp_path / "py").iterdir()) == cli_files
    for name in cli_files:
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert doc == json.loads((tmp_path / "cli" / "result.json").read_text())


def test_a_file_name_that_is_not_utf8_runs_and_is_named(tmp_path):
    # os.fsdecode's surrogates could not be cast to C++; the CLI ran the same file.
    scenario = os.fsencode(tmp_path) + b"/sc\xff.json"
    with open(scenario, "wb") as f:
        f.write((ROOT / "scenarios" / "dgx-h100-allreduce.json").read_bytes())
    cli = subprocess.run([str(CLI).encode(), b"run", scenario, b"--format", b"json"],
                         check=True, capture_output=True)
    assert collsim.run(scenario) == json.loads(cli.stdout)
    assert collsim.run(os.fsdecode(scenario)) == json.loads(cli.stdout)
    with pytest.raises(collsim.InputError) as e:
        collsim.run(os.fsencode(tmp_path) + b"/none\xff.json")
    assert e.value.message == "no such scenario file"


def test_ctrl_c_stops_this_call_and_not_another_threads():
    # One flag for the process stopped the call running on another thread too.
    import signal
    import threading
    big = {"topology": {"preset": "switch", "gpus": 2048, "bandwidth": "100GB/s"},
           "network": {"model": "flow"},
           "collectives": [{"name": "x", "op": "all_to_all", "algorithm": "pairwise",
                            "bytes": "64MiB"}]}
    outcome = {}

    def other():
        try:
            outcome["doc"] = collsim.run(big)
        except BaseException as e:  # noqa: B902 - what it raised is the finding
            outcome["error"] = e

    thread = threading.Thread(target=other)
    thread.start()
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            collsim.run(big)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    thread.join()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["doc"]["collectives"][0]["name"] == "x"



def test_sweep_of_a_workload_and_a_dict_where_only_a_path_goes():
    # sweep on a scenario of a workload only said "no collective named ''", where the CLI
    # points at workload-sweep; a dict for a log was refused as "a path ... or a dict".
    with pytest.raises(collsim.InputError) as e:
        collsim.sweep(ROOT / "scenarios" / "workload-ddp-buckets.json")
    assert e.value.path == "collectives" and "workload-sweep" in e.value.message
    with pytest.raises(TypeError) as t:
        collsim.compare(ROOT / "scenarios" / "nccl-dgx-h100.json", nccl_tests={"results": []})
    assert "or a dict" not in str(t.value)


@pytest.mark.parametrize("step", ["x1", "banana", "x0.5"])
def test_sweep_step_is_checked_beside_a_list_of_sizes(step):
    # The CLI refuses --step x1 beside a list; the list once ran with any step.
    with pytest.raises(collsim.InputError) as e:
        collsim.sweep(SCENARIO, sizes=[1024, 4096], step=step)
    assert e.value.path == "step"


def test_a_dict_that_holds_itself_or_nests_too_deep_is_refused():
    # Each once took the interpreter down (SIGSEGV) or raised RecursionError.
    scenario = json.loads(SCENARIO.read_text())
    scenario["collectives"][0]["extra"] = scenario
    with pytest.raises(collsim.InputError, match="nested deeper than 64"):
        collsim.run(scenario)
    deep = []
    for _ in range(100000):
        deep = [deep]
    scenario = json.loads(SCENARIO.read_text())
    scenario["collectives"][0]["bytes"] = deep
    with pytest.raises(collsim.InputError, match="nested deeper than 64") as e:
        collsim.run(scenario)
    assert e.value.path.startswith("collectives[0].bytes[0][0]")
    with pytest.raises(collsim.InputError, match="nested deeper than 64"):
        collsim.topology({"preset": deep})


def test_a_path_with_a_nul_byte_is_refused_not_cut_short():
    # The file system would read "...allreduce.json" and run it.
    with pytest.raises(collsim.InputError, match="NUL byte") as e:
        collsim.run(str(SCENARIO) + "\x00.other")
    assert e.value.path == "scenario"
