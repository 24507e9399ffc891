"""contract/repro.py on every graph of every recorded report (CPU and GPU runs, torch 2.11 and 2.13 logs): a script
that is valid Python with one input per placeholder of the graph, on the recorded device, or a refusal in words.
tests/web/test_repro.py runs the scripts."""

import ast
import re

import pytest

from contract.graphs import graph_payload, report_graphs
from contract.repro import REPRO_GRAPHS, _cpp_vector_bits, graph_repro, kernel_repro
from tests.browser.conftest import SAMPLE_REPORTS
from tests.support import read_sample_report

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


@pytest.mark.parametrize("name", SAMPLE_REPORTS)
def test_every_kernel_gets_a_valid_script_that_carries_its_output_code(name):
    report = read_sample_report(name)
    inductor = report.get("inductor") or {}
    for index, kernel in enumerate(inductor.get("kernels") or []):
        script, why_not = kernel_repro(inductor, index, device="cpu", torch_version="x", source=name)
        assert why_not is None and script is not None, (name, kernel["name"], why_not)
        tree = ast.parse(script)
        code = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "OUTPUT_CODE")
        assert f"\n{kernel['name']} = async_compile." in code and "def get_args(" in code
        assert kernel["source"].strip()[:200] in code  # the kernel's own source, in the output code carried
        assert f'KERNEL = "{kernel["name"]}"' in script
    assert kernel_repro(inductor, len(inductor.get("kernels") or []), device="cpu", torch_version="x") == (None, None)


def test_a_kernel_without_its_output_code_is_refused_in_words():
    inductor = read_sample_report("seed")["inductor"]
    script, why_not = kernel_repro({**inductor, "output_code": []}, 0, device="cpu", torch_version="x")
    assert script is None and why_not == "the report holds no output code that defines cpp_fused_add_cos_mul_sin_tanh_0"


@pytest.mark.parametrize(
    "name, bits",
    [("seed", 256), ("activation_chain", 512), ("seed_gpu", None)],  # AVX2, AVX-512, Triton
)
def test_the_vector_width_the_cpp_was_written_for_is_read_from_its_loads(name, bits):
    (output_code,) = read_sample_report(name)["inductor"]["output_code"][:1]
    assert _cpp_vector_bits(output_code["code"]) == bits
    loads = re.findall(r"Vectorized<float>::loadu\([^;]*static_cast<int64_t>\((\d+)\)", output_code["code"])
    assert {int(n) * 32 for n in loads} <= {bits}  # every full load of a float vector is of that width
