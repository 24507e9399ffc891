"""contract/diff.py on real reports (tests/fixtures/reports) and on small graphs where the answer is known."""

import copy
import json
import os

from contract.diff import compare, diff_nodes, guard_lines
from contract.graphs import find_graph, graph_section

REPORTS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "reports")


def report(name):
    with open(os.path.join(REPORTS, f"{name}.json")) as f:
        return json.load(f)


def node(name, target, line, shape=(4,), args=(), op="call_function"):
    return {
        "name": name,
        "op": op,
        "target": target,
        "file": "/job/model.py",
        "line": line,
        "shape": list(shape),
        "dtype": "float32",
        "args": list(args),
    }


def test_nodes_match_by_what_they_compute_not_by_name():
    a = [
        node("x", "x", None, op="placeholder"),
        node("sin", "torch.sin", 3, args=["x"]),
        node("mul", "_operator.mul", 4, args=["sin", "sin"]),
    ]
    # B inserts a cos before: every later FX name shifts (mul -> mul_1), and mul's shape changes.
    b = [
        node("x", "x", None, op="placeholder"),
        node("cos", "torch.cos", 2, args=["x"]),
        node("sin_1", "torch.sin", 3, args=["x"]),
        node("mul_1", "_operator.mul", 4, shape=(8,), args=["sin_1", "cos"]),
    ]
    result = diff_nodes(a, b)
    assert [n["name"] for n in result["added"]] == ["cos"] and result["removed"] == []
    (changed,) = result["changed"]
    assert (changed["a"]["name"], changed["b"]["name"], changed["fields"]) == ("mul", "mul_1", ["shape"])
    assert result["same"] == 2  # x, and sin renamed sin_1: not a change
    assert diff_nodes(a, a) == {"added": [], "removed": [], "changed": [], "same": 3, "moved": 0}


def test_a_report_against_itself_differs_in_nothing():
    seed = report("seed")
    result = compare(seed, copy.deepcopy(seed))
    assert all(row["delta"] in (0, None) for row in result["summary"])
    assert result["graphs"] and all(g["identical"] for g in result["graphs"])
    assert all(k["same_source"] for k in result["kernels"]["matched"])
    assert not result["kernels"]["only_a"] and not result["kernels"]["only_b"]
    assert all(g["same"] for g in result["guards"])


def test_seed_against_graph_break_example():
    seed, broken = report("seed"), report("graph_break")
    result = compare(seed, broken)
    summary = {row["metric"]: row for row in result["summary"]}
    assert (
        summary["graph_breaks"]["a"] == 0
        and summary["graph_breaks"]["b"] == broken["dynamo"]["summary"]["graph_break_count"]
        and summary["graph_breaks"]["delta"] == summary["graph_breaks"]["b"]
    )
    assert summary["dynamo_graphs"]["b"] == len(broken["dynamo"]["graphs"])
    first = result["graphs"][0]
    assert first["stage"] == "dynamo" and not first["identical"]
    assert {n["target"] for n in first["removed"]} >= {"torch.sin", "torch.cos", "torch.tanh"}
    seconds = {row["stage"]: row for row in result["compile_seconds"]}
    assert seconds["total"]["delta"] == round(
        broken["runtime"]["compile_seconds"]["total"] - seed["runtime"]["compile_seconds"]["total"], 6
    )
    benchmarks = {row["config"]: row for row in result["benchmarks"]}
    assert benchmarks["eager"]["a_median_ms"] == next(
        b["median_ms"] for b in seed["runtime"]["benchmarks"] if b["config"] == "eager"
    )


def test_cpu_and_gpu_seed_kernels_are_matched_with_a_source_diff():
    cpu, gpu = report("seed"), report("seed_gpu")
    kernels = compare(cpu, gpu)["kernels"]
    (row,) = kernels["matched"]  # cpp_fused_... and triton_poi_fused_...: same graph kind and ATen ops
    assert row["a"].startswith("cpp_fused") and row["b"].startswith("triton_poi_fused")
    assert row["matched_by"] == "graph kind and ATen ops" and not row["same_source"]
    assert "+@triton.jit" in row["diff"] and "-#include" in row["diff"]


def test_guard_lines_ignore_object_ids_and_where_they_were_made():
    a = "| +- ID_MATCH: ___check_obj_id(L['self'], 140234234234)  # m.py:3 in f\n| +- TENSOR_MATCH: x"
    b = "| +- ID_MATCH: ___check_obj_id(L['self'], 139999999999)  # m.py:9 in f\n| +- TENSOR_MATCH: x\n| +- NEW"
    assert guard_lines(a) == guard_lines(b)[:2]
    seed, other = report("seed"), copy.deepcopy(report("seed"))
    other["dynamo"]["guards"][0]["text"] += "\n| +- GUARD_ADDED_HERE: x.size()[0] == 8"
    (row,) = compare(seed, other)["guards"]
    assert row["only_b"] == ["| +- GUARD_ADDED_HERE: x.size()[0] == 8"] and row["only_a"] == []


def test_the_same_ops_at_other_lines_are_not_added_and_removed():
    """Issue 22 item 7: nodes are matched by the graph's structure (op and target, in order), not by line."""
    a = [
        node("arg0_1", "arg0_1", None, op="placeholder"),
        node("mm", "aten.mm.default", 3, args=["arg0_1", "arg0_1"]),
        node("relu", "aten.relu.default", 3, args=["mm"]),
    ]
    # The same graph from another torch version's log of a file one line longer: other lines, other numbering.
    b = [
        node("arg1_1", "arg1_1", None, op="placeholder"),
        node("mm_1", "aten.mm.default", 4, args=["arg1_1", "arg1_1"]),
        node("relu_1", "aten.relu.default", 4, args=["mm_1"]),
    ]
    result = diff_nodes(a, b)
    assert (result["added"], result["removed"], result["changed"]) == ([], [], [])
    assert result["same"] == 3 and result["moved"] == 2
    # Order is structure: the same ops in another order are a change.
    swapped = diff_nodes(a, [a[0], a[2], a[1]])
    assert len(swapped["added"]) == 1 and len(swapped["removed"]) == 1 and swapped["same"] == 2


def test_two_torch_versions_logs_of_one_model_diff_by_structure():
    """The same g(x, w) (print and .item() breaks) logged by torch 2.11 on an H200 and by torch 2.13 on this CPU,
    its file one line longer (tests/fixtures/traces-cpu-torch2.13/graph_break.py): every graph the same ops."""
    old, new = report("import_graph_break_torch2_11"), report("import_graph_break_torch2_13")
    graphs = compare(old, new)["graphs"]
    assert len(graphs) == 9  # 3 Dynamo, 3 AOT inference, 3 post-grad graphs
    for graph in graphs:
        assert graph["identical"], (graph["title"], graph["added"], graph["removed"])
        assert graph["moved"] == sum(n["op"].startswith("call_") for n in _nodes(new, graph))


def _nodes(report_, graph):
    section = report_[graph_section(graph["b_id"])]
    return find_graph(section, graph["b_id"])["nodes"]
