"""contract/repro.py on every graph of every recorded report (CPU and GPU runs, torch 2.11 and 2.13 logs): a script
that is valid Python with one input per placeholder of the graph, on the recorded device, or a refusal in words.
tests/web/test_repro.py runs the scripts."""

import ast
import re

import pytest

from contract.graphs import graph_payload, report_graphs
from contract.repro import REPRO_GRAPHS, graph_repro
from tests.browser.conftest import SAMPLE_REPORTS, read_sample_report

REFUSALS = (
    "reads constants or subgraphs from its module",
    "is symbolic and the report records no value for it",
)


@pytest.mark.parametrize("name", SAMPLE_REPORTS)
def test_every_graph_gets_a_valid_script_or_a_reason(name):
    report = read_sample_report(name)
    symbols = {s["symbol"]: int(s["value"]) for s in report["dynamo"].get("symbols") or [] if str(s["value"]).isdigit()}
    config = {"name": "inductor_default", "backend": "inductor", "mode": "default"}
    for graph_id, graph in report_graphs(report):
        if not graph_id.startswith(REPRO_GRAPHS):
            continue
        payload = graph_payload(graph_id, graph)
        script, why_not = graph_repro(
            payload, device="cpu", config=config, torch_version="x", symbols=symbols, source=name
        )
        if script is None:
            assert any(refusal in why_not for refusal in REFUSALS), (graph_id, why_not)
            continue
        tree = ast.parse(script)  # valid Python
        inputs = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "inputs")
        made = inputs.body[-1].value.elts
        placeholders = [n for n, op in zip(payload["names"], _column(payload, "op")) if op == "placeholder"]
        assert len(made) == len(placeholders), (graph_id, len(made), placeholders)
        # The device each input is made on is the one its annotation names (cuda:0 in a GPU run's graphs).
        devices = set(re.findall(r"torch\.\w+, '([\w:]+)'\),  #", script))
        assert devices <= {"cpu", "cuda", "cuda:0"}, devices


def _column(payload, key):
    column = payload["columns"][key]
    return [column["values"][i] for i in column["index"]]
