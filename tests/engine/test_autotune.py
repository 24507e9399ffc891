"""Autotuning shown (runtime.autotune) on the CPU, real jobs: max-autotune weighs Inductor's C++ GEMM templates
against the library kernel (tests/fixtures/models/frozen_linear.py). The oracle for "chosen" is the code Inductor
generated: the winner is what the output code calls. FLOP counts per node against torch's own FlopCounterMode."""

import os

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils.flop_counter import FlopCounterMode

from engine.stages.inductor import node_flops
from tests.engine.conftest import run_code

MODELS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "models")


@pytest.fixture(scope="module")
def frozen_linear(tmp_path_factory):
    with open(os.path.join(MODELS, "frozen_linear.py")) as f:
        report, _ = run_code(
            tmp_path_factory.mktemp("frozen"), f.read(), configs=["eager", "inductor_max_autotune"], warm_compile=False
        )
    assert report["status"] == "ok", report["failure"]
    return report


def test_max_autotune_lists_every_candidate_per_layer_and_the_one_inductor_used(frozen_linear):
    decisions = frozen_linear["runtime"]["autotune"]
    assert len(decisions) == 2  # one per linear layer
    code = "\n".join(o["code"] for o in frozen_linear["inductor"]["output_code"])
    for decision, k in zip(decisions, [256, 512]):
        assert decision["config"] == "inductor_max_autotune" and decision["kind"] == "algorithm"
        kinds = {c["kind"] for c in decision["choices"]}
        assert kinds == {"library", "template"}, decision
        assert any(f"[64, {k}]" in size for size in decision["inputs"]), decision["inputs"]
        times = [c["ms"] for c in decision["choices"]]
        assert times == sorted(times) and all(t > 0 for t in times)
        [chosen] = [c for c in decision["choices"] if c["chosen"]]
        assert chosen is decision["choices"][0]
        if chosen["kind"] == "template":  # the template's kernel is generated under its name
            assert chosen["name"] in code
        else:
            assert "_mkl_linear" in code or "mkl" in code
    assert "inductor.autotune_choices" not in {u["name"] for u in frozen_linear["unavailable"]}


def test_a_job_without_autotuning_records_none(seed):
    """The seed's default and reduce-overhead rungs on the CPU: one C++ kernel, nothing to compare."""
    assert seed["runtime"]["autotune"] == []


def test_node_flops_agree_with_torch_flop_counter():
    a, b = torch.randn(32, 64), torch.randn(64, 16)

    def f(a, b):
        return torch.relu(torch.mm(a, b)).sum(dim=1)

    graph = make_fx(f, tracing_mode="fake")(a, b).graph
    counts = node_flops(graph)
    with FlopCounterMode(display=False) as counter:
        f(a, b)
    by_op = {n.target.overloadpacket.__name__: counts[n.name] for n in graph.nodes if n.name in counts}
    assert by_op["mm"] == (counter.get_total_flops(), "formula")
    assert by_op["relu"] == (32 * 16, "estimate: one per element")
    assert by_op["sum"] == (32 * 16, "estimate: one per element")  # a reduction: the elements it reads


def test_node_flops_of_a_symbolic_size_are_unknown():
    graph = make_fx(lambda x: torch.sin(x) + 1, tracing_mode="symbolic")(torch.randn(8, 4)).graph
    counts = node_flops(graph)
    assert counts and all(c.flops is None for c in counts.values())


INDUCTOR_SEEN = """
import sys
import torch


def model(x):
    print("inductor imported:", "torch._inductor.select_algorithm" in sys.modules)
    return torch.relu(x)


example_inputs = (torch.randn(8),)
"""


def test_a_job_without_an_inductor_rung_never_imports_inductors_autotuning(tmp_path):
    """Watching autotuning imports Inductor's algorithm selection (1.3 s on this CPU): an eager and aot_eager job's
    model, called after the recorded compile, still finds it unimported (its last print)."""
    report, _ = run_code(tmp_path, INDUCTOR_SEEN, configs=["eager", "aot_eager"])
    assert report["status"] == "ok", report["failure"]
    printed = report["user_output"]["stdout"].strip().splitlines()
    assert len(printed) > 3 and printed[-1] == "inductor imported: False", printed[-5:]
    assert report["runtime"]["autotune"] == []
