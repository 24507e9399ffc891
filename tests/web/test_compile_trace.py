"""Issue 23 item 6: "Download compile trace" gives the compile as a Chrome trace (the Trace Event Format that
Perfetto and chrome://tracing open): torch's own compile events and the job's phases, each event as the report
recorded it, on real reports (tests/fixtures/reports: CPU and GPU runs, a training run, imported logs)."""

import base64
import json
import re

import pytest

from tests.support import read_sample_report, sample_site

NAMES = ("seed", "seed_gpu", "mlp_train", "recompile", "import_graph_break_torch2_11")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return sample_site(tmp_path_factory.mktemp("compile_trace"), NAMES)


def trace_of(site, name) -> dict:
    client, slugs = site
    response = client.get(f"/r/{slugs[name]}/compile-trace.json")
    assert response.status_code == 200
    assert response.headers["Content-Disposition"].startswith("attachment;")
    return json.loads(response.get_data(as_text=True))


def complete_events(trace: dict, pid: int) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == pid]


@pytest.mark.parametrize("name", NAMES)
def test_the_compile_trace_holds_every_recorded_event_in_the_trace_event_format(site, name):
    report = read_sample_report(name)
    trace = trace_of(site, name)
    assert trace["displayTimeUnit"] == "ms"
    for event in trace["traceEvents"]:
        assert event["ph"] in ("X", "M") and isinstance(event["pid"], int)
        if event["ph"] == "X":
            assert isinstance(event["name"], str) and event["name"]
            assert isinstance(event["tid"], int) and event["ts"] >= 0 and event["dur"] >= 0
    spans = report["runtime"]["compile_timeline"]
    assert spans, "every sample recorded torch's compile events"
    compiled = complete_events(trace, 1)
    origin = min(e["ts"] for e in compiled)

    def key(name, start_us, dur_us):
        return name, round(start_us), round(dur_us)

    assert sorted(key(e["name"], e["ts"] - origin, e["dur"]) for e in compiled) == sorted(
        key(s["name"] or "(unnamed)", s["start_ms"] * 1000, s["dur_ms"] * 1000) for s in spans
    )
    # Events on one track nest or follow each other, as the viewers draw them (a misnested one is dropped).
    for tid in {e["tid"] for e in compiled}:
        open_ends: list[float] = []
        for event in sorted((e for e in compiled if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"])):
            while open_ends and open_ends[-1] <= event["ts"]:
                open_ends.pop()
            assert not open_ends or event["ts"] + event["dur"] <= open_ends[-1], f"{event['name']} misnested"
            open_ends.append(event["ts"] + event["dur"])
    phases = (report.get("timeline") or {}).get("phases") or []
    job = complete_events(trace, 2)
    assert [(e["name"], e["ts"]) for e in job] == [(p["phase"], pytest.approx(p["start_s"] * 1e6)) for p in phases]
    if phases:  # torch's events start where the job's compile phase does
        (compile_phase,) = [p for p in phases if p["phase"] == "compile" and p["depth"] == 0]
        assert origin == pytest.approx(compile_phase["start_s"] * 1e6)
        names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
        assert any(n.startswith("pt2scope job: ") for n in names)


def test_the_runtime_tab_offers_the_trace(site):
    client, slugs = site
    page = client.get(f"/r/{slugs['seed']}/runtime").get_data(as_text=True)
    assert f'href="/r/{slugs["seed"]}/compile-trace.json"' in page and "Perfetto" in page
    assert client.get("/r/no-such-run/compile-trace.json").status_code == 404


def test_the_offline_file_carries_the_trace_itself(site):
    """The one-file export names no server URL: its download link holds the trace, the same as the route's."""
    client, slugs = site
    html = client.get(f"/r/{slugs['mlp_train']}/export.html").get_data(as_text=True)
    (encoded,) = re.findall(r'id="compile-trace-download" href="data:application/json;base64,([^"]+)"', html)
    assert json.loads(base64.b64decode(encoded)) == trace_of(site, "mlp_train")
