"""Report tabs of a large model: HTML size and time to interactive per tab, in headless Chromium.

    .venv/bin/python bench/report_tabs.py [--runs 5] [--report tests/fixtures/reports/residual_mlp_24.json.gz]

Stores the report (default: a 24-layer residual MLP in training, a few thousand nodes per graph) as a finished run
on an in-process server over a fresh SQLite instance, then opens every tab in a fresh page, rounds interleaved
(overview, dynamo, aot, inductor, runtime, overview, ...). Per tab: the HTML's size, the server's time to the
last byte (navigation responseEnd - requestStart) and DOMContentLoaded (HTML parsed, scripts run: the page
answers clicks). Then the Inductor tab's largest fusion-decision group opened (its part fetched, 150 pairs drawn).
Goal: every tab at most about 1 MB and interactive within 2 s.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from playwright.sync_api import sync_playwright  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from storage import runstore  # noqa: E402
from storage.config import PROJECT_ROOT  # noqa: E402
from storage.db import session_factory  # noqa: E402
from tests.support import make_settings  # noqa: E402
from webapp import create_app  # noqa: E402

TABS = ("overview", "dynamo", "aot", "inductor", "runtime")


def read(path: str) -> dict:
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        return json.load(f)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--report", default=os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "residual_mlp_24.json.gz")
    )
    args = parser.parse_args()
    settings = make_settings(tempfile.mkdtemp(prefix="pt2scope-bench-"))
    server = make_server("127.0.0.1", 0, create_app(settings), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    report = read(args.report)
    with session_factory(settings.database_url)() as session:
        request = report["request"]
        run = runstore.create_run(
            session,
            runstore.Submission(
                code=report["source"]["code"],
                filename=report["source"]["filename"],
                device=request["device"],
                train=request.get("train"),
                configs=request["configs"],
            ),
        )
        for stage in report["stages"]:
            runstore.record_event(
                session,
                run.id,
                {
                    "event": "stage",
                    "stage": stage["name"],
                    "state": "finished",
                    "seconds": stage.get("seconds"),
                    "config": stage.get("config"),
                },
            )
        runstore.store_report(session, run.id, report)
        base = f"http://127.0.0.1:{server.server_port}/r/{run.slug}"
    sizes, server_ms, ready_ms, fusion_ms = {}, {tab: [] for tab in TABS}, {tab: [] for tab in TABS}, []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for _ in range(args.runs):
            for tab in TABS:
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                response = page.goto(base + ("" if tab == "overview" else f"/{tab}"))
                sizes[tab] = len(response.body())
                timing = page.evaluate(
                    "(() => { const t = performance.getEntriesByType('navigation')[0];"
                    " return [t.responseEnd - t.requestStart, t.domContentLoadedEventEnd]; })()"
                )
                server_ms[tab].append(timing[0])
                ready_ms[tab].append(timing[1])
                if tab == "inductor":
                    groups = page.locator("#inductor-fusion details.fusion-group")
                    largest = max(
                        range(groups.count()),
                        key=lambda i: int(groups.nth(i).locator("summary strong").inner_text().rstrip("×")),
                    )
                    group = groups.nth(largest)
                    started = time.perf_counter()
                    group.locator("summary").click()
                    group.locator("ul.decisions > li").nth(0).wait_for()
                    fusion_ms.append((time.perf_counter() - started) * 1e3)
                page.close()
        browser.close()
    server.shutdown()
    print(f"{os.path.basename(args.report)}: {args.runs} rounds, load {open('/proc/loadavg').read().strip()}")
    print(f"{'tab':10} {'HTML KiB':>9} {'server ms':>16} {'DOMContentLoaded ms':>22}")
    for tab in TABS:
        print(f"{tab:10} {sizes[tab] / 1024:9.0f} {spread(server_ms[tab]):>16} {spread(ready_ms[tab]):>22}")
    print(f"Inductor: largest fusion group opened in {spread(fusion_ms)} ms")


if __name__ == "__main__":
    main()
