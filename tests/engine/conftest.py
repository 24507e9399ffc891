"""Engine tests run real jobs (a child process, real torch). Jobs are expensive (an Inductor compile costs 10-20 s
on a 2-core CPU), so each distinct (example, configs) job runs once per session and is shared."""

import os

import pytest

from engine.job import JobRequest, run_job, warm_up_shared_pch
from engine.sandbox import Isolation
from tests.support import Collected

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
# Cheap configs: Dynamo and AOTAutograd only, no C++ compile.
NO_INDUCTOR = ["eager", "backend_eager", "aot_eager"]
# The seed's whole CPU ladder, shared by every test that reads it: its figures are taken across three measuring
# processes (one more than the default), so that a third, timing-only process is tested on the same job.
SEED_LADDER = ["eager", "inductor_default", "inductor_reduce_overhead"]
SEED_PROCESSES = 3


@pytest.fixture(scope="package", autouse=True)
def shared_precompiled_header(tmp_path_factory):
    """Every engine test's job uses one trusted precompiled header, built once here (PT2SCOPE_PCH_DIR, as a worker
    shares its own): each Inductor compile would otherwise build one, some 10 s of g++ on this machine."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PT2SCOPE_PCH_DIR", str(tmp_path_factory.mktemp("pch")))
        assert any(name.endswith(".gch") for name in warm_up_shared_pch(Isolation.from_env()))
        yield


@pytest.fixture(scope="session")
def explore(tmp_path_factory):
    """explore(example_name, configs, **request) -> report; example names are files under examples/."""
    cache = {}

    def run(example, configs, **request):
        key = (example, tuple(configs), tuple(sorted(request.items())))
        if key not in cache:
            with open(os.path.join(EXAMPLES, example + ".py")) as f:
                code = f.read()
            sink = Collected()
            job_dir = tmp_path_factory.mktemp(example)
            report = run_job(
                JobRequest(code=code, filename=example + ".py", configs=list(configs), **request),
                job_dir=str(job_dir),
                sink=sink,
            )
            assert sink.finals == [report]
            report["_events"] = sink.events
            report["_partial"] = sink.partials  # the report once the stages are collected, before the benchmarks
            report["_early"] = sink.earlies  # the report handed over before the warm compile (Inductor jobs)
            cache[key] = report
        return cache[key]

    return run


def run_code(tmp_path, code, **request):
    """One job on inline code (failure cases); returns (report, events)."""
    sink = Collected()
    report = run_job(JobRequest(code=code, filename="model.py", **request), job_dir=str(tmp_path), sink=sink)
    return report, sink.events


@pytest.fixture(scope="session")
def seed(explore):
    """The seed's whole ladder, one job for the session."""
    return explore("seed", SEED_LADDER, measuring_processes=SEED_PROCESSES)
