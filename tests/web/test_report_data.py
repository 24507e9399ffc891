"""What the report tabs compute from real sample reports (tests/fixtures/reports): graph endpoints, provenance,
kernel timing and roofline share, fusion decisions in words, the host-bound diagnosis."""

import json
import os

from sqlalchemy import delete, select, update

from contract import graphs, provenance
from contract.report import validate_report
from storage import runstore
from storage.config import PROJECT_ROOT
from storage.models import ReportGraph, ReportPiece, ReportSection
from webapp.tabs import dynamo as dynamo_view
from webapp.tabs import inductor as inductor_view
from webapp.tabs import runtime as runtime_view


def _report(name: str) -> dict:
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", f"{name}.json")) as f:
        return json.load(f)


def _model(name: str):
    """A sample report as the pages read it: validated (and upgraded) into the report's models."""
    return validate_report(_report(name))


def _store(db, report: dict) -> str:
    run = runstore.create_run(
        db,
        runstore.Submission(
            code=report["source"]["code"],
            filename=report["source"]["filename"],
            device="cpu",
            train=None,
            configs=["eager"],
        ),
    )
    runstore.store_report(db, run.id, report)
    return run.slug


def test_each_graph_has_its_own_endpoint_and_the_page_does_not_carry_its_nodes(client, db):
    report = _report("mlp_train")
    slug = _store(db, report)
    forward = client.get(f"/r/{slug}/graphs/aot-1.json").get_json()
    assert forward["title"] == "Forward graph 0/0"
    recorded = report["aot"]["graphs"][1]["nodes"]
    assert forward["names"] == [n["name"] for n in recorded]
    # Columns: node i's value is values[index[i]]; edges are node numbers.
    for key in graphs.NODE_COLUMNS:
        column = forward["columns"][key]
        assert [column["values"][k] for k in column["index"]] == [n.get(key) for n in recorded], key
    assert len(forward["columns"]["module_stack"]["values"]) < len(recorded) / 2  # stored once per distinct stack
    offsets, args = forward["arg_offsets"], forward["args"]
    assert [[forward["names"][j] for j in args[offsets[i] : offsets[i + 1]]] for i in range(len(recorded))] == [
        n["args"] for n in recorded
    ]
    assert client.get(f"/r/{slug}/graphs/func-0-before.json").get_json()["title"] == "Before functionalization 0/0"
    assert client.get(f"/r/{slug}/graphs/postgrad-1.json").get_json()["kind"] == "backward"
    for missing in ("aot-9", "postgrad-x", "../dynamo-0", "func-0-sideways"):
        assert client.get(f"/r/{slug}/graphs/{missing}.json").status_code == 404
    html = client.get(f"/r/{slug}/aot").get_data(as_text=True)
    assert 'data-graph-url="/r/%s/graphs/aot-0.json"' % slug in html
    assert '"args"' not in html  # nodes come from the endpoint, not the page
    assert f"{len(recorded)} nodes" in html  # counted from the outline the tab reads, which has no nodes


def test_graphs_are_stored_as_the_viewer_reads_them_and_built_on_first_request_for_older_runs(client, db):
    report = _report("mlp_train")
    slug = _store(db, report)
    run = runstore.get_run(db, slug)
    stored = {row.graph_id for row in db.scalars(select(ReportGraph).where(ReportGraph.run_id == run.id))}
    assert stored == {
        "dynamo-0",
        "aot-0",
        "aot-1",
        "aot-2",
        "func-0-before",
        "func-0-after",
        "postgrad-0",
        "postgrad-1",
    }
    outline = json.loads(
        db.scalar(select(ReportSection.outline).where(ReportSection.run_id == run.id, ReportSection.name == "aot"))
    )
    assert "nodes" not in outline["graphs"][0] and outline["graphs"][0]["kind"] == "joint"
    assert "nodes" not in outline["functionalization"][0]["before"]
    sent = client.get(f"/r/{slug}/graphs/aot-0.json")
    assert sent.get_data(as_text=True) == db.scalar(
        select(ReportGraph.body).where(ReportGraph.run_id == run.id, ReportGraph.graph_id == "aot-0")
    )

    # A run stored before graphs were: its graph is built from the section on the first request, then kept.
    db.execute(delete(ReportGraph).where(ReportGraph.run_id == run.id))
    db.execute(update(ReportSection).where(ReportSection.run_id == run.id).values(outline=None))
    db.commit()
    assert client.get(f"/r/{slug}/graphs/aot-0.json").get_data(as_text=True) == sent.get_data(as_text=True)
    assert db.scalar(select(ReportGraph.graph_id).where(ReportGraph.run_id == run.id)) == "aot-0"
    assert client.get(f"/r/{slug}/aot").status_code == 200  # the tab reads the whole section instead


def test_provenance_ties_a_line_to_its_dynamo_nodes_aten_nodes_and_kernels(client, db):
    slug = _store(db, _report("seed"))
    line = client.get(f"/r/{slug}/provenance.json?line=6").get_json()
    assert [n["node"] for n in line["dynamo"]] == ["sin", "cos", "mul", "tanh", "add"]  # the input is no op
    assert {n["graph"] for n in line["aten"]} == {"aot-0", "postgrad-0"}
    assert line["kernels"] == ["cpp_fused_add_cos_mul_sin_tanh_0"]
    assert line["totals"] == {"dynamo": 5, "aten": len(line["aten"]), "kernels": 1}
    assert client.get(f"/r/{slug}/provenance.json?line=1").get_json()["dynamo"] == []  # an import: nothing
    assert client.get(f"/r/{slug}/provenance.json").status_code == 400  # one line at a time


def test_provenance_is_stored_with_the_report_and_derived_once_for_a_run_stored_before(client, db):
    slug = _store(db, _report("seed"))
    run = runstore.get_run(db, slug)
    stored = db.scalars(select(ReportPiece.key).where(ReportPiece.run_id == run.id)).all()
    assert runstore.provenance_key(6) in stored  # derived when stored: a request reads one small row
    expected = client.get(f"/r/{slug}/provenance.json?line=6").get_json()
    db.execute(delete(ReportPiece).where(ReportPiece.run_id == run.id))  # as a run stored before pieces were
    db.commit()
    assert client.get(f"/r/{slug}/provenance.json?line=6").get_json() == expected
    assert db.scalar(
        select(ReportPiece.body).where(ReportPiece.run_id == run.id, ReportPiece.key == runstore.provenance_key(6))
    )


def test_a_line_behind_a_huge_graph_lists_a_capped_number_of_nodes_with_the_total():
    nodes = [{"name": f"add_{i}", "op": "call_function", "file": "model.py", "line": 3} for i in range(3000)]
    lines = provenance.by_line({"dynamo": {"graphs": [{"compile_id": "0/0", "nodes": nodes}]}}, "model.py")
    assert len(lines[3]["dynamo"]) == provenance.MAX_PER_LINE and lines[3]["totals"]["dynamo"] == 3000


def test_kernels_sorted_by_measured_time_with_roofline_share_on_the_h200():
    report = _model("mlp_train")
    rows = inductor_view.kernel_rows(report.inductor, report.runtime, "AMD EPYC")
    times = [row["total_ms"] for row in rows]
    assert times == sorted(times, reverse=True) and rows[0]["name"] == "cpp_fused_gelu_gelu_backward_sum_1"
    assert all(row["roofline_share"] is None for row in rows)  # no CPU ceiling, and bytes unknown per kernel

    gpu = _model("seed_gpu")
    [row] = inductor_view.kernel_rows(gpu.inductor, gpu.runtime, gpu.environment.device_name)
    assert row["bytes_accessed"] == 4096 * 4096 * 4 * 2  # read x, write the result
    assert 0.55 < row["roofline_share"] < 0.7  # the H200 measured 61% of its copy bandwidth with do_bench


def test_fusion_decisions_grouped_by_reason_in_words_with_their_nodes_and_kernels():
    inductor = _model("mlp_train").inductor
    graphs = inductor_view.fusion_groups(inductor)
    backward = next(g for g in graphs if g["kind"] == "backward")
    assert backward["graph_id"] == "postgrad-1"
    assert backward["fused"] == sum(
        d.count for d in inductor.fusion_decisions if d.kind == "backward" and d.action == "fused"
    )
    fused, *others = backward["groups"]
    assert fused["words"] == "fused"
    pair = next(d for d in fused["decisions"] if d["first"]["name"] == "op0")
    assert pair["first"]["ops"] == ["mul_6", "sum_1"] and pair["second"]["name"] == "op1"
    # The kernel the nodes went into, from the kernels' own source nodes.
    kernel = next(k for k in inductor.kernels if k.graph_kind == "backward" and "sum_1" in k.source_nodes)
    assert pair["first"]["kernels"] == [kernel.name]
    assert others[0]["reason"] == "no shared data"
    assert others[0]["words"] == "not fused: they share no buffer: fusing would save no memory traffic"
    # Most pairs first; each group counts its distinct pairs and, apart, the times Inductor weighed them.
    assert [g["pairs"] for g in others] == sorted((g["pairs"] for g in others), reverse=True)
    assert all(g["pairs"] == len(g["decisions"]) and g["weighed"] >= g["pairs"] for g in backward["groups"])


def test_the_ir_diff_shows_which_nodes_fused_into_which_kernel():
    inductor = _model("mlp_train").inductor
    pair = next(p for p in inductor_view.ir_pairs(inductor) if p["kind"] == "forward")
    rows = inductor_view.ir_diff(inductor, pair)
    fused = [row for row in rows if row["fused"]]
    assert fused and all(len(row["members"]) > 1 for row in fused)
    assert len(fused) == inductor_view.fused_node_count(pair["after"])
    # Every node before fusion appears in exactly one row after it.
    before = [node["name"] for node in inductor_view.ir_nodes(pair["before"])]
    assert sorted(m["name"] for row in rows for m in row["members"]) == sorted(before)
    kernels = {k.name: k for k in inductor.kernels if k.graph_kind == "forward"}
    for row in fused:
        buffers = {b["name"] for b in row["buffers"]}
        assert row["kernel"] in kernels and buffers & set(kernels[row["kernel"]].writes)
    # Each buffer names the graph node that computes it, one of the nodes of its scheduler node.
    graph_nodes = {n for row in rows for m in row["members"] for n in m["ops"]}
    assert all(b["node"] in graph_nodes for row in rows for b in row["buffers"] if b["node"])
    assert any(b["node"] for row in rows for b in row["buffers"])


def test_a_host_bound_gpu_step_is_diagnosed_in_plain_words():
    notes = runtime_view.host_bound_diagnosis(_model("seed_gpu").runtime.benchmarks)
    assert notes[0].startswith("inductor_default: host-bound. The GPU is busy only 45% of each step")
    assert "measured here it was not faster (0.174 ms per step)" in notes[0]
    assert runtime_view.host_bound_diagnosis(_model("seed").runtime.benchmarks) == []  # CPU: no GPU time


def test_the_guard_tree_folds_counts_its_guards_and_marks_the_failed_one():
    dynamo = _model("recompile").dynamo
    first, second = dynamo_view.guards_by_compile_id(dynamo)
    assert first["failed"] == [
        {"guard": "tensor 'x' size mismatch at index 0. expected 4, actual 6", "recompile": "0/1"}
    ]
    tree, failed = dynamo_view.guard_tree(first["text"], first["failed"])
    (root,) = tree
    leaves = [line for line in first["text"].splitlines() if "+- " in line and "GuardManager" not in line]
    assert root["label"] == "RootGuardManager" and root["count"] == first["count"] == len(leaves) == 14
    (leaf,) = failed
    assert leaf["label"] == "TENSOR_MATCH" and "size=[4, 16]" in leaf["text"]
    tensor_fold = next(c for c in root["children"] if c["label"] == "GuardManager" and "L['x']" in c["text"])
    assert tensor_fold["open"] and root["open"]
    assert not any(c["open"] for c in root["children"] if c is not tensor_fold and c["children"])
    assert second["failed"] == [] and not dynamo_view.guard_tree(second["text"], [])[1]
