"""The graph-id grammar (contract/graphs.py): ids round-trip, locate their graph, and the pages' copy
(static/js/contract.js, generated) reads them the same way."""

import json
import os
import subprocess

import pytest

from contract import docs, graphs
from contract.graphs import GraphId

with open(os.path.join(docs.ROOT, "tests", "fixtures", "reports", "mlp_train.json")) as f:
    MLP = json.load(f)
with open(os.path.join(docs.ROOT, "tests", "fixtures", "reports", "custom_backend.json")) as f:
    CUSTOM_BACKEND = json.load(f)  # the graphs a user's own backend received (debug.backend_graphs)


def every_graph(report: dict):
    """(id, the graph at its documented place in the report) for every graph, built without the grammar."""
    for i, graph in enumerate(report["dynamo"]["graphs"]):
        yield f"dynamo-{i}", graph
    for i, graph in enumerate(report["aot"]["graphs"]):
        yield f"aot-{i}", graph
    for i, entry in enumerate(report["aot"]["functionalization"]):
        yield f"func-{i}-before", entry["before"]
        yield f"func-{i}-after", entry["after"]
    for i, graph in enumerate(report["inductor"]["post_grad_graphs"]):
        yield f"postgrad-{i}", graph
    for i, entry in enumerate((report.get("debug") or {}).get("backend_graphs") or []):
        yield f"backend-{i}", entry


def test_every_graph_id_round_trips_and_finds_its_graph():
    seen = [(report, text, graph) for report in (MLP, CUSTOM_BACKEND) for text, graph in every_graph(report)]
    assert {text.split("-")[0] for _, text, _ in seen} == set(graphs.PREFIXES)  # the fixtures have every kind
    for report, text, graph in seen:
        parsed = GraphId.parse(text)
        assert str(parsed) == text
        assert parsed.find(report[parsed.section]) is graph


def test_the_builders_write_the_grammar():
    assert [
        graphs.dynamo_graph(0),
        graphs.aot_graph(2),
        graphs.post_grad_graph(1),
        graphs.functionalization_graph(3, "after"),
    ] == ["dynamo-0", "aot-2", "postgrad-1", "func-3-after"]
    with pytest.raises(ValueError):
        graphs.functionalization_graph(0, "during")
    with pytest.raises(ValueError):
        GraphId("aot", 1, "before")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "aot",
        "aot-",
        "aot-x",
        "aot-1-before",
        "func-1",
        "func-1-during",
        "postgrad--1",
        "inductor-0",
        "dynamo-0 ",
        " dynamo-0",
        "dynamo-0/add",
    ],
)
def test_what_is_not_a_graph_id(text):
    assert GraphId.parse(text) is None


def test_an_id_past_the_end_finds_nothing():
    assert GraphId.parse("aot-99").find(MLP["aot"]) is None
    assert GraphId.parse("func-0-after").find({}) is None


def test_the_pages_read_graph_ids_with_the_same_grammar():
    ids = [text for text, _ in every_graph(MLP)] + ["aot-x", "func-1", "inductor-0", "dynamo-0/add"]
    script = (
        f"import {{ graphTab }} from {json.dumps(os.path.join(docs.ROOT, docs.JAVASCRIPT_PATH))};"
        f"console.log(JSON.stringify({json.dumps(ids)}.map(graphTab)));"
    )
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    expected = [parsed.tab if (parsed := GraphId.parse(text)) else None for text in ids]
    assert json.loads(out.stdout) == expected
