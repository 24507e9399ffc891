"""Issue 21's export and upload defects, each failing on the code before it: a file name no header can carry, a
node name that would swallow the offline file's scripts, a NUL in an upload's name."""

import base64
import io
import os
import re
import urllib.parse

import pytest

from storage import runstore
from storage.config import PROJECT_ROOT
from storage.db import session_factory
from storage.models import Run
from tests.support import make_settings, read_sample_report, store_sample_report
from webapp import create_app


def _site(tmp_path, report):
    settings = make_settings(tmp_path)
    with session_factory(settings.database_url)() as session:
        slug = store_sample_report(session, report).slug
    return settings, create_app(settings).test_client(), slug


def test_a_file_name_of_any_text_downloads_under_that_name(tmp_path):
    """Non-Latin-1 letters and CR/LF in the run's file name (an upload's name is whatever the browser sent) made
    the export's Content-Disposition an invalid header: a raw 500."""
    settings, client, slug = _site(tmp_path, read_sample_report("graph_break"))
    name = 'модель 模型 "q"\r\nX-Injected: 1.py'
    with session_factory(settings.database_url)() as session:
        session.query(Run).filter_by(slug=slug).update({"filename": name})
        session.commit()
    response = client.get(f"/r/{slug}/export.html")
    assert response.status_code == 200
    header = response.headers["Content-Disposition"]
    assert "X-Injected" not in response.headers and "\r" not in header and "\n" not in header
    header.encode("latin-1")  # a header any server can send
    encoded = re.search(r"filename\*=UTF-8''(\S+)", header).group(1)
    assert urllib.parse.unquote(encoded) == f"pt2scope-{name.rsplit('.', 1)[0]}-{slug}.html"


def test_a_node_named_like_a_comment_and_a_script_leaves_the_offline_files_scripts_whole(tmp_path):
    """``<!--<script>`` inside a script element's JSON puts the HTML parser in its double-escaped state, where the
    next ``</script>`` does not close: the rest of the file's scripts became text and the viewer was dead."""
    report = read_sample_report("graph_break")
    nodes = report["dynamo"]["graphs"][0]["nodes"]
    node = next(n for n in nodes if n.get("line") and n["op"] == "call_function")
    old, node["name"] = node["name"], "<!--<script>x"
    for other in nodes:  # keep the graph's edges
        other["args"] = ["<!--<script>x" if a == old else a for a in other.get("args") or []]
    _, client, slug = _site(tmp_path, report)
    html = client.get(f"/r/{slug}/export.html").get_data(as_text=True)
    for body in re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S):
        assert "<!--" not in body and "<script" not in body.lower()
    assert "\\u003c!--\\u003cscript\\u003ex" in html  # the name is there, escaped


def test_a_nul_in_an_uploads_name_is_stored_as_a_visible_escape(tmp_path):
    settings = make_settings(tmp_path)
    client = create_app(settings).test_client()
    with open(
        os.path.join(PROJECT_ROOT, "tests", "fixtures", "traces-cpu-torch2.13", "graph_break.trace.log"), "rb"
    ) as f:
        body = f.read()
    data = {"trace": (io.BytesIO(body), "trace\x00.log")}
    response = client.post("/api/traces", data=data, content_type="multipart/form-data")
    assert response.status_code == 202, response.get_json()
    with session_factory(settings.database_url)() as session:
        assert runstore.get_run(session, response.get_json()["id"]).filename == "trace\\x00.log"


@pytest.mark.parametrize("name", ["import_graph_break_torch2_13", "mlp_train"])
def test_the_offline_file_carries_every_fold_and_names_no_server_url(tmp_path, name):
    """A fold's part (a frame's guards, a kernel's source, the output code) was fetched from the server when
    opened: blocked offline. It is now inline, as the page would have fetched it."""
    _, client, slug = _site(tmp_path, read_sample_report(name))
    html = client.get(f"/r/{slug}/export.html").get_data(as_text=True)
    assert f"/r/{slug}" not in html
    parts = re.findall(r'data-part-url="data:text/html;base64,([^"]+)"', html)
    assert parts and 'data-part-url=""' not in html
    guards = [base64.b64decode(p).decode() for p in parts if "guard" in base64.b64decode(p).decode().lower()]
    assert guards, "no frame's guards inline"
    page_part = re.search(
        r'data-part-url="(/r/[^"]+/part/dynamo/guards/0)"', client.get(f"/r/{slug}/dynamo").get_data(as_text=True)
    )
    assert page_part and client.get(page_part.group(1)).get_data(as_text=True) in guards
