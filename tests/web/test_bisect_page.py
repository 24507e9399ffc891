"""The compiler bisector's result on the pages (issue 23 item 2), from a real report
(tests/fixtures/reports/broken_pass.json: a post-grad pass broken on purpose): the Runtime tab says in words which
backend, subsystem and pass broke the rung, links the recorded graph the pass acted on, and lists every compile the
bisector asked for as the report has it; the API's report carries the same; a report without a bisect draws none."""

import re

import pytest

from storage.db import session_factory
from tests.browser.conftest import read_sample_report
from tests.support import make_settings, store_sample_report
from tests.web.test_memory_pages import get, raw
from tests.web.test_report_agreement import text_of
from webapp import create_app

NAMES = ("broken_pass", "seed")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("bisect_pages"))
    with session_factory(settings.database_url)() as session:
        slugs = {name: store_sample_report(session, read_sample_report(name)).slug for name in NAMES}
    return create_app(settings).test_client(), slugs


def test_the_runtime_tab_names_the_pass_and_links_its_graph(site):
    client, slugs = site
    bisect = read_sample_report("broken_pass")["runtime"]["bisect"]
    section = raw(get(client, f"/r/{slugs['broken_pass']}/runtime"), "runtime-bisect")
    assert bisect["text"] in text_of(section)
    assert "post_grad_custom_post_pass" in bisect["text"]
    assert re.search(r'<a class="bisect-graph" href="#graph-postgrad-0">', section), section
    rows = re.findall(r"<tr class=\"(passed|broken)\"><td class=\"num\">(\d+)</td><td><code>([\w_]+)</code>", section)
    assert [(state == "passed", int(n), backend) for state, n, backend in rows] == [
        (s["passed"], i, s["backend"]) for i, s in enumerate(bisect["steps"], 1)
    ]
    # The graph it links is one the report holds, and drawn on the Inductor tab.
    assert 'id="graph-postgrad-0"' in get(client, f"/r/{slugs['broken_pass']}/inductor")


def test_the_api_carries_the_bisect(site):
    client, slugs = site
    response = client.get(f"/api/runs/{slugs['broken_pass']}/report")
    assert response.status_code == 200
    assert response.get_json()["runtime"]["bisect"] == read_sample_report("broken_pass")["runtime"]["bisect"]


def test_a_run_that_matches_draws_no_bisect(site):
    client, slugs = site
    assert 'id="runtime-bisect"' not in get(client, f"/r/{slugs['seed']}/runtime")
