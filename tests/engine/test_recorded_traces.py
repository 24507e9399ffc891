"""GPU-only paths (Triton kernels, CUDA-graph decisions) tested on real logs recorded on an H200 with torch 2.11
(tests/fixtures/traces-h200-torch2.11/README.md says how each was made). No GPU and no compile needed."""

import os

import pytest

from contract.vocab import CONFIGS
from engine.logtap import load_torch_logs, load_trace_log
from engine.measure.compile_metrics import compile_seconds, timeline
from engine.readers.dynamo_log import parse_graph_breaks, parse_recompiles
from engine.readers.inductor_log import group_output_code, parse_fusion_log, parse_kernels
from engine.stages.runtime.cudagraphs import cudagraph_status

TRACES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "traces-h200-torch2.11")


def trace(name):
    return load_trace_log(os.path.join(TRACES, f"{name}.trace.log"))


def logs(name):
    return load_torch_logs(os.path.join(TRACES, f"{name}.torch_logs.txt"))


def test_seed_on_gpu_is_one_triton_kernel_with_its_source_nodes():
    (output,) = group_output_code(trace("seed_default"))
    (kernel,) = parse_kernels(output, "seed_default.py")
    assert kernel["name"] == "triton_poi_fused_add_cos_mul_sin_tanh_0" and kernel["language"] == "triton"
    assert kernel["source_nodes"] == ["sin", "cos", "mul", "tanh", "add"]
    assert kernel["aten_ops"] == ["aten.sin", "aten.cos", "aten.mul", "aten.tanh", "aten.add"]
    assert "@triton.jit" in kernel["source"] and kernel["provenance"] == "source-node comment"
    assert [line["line"] for line in kernel["source_lines"]] == [2]


def test_training_trace_has_forward_and_backward_triton_kernels():
    outputs = group_output_code(trace("mlp_train_bf16"))
    assert [o["kind"] for o in outputs] == ["forward", "backward"]
    kernels = [k for o in outputs for k in parse_kernels(o, "mlp_train_bf16.py")]
    assert {k["graph_kind"] for k in kernels} == {"forward", "backward"}
    assert all(k["language"] == "triton" for k in kernels)
    assert all(k["source_nodes"] for k in kernels if k["graph_kind"] == "forward")
    # Some backward kernels carry no source-node comment, and torch 2.11 writes no backward provenance: a live
    # run then falls back to the buffers each kernel writes (test_examples); a bare trace file cannot.
    commented = [k for k in kernels if k["provenance"] == "source-node comment"]
    assert len(commented) == 6 and all(k["source_nodes"] for k in commented)
    gelu_backward = next(k for k in kernels if k["name"] == "triton_poi_fused_gelu_gelu_backward_view_2")
    assert gelu_backward["writes"] == ["buf13"]


def test_fusion_log_becomes_decisions_with_reasons():
    records = logs("mlp_train_bf16")["fusion"]
    decisions = parse_fusion_log([{**r, "graph_kind": None} for r in records], {})
    fused = [d for d in decisions if d["action"] == "fused"]
    refused = [d for d in decisions if d["action"] == "not_fused"]
    assert ("op0", "op1") in {(d["first"], d["second"]) for d in fused}
    assert {"no shared data", "intermediate nodes between node1 & node2"} <= {d["reason"] for d in refused}
    repeated = next(d for d in refused if (d["first"], d["second"]) == ("op16", "op17"))
    assert repeated["count"] == 3  # deduplicated, with how often it was logged


def test_cudagraph_skip_reason_is_reported():
    texts = [r["text"] for r in logs("input_mutation_cudagraph_skip")["cudagraphs"]]
    status = cudagraph_status("cuda", "inductor_reduce_overhead", texts, skips=1)
    assert status["status"] == "skipped" and "mutated inputs" in status["reason"] and "buf.add_(1)" in status["reason"]
    used = [r["text"] for r in logs("seed_reduce_overhead")["cudagraphs"]]
    assert cudagraph_status("cuda", "inductor_reduce_overhead", used, skips=0)["status"] == "used"
    assert cudagraph_status("cpu", "inductor_reduce_overhead", [], 0)["status"] == "not_applicable"
    assert cudagraph_status("cuda", "inductor_max_autotune", used, skips=0)["status"] == "used"
    assert cudagraph_status("cuda", "inductor_default", used, skips=0)["status"] == "not_requested"


def test_the_configs_that_use_cuda_graphs_are_the_modes_torch_turns_them_on_for():
    """mode="max-autotune" turns on CUDA graph trees as "reduce-overhead" does: its rung must mark each step (an
    H100 run without it: a noisy 0.10-0.52 ms seed step and a peak memory of 0 bytes)."""
    from torch._inductor import list_mode_options

    for config in CONFIGS.values():
        torch_says = bool(config.mode and list_mode_options(config.mode).get("triton.cudagraphs"))
        assert config.cudagraphs == torch_says, config.name
    assert CONFIGS["inductor_max_autotune"].cudagraph_steps("cuda")
    assert not CONFIGS["inductor_max_autotune"].cudagraph_steps("cpu")


def test_graph_breaks_and_recompiles_from_the_gpu_run():
    events = trace("graph_break")
    breaks = parse_graph_breaks(
        [e for e in events if e["event"] == "artifact:dynamo_graph_break_reason"], "graph_break.py"
    )
    assert len(breaks) == 2 and all(b["line"] for b in breaks)
    events = trace("recompile")
    recompiles = parse_recompiles([e for e in events if e["event"] == "artifact:recompile_reasons"], [])
    assert "size mismatch at index 0" in recompiles[0]["reason"]
    assert any("dtype mismatch" in r["reason"] or "float64" in r["reason"] for r in recompiles[1:])


@pytest.mark.parametrize("name", ["seed_default", "mlp_train_bf16"])
def test_compile_time_and_timeline_from_gpu_metrics(name):
    events = trace(name)
    forward = [e["metadata"] for e in events if e["event"] == "compilation_metrics"]
    backward = [e["metadata"] for e in events if e["event"] == "bwd_compilation_metrics"]
    seconds = compile_seconds(forward, backward)
    assert seconds["total"] > seconds["codegen"] > 0
    spans = timeline([e for e in events if e["event"] == "chromium_event" and e["payload"]])
    assert spans[0]["start_ms"] == 0 and all(s["dur_ms"] >= 0 for s in spans)
    assert {"dynamo", "entire_frame_compile"} <= {s["name"] for s in spans}


def test_an_imported_torch_2_11_log_names_its_torch_version():
    """torch 2.11 logs no torch_version artifact (2.13 does): the versions come from each compile's
    compilation_metrics, so the report (and the diff page's side) names torch 2.11."""
    from engine.traceimport import import_trace

    (report,) = import_trace(os.path.join(TRACES, "graph_break.trace.log"), "graph_break.trace.log")
    environment = report["environment"]
    assert environment["torch_version"] == "2.11.0+cu130"
    assert (environment["triton_version"], environment["cuda_version"], environment["python_version"]) == (
        "3.6.0",
        "13.0",
        "3.12.3",
    )
    cpu_213 = os.path.join(TRACES, "..", "traces-cpu-torch2.13", "graph_break.trace.log")
    (report,) = import_trace(cpu_213, "graph_break.trace.log")
    assert report["environment"]["torch_version"] == "2.13.0+cu130"  # from its torch_version artifact
