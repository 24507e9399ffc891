"""Issue 22, item 5: a backend of the user's own (examples/custom_backend.py: `backend = print_ops`) is shown on the
pages of its real report (tests/fixtures/reports/custom_backend.json): its rung on the Runtime tab links the graph
it received, which is drawn like the other graphs and names the user's lines; the Overview says the file defines
it; a source line's provenance lists the nodes the backend received."""

import re

import pytest

from storage.db import session_factory
from tests.support import make_settings, read_sample_report, store_sample_report
from tests.web.test_report_agreement import element, text_of
from webapp import create_app

# examples/custom_backend.py: the model's forward (every node of the graph) is line 21, the backend's def line 6.
FORWARD_LINE = 21


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("user_backend_pages"))
    with session_factory(settings.database_url)() as session:
        slug = store_sample_report(session, read_sample_report("custom_backend")).slug
    return create_app(settings).test_client(), slug


def _page(site, path=""):
    client, slug = site
    response = client.get(f"/r/{slug}{path}")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_the_runtime_tab_has_the_users_rung_linked_to_the_graph_it_received(site):
    page = _page(site, "/runtime")
    row = re.search(r'<tr data-config="user:print_ops".*?</tr>', page, re.S)
    assert row, "no benchmark row for the user's rung"
    assert "your backend print_ops" in text_of(row.group(0))
    assert 'href="#graph-backend-0"' in row.group(0) and 'href="#backend-print_ops"' in row.group(0)
    # The graph it links to is a graph viewer on the same page, fetched like the other tabs' graphs.
    card = re.search(r'<section class="graph-card" id="graph-backend-0"[^>]*>', page)
    assert card and 'data-graph-url="/r/' in card.group(0) and "/graphs/backend-0.json" in card.group(0)
    assert "Graph your backend received, compile 0/1" in element(page, "graph-backend-0")
    calls = element(page, "backend-print_ops")
    assert "defined at line 6" in calls and "rung user:print_ops" in calls
    assert "print_ops got a graph of 10 nodes" in calls  # what it printed, per call


def test_the_graph_it_received_names_the_users_lines(site):
    client, slug = site
    graph = client.get(f"/r/{slug}/graphs/backend-0.json").get_json()  # the viewer's payload, in columns

    def column(key):
        return [graph["columns"][key]["values"][i] for i in graph["columns"][key]["index"]]

    calls = [i for i, op in enumerate(column("op")) if op.startswith("call_")]
    assert [column("target")[i] for i in calls] == [
        "torch._C._nn.linear",
        "torch.relu",
        "torch._C._nn.linear",
        "softmax",
    ]
    assert {(column("file")[i], column("line")[i]) for i in calls} == {("custom_backend.py", FORWARD_LINE)}


def test_a_lines_provenance_lists_the_nodes_the_backend_received(site):
    client, slug = site
    line = client.get(f"/r/{slug}/provenance.json?line={FORWARD_LINE}").get_json()
    assert line["totals"]["backend"] == 4 and line["totals"]["dynamo"] == 4
    assert {(n["graph"], n["node"]) for n in line["backend"]} == {
        ("backend-0", "linear"),
        ("backend-0", "relu"),
        ("backend-0", "linear_1"),
        ("backend-0", "softmax"),
    }


def test_the_overview_says_the_file_defines_its_own_backend(site):
    page = _page(site)
    words = element(page, "overview-user-backends")
    assert words is not None, "the Overview never mentions the user's backend"
    assert "Your file defines 1 backend of its own: print_ops (rung user:print_ops) received 1 graph" in words
    assert re.search(r'id="overview-user-backends"><a href="/r/[^"]+/runtime#runtime-user-backends"', page)


def test_the_offline_export_has_the_rung_and_its_graph(site):
    page = _page(site, "/export.html")
    assert 'data-config="user:print_ops"' in page and 'id="graph-backend-0"' in page
    assert "overview-user-backends" in page
