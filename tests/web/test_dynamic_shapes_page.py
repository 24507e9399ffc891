"""The Dynamo tab's "Dynamic shapes" (issue 23 item 5) from a real report (tests/fixtures/reports/dynamic_sizes.json:
tests/fixtures/models/dynamic_sizes.py, four calls of batch 4, 6, 8 and 5): each symbol's row says where it comes
from, the range, the guard at the user's line, and its value in each call marked by what the call did."""

import re

import pytest

from tests.support import read_sample_report, sample_site
from tests.web.test_report_agreement import text_of


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return sample_site(tmp_path_factory.mktemp("dynamic_shapes_page"), ("dynamic_sizes", "seed"))


def dynamo_tab(site, name) -> str:
    client, slugs = site
    response = client.get(f"/r/{slugs[name]}/dynamo")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_each_symbol_has_its_source_range_guard_and_calls(site):
    (symbol,) = read_sample_report("dynamic_sizes")["dynamo"]["symbols"]
    page = dynamo_tab(site, "dynamic_sizes")
    row = re.search(rf'<tr data-symbol="{symbol["symbol"]}" data-compile="0/1".*?</tr>', page, re.S).group(0)
    cells = [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[0] == symbol["symbol"]
    assert cells[1].startswith("Dimension 0 of x") and f'href="#L-{symbol["line"]}"' in row
    assert symbol["range"] in cells[3] and "6 when created" in cells[3]
    assert f"{symbol['symbol']} > 2" in cells[4] and f"line {symbol['guards'][0]['line']}" in cells[4]
    chips = re.findall(r'<span class="chip call-(\w+)"[^>]*>(\d+): (\d+)</span>', row)
    assert chips == [("other", "0", "4"), ("compiled", "1", "6"), ("reused", "2", "8"), ("reused", "3", "5")]
    words = text_of(re.search(r'<ul class="symbol-words">(.*?)</ul>', page, re.S).group(1))
    assert "Calls 2, 3 reused this graph without a recompile." in words


def test_a_report_without_dynamic_shapes_has_no_such_section(site):
    assert read_sample_report("seed")["dynamo"].get("symbols", []) == []
    assert 'id="dynamo-symbols"' not in dynamo_tab(site, "seed")
