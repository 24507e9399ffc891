"""Issue 22, item 7, as the diff page renders it: two imported logs of one model from torch 2.11 (an H200) and
torch 2.13 (this CPU, the file one line longer) name their torch versions on each side and diff by the graphs'
structure: every graph "same", none "+N −N" for the same ops at other lines."""

import re

import pytest

from storage.db import session_factory
from tests.support import make_settings, read_sample_report, store_sample_report
from tests.web.test_report_agreement import text_of
from webapp import create_app


@pytest.fixture(scope="module")
def diff_page(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("version_diff"))
    with session_factory(settings.database_url)() as session:
        old = store_sample_report(session, read_sample_report("import_graph_break_torch2_11")).slug
        new = store_sample_report(session, read_sample_report("import_graph_break_torch2_13")).slug
    client = create_app(settings).test_client()
    response = client.get(f"/diff/{old}/{new}")
    assert response.status_code == 200
    return response.get_data(as_text=True), client.get(f"/api/diff/{old}/{new}").get_json()


def test_each_side_names_its_torch_version(diff_page):
    page, data = diff_page
    head = text_of(re.search(r'<div class="diff-head".*?</div>', page, re.S).group(0))
    assert re.search(r"A graph_break\.py import · torch 2\.11\.0\+cu130", head), head
    assert re.search(r"B graph_break\.py import · torch 2\.13\.0\+cu130", head), head
    assert (data["a"]["torch_version"], data["b"]["torch_version"]) == ("2.11.0+cu130", "2.13.0+cu130")


def test_the_same_ops_at_other_lines_diff_as_the_same_graph(diff_page):
    page, data = diff_page
    articles = re.findall(r'<article class="graph-diff[^"]*".*?</article>', page, re.S)
    assert len(articles) == 9
    for article in articles:
        words = text_of(article)
        assert 'class="badge">same<' in article and not re.search(r"\+\d+ −\d+", words), words
        assert re.search(r"\d+ matched nodes? (is|are) at other lines of the file", words), words
    assert all(g["identical"] and g["moved"] for g in data["graphs"])
