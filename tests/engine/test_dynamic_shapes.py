"""The Dynamo tab's dynamic shapes (issue 23 item 5), on real torch: each symbol Dynamo created, where it comes
from, the guards that test it, a specialization, its value in each call and which calls reused its graph, against
torch itself (a compile counter on the same calls) and the inputs' own sizes."""

import os

import pytest
import torch
import torch._dynamo.testing

from contract.report import validate_report
from tests.engine.conftest import run_code
from tests.engine.test_trace_import import import_trace, recorded

DYNAMIC_SIZES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "models", "dynamic_sizes.py")

SPECIALIZED = """import torch


def f(x):
    if x.shape[0] == 6:
        return x * 3
    return x * 2


model = f
example_inputs = [(torch.randn(4, 16),), (torch.randn(6, 16),), (torch.randn(8, 16),)]
"""


def calls_that_compiled(code: str) -> list[bool]:
    """torch's own answer: for each call of the file's example inputs, whether Dynamo compiled a frame."""
    namespace: dict = {}
    exec(compile(code, "model.py", "exec"), namespace)
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounter()
    compiled = torch.compile(namespace["model"], backend=counter)
    compiled_in = []
    for args in namespace["example_inputs"]:
        before = counter.frame_count
        compiled(*args)
        compiled_in.append(counter.frame_count > before)
    torch._dynamo.reset()
    return compiled_in


@pytest.fixture(scope="module")
def dynamic_sizes(tmp_path_factory):
    with open(DYNAMIC_SIZES) as f:
        code = f.read()
    report, _ = run_code(tmp_path_factory.mktemp("dynamic"), code, configs=["eager"], warm_compile=False)
    assert report["status"] == "ok", report.get("failure")
    validate_report(report)
    return code, report


def test_a_recompiled_size_is_a_symbol_with_its_source_guard_and_value_in_every_call(dynamic_sizes):
    code, report = dynamic_sizes
    (symbol,) = report["dynamo"]["symbols"]
    (recompile,) = report["dynamo"]["recompiles"]
    assert symbol["compile_id"] == recompile["compile_id"] and symbol["created_in_call"] == recompile["call_index"]
    assert symbol["source"] == "L['x'].size()[0]" and symbol["subject"] == "Dimension 0 of x"
    # Its value in each call is the batch size of that call's input, and its value when created the recompiling call's.
    namespace: dict = {}
    exec(compile(code, "model.py", "exec"), namespace)
    batch_sizes = [args[0].shape[0] for args in namespace["example_inputs"]]
    assert symbol["values_by_call"] == batch_sizes
    assert symbol["value"] == str(batch_sizes[symbol["created_in_call"]])
    # The branch on the size is a guard on the symbol, at the user's line.
    line = next(i for i, text in enumerate(code.splitlines(), 1) if "if x.shape[0] > 2" in text)
    assert [(g["expr"], g["line"]) for g in symbol["guards"]] == [(f"{symbol['symbol']} > 2", line)]
    assert symbol["line"] == line and symbol["specializations"] == []


def test_the_calls_that_reused_the_dynamic_graph_are_those_torch_did_not_compile_for(dynamic_sizes):
    code, report = dynamic_sizes
    (symbol,) = report["dynamo"]["symbols"]
    compiled_in = calls_that_compiled(code)
    after = range(symbol["created_in_call"] + 1, len(compiled_in))
    assert symbol["reused_by_calls"] == [i for i in after if not compiled_in[i]] == [2, 3]


def test_a_size_fixed_by_an_equality_is_specialized_and_the_next_size_recompiles(tmp_path):
    report, _ = run_code(tmp_path, SPECIALIZED, configs=["eager"], warm_compile=False)
    symbols = {s["compile_id"]: s for s in report["dynamo"]["symbols"]}
    assert list(symbols) == [r["compile_id"] for r in report["dynamo"]["recompiles"]] == ["0/1", "0/2"]
    specialized = symbols["0/1"]
    ((value, line),) = [(s["value"], s["line"]) for s in specialized["specializations"]]
    assert value == "6" and line == 5 and specialized["guards"][0]["expr"] == f"Eq({specialized['symbol']}, 6)"
    # The graph compiled for 6 only: the call of size 8 compiled again (torch says so too), so nothing reused it.
    assert specialized["reused_by_calls"] == [] and calls_that_compiled(SPECIALIZED) == [True, True, True]
    assert symbols["0/2"]["guards"][0]["expr"] == f"Ne({symbols['0/2']['symbol']}, 6)"


def test_a_torch_2_11_log_has_the_same_symbols():
    (report,) = import_trace(recorded("recompile"))  # tests/fixtures/traces-h200-torch2.11/recompile.py
    symbols = report["dynamo"]["symbols"]
    assert [(s["compile_id"], s["source"], s["value"], s["line"]) for s in symbols] == [
        ("0/1", "L['x'].size()[0]", "6", 2),
        ("0/2", "L['x'].size()[0]", "8", 2),
    ]
    assert all(s["file"].endswith("recompile.py") and s["values_by_call"] == [] for s in symbols)
