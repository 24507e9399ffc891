"""Progress that tells the truth (steps in the order they run, the current one with its config, the time left,
tabs readable as soon as their stage has finished) and errors at the right time (a syntax error at submit; a
failed run's tabs say which stage it did not reach). Events are recorded as the worker records the engine's."""

import json
import os
import re
from dataclasses import asdict

from engine.job import JobRequest
from engine.reportfile import failed_report
from storage import runstore
from storage.config import PROJECT_ROOT
from storage.models import Run, RunEvent
from tests.support import form_token


def _report(name):
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", f"{name}.json")) as f:
        return json.load(f)


def _queued(client, db, configs, code=None) -> Run:
    report = _report("seed")
    slug = client.post(
        "/api/runs", json={"code": code or report["source"]["code"], "filename": "seed.py", "configs": configs}
    ).get_json()["id"]
    return runstore.get_run(db, slug)


def _claim(db, run):
    """As a live worker does: claims the run and keeps beating (else the page would reap it)."""
    runstore.beat(db, "worker-1", ["cpu"], os.getpid())
    runstore.claim_run(db, run.id, "worker-1", os.getpid())


def _event(db, run, stage, state, seconds=None, config=None, elapsed=None):
    runstore.record_event(
        db,
        run.id,
        {"event": "stage", "stage": stage, "state": state, "seconds": seconds, "config": config, "elapsed_s": elapsed},
    )


def test_progress_lists_the_steps_in_run_order_names_the_current_one_and_estimates_the_rest(client, db):
    run = _queued(client, db, ["eager", "aot_eager", "inductor_default"])
    _claim(db, run)
    for stage, seconds in (
        ("load", 2.0),
        ("eager", 0.1),
        ("dynamo", 0.5),
        ("aot", 1.0),
        ("inductor", 8.0),
        ("report", 0.1),
    ):
        _event(db, run, stage, "started", config="inductor_default" if stage in ("dynamo", "aot", "inductor") else None)
        _event(
            db,
            run,
            stage,
            "finished",
            seconds,
            config="inductor_default" if stage in ("dynamo", "aot", "inductor") else None,
        )
    _event(db, run, "benchmark", "started", config="eager")
    _event(db, run, "benchmark", "finished", 1.5, config="eager")
    _event(db, run, "benchmark", "started", config="inductor_default")
    status = client.get(f"/api/runs/{run.slug}").get_json()
    steps = [(s["stage"], s["config"], s["state"]) for s in status["steps"]]
    assert steps == [
        ("load", None, "finished"),
        ("eager", None, "finished"),
        ("dynamo", "inductor_default", "finished"),
        ("aot", "inductor_default", "finished"),
        ("inductor", "inductor_default", "finished"),
        ("report", None, "finished"),
        ("benchmark", "eager", "finished"),
        ("benchmark", "inductor_default", "started"),
        ("benchmark", "aot_eager", "pending"),
        ("benchmark", None, "pending"),
        ("profile", None, "pending"),
        ("warm_compile", "inductor_default", "pending"),
    ]
    assert status["current"]["stage"] == "benchmark" and status["current"]["config"] == "inductor_default"
    # Still to come before the report (no earlier run to measure against: this run's own steps are the yardstick):
    # this benchmark, the timed rounds and profiling (about a benchmark each) and aot_eager, which compiles again
    # (about the recorded compile, 9.5 s); the warm compile comes after the report.
    assert 15.0 <= status["time_left_s"] <= 1.5 + (9.5 + 1.5) + 1.5 + 1.5
    # A stage that runs once per config is not finished while one of its runs is still to come.
    by_stage = {s["stage"]: s["state"] for s in status["stages"]}
    assert by_stage["benchmark"] == "started" and by_stage["profile"] == "pending"
    html = client.get(f"/r/{run.slug}").get_data(as_text=True)
    assert "Now: <strong>benchmark</strong>" in html and "<code>inductor_default</code>" in html
    assert re.search(r"about 1[56] s left until the report", html)


def test_a_tab_opens_as_soon_as_its_stage_has_finished(client, db):
    report = _report("seed")
    run = _queued(client, db, report["request"]["configs"])
    _claim(db, run)
    for stage in ("load", "eager", "dynamo", "aot", "inductor"):
        _event(db, run, stage, "finished", 0.1)
    assert client.get(f"/api/runs/{run.slug}").get_json()["tabs_ready"] == []
    assert "Not ready yet" in client.get(f"/r/{run.slug}/dynamo").get_data(as_text=True)
    # The worker stores the child's partial report when "report" ends; the benchmarks are still to come.
    partial = {**report, "status": "running", "runtime": {**report["runtime"], "benchmarks": []}}
    runstore.store_partial_report(db, run.id, partial)
    _event(db, run, "report", "finished", 0.1)
    status = client.get(f"/api/runs/{run.slug}").get_json()
    assert status["status"] == "running" and status["tabs_ready"] == ["aot", "dynamo", "inductor"]
    dynamo = client.get(f"/r/{run.slug}/dynamo").get_data(as_text=True)
    assert 'id="graph-dynamo-0"' in dynamo and "Not ready yet" not in dynamo
    assert client.get(f"/r/{run.slug}/graphs/dynamo-0.json").status_code == 200
    assert "Not ready yet" in client.get(f"/r/{run.slug}/runtime").get_data(as_text=True)
    # A report is not downloadable before it is complete.
    assert client.get(f"/r/{run.slug}/report.json").status_code == 404
    assert client.get(f"/api/runs/{run.slug}/report").status_code == 409
    overview = client.get(f"/r/{run.slug}").get_data(as_text=True)
    assert 'id="pipe-dynamo" data-state="done"' in overview and 'id="pipe-runtime" data-state="pending"' in overview


def test_a_syntax_error_is_answered_at_submit_with_its_line_and_nothing_is_queued(client, db, broker_messages):
    code = "import torch\n\ndef f(x)\n    return x\n"
    response = client.post("/api/runs", json={"code": code, "filename": "broken.py"})
    assert response.status_code == 400
    body = response.get_json()
    assert body["syntax_error"]["line"] == 3 and body["syntax_error"]["code"] == "def f(x)"
    assert body["errors"]["code"].startswith("Syntax error at line 3, column 9 of broken.py: expected ':'")
    page = client.post("/", data={**form_token(client), "code": code, "configs": ["eager"]})
    assert page.status_code == 422
    assert "Syntax error at line 3" in page.get_data(as_text=True)
    assert db.query(Run).count() == 0 and broker_messages() == 0


def test_a_failed_runs_tabs_say_which_stage_it_did_not_reach(client, db):
    run = _queued(client, db, ["eager", "aot_eager"])
    _event(db, run, "load", "started")
    _event(db, run, "load", "failed")
    request = {**asdict(JobRequest(code=run.code)), "configs": run.configs}
    runstore.store_report(
        db, run.id, failed_report(request, "load", "user_exception", "NameError: name 'modle' is not defined", line=9)
    )
    dynamo = client.get(f"/r/{run.slug}/dynamo").get_data(as_text=True)
    assert "No graph break" not in dynamo
    assert "the run failed during load, before it reached Dynamo" in " ".join(dynamo.split())
    overview = client.get(f"/r/{run.slug}").get_data(as_text=True)
    assert overview.count('data-state="not_reached"') == 4
    assert "The run failed during load at line 9: NameError" in overview
    assert "Not reached: TorchDynamo, AOTAutograd, TorchInductor, Runtime." in overview


def test_every_page_has_a_favicon(client):
    html = client.get("/").get_data(as_text=True)
    assert 'rel="icon" type="image/svg+xml" href="/static/favicon.svg"' in html
    assert client.get("/static/favicon.svg").status_code == 200
    assert client.get("/favicon.ico").headers["Location"].endswith("/static/favicon.svg")


def test_a_run_that_failed_in_dynamo_marks_that_stage_and_the_ones_it_did_not_reach(client, db):
    run = _queued(client, db, ["eager", "aot_eager"])
    for stage in ("load", "eager"):
        _event(db, run, stage, "finished", 0.1)
    _event(db, run, "dynamo", "started", config="aot_eager")
    _event(db, run, "dynamo", "failed", config="aot_eager")
    request = {**asdict(JobRequest(code=run.code)), "configs": run.configs}
    message = "torch.compile failed in stage 'dynamo': Unsupported: data-dependent branch\n" + "  frame\n" * 50
    runstore.store_report(db, run.id, failed_report(request, "dynamo", "compile_error", message, line=6))
    overview = client.get(f"/r/{run.slug}").get_data(as_text=True)
    states = dict(re.findall(r'id="pipe-(\w+)" data-state="(\w+)"', overview))
    assert states == {"dynamo": "failed", "aot": "not_reached", "inductor": "not_reached", "runtime": "not_reached"}
    assert (
        "failed here: torch.compile failed in stage &#39;dynamo&#39;: Unsupported: data-dependent branch<" in overview
    )
    dynamo = " ".join(client.get(f"/r/{run.slug}/dynamo").get_data(as_text=True).split())
    assert "No graph break:" not in dynamo
    assert "No graph break recorded: the run failed during dynamo" in dynamo
    aot = " ".join(client.get(f"/r/{run.slug}/aot").get_data(as_text=True).split())
    assert "the run failed during dynamo, before it reached AOTAutograd" in aot


def test_now_names_the_stage_running_now_through_the_recorded_compile(client, db):
    """The recorded compile's stages run inside one call: Dynamo's step stays open while AOTAutograd and then
    Inductor compile its graph (once, "Now: dynamo" stayed up through 78 s of Inductor work)."""
    run = _queued(client, db, ["eager", "inductor_default"])
    _claim(db, run)
    for stage in ("load", "eager"):
        _event(db, run, stage, "started")
        _event(db, run, stage, "finished", 0.1)
    said = []
    for stage in ("dynamo", "aot", "inductor"):
        _event(db, run, stage, "started", config="inductor_default")
        status = client.get(f"/api/runs/{run.slug}").get_json()
        html = client.get(f"/r/{run.slug}").get_data(as_text=True)
        said.append((status["current"]["stage"], re.search(r"Now: <strong>(\w+)</strong>", html)[1]))
    assert said == [("dynamo", "dynamo"), ("aot", "aot"), ("inductor", "inductor")]


def _event_at(db, run, stage, state, at, seconds=None, config=None):
    """An event as a worker records it, at a given moment (the estimates read the steps' wall times)."""
    _event(db, run, stage, state, seconds, config)
    event = db.query(RunEvent).filter_by(run_id=run.id).order_by(RunEvent.id.desc()).first()
    event.created_at = at
    db.commit()


def _finished_run(client, db, configs, plan: dict, held_s: float, code: str) -> Run:
    """A run that ran and released its worker: each step of ``plan`` took its seconds of wall time, in order, and
    the report was stored when the last one before the warm compile ended."""
    from datetime import timedelta

    run = _queued(client, db, configs, code=code)
    _claim(db, run)
    run = db.get(Run, run.id)
    at = run.started_at
    for (stage, config), seconds in plan.items():
        _event_at(db, run, stage, "started", at, config=config)
        at += timedelta(seconds=seconds)
        _event_at(db, run, stage, "finished", at, seconds, config=config)
        if stage == "profile":
            run.finished_at = at
    run.status, run.released_at = "succeeded", run.started_at + timedelta(seconds=held_s)
    db.commit()
    return run


def test_time_left_and_queue_wait_are_measured_against_recent_runs(client, db, settings):
    """With earlier runs of the same configs, each step still to come is expected to take the wall time it took
    them, scaled by how this run's steps so far compare with theirs; a queued run's wait is its place times the
    queue's measured job time, shared by the online workers."""
    from datetime import timedelta

    from storage.models import utcnow

    configs = ["eager", "inductor_default"]
    plan = {  # contract.vocab.job_plan's order
        ("load", None): 1.0,
        ("eager", None): 1.0,
        ("dynamo", "inductor_default"): 2.0,
        ("aot", "inductor_default"): 2.0,
        ("inductor", "inductor_default"): 6.0,
        ("report", None): 1.0,
        ("benchmark", "eager"): 2.0,
        ("benchmark", "inductor_default"): 3.0,
        ("benchmark", None): 4.0,
        ("profile", None): 2.0,
        ("warm_compile", "inductor_default"): 20.0,
    }
    for i in range(3):
        _finished_run(client, db, configs, plan, held_s=40.0, code=f"{_report('seed')['source']['code']}\n# {i}")
    runstore._history_cache.clear()
    run = _queued(client, db, configs, code=_report("seed")["source"]["code"] + "\n# this one")
    _claim(db, run)
    began = utcnow() - timedelta(seconds=4)
    for i, stage in enumerate(("load", "eager")):  # twice as slow as the earlier runs: 2 s each
        _event_at(db, run, stage, "started", began + timedelta(seconds=2 * i))
        _event_at(db, run, stage, "finished", began + timedelta(seconds=2 * i + 1.5), 1.5)
    _event_at(db, run, "dynamo", "started", began + timedelta(seconds=4), config="inductor_default")
    status = client.get(f"/api/runs/{run.slug}").get_json()
    # Still to come until the report (the warm compile after it): Dynamo, just begun, and 2 + 6 + 1 + 2 + 3 + 4 + 2
    # s more: 22 s of the earlier runs' wall time, at twice that.
    assert 43.0 <= status["time_left_s"] <= 44.0
    html = client.get(f"/r/{run.slug}").get_data(as_text=True)
    assert re.search(r"about 4[34] s left until the report", html)
    # Two runs waiting behind it on one worker: the second waits for this one (40 s measured per job, less what
    # it has run) and the first waiting one (40 s).
    queued = [_queued(client, db, configs, code=f"{_report('seed')['source']['code']}\n# q{i}") for i in range(2)]
    second = client.get(f"/api/runs/{queued[1].slug}").get_json()["queue"]
    assert second["position"] == 2 and second["workers"] == 1 and second["from_jobs"] == 3
    assert 70.0 <= second["wait_s"] <= 80.0  # less the seconds this test has run since the claim
    assert re.fullmatch(
        r" \(1 run before it; about (7\d|80) s to wait, from the last 3 jobs on 1 worker\)", second["text"]
    )
    page = client.get(f"/r/{queued[1].slug}").get_data(as_text=True)
    assert second["text"] in page


def test_clients_take_turns_in_the_queue(client, db):
    """Round-robin across clients: a client's fourth queued run waits behind other clients' first ones."""
    a, b = {"REMOTE_ADDR": "10.0.0.1"}, {"REMOTE_ADDR": "10.0.0.2"}  # two clients' addresses
    code = _report("seed")["source"]["code"]

    def submit(who, tag):
        body = {"code": f"{code}\n# {tag}", "configs": ["eager"]}
        return client.post("/api/runs", json=body, environ_base=who).get_json()["id"]

    first_a = [submit(a, f"a{i}") for i in range(4)]
    first_b = submit(b, "b0")
    positions = {slug: client.get(f"/api/runs/{slug}").get_json()["queue_position"] for slug in [*first_a, first_b]}
    assert [positions[s] for s in first_a] == [1, 3, 4, 5] and positions[first_b] == 2
    runstore.beat(db, "worker-1", ["cpu"], os.getpid())
    claimed = runstore.claim_next(db, "cpu", "job", "worker-1", os.getpid())
    assert claimed.slug == first_a[0]
    # a has one running now: b's next run goes before a's second.
    second_b = submit(b, "b1")
    order = [db.get(Run, run_id).slug for run_id in runstore.fair_order(db, "cpu")]
    assert order == [first_b, first_a[1], second_b, first_a[2], first_a[3]]
