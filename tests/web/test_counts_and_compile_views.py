"""One name per count, read from the engine's summary on every page and in the API; compile times that add up,
cold beside warm; recompiles in words."""

import json
import os
import re

import pytest

from contract.counts import summarize
from contract.report import checked_report
from storage import runstore
from storage.config import PROJECT_ROOT
from tests.support import SEED

STAGES = ("dynamo", "aot_autograd", "inductor", "codegen", "backward", "other")


@pytest.fixture
def report():
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "seed.json")) as f:
        report = checked_report(json.load(f))  # the stored fixture, as the current schema reads it
    dynamo = report["dynamo"]
    dynamo["guards"] = [{**dynamo["guards"][0], "count": 10}, {"compile_id": "0/1", "text": "", "count": 11}]
    dynamo["graph_breaks"] = [
        {
            "reason": "print",
            "explanation": "",
            "hints": [],
            "doc_url": None,
            "file": "seed.py",
            "line": 6,
            "code": "print(x)",
            "count": 3,
            "compile_ids": ["0/0"],
            "user_stack": [],
            "text": "Graph break",
        }
    ]
    dynamo["recompiles"] = [
        {
            "compile_id": "0/1",
            "call_index": 1,
            "function": "f",
            "where": "seed.py:5",
            "reason": "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6",
            "reasons": ["0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6"],
            "failed_guards": [
                {
                    "compile_id": "0/0",
                    "guard": "tensor 'x' size mismatch at index 0. expected 4, actual 6",
                    "location": None,
                    "user_line": None,
                }
            ],
            "dynamic_dims": [
                {
                    "symbol": "s77",
                    "source": "L['x'].size()[0]",
                    "value": "6",
                    "text": "Dimension 0 of x became dynamic (symbol s77, 6 in this call)",
                }
            ],
            "text": "Recompiled f for the call on example_inputs[1] (compile 0/1): compile 0/0 rejected it: tensor 'x' "
            "size mismatch at index 0. expected 4, actual 6. Dimension 0 of x became dynamic (symbol s77).",
        }
    ]
    report["inductor"]["library_calls"] = [
        {"compile_id": "0/0", "graph_kind": "inference", "name": "extern_kernels.mm", "count": 2}
    ]
    cold = {
        "dynamo": 0.25,
        "aot_autograd": 1.28,
        "inductor": 0.52,
        "codegen": 2.32,
        "backward": 0.0,
        "other": 0.06,
        "total": 4.43,
    }
    warm = {
        "dynamo": 0.2,
        "aot_autograd": 0.5,
        "inductor": 0.0,
        "codegen": 0.0,
        "backward": 0.0,
        "other": 0.0,
        "total": 0.7,
    }
    hit = {"hits": 1, "misses": 0, "bypasses": 0, "state": None}
    kernels = {"hits": 1, "misses": 0, "generated": 1, "binaries_written": 0, "state": None}
    report["runtime"]["compile_seconds"] = cold
    report["runtime"]["compile_cache"] = {
        "cold": {
            "seconds": cold,
            "caches": {
                "fx_graph": {**hit, "hits": 0},
                "aot_autograd": {**hit, "hits": 0},
                "kernels": {**kernels, "hits": 0, "misses": 1, "binaries_written": 7},
            },
        },
        "warmup": None,
        "warm": {
            "status": "ok",
            "reason": None,
            "config": "inductor_default",
            "seconds": warm,
            "wall_seconds": 6.0,
            "caches": {"fx_graph": hit, "aot_autograd": hit, "kernels": kernels},
        },
    }
    report["summary"] = summarize(report)
    return report


def _store(client, db, report):
    slug = client.post(
        "/api/runs", json={"code": report["source"]["code"] or SEED, "filename": report["source"]["filename"]}
    ).get_json()["id"]
    run = runstore.get_run(db, slug)
    runstore.store_report(db, run.id, report)
    return run


def test_the_api_and_every_page_show_the_engines_counts(client, db, report):
    counts = report["summary"]["counts"]
    assert (counts["guards"], counts["graph_breaks"], counts["unique_graph_breaks"], counts["library_calls"]) == (
        21,
        3,
        1,
        2,
    )
    run = _store(client, db, report)
    api = client.get(f"/api/runs/{run.slug}").get_json()["summary"]
    assert {key: api[key] for key in counts} == counts  # not recounted: guards were 2 trees, breaks 1 unique
    assert client.get(f"/r/{run.slug}").status_code == 200  # the Overview's story reads summary.counts too
    dynamo = client.get(f"/r/{run.slug}/dynamo").get_data(as_text=True)
    assert "3 graph breaks, 1 unique" in dynamo and "1 recompile, 21 guards" in dynamo
    assert "10 guards" in dynamo and "11 guards" in dynamo  # per frame: torch's count, not lines of the tree
    assert "Recompiled f for the call on example_inputs[1]" in dynamo
    inductor = client.get(f"/r/{run.slug}/inductor").get_data(as_text=True)
    assert "1 generated kernel, 2 library calls" in inductor and "generated_kernel_count" not in inductor


def test_the_runtime_tab_shows_exclusive_stages_that_add_up_cold_beside_warm(client, db, report):
    run = _store(client, db, report)
    html = client.get(f"/r/{run.slug}/runtime").get_data(as_text=True)
    table = html[html.index('id="compile-stages"') : html.index("</table>", html.index('id="compile-stages"'))]
    cold_cells = [float(v) for v in re.findall(r'<tr><td>[^<]+</td><td class="num">([0-9.]+) s', table)]
    assert sum(cold_cells) == pytest.approx(report["runtime"]["compile_seconds"]["total"], abs=0.01)
    assert "stages nest" not in html and "add up" in html
    assert 'id="warm-compile-total">0.7 s' in html and "warm (every cache filled)" in html
    caches = html[html.index('id="compile-caches"') :]
    assert "FX graph cache" in caches and "1 hit, 0 misses" in caches


def test_the_runtime_tab_says_in_words_when_the_kernels_came_from_the_trusted_cache(client, db, report):
    cold = report["runtime"]["compile_cache"]["cold"]["caches"]["kernels"]
    html = client.get(f"/r/{_store(client, db, report).slug}/runtime").get_data(as_text=True)
    assert "with cold caches: each job" in html and "shared cache" not in html
    cold.update(
        hits=1,
        misses=0,
        binaries_written=0,
        trusted_binaries=2,
        state="shared: the worker's trusted kernel cache, built at its start from seed.py (cpu) and bound read-only",
    )
    html = client.get(f"/r/{_store(client, db, report).slug}/runtime").get_data(as_text=True)
    lede = html[html.index('id="trusted-kernel-cache"') : html.index("</p>", html.index('id="trusted-kernel-cache"'))]
    assert "kernel binaries from a shared cache" in lede and "(1 kernel found there, 0 compiled here)" in lede
    assert "with cold caches: each job" not in html
    caches = html[html.index('id="compile-caches"') :]
    assert '1 hit, 0 misses <span class="muted">(shared: the worker&#39;s trusted kernel cache' in caches


def test_a_recompile_of_torchs_wrapper_frame_shows_the_users_module_and_line(client, db, report):
    """An nn.Sequential's frame is torch.compile's `inner` (torch/_dynamo/external_utils.py): the page names the
    user's model and links its line; torch's frame is said apart."""
    torch_frame = "wrap_inline.<locals>.inner at /venv/torch/_dynamo/external_utils.py:67"
    recompile = report["dynamo"]["recompiles"][0]
    recompile.update(
        function="model (torch.nn.Sequential)",
        file="seed.py",
        line=9,
        where="seed.py:9",
        torch_frame=torch_frame,
        text="Recompiled model (torch.nn.Sequential) at seed.py:9 for the call on example_inputs[1] (compile 0/1): "
        "compile 0/0 rejected it: tensor 'args[0]' size mismatch at index 0. expected 4, actual 6.",
    )
    bytecode = report["dynamo"]["bytecode"][0]
    bytecode.update(
        name="inner",
        file="/venv/torch/_dynamo/external_utils.py",
        line=67,
        called_as="model (torch.nn.Sequential) at seed.py:9",
    )
    run = _store(client, db, report)
    dynamo = client.get(f"/r/{run.slug}/dynamo").get_data(as_text=True)
    assert "Recompiled model (torch.nn.Sequential) at seed.py:9 for the call on example_inputs[1]" in dynamo
    named = dynamo[dynamo.index('class="muted recompiled-function"') :].split("</span>", 1)[0]
    assert 'model (torch.nn.Sequential) at seed.py:<a href="#L-9">9</a>' in named
    assert "(torch's frame: wrap_inline.&lt;locals&gt;.inner at /venv/torch/_dynamo/external_utils.py:67)" in named
    header = dynamo[dynamo.index('id="bytecode-1"') :].split("</h3>", 1)[0]
    assert "model (torch.nn.Sequential) at seed.py:9" in header and "torch's frame inner" in header
