"""Issue 20 item 1, the engine's side: a job told, once its report is readable, that other jobs wait leaves its
warm compile and measuring processes for later (engine.sink.Deferral) and ends at once, its folder kept; the work
is then done from that folder in a fresh child (engine.job.run_post_report), with torch's caches behaving as in
a job that ran it at once, and it stops (yields) the moment it is told to."""

import os
import time

import pytest

from engine.job import DEFERRED_REPORT, JobRequest, run_job, run_post_report
from engine.sink import Deferral
from tests.engine.conftest import EXAMPLES
from tests.support import Collected

CONFIGS = ["eager", "inductor_default"]


class Deferring(Collected):
    def __init__(self, keep_dir: str) -> None:
        super().__init__()
        self.keep_dir, self.asked = keep_dir, 0

    def defer_post_report(self) -> Deferral:
        self.asked += 1
        return Deferral("3 other runs waited", self.keep_dir)


def request() -> JobRequest:
    with open(os.path.join(EXAMPLES, "graph_break.py")) as f:
        return JobRequest(code=f.read(), filename="graph_break.py", configs=CONFIGS)


@pytest.fixture(scope="module")
def deferred(tmp_path_factory):
    """One Inductor job that deferred its work: (its report, the sink, the kept folder)."""
    root = tmp_path_factory.mktemp("deferred")
    sink = Deferring(str(root / "kept"))
    report = run_job(request(), job_dir=str(root / "job"), sink=sink, scratch=True)
    return report, sink, str(root / "kept")


def test_a_deferred_job_ends_at_its_report_and_keeps_its_folder_for_the_work(deferred):
    report, sink, kept = deferred
    assert report["status"] == "ok" and not report["failure"] and sink.asked == 1
    cache = report["runtime"]["compile_cache"]
    for label in ("warmup", "warm"):
        assert cache[label]["status"] == "deferred"
        assert cache[label]["reason"] == "left for when the worker is idle: 3 other runs waited"
    assert report["runtime"]["processes"]["status"] == "deferred"
    # No fresh process ran: the warm compile's phase is only the child asking (a process costs seconds here).
    (phase,) = [p for p in report["timeline"]["phases"] if p["phase"] == "warm_compile"]
    assert phase["end_s"] - phase["start_s"] < 1.0
    # The early report was handed over as before, and the final one is it with the entries deferred.
    (early,) = sink.earlies
    assert early["runtime"]["benchmarks"] == report["runtime"]["benchmarks"]
    # The job's own folder is gone (scratch); the kept one has its caches and its report, not its output files.
    assert os.path.isdir(os.path.join(kept, "inductor-cache")) and os.path.isfile(os.path.join(kept, DEFERRED_REPORT))
    assert not any(os.path.exists(os.path.join(kept, n)) for n in ("report.json", "stdout.txt", "report.json.early"))


def test_the_deferred_work_done_later_completes_the_report_as_a_job_that_ran_it_at_once(deferred, tmp_path):
    report, _, kept = deferred
    sink = Collected()
    done = run_post_report(request(), kept, str(tmp_path / "attempt"), sink=sink)
    assert sink.finals == [done] and not sink.earlies
    assert done["status"] == "ok" and not done["failure"], done["failure"]
    cache = done["runtime"]["compile_cache"]
    assert cache["warmup"]["status"] == cache["warm"]["status"] == "ok", cache
    assert cache["warmup"]["started"] == cache["warm"]["started"] == "forked"  # from this child's fork server
    # The kept kernel binaries were found (the recorded compile's: a copy that lost them finds none) and the graph
    # caches filled by the first process hit by the second. (A job of this file that ran them at once counted the
    # same: warmup fx 0 hits 3 misses, kernels 2 hits 1 miss; warm fx 2 hits 1 miss.)
    assert cache["warmup"]["caches"]["kernels"]["hits"] >= 1
    assert cache["warm"]["caches"]["fx_graph"]["hits"] >= 1 and cache["warm"]["caches"]["kernels"]["hits"] >= 1
    assert cache["cold"] == report["runtime"]["compile_cache"]["cold"]
    assert done["runtime"]["processes"]["status"] == "ok" and len(done["runtime"]["processes"]["runs"]) == 2
    # Everything the job recorded stays as it was; one warm_compile stage entry, this work's.
    for section in ("dynamo", "aot", "inductor", "summary", "request"):
        assert done[section] == report[section], section
    assert [s["name"] for s in done["stages"]].count("warm_compile") == 1
    assert [b["config"] for b in done["runtime"]["benchmarks"]] == [
        b["config"] for b in report["runtime"]["benchmarks"]
    ]
    assert os.path.isfile(os.path.join(kept, DEFERRED_REPORT))  # kept as it was, for another try
    assert not os.path.exists(tmp_path / "attempt")


def test_deferred_work_yields_at_once_when_told(deferred, tmp_path):
    _, _, kept = deferred
    sink, started = Collected(), time.monotonic()
    told_at = []

    def a_job_came() -> bool:  # after a second: the child is importing torch or compiling by then
        if time.monotonic() - started > 1.0:
            told_at.append(told_at[0] if told_at else time.monotonic())
            return True
        return False

    assert run_post_report(request(), kept, str(tmp_path / "attempt"), sink=sink, should_yield=a_job_came) is None
    assert sink.finals == [] and not os.path.exists(tmp_path / "attempt")
    assert time.monotonic() - told_at[0] < 2.0, "the work held the worker after it was told to yield"
