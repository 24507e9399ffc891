"""Memory per rung on the pages (issue 23 item 3), from a real report (tests/fixtures/reports/activation_chain.json:
tests/fixtures/models/activation_chain.py trained under eager, aot_eager and inductor_default): the Runtime tab's
table and chart say what the report's debug.memory says, and the diff page puts each side's memory beside its
speedups."""

import html
import json
import re

import pytest

from tests.support import read_sample_report, sample_site
from tests.web.test_report_agreement import text_of
from webapp.numbers import data_size, times

NAMES = ("activation_chain", "mlp_train")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return sample_site(tmp_path_factory.mktemp("memory_pages"), NAMES)


def get(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.get_data(as_text=True)


def raw(page: str, element_id: str) -> str:
    """The HTML inside the element with this id (a section or table: none of them nests its own tag)."""
    match = re.search(rf'<(\w+)[^>]*\bid="{element_id}"[^>]*>(.*?)</\1>', page, re.S)
    assert match, element_id
    return match.group(2)


def table_rows(html: str) -> dict[str, list[str]]:
    rows = re.findall(r'<tr data-config="([^"]+)">(.*?)</tr>', html, re.S)
    return {config: [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)] for config, row in rows}


def test_the_runtime_tab_shows_each_rungs_peak_saved_bytes_and_ratios(site):
    client, slugs = site
    memory = read_sample_report("activation_chain")["debug"]["memory"]
    section = raw(get(client, f"/r/{slugs['activation_chain']}/runtime"), "runtime-memory")
    assert "profiler: peak of CPU allocations" in text_of(section)
    rows = table_rows(section)
    assert list(rows) == [m["config"] for m in memory] == ["eager", "aot_eager", "inductor_default"]
    for m in memory:
        peak, compression, saved, saved_ratio = rows[m["config"]][1:]
        assert peak == data_size(m["peak_bytes"]) and compression == times(m["compression_ratio"])
        assert saved == f"{data_size(m['saved_for_backward']['bytes'])} in {m['saved_for_backward']['tensors']} tensors"
        assert saved_ratio == times(m["saved_ratio"])
    # The partitioner's work, readable: the compiled rungs save a fifth of eager's activations.
    assert rows["inductor_default"][4] == "5x" and rows["aot_eager"][4] == "5x"
    chart = re.search(r"data-chart='([^']+)'", section).group(1)
    spec = json.loads(html.unescape(chart))
    assert [trace["name"] for trace in spec["data"]] == ["peak per step", "saved for backward"]
    assert spec["data"][0]["y"] == [m["peak_bytes"] / 1e6 for m in memory]


def test_a_report_without_memory_has_no_memory_section(site):
    client, slugs = site
    assert "debug" not in read_sample_report("mlp_train")  # recorded before the debug section existed
    assert 'id="runtime-memory"' not in get(client, f"/r/{slugs['mlp_train']}/runtime")


def test_the_diff_page_puts_each_sides_memory_beside_its_speedups(site):
    client, slugs = site
    a, b = slugs["activation_chain"], slugs["mlp_train"]
    memory = {m["config"]: m for m in read_sample_report("activation_chain")["debug"]["memory"]}
    data = client.get(f"/api/diff/{a}/{b}").get_json()
    by_config = {row["config"]: row for row in data["benchmarks"]}
    for config, m in memory.items():
        row = by_config[config]
        assert (row["a_peak_bytes"], row["a_compression_ratio"]) == (m["peak_bytes"], m["compression_ratio"])
        assert row["a_saved_bytes"] == m["saved_for_backward"]["bytes"]
        assert row["b_peak_bytes"] is None and row["peak_bytes_delta"] is None  # B's report measured no memory
    rows = table_rows(raw(get(client, f"/diff/{a}/{b}"), "diff-memory"))
    assert rows["inductor_default"][1:3] == [data_size(memory["inductor_default"]["peak_bytes"]), "—"]
    # The same run on both sides: every difference is nought.
    same = client.get(f"/api/diff/{a}/{a}").get_json()["benchmarks"]
    assert {row["peak_bytes_delta"] for row in same} == {0}
