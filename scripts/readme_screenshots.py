"""Retake the README's screenshots (docs/screenshot-*.png) from recorded reports, in Debian's Chromium.

    .venv/bin/python scripts/readme_screenshots.py [--out docs]

The reports are real engine runs (tests/fixtures/reports), stored on a scratch site in a temporary folder as a
worker stores them, so the pictures show the pages as they are now without running a job.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading

from playwright.sync_api import sync_playwright
from werkzeug.serving import make_server

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from storage.db import session_factory  # noqa: E402
from tests.browser.conftest import CHROMIUM, read_sample_report  # noqa: E402
from tests.support import make_settings, store_sample_report  # noqa: E402
from webapp import create_app  # noqa: E402

# (file, report, tab, viewport, query, what to wait for; the shot starts at its top when it is not the page's)
SHOTS = (
    ("screenshot-overview.png", "mlp_train", "", (1440, 900), "", "#pipeline"),
    ("screenshot-inductor.png", "seed", "/inductor", (1440, 1180), "", "#inductor-kernels"),
    ("screenshot-present.png", "unrolled48", "/dynamo", (1280, 800), "?present=1", ".graph-card[data-state=ready]"),
)
SCROLLED = {"screenshot-present.png"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs"))
    args = parser.parse_args()
    settings = make_settings(tempfile.mkdtemp(prefix="pt2scope-shots-"))
    server = make_server("127.0.0.1", 0, create_app(settings), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    with session_factory(settings.database_url)() as session:
        slugs = {name: store_sample_report(session, read_sample_report(name)).slug for name in {s[1] for s in SHOTS}}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        for filename, name, tab, (width, height), query, ready in SHOTS:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{base}/r/{slugs[name]}{tab}{query}")
            page.locator(ready).first.wait_for(timeout=30_000)
            if filename in SCROLLED:
                page.locator(ready).first.evaluate("(element) => element.scrollIntoView()")
            page.wait_for_timeout(500)  # charts and canvases settle
            path = os.path.join(args.out, filename)
            page.screenshot(path=path)
            print("wrote", os.path.normpath(path))
            page.close()
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
