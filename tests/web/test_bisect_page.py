"""The compiler bisector's result on the pages (issue 23 item 2), from a real report
(tests/fixtures/reports/broken_pass.json: a post-grad pass broken on purpose): the Runtime tab says in words which
backend, subsystem and pass broke the rung, links the recorded graph the pass acted on, and lists every compile the
bisector asked for as the report has it; the API's report carries the same; a report without a bisect draws none."""

import base64
import os
import re
import subprocess
import sys

import pytest

from tests.support import read_sample_report, sample_site
from tests.web.test_memory_pages import get, raw
from tests.web.test_report_agreement import text_of

NAMES = ("broken_pass", "seed")
BROKEN_PASS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "models", "broken_pass.py")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return sample_site(tmp_path_factory.mktemp("bisect_pages"), NAMES)


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


def test_the_minified_graph_downloads_as_a_repro_that_breaks_with_the_users_pass(site, tmp_path):
    """The repro of the smallest breaking graph, run in fresh processes: with the compiler as the job had it (the
    user's broken pass installed) it differs from eager; with torch's own compiler it matches."""
    client, slugs = site
    minified = read_sample_report("broken_pass")["runtime"]["bisect"]["minified"]
    section = raw(get(client, f"/r/{slugs['broken_pass']}/runtime"), "runtime-bisect")
    assert minified["text"] in text_of(section)
    link = re.search(r'<a class="repro-download"\s+href="([^"]+)"', section)[1]
    assert link == f"/r/{slugs['broken_pass']}/minified-repro.py"
    response = client.get(link)
    assert response.status_code == 200 and "minified-repro.py" in response.headers["Content-Disposition"]
    script = tmp_path / "repro.py"
    script.write_text(response.get_data(as_text=True))
    with_pass = f"import runpy; runpy.run_path({BROKEN_PASS!r}); runpy.run_path({str(script)!r}, run_name='__main__')"
    broken, plain = (run_python(tmp_path, "-c", with_pass), run_python(tmp_path, str(script)))
    assert "ops match the report" in plain, plain
    assert float(re.search(r"max abs difference from eager (\S+)", broken)[1]) > 0.1, broken
    assert float(re.search(r"max abs difference from eager (\S+)", plain)[1]) < 1e-4, plain


def run_python(cwd, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_offline_file_carries_the_minified_repro(site):
    client, slugs = site
    html = client.get(f"/r/{slugs['broken_pass']}/export.html").get_data(as_text=True)
    assert "/minified-repro.py" not in html
    scripts = [base64.b64decode(d).decode() for d in re.findall(r'href="data:text/x-python;base64,([^"]+)"', html)]
    assert any("the smallest graph that breaks inductor_default" in s for s in scripts)
