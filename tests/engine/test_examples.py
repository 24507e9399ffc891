"""The issue's acceptance cases on real torch, CPU: each example's report holds what torch.compile really did."""

import json

from contract.report import SCHEMA_VERSION
from contract.vocab import job_plan
from tests.engine.conftest import NO_INDUCTOR


def test_seed_yields_one_graph_no_breaks_and_one_fused_kernel(seed):
    assert seed["status"] == "ok", seed["failure"]
    assert len(seed["dynamo"]["graphs"]) == 1
    assert seed["dynamo"]["graph_breaks"] == []
    kernels = seed["inductor"]["kernels"]
    assert len(kernels) == 1
    kernel = kernels[0]
    assert kernel["language"] == "cpp"
    assert {"sin", "cos", "tanh", "mul", "add"} <= set(kernel["source_nodes"])
    assert {"aten.sin", "aten.cos", "aten.tanh", "aten.mul", "aten.add"} <= set(kernel["aten_ops"])
    assert 'extern "C"' in kernel["source"] and "kernel(" in kernel["source"]  # the C++ source itself
    assert [line["line"] for line in kernel["source_lines"]] == [6]
    # The post-grad graph is coloured by kernel: every compute node belongs to the one fused kernel.
    post_grad = seed["inductor"]["post_grad_graphs"][0]
    assert {n["marks"]["kernel"] for n in post_grad["nodes"] if n["op"] == "call_function"} == {kernel["name"]}


def test_seed_report_has_the_documented_paths_and_is_json(seed):
    json.dumps(seed)
    assert seed["schema_version"] == SCHEMA_VERSION == 4
    assert seed["environment"]["torch_version"].startswith("2.")
    assert seed["environment"]["device"] == "cpu"
    graph = seed["dynamo"]["graphs"][0]
    assert graph["compile_id"] == "0/0"
    assert [n["target"] for n in graph["nodes"] if n["op"] == "call_function"] == [
        "torch.sin",
        "torch.cos",
        "_operator.mul",
        "torch.tanh",
        "_operator.add",
    ]
    sin = next(n for n in graph["nodes"] if n["target"] == "torch.sin")
    assert sin["shape"] == [1024, 1024] and sin["dtype"] == "float32" and sin["line"] == 6
    assert seed["dynamo"]["guards"] and "TENSOR_MATCH" in seed["dynamo"]["guards"][0]["text"]
    assert seed["aot"]["graphs"][0]["kind"] == "inference"
    assert seed["inductor"]["ir_pre_fusion"] and seed["inductor"]["ir_post_fusion"]
    assert "cpp_fused_add_cos_mul_sin_tanh_0" in seed["inductor"]["output_code"][0]["code"]
    assert seed["unavailable"] == [] and seed["errors"] == []


def test_seed_runtime_numbers(seed):
    runtime = seed["runtime"]
    by_config = {b["config"]: b for b in runtime["benchmarks"]}
    assert list(by_config) == ["eager", "inductor_default", "inductor_reduce_overhead"]
    for b in by_config.values():
        assert b["status"] == "ok", b["error"]
        assert b["rounds"] >= 5 and b["latency_reps"] >= 10 and b["p10_ms"] <= b["median_ms"] <= b["p90_ms"]
        assert b["max_abs_error"] < 1e-5  # PyTorch eager is the oracle
    assert by_config["eager"]["speedup_vs_eager"] == 1.0
    assert by_config["inductor_default"]["first_call_ms"] > by_config["inductor_default"]["median_ms"]
    cs = runtime["compile_seconds"]
    assert cs["codegen"] > 0 and cs["total"] >= cs["dynamo"] + cs["codegen"] - 1e-6
    assert any(s["name"] == "entire_frame_compile" for s in runtime["compile_timeline"])
    assert runtime["cudagraphs"]["status"] == "not_applicable"
    profiled = [r for r in runtime["kernel_profile"] if r["generated"]]
    assert [r["kernel"] for r in profiled] == ["cpp_fused_add_cos_mul_sin_tanh_0"] and profiled[0]["total_ms"] > 0
    assert seed["caches"]["state"] == "cold" and seed["caches"]["inductor_cache_dir_was_empty"]


def test_seed_progress_events_arrive_stage_by_stage(seed):
    started = [e["stage"] for e in seed["_events"] if e["state"] == "started"]
    assert started[:5] == ["load", "eager", "dynamo", "aot", "inductor"]
    finished = [e for e in seed["_events"] if e["state"] == "finished"]
    assert all(e["seconds"] >= 0 for e in finished)
    assert [e["elapsed_s"] for e in seed["_events"]] == sorted(e["elapsed_s"] for e in seed["_events"])


def test_the_job_runs_its_steps_in_the_planned_order(explore, seed):
    """The progress pages show the steps still to come from contract.vocab.job_plan: it must be the order the
    child really runs them in (stage and config), for an Inductor ladder and for one without Inductor."""
    for report in (seed, explore("mlp_train", NO_INDUCTOR)):
        started = [(e["stage"], e.get("config")) for e in report["_events"] if e.get("state") == "started"]
        assert started == job_plan(report["request"]["configs"])


def test_graph_breaks_have_reasons_hints_and_user_lines(explore):
    report = explore("graph_break", NO_INDUCTOR)
    assert report["status"] == "ok"
    breaks = report["dynamo"]["graph_breaks"]
    assert [(b["file"], b["line"]) for b in breaks] == [("graph_break.py", 7), ("graph_break.py", 8)]
    assert "print" in breaks[0]["explanation"] and breaks[0]["code"].startswith('print("halfway")')
    assert "item" in breaks[1]["reason"] and any("capture_scalar_outputs" in h for h in breaks[1]["hints"])
    assert len(report["dynamo"]["graphs"]) == 3
    assert [b["name"] for b in report["dynamo"]["bytecode"]][:1] == ["f"]
    assert report["dynamo"]["bytecode"][0]["decompiled"]
    assert "halfway" in report["user_output"]["stdout"]
    assert all(b["max_abs_error"] == 0 for b in report["runtime"]["benchmarks"])


def test_inplace_and_views_are_functionalized(explore):
    report = explore("inplace_views", NO_INDUCTOR)
    assert report["status"] == "ok"
    (entry,) = report["aot"]["functionalization"]
    rewritten = {r["op"] for r in entry["rewritten"]}
    assert {"aten.add_", "aten.mul_", "aten.copy_", "aten.relu_"} <= rewritten
    assert {"aten.select", "aten.t"} <= rewritten  # views
    # Each rewrite names the user's lines it came from (the ATen nodes keep their Dynamo node's stack trace).
    assert all(r["lines"] for r in entry["rewritten"]), entry["rewritten"]
    code_lines = report["source"]["code"].splitlines()
    add_ = next(r for r in entry["rewritten"] if r["op"] == "aten.add_")
    assert all("add_" in code_lines[line - 1] or "+=" in code_lines[line - 1] for line in add_["lines"])
    assert entry["remaining_inplace"] == []
    # What is left mutating is the write-back into the mutated input `buf`, and nothing else.
    assert [m["input"] for m in entry["input_mutations"]] == ["arg1_1"]
    inference = next(g for g in report["aot"]["graphs"] if g["kind"] == "inference")
    mutating = [n["target"] for n in inference["nodes"] if n["op"] == "call_function" and n["target"].endswith("_")]
    assert all(t.startswith("aten.copy_") for t in mutating)
    assert all(b["max_abs_error"] == 0 for b in report["runtime"]["benchmarks"])


def test_training_mlp_has_forward_backward_and_saved_activations(explore):
    report = explore("mlp_train", NO_INDUCTOR)
    assert report["status"] == "ok" and report["request"]["train_effective"] is True
    kinds = [g["kind"] for g in report["aot"]["graphs"]]
    assert sorted(kinds) == ["backward", "forward", "joint"]
    (partition,) = report["aot"]["partitions"]
    assert partition["saved"], "a training graph saves activations for the backward"
    forward = next(g for g in report["aot"]["graphs"] if g["kind"] == "forward")
    marked = {n["name"] for n in forward["nodes"] if n.get("marks", {}).get("saved")}
    assert marked == set(partition["saved"]) & {n["name"] for n in forward["nodes"]}
    # The backward graph marks the ops it recomputes instead of loading them from the forward.
    backward = next(g for g in report["aot"]["graphs"] if g["kind"] == "backward")
    recomputed = {n["name"] for n in backward["nodes"] if n.get("marks", {}).get("recomputed")}
    assert partition["recomputed"] and recomputed == set(partition["recomputed"])
    assert report["aot"]["decompositions"][0]["map"] == {}, "aot_eager applies no decomposition table"
    for b in report["runtime"]["benchmarks"]:
        assert b["status"] == "ok" and b["grad_max_abs_error"] < 1e-4


def test_training_mlp_through_inductor_decomposes_and_fuses_forward_and_backward(explore):
    report = explore("mlp_train", ["eager", "inductor_default"], warm_compile=False)
    assert report["status"] == "ok"
    decomposition = report["aot"]["decompositions"][0]["map"]
    assert {"aten.erf", "aten.mul"} <= set(decomposition["aten.gelu"])
    assert {"aten.var_mean", "aten.rsqrt"} <= set(decomposition["aten.native_layer_norm"])
    assert report["aot"]["partitions"][0]["recomputed"], "the min-cut partitioner recomputes cheap pointwise ops"
    kernels = report["inductor"]["kernels"]
    assert {k["graph_kind"] for k in kernels} == {"forward", "backward"}
    assert all(k["source_nodes"] and k["aten_ops"] for k in kernels)
    assert {"forward", "backward"} == {g["kind"] for g in report["inductor"]["post_grad_graphs"]}
    eager, inductor = report["runtime"]["benchmarks"]
    assert inductor["max_abs_error"] < 1e-4 and inductor["grad_max_abs_error"] < 1e-4
    assert report["runtime"]["compile_seconds"]["backward"] > 0


def test_two_shapes_recompile_with_a_reason_naming_the_size(explore):
    report = explore("recompile", ["eager", "backend_eager"])
    assert report["status"] == "ok"
    (recompile,) = report["dynamo"]["recompiles"]
    assert recompile["compile_id"] == "0/1"
    assert "size mismatch at index 0" in recompile["reason"] and "expected 4, actual 6" in recompile["reason"]
    assert [g["compile_id"] for g in report["dynamo"]["graphs"]] == ["0/0", "0/1"]
