"""The user's own backends (issue 23 item 4, issue 22 item 5), on real torch: each is a rung of the ladder, timed and
checked like the built-in configs, and every call is in the report's debug section (the graph received, with the
user's lines on its nodes; the example inputs; what it returned, printed or raised, at the user's line)."""

import pytest

from contract.report import validate_report
from tests.engine.conftest import run_code

# Line numbers matter: the tests name them.
CODE = """import torch


def print_ops(gm, example_inputs):
    print("ops:", [str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
    return gm.forward


def doubled(gm, example_inputs):
    return lambda *args: [2 * out for out in gm(*args)]


def broken(gm, example_inputs):
    raise ValueError("this backend refuses")


def not_a_function(gm, example_inputs):
    return 3


def f(x, y):
    a = torch.sin(x) + y
    return torch.relu(a) * 2


model = f
example_inputs = (torch.randn(4, 8), torch.randn(8))
backend = print_ops
backends = {"doubled": doubled, "broken": broken, "not_a_function": not_a_function}
"""


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    report, events = run_code(tmp_path_factory.mktemp("user_backends"), CODE, configs=["eager", "backend_eager"])
    assert report["status"] == "ok", report["failure"]
    return report, events


@pytest.fixture(scope="module")
def report(job):
    return job[0]


def _benchmarks(report):
    return {b["config"]: b for b in report["runtime"]["benchmarks"]}


def _backend(report, name):
    return next(b for b in report["debug"]["user_backends"] if b["name"] == name)


def test_each_user_backend_is_a_rung_after_the_requested_configs(job):
    report, events = job
    validate_report(report)
    assert [b["config"] for b in report["runtime"]["benchmarks"]] == [
        "eager",
        "backend_eager",
        "user:print_ops",
        "user:doubled",
        "user:broken",
        "user:not_a_function",
    ]
    rungs = _benchmarks(report)
    assert rungs["user:print_ops"]["status"] == "ok" and rungs["user:print_ops"]["correctness"]["verdict"] == "match"
    assert rungs["user:print_ops"]["median_ms"] > 0 and rungs["user:print_ops"]["speedup"]["value"] > 0
    # Its outputs are twice eager's: judged a mismatch like any rung's.
    assert rungs["user:doubled"]["status"] == "ok" and rungs["user:doubled"]["correctness"]["verdict"] == "mismatch"
    assert rungs["user:broken"]["status"] == "failed"
    assert rungs["user:broken"]["error"] == "ValueError: this backend refuses (model.py:14)"
    assert rungs["user:not_a_function"]["status"] == "failed"
    assert "returned int, not a callable" in rungs["user:not_a_function"]["error"]
    # Progress names each user rung's benchmark like a built-in one.
    benchmark_events = {e.get("config") for e in events if e["stage"] == "benchmark"}
    assert {"user:print_ops", "user:doubled", "user:broken"} <= benchmark_events


def test_each_call_records_the_graph_it_received_with_the_users_lines(report):
    backend = _backend(report, "print_ops")
    assert backend["rung"] == "user:print_ops" and backend["function"] == "print_ops" and backend["line"] == 4
    (call,) = backend["calls"]
    assert call["status"] == "ok" and call["returned"] == "gm.forward (the graph it received, run as it is)"
    graph = report["debug"]["backend_graphs"][int(call["graph"].removeprefix("backend-"))]
    # The graph is the one Dynamo captured of f: its torch calls, each at the user's line.
    assert [n["target"] for n in graph["nodes"] if n["op"] == "call_function"] == [
        "torch.sin",
        "_operator.add",
        "torch.relu",
        "_operator.mul",
    ]
    assert {n["line"] for n in graph["nodes"] if n["op"] == "call_function"} == {22, 23}
    assert call["ops"] == {"_operator.add": 1, "_operator.mul": 1, "torch.relu": 1, "torch.sin": 1}
    assert [(i["kind"], i["shape"], i["stride"], i["dtype"], i["device"]) for i in call["inputs"]] == [
        ("tensor", [4, 8], [8, 1], "float32", "cpu"),
        ("tensor", [8], [1], "float32", "cpu"),
    ]
    # What it printed, per call (torch's own str of each target).
    assert call["printed"].startswith("ops: [") and "sin" in call["printed"] and "relu" in call["printed"]


def test_an_error_inside_a_backend_is_named_at_the_users_line(report):
    (call,) = _backend(report, "broken")["calls"]
    assert call["status"] == "failed" and call["line"] == 14
    assert call["error"] == "ValueError: this backend refuses (model.py:14)"
    assert 'File "model.py", line 14, in broken' in call["traceback"]
    (returned_int,) = _backend(report, "not_a_function")["calls"]
    assert returned_int["status"] == "failed" and "not a callable" in returned_int["error"]
    doubled = _backend(report, "doubled")["calls"][0]
    assert doubled["returned"].startswith("a function doubled.<locals>.<lambda> (model.py:10)")


def test_the_recorded_dynamo_graph_and_ladder_verdict_are_the_built_in_ones(report):
    """User rungs sit beside the ladder eager -> dynamo -> aot -> inductor: they never name its divergent stage."""
    assert report["runtime"]["correctness"]["first_divergent_stage"] is None
    assert [v["config"] for v in report["runtime"]["correctness"]["ladder"]] == ["backend_eager"]
    assert len(report["dynamo"]["graphs"]) == 1


def test_a_backend_that_is_not_a_function_is_refused_at_its_line(tmp_path):
    code = "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = (torch.randn(1, 2),)\nbackend = 'inductor'\n"
    report, _ = run_code(tmp_path, code, configs=["eager"])
    failure = report["failure"]
    assert failure["kind"] == "bad_value" and failure["line"] == 4
    assert "`backend` (model.py:4) must be a function fn(gm, example_inputs)" in failure["message"]
    assert "built-in backends are chosen as configs on the form" in failure["message"]
