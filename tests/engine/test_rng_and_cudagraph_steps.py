"""Randomness compared honestly (issue 18 item 5) and steps that do what a user's CUDA-graph training loop does
(item 4, the CPU half: the GPU half is bench/cudagraph_training.py). Real torch; one Inductor job, shared."""

import textwrap

import pytest
import torch

from engine.job import JobRequest, run_job
from engine.stages.runtime import accuracy
from engine.stages.runtime.workload import SEED, Workload, trainable_params

DROPOUT_TRAINING = """
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Dropout(0.5), torch.nn.Linear(64, 8))
    example_inputs = (torch.randn(16, 32),)
    train = True
"""


@pytest.fixture(scope="module")
def dropout_job(tmp_path_factory):
    report = run_job(
        JobRequest(
            code=textwrap.dedent(DROPOUT_TRAINING),
            filename="model.py",
            configs=["eager", "aot_eager", "inductor_default"],
            warm_compile=False,  # what is checked here is the capture process's
        ),
        job_dir=str(tmp_path_factory.mktemp("dropout_training")),
    )
    assert report["status"] == "ok", report["failure"]
    return {b["config"]: b for b in report["runtime"]["benchmarks"]}, report


def within_tolerance(c: dict) -> bool:
    """allclose's bound on the largest error: |a - e| <= atol + rtol * max|e| (max|e| = abs / rel)."""
    ref_max = c["max_abs_error"] / c["max_rel_error"] if c["max_rel_error"] else 0.0
    return c["max_abs_error"] <= c["atol"] + c["rtol"] * ref_max


def test_inductor_dropout_is_checked_on_eagers_random_stream_and_matches_within_tolerance(dropout_job):
    rungs, report = dropout_job
    assert report["runtime"]["correctness"]["uses_rng"] is True
    inductor = rungs["inductor_default"]["correctness"]
    assert inductor["verdict"] == "match", inductor
    assert "fallback_random = True" in inductor["random_stream"]
    assert within_tolerance(inductor) and within_tolerance(inductor["gradients"]), inductor
    aot = rungs["aot_eager"]["correctness"]
    assert aot["verdict"] == "match" and "seeded alike" in aot["random_stream"]
    assert rungs["eager"]["correctness"]["random_stream"] is None


def test_the_timed_inductor_compile_keeps_inductors_own_rng(dropout_job):
    """The recorded (timed) compile was made with fallback_random off: its kernels draw Inductor's random numbers
    (a seeds/random kernel or op), not eager's bernoulli fallback."""
    _, report = dropout_job
    sources = " ".join((k.get("source") or "") + k["name"] for k in report["inductor"]["kernels"])
    assert "rand" in sources or "seed" in sources, [k["name"] for k in report["inductor"]["kernels"]]
    assert torch._inductor.config.fallback_random is False


def _dropout_workload():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Dropout(0.5), torch.nn.Linear(64, 8))
    return Workload(model, [(torch.randn(16, 32),)], True, None, "cpu")


def test_outputs_drawn_from_another_random_stream_never_read_match():
    """The reading issue 18 saw: dropout outputs from another stream (here eager under another seed, as Inductor's
    Philox gives) passed the float64 check, whose run draws its own numbers too, and read `match` beside an error
    of 7.9. A model that draws random numbers is judged by allclose alone."""
    workload = _dropout_workload()
    reference = accuracy.Reference(workload)
    assert reference.uses_rng
    other = workload.fresh()
    _, outs, grads = workload.compared_step(other.model, other, seed=SEED + 7)
    result = reference.judge(outs, grads)
    assert result["verdict"] == "mismatch" and not result["fp64_checked"], result
    assert result["max_abs_error"] > result["atol"]


def test_without_a_same_stream_check_an_inductor_rung_of_a_random_model_is_not_comparable():
    workload = _dropout_workload()
    reference = accuracy.Reference(workload)
    same = workload.fresh()
    _, outs, grads = workload.compared_step(same.model, same)
    judged = reference.judge(outs, grads)
    assert judged["verdict"] == "match"  # even equal values are no verdict when the streams were not the same
    why = "torch 9.9 has no torch._inductor.config.fallback_random"
    verdict = accuracy.rung_verdict(judged, reference, "inductor", (False, why))
    assert verdict["verdict"] == "not_comparable" and why in verdict["reason"]
    checked = accuracy.rung_verdict(judged, reference, "inductor", (True, "same stream"))
    assert checked["verdict"] == "match" and checked["random_stream"] == "same stream"


def test_fallback_random_backend_reports_a_torch_without_the_option(monkeypatch):
    import torch._inductor.config as inductor_config

    backend, why = accuracy.fallback_random_backend("reduce-overhead")
    assert callable(backend) and why is None
    monkeypatch.delattr(inductor_config, "fallback_random")
    backend, why = accuracy.fallback_random_backend(None)
    assert backend is None and "fallback_random" in why and torch.__version__ in why


@pytest.mark.parametrize("shift", [0.0, 5e-5, 2e-3, 1.0])
def test_a_match_always_means_every_error_within_its_tolerance(shift):
    expected = [torch.randn(64, 64), torch.randn(10)]
    actual = [expected[0] + shift, expected[1]]
    result = accuracy.compare(actual, expected, None)
    assert (result["verdict"] == "match") == within_tolerance(result), result


def test_each_input_set_is_a_step_of_a_users_cudagraph_loop(monkeypatch):
    """Under reduce-overhead every input set starts with cudagraph_mark_step_begin() (counted through the real
    function) and with the gradients of every leaf it writes set to None, inputs that require grad included: a
    gradient kept across replays would be read after the next replay overwrote it."""
    calls = []
    real = torch.compiler.cudagraph_mark_step_begin
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: (calls.append(1), real())[1])
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    sets = [(torch.randn(3, 8, requires_grad=True),), (torch.randn(5, 8, requires_grad=True),)]
    workload = Workload(model, sets, True, None, "cpu")
    inst = workload.fresh()
    with workload.grad_mode():
        workload.run_steps(inst.model, inst, 3, cudagraph_steps=True)
    assert len(calls) == 3 * len(sets)
    last_x = inst.inputs[-1][0]
    assert torch.allclose(last_x.grad, model.weight.detach().sum(0).expand_as(last_x))  # one set's, not summed
    _, _, grads = workload.compared_step(inst.model, inst, cudagraph_steps=True)
    x0, x1 = (a[0].detach() for a in inst.inputs)
    assert torch.allclose(grads["weight"], (x0.sum(0) + x1.sum(0)).expand(4, 8))  # the sum over the sets
    assert len(calls) == 4 * len(sets)


def test_a_functions_weights_in_its_globals_and_closure_take_gradients():
    w = torch.randn(4, 4, requires_grad=True)
    layer = torch.nn.Linear(4, 4)

    def f(x):
        return layer(x @ w)

    assert sorted(name for name, _ in trainable_params(f)) == ["layer.bias", "layer.weight", "w"]
