"""Bisect a mismatch (issue 23 item 2), on real torch: a model whose Inductor compile is broken on purpose in one
known post-grad pass (tests/fixtures/models/broken_pass.py) is bisected by the job to that pass; torch itself, with
the pass turned off by name, confirms it. A rung that matches is never bisected."""

import os
import re
import runpy
import time

import pytest
import torch

from contract.report import validate_report
from engine.cli import summary
from tests.engine.conftest import run_code

BROKEN_PASS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "models", "broken_pass.py")


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    with open(BROKEN_PASS) as f:
        code = f.read()
    report, events = run_code(
        tmp_path_factory.mktemp("broken_pass"),
        code,
        configs=["eager", "aot_eager", "inductor_default"],
        warm_compile=False,
    )
    assert report["status"] == "ok", report.get("failure")
    validate_report(report)
    return report, events


def test_the_ladder_sees_the_mismatch_the_pass_makes(broken):
    report, _ = broken
    verdicts = {b["config"]: b["correctness"]["verdict"] for b in report["runtime"]["benchmarks"]}
    assert verdicts == {"eager": "match", "aot_eager": "match", "inductor_default": "mismatch"}
    # The user's pass ran inside the recorded compile too (pt2scope's own hook in that slot calls it first).
    (graph,) = report["inductor"]["post_grad_graphs"]
    assert "aten.mul" not in graph["ops"] and graph["ops"].get("aten.add", 0) >= 2, graph["ops"]


def test_the_bisector_names_the_broken_pass(broken):
    report, events = broken
    bisect = report["runtime"]["bisect"]
    assert bisect["config"] == "inductor_default" and bisect["verdict"] == "mismatch"
    assert (bisect["status"], bisect["backend"], bisect["subsystem"]) == ("found", "inductor", "post_grad_passes")
    assert bisect["debug_info"] == "post_grad_custom_post_pass" and bisect["bisect_number"] > 0
    assert bisect["graph_id"] == "postgrad-0"  # the recorded graph the pass acted on
    assert "post_grad_custom_post_pass" in bisect["text"] and "post_grad_passes" in bisect["text"]
    # Every backend before Inductor matched; Inductor with the post-grad passes off matched; with them on it broke.
    backends = [s for s in bisect["steps"] if s["subsystem"] is None]
    assert [s["passed"] for s in backends] == [True] * (len(backends) - 1) + [False]
    assert backends[0]["backend"] == "eager" and backends[-1]["backend"] == "inductor"
    steps = bisect["steps"]
    assert any(s["subsystem"] == "post_grad_passes" and s["passed"] for s in steps)
    assert any(s["subsystem"] == "post_grad_passes" and not s["passed"] for s in steps)
    assert [(e["stage"], e["state"]) for e in events if e.get("stage") == "bisect"] == [
        ("bisect", "started"),
        ("bisect", "finished"),
    ]
    assert "bisect: inductor_default breaks in Inductor, subsystem post_grad_passes" in summary(report)
    # Each step reaches the progress page as it ends, in words.
    said = [e["text"] for e in events if e["event"] == "message" and e["text"].startswith("bisect ")]
    assert len(said) == len(steps) and said[0].startswith("bisect inductor_default, step 1: eager: matches eager (")
    assert any(": inductor, post_grad_passes off or cut short: breaks (" in text for text in said), said


def test_torch_agrees_the_pass_is_the_cause():
    slot = torch._inductor.config.post_grad_custom_post_pass
    try:
        namespace = runpy.run_path(BROKEN_PASS)  # puts its pass into Inductor's config: restored below
        outputs = compiled_with_and_without_the_pass(namespace["model"], namespace["example_inputs"])
    finally:
        torch._inductor.config.post_grad_custom_post_pass = slot
        torch._dynamo.reset()
    expected, broken, mended = outputs
    assert not torch.allclose(broken, expected, atol=1e-4)
    torch.testing.assert_close(mended, expected)


def compiled_with_and_without_the_pass(model, inputs):
    with torch.no_grad():
        expected = model(*inputs)
        torch._dynamo.reset()
        broken = torch.compile(model)(*inputs)
        torch._dynamo.reset()
        with torch._inductor.config.patch(disabled_passes="post_grad_custom_post_pass"):
            mended = torch.compile(model)(*inputs)
    return expected, broken, mended


def test_a_ladder_that_matches_is_not_bisected(seed):
    assert {b["correctness"]["verdict"] for b in seed["runtime"]["benchmarks"]} == {"match"}
    assert seed["runtime"]["bisect"] is None
    assert not [e for e in seed["_events"] if e.get("stage") == "bisect"]


def test_a_bisect_out_of_time_stops_in_words_and_leaves_the_job_its_time():
    from types import SimpleNamespace

    from engine.stages.base import Context
    from engine.stages.runtime.bisect import RESERVE_SHARE, bisect_rung

    ctx = Context(user_file="model.py", device="cpu", train=False, tap=None, emit=lambda event: None)
    limit = 100.0
    job = SimpleNamespace(
        state=SimpleNamespace(ctx=ctx),
        request={"time_limit_s": limit},
        started=time.monotonic() - limit * (1 - RESERVE_SHARE) + 5,  # 5 s left of the bisect's share
        stall=SimpleNamespace(mark=lambda: None),
    )
    entry = {
        "config": "inductor_default",
        "status": "ok",
        "first_call_ms": 3000.0,
        "correctness": {"verdict": "mismatch"},
    }
    result = bisect_rung(job, entry)  # the first step would take about 3 s, twice that is past the share
    assert result["status"] == "stopped" and result["steps"] == []
    assert result["text"].startswith("Stopped after 0 steps: the bisect may use 75% of the job's 100 s")


def test_the_minifier_cuts_the_graph_to_the_op_the_pass_breaks(broken):
    report, _ = broken
    minified = report["runtime"]["bisect"]["minified"]
    assert minified["status"] == "minified", minified["text"]
    # sin and cos are computed right; the multiply the pass turns into an add is what differs: it alone remains,
    # fed by its two inputs.
    assert minified["ops"] == {"_operator.mul": 1} and minified["nodes_after"] == 1
    assert minified["nodes_before"] == 4  # sin, cos, mul, add
    assert re.search(
        r'def forward\(self, \w+: "f32\[64, 64\]\[64, 1\]cpu", \w+: "f32\[64, 64\]\[64, 1\]cpu"\)', minified["code"]
    )
    assert minified["queries"] > 1 and minified["text"].startswith(
        "A graph of 1 node (_operator.mul), cut from one of 4"
    )
    assert "minified: A graph of 1 node" in summary(report)
