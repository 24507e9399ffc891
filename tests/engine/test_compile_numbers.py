"""The compile figures (recompiles, compile ids, compile times, counts) and the log-reader registry.

Most tests read the logs recorded on an H200 with torch 2.11 (tests/fixtures/traces-h200-torch2.11, no compile
needed); the rest run fresh jobs on this machine's torch (2.13) with cheap backends, and the seed's shared Inductor
job for cold vs warm.
"""

import json
import os

import pytest
import torch

from contract.compile_id import CompileId, canonical, compile_key
from contract.counts import COUNTS, summarize
from contract.report import Aot, Dynamo, Graph, Inductor, Runtime
from engine import logtap
from engine.logtap import LoadedLog, UndeclaredInput, artifacts_read, load_trace_log
from engine.measure.caches import cache_counts
from engine.measure.compile_metrics import compile_seconds
from engine.readers import inductor_log
from engine.readers.dynamo_log import parse_recompiles
from engine.stages import dynamo as dynamo_stage  # noqa: F401 - registers the Dynamo readers
from engine.stages import inductor as inductor_stage  # noqa: F401 - registers the Inductor readers
from engine.stages.runtime import (
    compile_times,  # noqa: F401 - registers the compile-metrics and timeline readers
    cudagraphs,  # noqa: F401 - registers the CUDA-graph reasons reader
)
from engine.usercode import entry_point
from tests.engine.conftest import SEED_PROCESSES, run_code
from tests.report_checks import assert_final_benchmarks_add_only_the_processes
from webapp.tabs import aot as aot_view
from webapp.tabs import dynamo as dynamo_view
from webapp.tabs import inductor as inductor_view
from webapp.tabs import runtime as runtime_view

TRACES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "traces-h200-torch2.11")


def recorded(name) -> LoadedLog:
    return LoadedLog.load(os.path.join(TRACES, f"{name}.trace.log"), os.path.join(TRACES, f"{name}.torch_logs.txt"))


# --- one compile-id type ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, parsed, spelled",
    [
        ("0/0", CompileId(0, 0), "0/0"),
        ("0/0_1", CompileId(0, 0, 1), "0/0_1"),
        ("[1/2_3]", CompileId(1, 2, 3), "1/2_3"),
        ("[0/0]", CompileId(0, 0), "0/0"),
        ("!1/0/2", CompileId(0, 2, 0, 1), "!1/0/2"),
    ],
)
def test_compile_id_reads_every_spelling_and_writes_one(text, parsed, spelled):
    assert CompileId.parse(text) == parsed and str(parsed) == spelled == canonical(text)


def test_the_attempts_of_one_compile_share_a_join_key():
    assert compile_key("0/0") == compile_key("0/0_1") == compile_key("[0/0_2]") != compile_key("0/1")
    assert CompileId.parse(None) is None and CompileId.parse("abc") is None and compile_key("") is None
    assert CompileId.from_trace({"frame_id": 1, "frame_compile_id": 0, "attempt": 1}) == CompileId(1, 0, 1)


def test_a_restarted_compiles_kernels_meet_their_post_grad_graph():
    """graph_break under Inductor: its kernels carry the trace's "0/0_1", the post-grad graph the spelling of the
    in-process compile context ("0/0" in reports stored so far): the page's join used to miss them."""
    outputs = logtap.read(recorded("graph_break"), "inductor.output_code")
    kernels = [k for o in outputs for k in inductor_log.parse_kernels(o, "graph_break.py")]
    assert [k["compile_id"] for k in kernels] == ["0/0_1", "1/0_1", "2/0"]
    inductor = Inductor(post_grad_graphs=[_graph(cid, "inference") for cid in ("0/0", "1/0", "2/0")])
    assert [inductor_view.graph_id_of_kernel(inductor, k["compile_id"], k["graph_kind"]) for k in kernels] == [
        "postgrad-0",
        "postgrad-1",
        "postgrad-2",
    ]
    aot = Aot(graphs=[_graph("0/0", "inference")])
    assert aot_view.graph_id_by_kind(aot, "0/0_1", "inference") == "aot-0"


def _graph(compile_id: str, kind: str) -> Graph:
    """A graph as the pages list it: no nodes (the viewer fetches those)."""
    return Graph(compile_id=compile_id, kind=kind, nodes=[], num_nodes=0, code="", ops={})


def test_torch_logs_prefixes_become_the_reports_spelling():
    records = recorded("graph_break").artifacts["fusion"]
    assert {r["compile_id"] for r in records} == {"0/0_1", "1/0_1", "2/0"}


# --- recompiles ----------------------------------------------------------------------------------------------


def test_recompile_reasons_are_clean_text_not_json_fragments_on_torch_2_11():
    log = recorded("recompile")
    first, second = parse_recompiles(log.events("artifact:recompile_reasons"), [])
    assert first["reasons"] == ["0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6"]
    assert second["reasons"] == [
        "0/1: tensor 'x' dtype mismatch. expected Float, actual Double",
        "0/0: tensor 'x' dtype mismatch. expected Float, actual Double",
    ]
    assert [g["compile_id"] for g in second["failed_guards"]] == ["0/1", "0/0"]
    assert not any(r.startswith(("[", '"')) or r.endswith(('",', "]")) for r in first["reasons"] + second["reasons"])


def test_recompile_says_which_dimension_became_dynamic_on_torch_2_11():
    first, second = logtap.read(recorded("recompile"), "dynamo.recompiles", user_file="recompile.py")
    (dim,) = first["dynamic_dims"]
    assert dim["symbol"] == "s77" and dim["source"] == "L['x'].size()[0]" and dim["value"] == "6"
    assert dim["text"].startswith("Dimension 0 of x became dynamic (symbol s77") and "automatic dynamic" in dim["text"]
    assert second["dynamic_dims"] == []  # already dynamic since 0/1: the dtype is what failed
    assert first["function"] == "h" and "size mismatch" in first["text"]


RECOMPILING = """import torch


def h(x, scale):
    return (x * scale).relu() + x.shape[0]


model = h
example_inputs = [(torch.randn(4, 8), 2.0), (torch.randn(6, 8), 2.0), (torch.randn(8, 8), 3.0)]
"""


@pytest.fixture(scope="module")
def recompiling(tmp_path_factory):
    report, _ = run_code(tmp_path_factory.mktemp("recompiling"), RECOMPILING, configs=["eager", "backend_eager"])
    assert report["status"] == "ok", report["failure"]
    return report


def test_each_recompile_names_its_call_its_failed_guards_and_its_dynamic_dims(recompiling):
    """torch 2.13, a fresh run: the guard that failed is clean text (with the user's line where torch gives one),
    the call is the index into example_inputs, and a dimension or scalar made dynamic is said in words."""
    first, second = recompiling["dynamo"]["recompiles"]
    assert (first["compile_id"], first["call_index"], second["compile_id"], second["call_index"]) == (
        "0/1",
        1,
        "0/2",
        2,
    )
    assert first["reasons"] == ["0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6"]
    assert [d["symbol"][0] for d in first["dynamic_dims"]] == ["s"]
    assert first["dynamic_dims"][0]["source"] == "L['x'].size()[0]"
    scale_guard, size_guard = second["failed_guards"]
    assert (scale_guard["compile_id"], scale_guard["guard"]) == ("0/1", "scale == 2.0")
    assert scale_guard["user_line"]["line"] == 5 and scale_guard["user_line"]["file"].endswith("model.py")
    assert size_guard["guard"] == "tensor 'x' size mismatch at index 0. expected 4, actual 8"
    assert second["reasons"] == ["0/1: scale == 2.0", "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8"]
    assert [d["source"] for d in second["dynamic_dims"]] == ["L['scale']"]  # x's dim 0 was dynamic already
    assert "example_inputs[2]" in second["text"] and "The value of scale became dynamic" in second["text"]
    assert "User stack trace" not in json.dumps(second["reasons"])


# The user's entry point behind each recompile: an nn.Sequential (its forward is torch's; torch.compile wraps it in
# torch/_dynamo/external_utils.py's `inner`), a user nn.Module subclass and a plain function, each called with two
# batch sizes.
ENTRY_POINTS = {
    "sequential": (
        """import torch
from torch import nn

model = nn.Sequential(
    nn.Linear(8, 16),
    nn.ReLU(),
)
example_inputs = [(torch.randn(2, 8),), (torch.randn(3, 8),)]
""",
        "model (torch.nn.Sequential)",
        4,
    ),
    "module": (
        """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 16)

    def forward(self, x):
        return self.lin(x).relu()


model = Net()
example_inputs = [(torch.randn(2, 8),), (torch.randn(3, 8),)]
""",
        "Net.forward",
        10,
    ),
    "function": (
        """import torch


def scaled(x):
    return (x * 2).sin()


model = scaled
example_inputs = [(torch.randn(2, 8),), (torch.randn(3, 8),)]
""",
        "scaled",
        4,
    ),
}


@pytest.mark.parametrize("case", list(ENTRY_POINTS))
def test_a_recompile_names_the_users_module_or_function_and_line_never_a_torch_frame(tmp_path, case):
    code, function, line = ENTRY_POINTS[case]
    report, _ = run_code(tmp_path, code, configs=["eager", "backend_eager"])
    assert report["status"] == "ok", report["failure"]
    (recompile,) = report["dynamo"]["recompiles"]
    assert (recompile["function"], recompile["file"], recompile["line"]) == (function, "model.py", line)
    assert recompile["where"] == f"model.py:{line}"
    assert recompile["text"].startswith(f"Recompiled {function} at model.py:{line} for the call on example_inputs[1]")
    named = json.dumps({k: v for k, v in recompile.items() if k != "torch_frame"})
    assert "external_utils" not in named and "inner" not in named and "/torch/" not in named
    if case == "sequential":  # torch's own frame is kept, apart
        assert "inner at " in recompile["torch_frame"] and "external_utils.py:" in recompile["torch_frame"]
    else:
        assert recompile["torch_frame"] is None
    # The bytecode of torch's wrapper says which of the user's modules it runs; the user's own code needs no word.
    called_as = [b["called_as"] for b in report["dynamo"]["bytecode"]]
    assert called_as and set(called_as) == {f"{function} at model.py:{line}" if case == "sequential" else None}


def test_the_users_name_for_a_module_whose_forward_is_torchs():
    """engine.usercode.entry_point, without a job: torch's classes by their public name, the user's by theirs, at
    the line that assigns `model` (the last one, where several do)."""
    source = "import torch\n\nclass MySeq(torch.nn.Sequential):\n    pass\n\nmodel = None\nmodel = MySeq()\n"
    my_seq = type("MySeq", (torch.nn.Sequential,), {"__module__": "user_model"})
    assert entry_point(my_seq(), source, "model.py") == {"function": "model (MySeq)", "file": "model.py", "line": 7}
    assert entry_point(torch.nn.Linear(2, 2), "model: object = 1\n", "model.py") == {
        "function": "model (torch.nn.Linear)",
        "file": "model.py",
        "line": 1,
    }
    assert entry_point(torch.sin, "from torch import sin as model\n", "model.py") == {
        "function": "model (torch.sin)",
        "file": "model.py",
        "line": None,
    }


def test_guard_counts_are_torchs_and_the_same_everywhere(recompiling):
    guards = recompiling["dynamo"]["guards"]
    assert [g["compile_id"] for g in guards] == ["0/0", "0/1", "0/2"] and all(g["count"] > 0 for g in guards)
    assert recompiling["summary"]["counts"]["guards"] == sum(g["count"] for g in guards)
    rows = dynamo_view.guards_by_compile_id(Dynamo.model_validate(recompiling["dynamo"]))
    assert [r["count"] for r in rows] == [g["count"] for g in guards]
    assert [r.compile_id for r in rows[1]["recompiles"]] == ["0/1"]


def test_guard_count_on_the_page_is_torchs_not_a_count_of_lines():
    (guards,) = logtap.read(recorded("seed_default"), "dynamo.guards")
    assert guards["count"] == 12  # CompilationMetrics.guard_count of the recorded compile
    (row,) = dynamo_view.guards_by_compile_id(Dynamo(guards=[guards]))
    assert row["count"] == 12


def test_a_restarted_frames_graph_code_and_breaks_meet(explore):
    """graph_break on this torch: Dynamo restarts frames 0 and 1 ("0/0_1"); the readable code from the trace and the
    breaks (seen in attempt 0) join the graphs captured in attempt 1."""
    report = explore("graph_break", ["eager", "backend_eager", "aot_eager"])
    graphs = report["dynamo"]["graphs"]
    assert [g["compile_id"] for g in graphs] == ["0/0_1", "1/0_1", "2/0"]
    assert all("[64, 1]" in g["code"] for g in graphs)  # the trace's code (with strides), not the fallback
    assert [compile_key(b["compile_ids"][0]) for b in report["dynamo"]["graph_breaks"]] == [
        compile_key(g["compile_id"]) for g in graphs[:2]
    ]
    assert {compile_key(g["compile_id"]) for g in report["aot"]["graphs"]} == {
        compile_key(g["compile_id"]) for g in graphs
    }
    assert report["summary"]["counts"]["graph_breaks"] == 2 and report["summary"]["counts"]["unique_graph_breaks"] == 2


def test_a_job_asked_for_no_warm_compile_says_so_and_runs_no_fresh_process(explore):
    """--no-warm-compile (JobRequest.warm_compile): the Inductor job ends after its capture process; the cold-vs-warm
    figures say they were not requested, and every figure is the capture process's own."""
    report = explore("graph_break", ["eager", "inductor_default"], warm_compile=False)
    assert report["status"] == "ok", report["failure"]
    assert report["request"]["warm_compile"] is False
    cache = report["runtime"]["compile_cache"]
    assert cache["cold"]["seconds"]["total"] > 0  # the recorded compile is still measured
    for label in ("warmup", "warm"):
        assert cache[label]["status"] == "skipped" and "not requested" in cache[label]["reason"], cache[label]
    assert report["runtime"]["processes"]["status"] is None and report["runtime"]["processes"]["runs"] == []
    assert not any(s["name"] == "warm_compile" for s in report["stages"])
    assert not any(p["phase"] == "warm_compile" for p in report["timeline"]["phases"])
    assert all(
        b["speedup"] is None or b["speedup"].get("source") != "processes" for b in report["runtime"]["benchmarks"]
    )


def test_graph_breaks_kernels_under_inductor_meet_their_graphs_and_lines(explore):
    """A false reading once made: with the frames restarted ("0/0_1"), the kernels (compile ids from the trace)
    missed their post-grad graphs (from the compile context), so their nodes and the user's lines were lost."""
    report = explore("graph_break", ["eager", "inductor_default"], warm_compile=False)
    assert report["status"] == "ok", report["failure"]
    inductor = report["inductor"]
    kernels = inductor["kernels"]
    post_grad = [g["compile_id"] for g in inductor["post_grad_graphs"]]
    assert post_grad == ["0/0_1", "1/0_1", "2/0"] and {k["compile_id"] for k in kernels} == set(post_grad)
    assert all(k["source_nodes"] and k["aten_ops"] and k["source_lines"] for k in kernels)
    assert [
        inductor_view.graph_id_of_kernel(Inductor.model_validate(inductor), k["compile_id"], k["graph_kind"])
        for k in kernels
    ] == [f"postgrad-{post_grad.index(k['compile_id'])}" for k in kernels]
    marked = {n["marks"]["kernel"] for g in inductor["post_grad_graphs"] for n in g["nodes"] if n["marks"]}
    assert {k["name"] for k in kernels} <= marked
    assert report["summary"]["counts"]["generated_kernels"] == len(kernels)


# --- compile times that add up -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mlp_train_bf16", "seed_default", "graph_break"])
def test_compile_stages_are_exclusive_and_add_up_to_the_total(name):
    metrics = logtap.read(recorded(name), "runtime.compile_metrics")
    seconds = compile_seconds(metrics["forward"], metrics["backward"], metrics["runtime"])
    stages = ("dynamo", "aot_autograd", "inductor", "codegen", "backward", "other")
    assert list(seconds) == [*stages, "total"] and all(seconds[s] >= 0 for s in stages)
    assert sum(seconds[s] for s in stages) == pytest.approx(seconds["total"], abs=1e-3)
    frame = sum(m["entire_frame_compile_time_s"] for m in metrics["forward"])
    assert seconds["total"] >= frame - 1e-3  # every compile second torch timed is in the total


def test_training_compile_counts_the_backward_once():
    metrics = logtap.read(recorded("mlp_train_bf16"), "runtime.compile_metrics")
    seconds = compile_seconds(metrics["forward"], metrics["backward"], metrics["runtime"])
    (forward,), (backward,) = metrics["forward"], metrics["backward"]
    assert seconds["backward"] == pytest.approx(backward["backward_cumulative_compile_time_us"] / 1e6, abs=1e-3)
    assert seconds["codegen"] == pytest.approx(forward["code_gen_time_s"], abs=1e-3)  # the forward's only
    assert seconds["codegen"] + seconds["backward"] <= seconds["total"]


def test_the_compile_chart_and_table_show_exclusive_stages_that_add_up():
    metrics = logtap.read(recorded("mlp_train_bf16"), "runtime.compile_metrics")
    runtime = Runtime.model_validate(
        {"compile_seconds": compile_seconds(metrics["forward"], metrics["backward"], metrics["runtime"])}
    )
    (cold,) = runtime_view.compile_runs(runtime)
    column = [row["cells"][0]["seconds"] for row in runtime_view.compile_stage_table([cold])]
    assert sum(column) == pytest.approx(runtime.compile_seconds.total, abs=1e-3)
    chart = runtime_view.compile_stage_chart(runtime)
    assert chart["layout"]["barmode"] == "stack" and "nest" not in json.dumps(chart["layout"])
    assert "add up" in chart["layout"]["xaxis"]["title"]["text"]


def test_a_stored_report_with_nested_stages_is_shown_adding_up():
    """Reports stored before the fix double-counted the backward (in inductor/codegen and in backward)."""
    old = {"dynamo": 0.37, "aot_autograd": 1.26, "inductor": 1.17, "codegen": 3.11, "backward": 1.8, "total": 5.91}
    shown = runtime_view.exclusive_compile_seconds(old)
    parts = [v for k, v in shown.items() if k != "total"]
    assert sum(parts) == pytest.approx(old["total"], abs=1e-2) and "inductor_and_codegen" in shown


def test_cache_counts_read_torchs_counters_and_the_cache_folders():
    from collections import Counter, defaultdict

    counters = defaultdict(
        Counter, {"inductor": Counter(fxgraph_cache_hit=1), "aot_autograd": Counter(autograd_cache_miss=2)}
    )
    caches = cache_counts(counters, kernels=3, binaries_written=7)
    assert caches["fx_graph"] == {"hits": 1, "misses": 0, "bypasses": 0}
    assert caches["aot_autograd"]["misses"] == 2
    assert caches["kernels"] == {"hits": 0, "misses": 3, "generated": 3, "binaries_written": 7}
    assert cache_counts(counters, kernels=3, binaries_written=0)["kernels"]["hits"] == 3


def test_cold_and_warm_compiles_of_the_seed_with_cache_hits_per_stage(seed):
    cache = seed["runtime"]["compile_cache"]
    cold, warmup, warm = cache["cold"], cache["warmup"], cache["warm"]
    assert warmup["status"] == warm["status"] == "ok", (warmup, warm)
    assert cold["seconds"] == seed["runtime"]["compile_seconds"]
    assert cold["caches"]["kernels"]["misses"] == 1  # the one fused kernel, built from nothing
    assert cold["caches"]["kernels"]["trusted_binaries"] == 0  # the engine CLI binds no trusted kernel cache
    assert cold["caches"]["kernels"]["state"] == "the job's new, empty cache folders"
    # Forked from the child's copy made before anything ran (engine.warm.ForkServer), each still finds what a new
    # process finds: the first misses the graph caches (a copy made after the recorded compile would not compile at
    # all), the second hits what the first filled.
    assert warmup["started"] == warm["started"] == "forked"
    assert warmup["caches"]["fx_graph"]["misses"] >= 1 and warmup["caches"]["aot_autograd"]["misses"] >= 1
    assert warm["caches"]["fx_graph"]["hits"] >= 1 and warm["caches"]["fx_graph"]["misses"] == 0
    assert warm["caches"]["aot_autograd"]["hits"] >= 1 and warm["caches"]["aot_autograd"]["misses"] == 0
    assert warm["caches"]["kernels"] == {
        "hits": 1,
        "misses": 0,
        "generated": 1,
        "binaries_written": 0,
        "trusted_binaries": None,
        "state": None,
    }
    assert warm["seconds"]["codegen"] < cold["seconds"]["codegen"]  # nothing left to generate or build
    stages = ("dynamo", "aot_autograd", "inductor", "codegen", "backward", "other")
    assert sum(warm["seconds"][s] for s in stages) == pytest.approx(warm["seconds"]["total"], abs=1e-3)
    assert any(s["name"] == "warm_compile" for s in seed["stages"])


def test_the_report_is_handed_over_before_the_warm_compile_complete_but_for_it(seed):
    """The warm compile (fresh processes, 10-20 s each here) runs after the report the user reads: the report
    before it has every figure the final one has, says the warm compile is pending, and its timeline ends where
    the final timeline's warm_compile phase begins."""
    (early,) = seed["_early"]
    assert early["status"] == "ok" and not early["failure"]
    pending = early["runtime"]["compile_cache"]
    assert pending["warmup"]["status"] == pending["warm"]["status"] == "pending"
    assert pending["cold"] == seed["runtime"]["compile_cache"]["cold"]
    assert early["runtime"]["processes"]["status"] == "pending" and seed["runtime"]["processes"]["status"] == "ok"
    assert_final_benchmarks_add_only_the_processes(early["runtime"]["benchmarks"], seed["runtime"]["benchmarks"])
    assert early["summary"] == seed["summary"] and early["dynamo"] == seed["dynamo"]
    assert not any(s["name"] == "warm_compile" for s in early["stages"])
    (warm,) = [p for p in seed["timeline"]["phases"] if p["phase"] == "warm_compile"]
    # Every fresh process of the phase: the warm compile's two and the third this job asked for, which only times.
    processes = sum(run["wall_seconds"] for run in seed["runtime"]["processes"]["runs"])
    assert len(seed["runtime"]["processes"]["runs"]) == SEED_PROCESSES
    assert processes <= warm["end_s"] - warm["start_s"] <= processes + 1.0
    assert early["timeline"]["wall_s"] <= warm["start_s"] + 0.5 < seed["timeline"]["wall_s"]
    top = [p["phase"] for p in early["timeline"]["phases"] if p["depth"] == 0]
    assert top[-2:] == ["write_report", "read_report"] and "process_exit" not in top


def test_the_report_once_the_stages_are_collected_is_handed_over_once_before_the_benchmarks(seed):
    """The sink's partial report (engine.sink): every stage's artifacts as the final report has them, no benchmark
    yet, and the ``report`` stage as its last."""
    (partial,) = seed["_partial"]
    assert partial["status"] == "running"  # the schema's word for a report saved between stages
    for stage in ("dynamo", "aot", "inductor"):
        assert partial[stage] == seed[stage], stage
    assert partial["runtime"]["benchmarks"] == [] and seed["runtime"]["benchmarks"]
    assert [s["name"] for s in partial["stages"]][-1] == "report"


# --- one name per count --------------------------------------------------------------------------------------


def test_kernels_are_counted_as_generated_and_library_calls():
    log = recorded("mlp_train_bf16")
    outputs = logtap.read(log, "inductor.output_code")
    kernels = [k for o in outputs for k in inductor_log.parse_kernels(o, "mlp_train_bf16.py")]
    calls = [c for o in outputs for c in inductor_log.library_calls(o)]
    assert [(c["graph_kind"], c["name"], c["count"]) for c in calls] == [
        ("forward", "extern_kernels.addmm", 2),
        ("backward", "extern_kernels.mm", 4),
    ]
    summary = summarize({"inductor": {"kernels": kernels, "library_calls": calls}})
    assert summary["counts"]["generated_kernels"] == len(kernels) == 9
    assert summary["counts"]["library_calls"] == 6
    assert summary["library_call_names"] == {"extern_kernels.mm": 4, "extern_kernels.addmm": 2}


def test_the_summary_counts_occurrences_and_unique_breaks_and_torchs_guards():
    report = {
        "dynamo": {
            "graphs": [{}, {}],
            "graph_breaks": [{"count": 3}, {"count": 1}],
            "recompiles": [{}],
            "guards": [{"count": 7}, {"count": 5}],
        },
        "aot": {"graphs": [{}]},
    }
    counts = summarize(report)["counts"]
    assert list(counts) == [key for key, _, _ in COUNTS]
    assert counts == {
        "dynamo_graphs": 2,
        "graph_breaks": 4,
        "unique_graph_breaks": 2,
        "recompiles": 1,
        "guards": 12,
        "aot_graphs": 1,
        "generated_kernels": 0,
        "library_calls": 0,
    }
    report["dynamo"]["guards"].append({"count": None})  # torch did not report one frame's count: unknown, not less
    assert summarize(report)["counts"]["guards"] is None


def test_a_finished_report_carries_its_summary(recompiling):
    assert recompiling["summary"]["counts"] == summarize(recompiling)["counts"]
    assert recompiling["summary"]["counts"]["recompiles"] == 2


# --- the log-reader registry ---------------------------------------------------------------------------------

NOT_READ = ("schedule", "output_code", "aot_graphs", "post_grad_graphs", "inductor_metrics")


def test_only_artifacts_a_reader_declares_are_switched_on(recompiling):
    declared = artifacts_read()
    assert not set(NOT_READ) & set(declared)
    assert {"fusion", "ir_pre_fusion", "ir_post_fusion", "recompiles", "cudagraphs"} <= set(declared)
    logs = recompiling["logs"]
    assert logs["artifacts_enabled"] == declared and logs["artifacts_unknown"] == []
    assert {p["name"] for p in logs["parsers"]} >= {"dynamo.recompiles", "inductor.fusion", "runtime.timeline"}
    assert logs["records"]["compilation_metrics"] == 3 and logs["malformed"]["count"] == 0
    # After the recorded compile only the ladder's CUDA-graph reasons stay on.
    assert artifacts_read(after_capture_only=True) == ["cudagraphs", "perf_hints"]


def test_a_reader_sees_only_what_it_declared():
    logtap.declare("test.sneaky", logs=("fusion",), read=lambda log: log.artifact_texts("output_code"))
    try:
        with pytest.raises(UndeclaredInput, match="output_code"):
            logtap.read(recorded("seed_default"), "test.sneaky")
    finally:
        del logtap.PARSERS["test.sneaky"]


def test_malformed_records_are_counted_not_dropped(tmp_path):
    good = open(os.path.join(TRACES, "recompile.trace.log")).read().splitlines(keepends=True)
    prefix = good[0].split("] ", 1)[0] + "] "
    broken = (
        good[:40]
        + [
            "this is not a trace record\n",
            prefix + json.dumps({"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0}) + "\n",
            "\t{not json\n",
            prefix
            + json.dumps(
                {"artifact": {"name": "recompile_reasons", "encoding": "json"}, "frame_id": 0, "frame_compile_id": 1}
            )
            + "\n",
            '\t["0/0: cut off\n',
        ]
        + good[40:]
    )
    path = tmp_path / "broken.trace.log"
    path.write_text("".join(broken))
    log = LoadedLog.load(str(path))
    assert log.summary()["malformed"]["by_kind"] == {"trace_line": 1, "trace_json": 2}
    assert len(load_trace_log(str(path))) == len(load_trace_log(os.path.join(TRACES, "recompile.trace.log"))) + 2
    assert logtap.read(log, "runtime.timeline")  # the rest is still read


def test_after_the_recorded_compile_only_the_ladders_artifacts_stay_on_and_nothing_reaches_stderr():
    """In a fresh process (logging is process-global): set_logs puts torch's stderr handlers back each time it is
    called, so narrowing the artifacts must take them over again."""
    import subprocess
    import sys

    code = """
import logging, torch
from engine.logtap import LogTap, artifacts_read
import engine.stages.runtime.compile_times, engine.stages.runtime.cudagraphs, engine.stages.dynamo, engine.stages.inductor
from torch._logging._internal import log_registry, log_state
tap = LogTap(); tap.install(); tap.uninstall_trace()
foreign = [q for q in log_registry.get_log_qnames() for h in logging.getLogger(q).handlers if h is not tap._handler_artifact]
print(foreign, [a for a in artifacts_read() if log_state.is_artifact_enabled(a)])
"""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] ['cudagraphs', 'perf_hints']", out.stderr


CONTEXT = {
    "dynamo.graph_breaks": {"user_file": "model.py"},
    "dynamo.recompiles": {"user_file": "model.py"},
    "inductor.fusion": {"scheduler": {}},
}


@pytest.mark.parametrize(
    "name",
    [
        "seed_default",
        "seed_reduce_overhead",
        "mlp_train_bf16",
        "graph_break",
        "recompile",
        "input_mutation_cudagraph_skip",
    ],
)
def test_every_registered_reader_runs_on_a_loaded_torch_2_11_log(name):
    """The readers are plain functions over event lists: a TORCH_TRACE / TORCH_LOGS_OUT pair read back from files
    feeds every one of them, and these recorded logs hold no record that cannot be read."""
    log = recorded(name)
    for parser in [p for p in logtap.PARSERS.values() if not p.name.startswith("test.")]:
        logtap.read(log, parser.name, **CONTEXT.get(parser.name, {}))
    assert log.summary()["malformed"] == {"count": 0, "by_kind": {}, "samples": []}


# Recorded live on the H200 (torch 2.11, Triton 3.6): examples/graph_break.py under inductor_default, three graphs.
# Each kernel's source-node comment, the post-grad nodes of its graph and the scheduler node writing its buffer.
H200_GRAPH_BREAK_KERNELS = [
    ("triton_poi_fused_mul_relu_0", ["relu", "y"], {"arg0_1", "relu", "mul"}, ["mul", "relu"]),
    ("triton_red_fused_sum_0", ["sum_1"], {"arg0_1", "sum_1"}, ["sum_1"]),
    ("triton_poi_fused_div_0", ["truediv"], {"arg0_1", "div"}, ["div"]),
]


@pytest.mark.parametrize(("name", "comment", "graph_nodes", "writers"), H200_GRAPH_BREAK_KERNELS)
def test_a_source_node_comment_that_names_no_post_grad_node_is_completed_from_buffer_writes(
    name, comment, graph_nodes, writers
):
    kernel = {"name": name, "source_nodes": list(comment), "provenance": "source-node comment", "writes": ["buf0"]}
    inductor_log.tie_to_post_grad_nodes(kernel, graph_nodes, {"op0": {"writes": ["buf0"], "origins": writers}})
    # Every kernel then names only nodes of its graph, and every node that writes its buffer is among them.
    assert set(kernel["source_nodes"]) <= graph_nodes and set(writers) <= set(kernel["source_nodes"])
    assert kernel["provenance"] == ("source-node comment" if set(comment) <= graph_nodes else "buffer writes")
