"""Issue 22, the diff page's defects, on real reports (tests/fixtures/reports) as the page renders them: guards
counted as the Dynamo tab counts them, undecided speedups in the Runtime tab's words (never a bare figure), each side
told apart, and a guard's timing ("Guard latency = ...") never listed as a difference of guards."""

import json
import re

import pytest

from storage import runstore
from storage.db import session_factory
from tests.support import read_sample_report, sample_site
from tests.web.test_report_agreement import element, shown_guards, text_of
from webapp.views import diff as diff_view

NAMES = ("two_breaks_one_line", "custom_backend", "seed", "graph_break", "seed_busy_cpu", "mlp_train")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return sample_site(tmp_path_factory.mktemp("diff_page"), NAMES, seed_slow=slow_seed())


def slow_seed() -> dict:
    """The seed's report with every benchmark 4,000x slower and a tiny error: figures that '%.4g' printed as
    1.58e+04 and 1.2e-07."""
    report = read_sample_report("seed")
    for bench in report["runtime"]["benchmarks"]:
        if bench.get("median_ms"):
            bench["median_ms"] = 15812.3 if bench["config"] == "eager" else bench["median_ms"] * 4000
            if bench.get("max_abs_error") is not None:
                bench["max_abs_error"] = 1.2e-7
    return report


def get(client, url):
    response = client.get(url)
    assert response.status_code == 200, url
    return response.get_data(as_text=True)


def diff(site, a, b):
    client, slugs = site
    return get(client, f"/diff/{slugs[a]}/{slugs[b]}"), client.get(f"/api/diff/{slugs[a]}/{slugs[b]}").get_json()


def dynamo_tab_guards(site, name) -> int:
    client, slugs = site
    return int(shown_guards(get(client, f"/r/{slugs[name]}/dynamo")))


def summary_cells(page, metric):
    row = re.search(rf'<tr data-metric="{metric}">(.*?)</tr>', page, re.S).group(1)
    return [text_of(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


@pytest.mark.parametrize("a, b", [("two_breaks_one_line", "custom_backend"), ("seed", "graph_break")])
def test_the_diff_counts_guards_as_the_dynamo_tab_does(site, a, b):
    page, data = diff(site, a, b)
    want = dynamo_tab_guards(site, a), dynamo_tab_guards(site, b)
    assert want[0] > 3 and want[1] > 3  # more guards than frames: a count of frames would be told apart
    cells = summary_cells(page, "guards")
    assert (cells[1], cells[2]) == (str(want[0]), str(want[1])), cells
    guards = next(row for row in data["summary"] if row["metric"] == "guards")
    assert (guards["a"], guards["b"]) == want
    # each frame's count as the Dynamo tab shows it, in the diff's own guard sections too
    per_frame = re.findall(r"(\d+) guards in A, (\d+|—) in B", text_of(element(page, "diff-guards") or ""))
    assert sum(int(x) for x, _ in per_frame) == want[0], per_frame


def test_undecided_speedups_are_worded_as_the_runtime_tab_words_them(site):
    client, slugs = site
    page, data = diff(site, "seed", "seed_busy_cpu")
    runtime = text_of(get(client, f"/r/{slugs['seed_busy_cpu']}/runtime"))
    table = re.search(r'<table class="records" id="diff-benchmarks">.*?</table>', page, re.S).group(0)
    cells_of = (re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", table, re.S))
    rows = {text_of(cells[0]): [text_of(c) for c in cells] for cells in cells_of if cells}
    undecided = [row for row in data["benchmarks"] if row["b_speedup_text"] and not row["b_speedup_decided"]]
    assert undecided and all(row["config"] != "eager" for row in undecided)
    for row in undecided:
        cell = rows[row["config"]][5]  # Speedup B
        assert "not decided" in cell, cell
        assert not re.fullmatch(r"[\d.]+x?", cell), cell  # never a bare figure
        assert cell in runtime, (cell, row["config"])  # the Runtime tab's very words
    # No speedup is quoted bare anywhere in the table: every speedup cell is words or a decided figure.
    for config, cells in rows.items():
        for cell in cells[4:6]:
            assert not re.fullmatch(r"\d+(\.\d+)?(e[+-]?\d+)?", cell), (config, cell)


def test_each_side_is_told_apart(site):
    page, data = diff(site, "seed", "seed_busy_cpu")
    head = re.search(r'<div class="diff-head".*?</div>', page, re.S).group(0)
    side_a, side_b = (text_of(p) for p in re.findall(r"<p><strong>[AB]</strong>(.*?)</p>", head, re.S))
    assert side_a != side_b
    for side, meta in ((side_a, data["a"]), (side_b, data["b"])):
        assert meta["short_id"] in side and meta["id"].startswith(meta["short_id"])
        assert meta["finished"] and meta["finished"] in side
        assert f"torch {meta['torch_version']}" in side, side
    # The same file run twice: the labels still differ (run id), not just "seed.py job" twice.
    page, data = diff(site, "seed", "seed")
    head = re.search(r'<div class="diff-head".*?</div>', page, re.S).group(0)
    assert "run " + data["a"]["short_id"] in text_of(head)


def test_a_guards_timing_is_not_a_difference_of_guards(site):
    page, data = diff(site, "seed", "seed_busy_cpu")
    for row in data["guards"]:
        for line in row["only_a"] + row["only_b"]:
            assert "latency" not in line.lower(), line
    assert "Guard latency" not in text_of(element(page, "diff-guards") or "")


def test_a_diff_is_computed_once_per_pair_and_kept_and_the_page_and_api_agree(site, monkeypatch):
    """Issue 21 item 4: the first request computes the comparison and keeps it with the first run's report; later
    ones (this process or another) read it, never the two reports again."""
    client, slugs = site
    a, b = slugs["seed"], slugs["mlp_train"]
    first = client.get(f"/api/diff/{a}/{b}").get_json()
    with session_factory(client.application.extensions["pt2scope"].settings.database_url)() as session:
        run_a = runstore.get_run(session, a)
        assert json.loads(runstore.report_piece(session, run_a, f"diff-{b}"))["graphs"] == first["graphs"]

    def never(*_args, **_kwargs):
        raise AssertionError("the kept comparison was computed again")

    monkeypatch.setattr(diff_view, "compare", never)
    assert client.get(f"/api/diff/{a}/{b}").get_json() == first
    page = get(client, f"/diff/{a}/{b}")
    assert a[:8] in page and b[:8] in page


def test_two_runs_too_large_to_compare_are_refused_before_either_is_read(site, monkeypatch):
    client, slugs = site
    monkeypatch.setattr(diff_view, "DIFF_LIMIT_BYTES", 1024)
    small = runstore.load_sections

    def load_sections(session, run, names=None, **kwargs):
        assert names is not None and "dynamo" not in names, "a report was read whole"
        return small(session, run, names, **kwargs)

    monkeypatch.setattr(runstore, "load_sections", load_sections)
    a, b = slugs["graph_break"], slugs["custom_backend"]
    response = client.get(f"/api/diff/{a}/{b}")
    assert response.status_code == 413
    error = response.get_json()["error"]
    assert error.startswith("These two reports are too large to compare on this server") and "1 KiB" not in error
    assert "MiB together" in error
    page = client.get(f"/diff/{a}/{b}")
    assert page.status_code == 413 and "too large to compare" in page.get_data(as_text=True)


def test_the_diff_page_writes_numbers_for_people_never_e_notation(site):
    page, data = diff(site, "seed", "seed_slow")
    slow = next(r for r in data["benchmarks"] if r["config"] == "eager")["b_median_ms"]
    assert slow == pytest.approx(15812.3)
    assert "15,800" in page
    assert not re.search(r"\d\.?\d*e[+-]\d", text_of(page)), re.findall(r"\S*\d\.?\d*e[+-]\d\S*", text_of(page))
