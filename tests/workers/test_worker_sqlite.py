"""Jobs through a real worker process and the real SQLite broker (the embedded default of `make run`)."""

import os
import signal
import subprocess
from datetime import datetime

import pytest
from sqlalchemy import create_engine, text

from contract.timeline import phase_seconds
from tests.report_checks import assert_final_benchmarks_add_only_the_processes
from tests.support import (
    FAST_CONFIGS,
    SEED,
    Worker,
    make_settings,
    submittable,
    wait_for_run,
    wait_for_success,
    wait_until,
    waiting_child_args,
)
from webapp import create_app
from workers.maintenance import purge_consumed_messages


@pytest.fixture(scope="module")
def seed_run(sqlite_site):
    """One seed job through the worker, submitted once its prestarted child waits (so the job uses it), read by
    the tests of what a job leaves: its stages, its stored report, its timeline, the broker's consumed message."""
    client, worker = sqlite_site
    wait_until(
        lambda: prestarted_child_waiting(worker.settings), timeout=180, what="the next child to wait", worker=worker
    )
    run_id = client.post("/api/runs", json={"code": SEED, "filename": "seed.py", "configs": FAST_CONFIGS}).get_json()[
        "id"
    ]
    return run_id, wait_for_run(client, run_id, worker=worker)


def test_seed_job_streams_stages_and_stores_its_report(sqlite_site, seed_run):
    client, worker = sqlite_site
    run_id, status = seed_run
    assert status["status"] == "succeeded", status
    stages = {s["stage"]: s for s in status["stages"]}
    for stage in ("load", "eager", "dynamo", "aot", "benchmark", "report"):
        assert stages[stage]["state"] == "finished" and stages[stage]["seconds"] is not None, stage
    assert stages["inductor"]["state"] == "skipped"  # not requested
    assert status["started_at"] <= status["finished_at"]
    assert status["engine_seconds"] > 0

    report = client.get(f"/api/runs/{run_id}/report").get_json()
    assert report["status"] == "ok" and report["source"]["code"] == SEED
    assert report["dynamo"]["graphs"] and report["aot"]["graphs"]
    assert [b["config"] for b in report["runtime"]["benchmarks"]] == FAST_CONFIGS
    assert status["summary"]["dynamo_graphs"] == len(report["dynamo"]["graphs"])
    html = client.get(f"/r/{run_id}/dynamo").get_data(as_text=True)
    assert 'id="graph-dynamo-0"' in html and "LOAD_ATTR 1 (sin)" in html  # the graph's card, the bytecode
    assert "torch.sin" in client.get(f"/r/{run_id}/graphs/dynamo-0.json").get_data(as_text=True)


def test_an_error_in_the_users_file_fails_with_its_line_and_a_syntax_error_is_refused_at_submit(sqlite_site):
    client, worker = sqlite_site
    broken = "import torch\n\ndef f(x)\n    return torch.sin(x)\n\nmodel = f\nexample_inputs = (torch.randn(4),)\n"
    refused = client.post("/api/runs", json={"code": broken, "configs": FAST_CONFIGS})
    assert refused.status_code == 400 and refused.get_json()["syntax_error"]["line"] == 3  # never queued
    code = "import torch\n\ndef f(x):\n    return torch.sin(x)\n\nmodel = g\nexample_inputs = (torch.randn(4),)\n"
    run_id = client.post("/api/runs", json={"code": code, "configs": FAST_CONFIGS}).get_json()["id"]
    status = wait_for_run(client, run_id, worker=worker)
    assert status["status"] == "failed"
    error = status["error"]
    assert (error["stage"], error["file"], error["line"]) == ("load", "model.py", 6)
    assert "NameError" in error["message"]
    html = client.get(f"/r/{run_id}").get_data(as_text=True)
    assert 'id="error"' in html and 'id="error-line"' in html
    assert f'#L-{error["line"]}"' in html and "model = g" in html
    assert "No graph break" not in client.get(f"/r/{run_id}/dynamo").get_data(as_text=True)


def test_consumed_messages_are_purged_from_the_sqlite_broker(sqlite_site, seed_run):
    client, worker = sqlite_site
    broker = worker.settings.broker_url
    purge_consumed_messages(broker)
    engine = create_engine(broker.removeprefix("sqla+"))
    with engine.connect() as connection:
        left = connection.execute(text("SELECT COUNT(*) FROM kombu_message WHERE visible = 0")).scalar()
    engine.dispose()
    assert left == 0


def test_a_killed_worker_does_not_leave_its_run_running_forever(tmp_path):
    """kill -9 of a worker mid-job: the SQLite broker never redelivers, so the reaper must fail the run; the run
    queued behind it is not lost: the next worker runs it."""
    settings = make_settings(tmp_path)
    client = create_app(settings).test_client()
    hang = submittable("import time\ntime.sleep(600)\n")  # the job sits in its load stage until the worker dies
    with Worker(settings) as worker:
        run_id = client.post("/api/runs", json={"code": hang, "configs": ["eager"]}).get_json()["id"]
        wait_until(
            lambda: client.get(f"/api/runs/{run_id}").get_json()["status"] == "running",
            timeout=60,
            what="the job to start",
            worker=worker,
        )
        queued_id = client.post("/api/runs", json={"code": SEED, "configs": ["eager"]}).get_json()["id"]
        descendants = _descendants(worker.process.pid)
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait()
        for pid in descendants:  # the pool child and the engine's child: this test started them, via the worker
            _kill(pid)
        status = wait_until(
            lambda: (data := client.get(f"/api/runs/{run_id}").get_json())["status"] != "running" and data,
            timeout=settings.worker_stale_after_s * 4,
            what="the reaper",
        )
    assert status["status"] == "failed" and status["error"]["kind"] == "worker_lost"
    assert "stopped responding" in status["error"]["message"]
    with Worker(settings) as successor:
        wait_for_success(client, queued_id, worker=successor)


def _descendants(pid: int) -> list[int]:
    children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    found = [int(p) for p in children.split()]
    return found + [d for child in found for d in _descendants(child)]


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def prestarted_child_waiting(settings) -> bool:
    """The worker's prestarted child has imported what it imports before its job and blocks on its go pipe."""
    names = os.listdir(settings.jobs_path) if os.path.isdir(settings.jobs_path) else []
    folders = [n for n in names if n.startswith("prestart-")]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        args = waiting_child_args(pid)
        if args and any(name.encode() in args[-2] for name in folders):
            return True
    return False


def test_the_timeline_covers_the_whole_job_from_the_request_to_the_stored_report(sqlite_site, seed_run):
    """Every second between the run row's creation and the stored report is in a named phase (5% untracked at
    most), the phases follow each other without overlap, and the timeline's wall time is the run's own."""
    client, worker = sqlite_site
    run_id, status = seed_run
    assert status["status"] == "succeeded", status

    # The timeline is written once, in the store's transaction, with the store's own seconds: the first reader
    # of a succeeded run reads it whole.
    report = client.get(f"/api/runs/{run_id}/report").get_json()
    timeline = report["timeline"]
    assert timeline["origin"] == "request"
    # The worker prestarted this job's sandboxed child: its start-up is on the timeline, outside the wall time.
    assert timeline["prestarted"] is True
    prestart = {p["phase"] for p in timeline["phases"] if p["prestart"]}
    assert {"sandbox_start", "import_torch", "ladder_setup"} <= prestart, prestart
    assert report["runtime"]["memory_bandwidth"]["measured_in_prestart"] is True
    top = [p for p in timeline["phases"] if p["depth"] == 0 and not p["prestart"]]
    names = [p["phase"] for p in top]
    for phase in (
        "queue_wait",
        "claim",
        "prepare",
        "handover",
        "import_torch",
        "load_user_code",
        "eager",
        "compile",
        "benchmark",
        "write_report",
        "process_exit",
        "read_report",
        "cleanup",
        "store",
    ):
        assert phase in names, (phase, names)
    assert names[0] == "queue_wait" and names[-1] == "store"
    assert top[0]["start_s"] == 0
    for before, after in zip(top, top[1:]):
        assert abs(after["start_s"] - before["end_s"]) < 0.005, (before, after)
    assert timeline["wall_s"] == top[-1]["end_s"]
    assert timeline["untracked_s"] <= 0.05 * timeline["wall_s"], [(p["phase"], p["start_s"], p["end_s"]) for p in top]
    # The run row's own times, kept by the database: created (the request) to finished (just before the store
    # commit ends).
    created, finished = (datetime.fromisoformat(status[k].rstrip("Z")) for k in ("created_at", "finished_at"))
    row_wall = (finished - created).total_seconds()
    assert abs(timeline["wall_s"] - row_wall) <= 0.05 * row_wall, (timeline["wall_s"], row_wall)
    in_wall = {name: seconds for name, seconds in phase_seconds(timeline).items() if not name.startswith("prestart:")}
    assert sum(in_wall.values()) == pytest.approx(timeline["wall_s"], rel=0.01)
    html = client.get(f"/r/{run_id}/runtime").get_data(as_text=True)
    assert 'id="runtime-timeline"' in html and 'aria-label="Job timeline by phase"' in html
    assert "import_torch" in html and "queue_wait" in html  # the chart's rows (its figure, as JSON)
    assert "prestart: sandbox_start" in html  # the child's start-up before the job, labelled as such


def test_an_inductor_run_is_readable_before_its_warm_compile_which_fills_in_afterwards(sqlite_site):
    """The worker stores the report the child hands over before the warm compile (two fresh processes, 10-20 s
    here): the run reads as succeeded with the warm compile pending, the pages say it is still being measured, and
    the final report then replaces the warm compile's figures; the timeline says when the report was readable."""
    client, worker = sqlite_site
    run_id = client.post(
        "/api/runs", json={"code": SEED, "filename": "seed.py", "configs": ["eager", "inductor_default"]}
    ).get_json()["id"]
    status = wait_until(
        lambda: (data := client.get(f"/api/runs/{run_id}").get_json())["status"] in ("succeeded", "failed") and data,
        timeout=240,
        interval=0.05,
        what="the report",
        worker=worker,
    )
    assert status["status"] == "succeeded", (status, worker.output()[-6000:])
    assert [(s["stage"], s["config"]) for s in status["still_measuring"]] == [("warm_compile", "inductor_default")], (
        status,
        client.get(f"/api/runs/{run_id}/report").get_json()["runtime"]["compile_cache"],
        worker.output()[-6000:],
    )
    early = client.get(f"/api/runs/{run_id}/report").get_json()
    assert early["runtime"]["compile_cache"]["warm"]["status"] == "pending"
    assert [b["config"] for b in early["runtime"]["benchmarks"]] == ["eager", "inductor_default"]
    runtime_page = client.get(f"/r/{run_id}/runtime").get_data(as_text=True)
    assert 'id="still-measuring"' in runtime_page and 'id="warm-compile-pending"' in runtime_page
    assert "js/run.js" in runtime_page  # it polls, and reloads once the warm compile has ended

    final = wait_until(
        lambda: not (data := client.get(f"/api/runs/{run_id}").get_json())["still_measuring"] and data,
        timeout=120,
        what="the warm compile",
        worker=worker,
    )
    assert final["status"] == "succeeded", final["error"]
    report = client.get(f"/api/runs/{run_id}/report").get_json()
    cache = report["runtime"]["compile_cache"]
    assert cache["warmup"]["status"] == cache["warm"]["status"] == "ok", cache
    assert_final_benchmarks_add_only_the_processes(early["runtime"]["benchmarks"], report["runtime"]["benchmarks"])
    timeline = report["timeline"]
    top = [p for p in timeline["phases"] if p["depth"] == 0]
    (warm,) = [p for p in top if p["phase"] == "warm_compile"]
    (early_store,) = [p for p in timeline["phases"] if p["phase"] == "store" and p["depth"] == 1]
    assert warm["start_s"] <= early_store["start_s"] < early_store["end_s"] == timeline["report_stored_s"]
    assert timeline["report_stored_s"] < warm["end_s"] < timeline["wall_s"]
    assert early["timeline"]["wall_s"] == pytest.approx(timeline["report_stored_s"], abs=0.05)
    in_wall = {name: seconds for name, seconds in phase_seconds(timeline).items() if not name.startswith("prestart:")}
    assert sum(in_wall.values()) == pytest.approx(timeline["wall_s"], rel=0.01)
    page = client.get(f"/r/{run_id}/runtime").get_data(as_text=True)
    assert 'id="still-measuring"' not in page and 'id="warm-compile-total"' in page


def test_with_prestart_off_each_job_starts_its_own_child(tmp_path):
    settings = make_settings(tmp_path, prestart_child=False)  # reaches the worker as PT2SCOPE_PRESTART
    client = create_app(settings).test_client()
    with Worker(settings) as worker:
        run_id = client.post("/api/runs", json={"code": SEED, "configs": ["eager"]}).get_json()["id"]
        wait_for_success(client, run_id, worker=worker)
    report = client.get(f"/api/runs/{run_id}/report").get_json()
    assert report["timeline"]["prestarted"] is False
    assert not any(p["prestart"] for p in report["timeline"]["phases"])
    assert report["runtime"]["memory_bandwidth"]["measured_in_prestart"] is False
    assert "sandbox_start" in {p["phase"] for p in report["timeline"]["phases"] if p["depth"] == 0}
