"""Memory per rung (issue 23 item 3), on real torch: each rung's peak per step and, in training, the bytes autograd
saved for backward, against sizes that follow from the model itself (which tensors an op keeps for its backward,
which intermediates a fused kernel never allocates)."""

import os

import pytest

from contract.report import validate_report
from engine.cli import summary
from engine.stages.runtime.memory import CPU_METHOD
from tests.engine.conftest import run_code

CHAIN = os.path.join(os.path.dirname(__file__), "..", "fixtures", "models", "activation_chain.py")
BATCH, D, HIDDEN = 512, 256, 1024  # activation_chain.py's example input and sizes
ACTIVATION = BATCH * HIDDEN * 4  # one float32 intermediate of the chain
MIB = 1 << 20


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    """The activation chain with 2 and with 4 links, trained under eager and aot_eager: {links: memory by config}."""
    with open(CHAIN) as f:
        code = f.read()
    memory = {}
    for links in (2, 4):
        report, _ = run_code(
            tmp_path_factory.mktemp(f"chain{links}"),
            code + f"\nmodel = ActivationChain(links={links})\n",
            configs=["eager", "aot_eager"],
            warm_compile=False,
        )
        assert report["status"] == "ok", report.get("failure")
        validate_report(report)
        memory[links] = {m["config"]: m for m in report["debug"]["memory"]}
        memory[links]["_summary"] = summary(report)
    return memory


def test_eager_saves_three_intermediates_per_link_of_the_chain(chains):
    # sin and cos each save their input (one storage, counted once), the product saves both factors: every link
    # keeps three new B x H tensors alive until backward.
    eager = {links: chains[links]["eager"]["saved_for_backward"] for links in (2, 4)}
    assert eager[4]["bytes"] - eager[2]["bytes"] == 2 * 3 * ACTIVATION, eager
    # The up-projection's output and the 3 per link, then at most the input and the two weights besides.
    parameters_and_input = (2 * D * HIDDEN + BATCH * D) * 4
    for links, saved in eager.items():
        activations = (1 + 3 * links) * ACTIVATION
        assert activations <= saved["bytes"] <= activations + parameters_and_input, (links, saved)


def test_the_partitioner_saves_less_than_eager_and_the_step_peaks_lower(chains):
    for links, memory in chains.items():
        eager, compiled = memory["eager"], memory["aot_eager"]
        # The terminal says it too (python -m engine explore), in MB as the pages do.
        ratio = compiled["compression_ratio"]
        assert f"aot_eager {compiled['peak_bytes'] / 1e6:.3g} MB ({ratio:.3g}x less than eager)" in memory["_summary"]
        assert eager["method"] == compiled["method"] == CPU_METHOD and eager["error"] is compiled["error"] is None
        # The eager step holds every saved intermediate at once before its backward frees them.
        assert eager["peak_bytes"] >= (1 + 3 * links) * ACTIVATION, eager
        # The chain is recomputed in the backward instead of saved: at most the chain's input and output remain.
        assert compiled["saved_for_backward"]["bytes"] < eager["saved_for_backward"]["bytes"] / 2, memory
        assert compiled["saved_ratio"] == pytest.approx(
            eager["saved_for_backward"]["bytes"] / compiled["saved_for_backward"]["bytes"], rel=1e-3
        )
        assert compiled["peak_bytes"] < eager["peak_bytes"] and compiled["compression_ratio"] > 1, memory
        assert eager["compression_ratio"] == eager["saved_ratio"] == 1.0


def test_inference_rungs_have_a_peak_and_nothing_saved_and_fusion_allocates_no_intermediate(seed):
    # The seed: sin(x) * cos(x) + tanh(x) on a 1024 x 1024 float32 x. Eager allocates sin, cos and their product
    # before the first two are freed; Inductor's one fused kernel allocates the output alone.
    output = 1024 * 1024 * 4
    memory = {m["config"]: m for m in seed["debug"]["memory"]}
    assert list(memory) == [b["config"] for b in seed["runtime"]["benchmarks"]]
    assert all(m["saved_for_backward"] is None and m["saved_ratio"] is None for m in memory.values())
    assert memory["eager"]["peak_bytes"] >= 3 * output
    for config in ("inductor_default", "inductor_reduce_overhead"):  # no CUDA graphs on the CPU: a measured step
        fused = memory[config]
        assert output <= fused["peak_bytes"] < 1.5 * output, fused
        assert fused["compression_ratio"] >= 2, fused


def test_a_rung_that_failed_says_why_it_has_no_memory(tmp_path):
    code = """import torch


def my_backend(gm, example_inputs):
    raise RuntimeError("no")


backend = my_backend
model = torch.nn.Linear(8, 8)
example_inputs = (torch.randn(4, 8),)
"""
    report, _ = run_code(tmp_path, code, configs=["eager"], warm_compile=False)
    memory = {m["config"]: m for m in report["debug"]["memory"]}
    assert memory["user:my_backend"]["peak_bytes"] is None
    assert memory["user:my_backend"]["error"] == "the rung failed before it could run a step"
    assert memory["eager"]["peak_bytes"] > 0 and memory["eager"]["error"] is None
