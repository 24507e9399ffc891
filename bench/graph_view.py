"""Report UI: time to an interactive graph in headless Chromium (Debian's /usr/bin/chromium).

    .venv/bin/python bench/graph_view.py [--runs 5] [--gpt tests/fixtures/reports/tiny_gpt.json]

Serves the web app as production does (`python -m service web`: gunicorn, 2 processes x 8 threads) over a fresh
SQLite instance, stores one report per case, and opens /r/<slug>/<tab>#graph-ID in a fresh page per run. Time to
interactive = from navigation start to the viewer's "ready" (graph fetched, laid out in the worker, first frame
drawn, events bound): what a reader waits for after following a link to a graph. Along the way: when the page was
parsed (DOMContentLoaded: HTML, styles and scripts) and when the graph's JSON had arrived. Also measured: one full repaint (what each pan/zoom frame costs) and, for
module-grouped graphs, opening one closed module box (layout in the worker + redraw). Cases:

  - a 2,000-node synthetic graph with no module groups, so all 2,000 nodes are drawn (goal: under 1 s);
  - the tiny GPT training report's largest graph (examples/tiny_gpt.py, aot_eager: the joint graph);
  - a 20,000-node synthetic graph in 20 layers x 4 sub-modules, opened collapsed (goal: navigable within 3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from playwright.sync_api import sync_playwright  # noqa: E402

from storage import runstore  # noqa: E402
from storage.config import PROJECT_ROOT  # noqa: E402
from storage.db import session_factory  # noqa: E402
from tests.support import make_settings, wait_until  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def synthetic_graph(count: int, layers: int = 0, subs: int = 4) -> dict:
    """A transformer-like DAG: a chain with skip connections every few nodes, a parameter read every fifth node,
    and (if layers) each node inside layers.L.subS like nn_module_stack."""
    nodes = [
        {
            "name": "x",
            "op": "placeholder",
            "target": "x",
            "args": [],
            "shape": [8, 64],
            "dtype": "float32",
            "module_stack": [],
        }
    ]
    previous = "x"
    per_layer = max(1, count // layers) if layers else count
    for k in range(count):
        args = [previous]
        if k % 7 == 3 and k > 6:
            args.append(f"op{k - 5}")
        if k % 5 == 0:
            nodes.append(
                {
                    "name": f"p{k}",
                    "op": "get_attr",
                    "target": f"w{k}",
                    "args": [],
                    "shape": [64, 64],
                    "dtype": "float32",
                    "module_stack": [],
                }
            )
            args.append(f"p{k}")
        stack = []
        if layers:
            layer, sub = k // per_layer, (k % per_layer) * subs // per_layer
            stack = [
                {"path": f"L['self'].layers.{layer}", "type": "Layer"},
                {"path": f"L['self'].layers.{layer}.sub{sub}", "type": "Sub"},
            ]
        nodes.append(
            {
                "name": f"op{k}",
                "op": "call_function",
                "target": ["aten.mm.default", "aten.add.Tensor", "aten.gelu.default", "aten.mul.Tensor"][k % 4],
                "args": args,
                "shape": [8, 64],
                "dtype": "float32",
                "file": "model.py",
                "line": 10 + k % 30,
                "module_stack": stack,
            }
        )
        previous = f"op{k}"
    nodes.append({"name": "output", "op": "output", "target": "output", "args": [previous], "module_stack": []})
    return {"compile_id": "0/0", "nodes": nodes, "num_nodes": len(nodes), "code": "", "ops": {}}


def store(session, report: dict, filename: str = "model.py") -> str:
    run = runstore.create_run(
        session,
        runstore.Submission(
            code=report.get("source", {}).get("code", "pass\n"),
            filename=filename,
            device="cpu",
            train=None,
            configs=["eager"],
        ),
    )
    runstore.store_report(session, run.id, {"status": "ok", "failure": None, **report})
    return run.slug


def largest_graph_id(report: dict) -> tuple[str, str, int]:
    candidates = [(f"aot-{i}", "aot", len(g["nodes"])) for i, g in enumerate(report["aot"]["graphs"])]
    candidates += [(f"dynamo-{i}", "dynamo", len(g["nodes"])) for i, g in enumerate(report["dynamo"]["graphs"])]
    return max(candidates, key=lambda c: c[2])


PAINT_MS = """async (id) => {
  const { viewers } = await import('/static/js/graph-view.js');
  const viewer = viewers.get(id);
  const started = performance.now();
  for (let k = 0; k < 10; k++) viewer.paint();
  return (performance.now() - started) / 10;
}"""

OPEN_BOX_MS = """async (id) => {
  const { viewers } = await import('/static/js/graph-view.js');
  const viewer = viewers.get(id);
  const closed = viewer.layout.items.find((item) => item >= viewer.model.count);
  if (closed === undefined) return null;
  const started = performance.now();
  await viewer.toggleGroup(closed - viewer.model.count);
  await new Promise((resolve) => requestAnimationFrame(() => resolve()));
  return performance.now() - started;
}"""


# Waits in the page itself: a Playwright locator would first inject Playwright's own script (~80 ms of the page's
# main thread on this machine), in the middle of what is measured.
READY = """(id) => new Promise((resolve) => {
  const card = document.getElementById(`graph-${id}`);
  const report = () => {
    if (card.dataset.state !== "ready") return false;
    const json = performance.getEntriesByType("resource").find((entry) => entry.name.includes(`/graphs/${id}.json`));
    resolve({ ready: Number(card.dataset.readyAt), visible: Number(card.dataset.visible), json: json.responseEnd,
              domContentLoaded: performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd });
    return true;
  };
  if (!report()) new MutationObserver((_, observer) => { if (report()) observer.disconnect(); }).observe(card, { attributes: true });
})"""


def measure(browser, url: str, graph_id: str, runs: int) -> dict:
    ready, page_ready, json_received, paint, open_box, visible = [], [], [], [], [], None
    for _ in range(runs):
        context = browser.new_context(viewport={"width": 1500, "height": 1000})
        page = context.new_page()
        page.goto(url, wait_until="domcontentloaded")
        times = page.evaluate(READY, graph_id)
        ready.append(times["ready"])
        page_ready.append(times["domContentLoaded"])
        json_received.append(times["json"])
        visible = times["visible"]
        paint.append(page.evaluate(PAINT_MS, graph_id))
        opened = page.evaluate(OPEN_BOX_MS, graph_id)
        if opened is not None:
            open_box.append(opened)
        context.close()
    return {
        "ready": ready,
        "page_ready": page_ready,
        "json_received": json_received,
        "paint": paint,
        "open_box": open_box,
        "visible": visible,
    }


def spread(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--gpt",
        default=os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "tiny_gpt.json"),
        help="the tiny GPT report (python -m engine explore examples/tiny_gpt.py --configs "
        "eager,aot_eager --out DIR; DIR/report.json)",
    )
    args = parser.parse_args()

    settings = make_settings(tempfile.mkdtemp(prefix="graph-view-bench-"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "service", "web", "--port", str(port)],
        cwd=PROJECT_ROOT,
        env={**os.environ, **settings.to_env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(base), timeout=60, what="gunicorn to answer")
        run_cases(args, settings, base)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _answers(base: str) -> bool:
    try:
        return urllib.request.urlopen(base + "/", timeout=2).status == 200
    except OSError:
        time.sleep(0.2)
        return False


def run_cases(args, settings, base: str) -> None:

    with open(args.gpt) as f:
        gpt = json.load(f)
    gpt_graph, gpt_tab, gpt_nodes = largest_graph_id(gpt)
    cases = []
    with session_factory(settings.database_url)() as session:
        flat = synthetic_graph(2000)
        cases.append(
            (
                "synthetic, no modules (all drawn)",
                len(flat["nodes"]),
                store(session, {"dynamo": {"graphs": [flat]}}),
                "dynamo",
                "dynamo-0",
                "< 1 s",
            )
        )
        cases.append(
            (
                f"tiny GPT training, {gpt_graph} ({gpt_tab})",
                gpt_nodes,
                store(session, gpt, gpt["source"]["filename"]),
                gpt_tab,
                gpt_graph,
                "—",
            )
        )
        grouped = synthetic_graph(20_000, layers=20)
        cases.append(
            (
                "synthetic, 20 layers x 4 modules, collapsed",
                len(grouped["nodes"]),
                store(session, {"dynamo": {"graphs": [grouped]}}),
                "dynamo",
                "dynamo-0",
                "< 3 s",
            )
        )

    version = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    print(
        f"{version}; {os.cpu_count()} CPUs; {args.runs} runs per case, each in a fresh browser context; ms; "
        f"load average {os.getloadavg()[0]:.1f} at the start"
    )
    print(
        "| graph | nodes | drawn items | time to interactive, median (min-max) | goal | of which: page parsed "
        "(DOMContentLoaded) | graph JSON received | repaint (pan/zoom frame) | open one module box |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        for label, nodes, slug, tab, graph_id, goal in cases:
            result = measure(browser, f"{base}/r/{slug}/{tab}#graph-{graph_id}", graph_id, args.runs)
            print(
                f"| {label} | {nodes:,} | {result['visible']:,} | {spread(result['ready'])} | {goal} "
                f"| {spread(result['page_ready'])} | {spread(result['json_received'])} "
                f"| {spread(result['paint'])} | {spread(result['open_box'])} |",
                flush=True,
            )
        browser.close()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
