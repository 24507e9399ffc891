"""The graph-break example: the Dynamo tab lists both breaks, each linked to its line in the user's source."""

import os
import re

from playwright.sync_api import expect

from storage.config import PROJECT_ROOT


def _line_of(code: str, needle: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if needle in line)


def test_graph_break_example_shows_both_breaks_with_their_lines(site, page):
    with open(os.path.join(PROJECT_ROOT, "examples", "graph_break.py")) as f:
        code = f.read()
    print_line, item_line = _line_of(code, 'print("halfway")'), _line_of(code, ".sum().item()")

    page.goto(site.url + "/")
    page.get_by_role("link", name="graph_break", exact=True).click()
    expect(page.locator("#editor")).to_contain_text("halfway")
    for config in ("inductor_default", "inductor_reduce_overhead"):  # Dynamo is what this test is about
        page.get_by_label(re.compile(config)).uncheck()
    page.get_by_role("button", name="Run", exact=True).click()

    expect(page.locator("#status")).to_have_text("succeeded", timeout=120_000)
    expect(page.locator("#headlines li").first).to_contain_text("2 graph breaks split your function into 3 graphs")
    expect(page.locator("#pipe-dynamo")).to_contain_text("2 graph breaks")
    page.locator("#tab-dynamo").click()
    rows = page.locator("#dynamo-graph_breaks table.records").first.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("print")
    expect(rows.nth(1)).to_contain_text("item")
    for row, line in ((rows.nth(0), print_line), (rows.nth(1), item_line)):
        link = row.locator("a.line")
        expect(link).to_have_text(str(line))
        link.click()
        expect(page).to_have_url(re.compile(f"#L-{line}$"))
        expect(page.locator(f"#L-{line}")).to_be_attached()
