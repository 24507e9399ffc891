"""The sandboxed prestarted child of its job (engine.job.PrestartedChild), with real bubblewrap and real torch:
it serves exactly one job and is then gone, a child that does not fit is discarded (the job starts its own), a
hostile job in one sees nothing of the job before it nor of the child waiting for the next, and the time limit and
the stack dump count from the hand-over."""

import json
import os
import time

from engine import sandbox
from engine.job import PRESTART_CPU_S, JobRequest, PrestartedChild, launch_signature, run_job
from engine.sandbox import Isolation
from tests.security.test_job_boundary import LIMITS, leftover_cgroups
from tests.support import waiting_child_args

PROBE = """
import json, os, resource, torch
model = torch.sin
example_inputs = (torch.ones(2),)
print("PROBE" + json.dumps({"cpu_limit": resource.getrlimit(resource.RLIMIT_CPU)[0], "uid": os.getuid(),
                            "cwd": os.getcwd(), "files": sorted(os.listdir("."))}))
"""


def probe(report: dict) -> dict:
    line = next(line for line in report["user_output"]["stdout"].splitlines() if line.startswith("PROBE"))
    return json.loads(line[len("PROBE") :])


def prestarted(tmp_path, name="next", isolation=None, **limits) -> PrestartedChild:
    return PrestartedChild(
        JobRequest(code="", **{**LIMITS, **limits}), str(tmp_path / name), isolation or Isolation(), scratch=True
    )


def run_in(child: PrestartedChild, folder, code: str, **limits) -> dict:
    """One eager job of ``code`` (scratch, sandboxed), handed to ``child`` if it fits; ``folder`` is its own
    folder otherwise."""
    request = JobRequest(code=code, configs=["eager"], **(limits or LIMITS))
    return run_job(request, str(folder), isolation=Isolation(), scratch=True, prestarted=child)


def wait_until_waiting(child: PrestartedChild, timeout=120.0) -> None:
    """Until the child blocks on its go pipe (imports done): its stack is then in the kernel's pipe read."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(waiting_child_args(pid) for pid in child.held.group.pids() or []):
            return
        time.sleep(0.2)
    raise AssertionError("the prestarted child never waited for its job")


def test_a_prestarted_child_serves_one_job_and_is_then_gone(tmp_path):
    child = prestarted(tmp_path)
    wait_until_waiting(child)
    request = JobRequest(code=PROBE, configs=["eager"], **LIMITS)
    report = run_job(request, str(tmp_path / "job"), isolation=Isolation(), scratch=True, prestarted=child)
    assert report["status"] == "ok", report["failure"]
    found = probe(report)
    assert found["cwd"] == child.job_dir and not os.path.exists(tmp_path / "job")  # it ran in the child's folder
    # RLIMIT_CPU was set at the sandbox's start: the job's limit plus the imports'; the report names the job's
    assert found["cpu_limit"] == int(LIMITS.get("cpu_time_limit_s", request.cpu_time_limit_s)) + PRESTART_CPU_S
    assert report["isolation"]["limits"]["cpu_time_limit_s"] == request.cpu_time_limit_s
    timeline = report["timeline"]
    assert timeline["prestarted"] is True
    prestart = {p["phase"] for p in timeline["phases"] if p["prestart"]}
    assert {"prepare", "sandbox_start", "import_torch", "ladder_setup", "wait_for_job"} <= prestart, prestart
    top = [p for p in timeline["phases"] if p["depth"] == 0 and not p["prestart"]]
    assert [p["phase"] for p in top][:2] == ["prepare", "handover"]
    assert timeline["untracked_s"] <= 0.05 * timeline["wall_s"], top
    assert report["runtime"]["memory_bandwidth"]["measured_in_prestart"] is True
    assert report["runtime"]["memory_bandwidth"]["bytes_per_s"] > 0
    # It served this job and is gone: no process, uid, cgroup or folder left, and no second job can use it.
    assert child.child.proc.poll() is not None and not child.fits(request, Isolation(), scratch=True)
    assert sandbox.processes_of_uid(found["uid"]) == [] and leftover_cgroups() == []
    assert not os.path.exists(child.job_dir) and child.job_dir not in open("/proc/self/mounts").read()
    again = run_job(request, str(tmp_path / "again"), isolation=Isolation(), scratch=True, prestarted=child)
    assert again["status"] == "ok" and again["timeline"]["prestarted"] is False
    assert probe(again)["cwd"] == str(tmp_path / "again") and probe(again)["uid"] != found["uid"]
    assert again["runtime"]["memory_bandwidth"]["measured_in_prestart"] is False


def test_a_child_for_another_launch_is_discarded_and_the_job_starts_its_own(tmp_path):
    child = prestarted(tmp_path, process_limit=100)
    uid, folder = child.held.uid, child.job_dir
    request = JobRequest(code=PROBE, configs=["eager"], **LIMITS)
    report = run_job(request, str(tmp_path / "job"), isolation=Isolation(), scratch=True, prestarted=child)
    assert report["status"] == "ok", report["failure"]
    assert report["timeline"]["prestarted"] is False and probe(report)["cwd"] == str(tmp_path / "job")
    assert report["isolation"]["limits"]["process_limit"] == LIMITS["process_limit"]
    assert probe(report)["cpu_limit"] == int(request.cpu_time_limit_s)  # its own child: the job's limit only
    assert child.child.proc.poll() is not None and sandbox.processes_of_uid(uid) == []
    assert not os.path.exists(folder) and leftover_cgroups() == []


def test_a_shared_header_published_after_the_start_makes_the_child_a_misfit(tmp_path):
    store = tmp_path / "pch"
    store.mkdir()
    isolation = Isolation(shared_pch_dir=str(store))
    child = prestarted(tmp_path, isolation=isolation)
    try:
        request = JobRequest(code="", **LIMITS).validated()
        assert child.fits(request, isolation, scratch=True)
        assert not child.fits(request, isolation, scratch=False)  # a folder of another kind
        (store / "header.gch").write_bytes(b"x")  # not bound into the child, which started before it existed
        assert not child.fits(request, isolation, scratch=True)
    finally:
        child.discard()
    assert child.child.proc.poll() is not None and not os.path.exists(child.job_dir)


HOSTILE = """
import json, os, torch
model = torch.sin
example_inputs = (torch.ones(2),)
FIRST, NEXT = {first!r}, {next!r}
found = {{"uid": os.getuid(), "first_job_visible": os.path.exists(FIRST), "next_folder_visible": os.path.exists(NEXT),
         "tmp": sorted(os.listdir("/tmp")), "shm": sorted(os.listdir("/dev/shm")), "pids": [], "wrote_next": False}}
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            found["pids"].append(open(f"/proc/{{entry}}/cmdline", "rb").read().decode(errors="replace"))
        except OSError:
            pass
try:
    os.makedirs(NEXT, exist_ok=True)
    open(os.path.join(NEXT, "model.py"), "w").write("planted")
    found["wrote_next"] = True
except OSError:
    pass
print("PROBE" + json.dumps(found))
"""

SECRET = """
import os, torch
model = torch.sin
example_inputs = (torch.ones(2),)
for path in ("secret.txt", "/tmp/secret.txt", "/dev/shm/secret.txt"):
    open(path, "w").write("the first user's secret")
print("PROBE{}")
"""


def test_a_hostile_job_sees_nothing_of_the_job_before_nor_of_the_child_waiting_for_the_next(tmp_path):
    first_child = prestarted(tmp_path, "first")
    first = run_in(first_child, tmp_path / "unused", SECRET)
    assert first["status"] == "ok" and first["timeline"]["prestarted"], first["failure"]
    hostile_child = prestarted(tmp_path, "hostile")
    next_child = prestarted(tmp_path, "next")  # waiting for the job after the hostile one, meanwhile
    try:
        wait_until_waiting(next_child)
        code = HOSTILE.format(first=first_child.job_dir, next=next_child.job_dir)
        hostile = run_in(hostile_child, tmp_path / "unused", code)
        assert hostile["status"] == "ok" and hostile["timeline"]["prestarted"], hostile["failure"]
        found = probe(hostile)
        assert not found["first_job_visible"] and "secret.txt" not in found["tmp"] + found["shm"]
        assert not found["next_folder_visible"]
        # Its own sandbox's processes only (its PID namespace): not the waiting child's
        assert not any(next_child.job_dir in cmdline for cmdline in found["pids"]), found["pids"]
        # What it wrote at that path went to its own private view, never into the waiting child's folder
        assert "model.py" not in os.listdir(next_child.job_dir)
        assert next_child.fits(JobRequest(code="", **LIMITS).validated(), Isolation(), scratch=True)
        after = run_in(next_child, tmp_path / "unused", PROBE)
    finally:
        next_child.discard()
    assert after["status"] == "ok" and after["timeline"]["prestarted"], after["failure"]
    seen = probe(after)
    assert "model.py" in seen["files"] and "secret.txt" not in seen["files"]
    assert after["source"]["code"] == PROBE  # its own file, not what the hostile job planted
    assert found["uid"] != seen["uid"]  # two sandboxes at once, a uid each


TIMEOUT = "import time\nimport torch\nmodel = torch.sin\nexample_inputs = (torch.ones(2),)\ntime.sleep(600)\n"


def test_the_time_limit_and_the_stack_dump_count_from_the_hand_over(tmp_path):
    limits = {**LIMITS, "time_limit_s": 8.0}
    child = prestarted(tmp_path, **limits)
    wait_until_waiting(child)
    time.sleep(max(0.0, limits["time_limit_s"] - (time.time() - child.started_unix)))  # past a limit from spawn
    report = run_in(child, tmp_path / "unused", TIMEOUT, **limits)
    failure = report["failure"]
    assert report["timeline"]["prestarted"] is True
    assert failure["kind"] == "timeout" and (failure["file"], failure["line"]) == ("model.py", 5), failure
    assert limits["time_limit_s"] <= report["runtime"]["job_seconds"] < limits["time_limit_s"] + 5


def test_a_gpu_job_fits_the_child_started_for_it_before_its_request_is_validated():
    """The worker asks whether the child fits before run_job validates the request: a GPU job's memory limit is
    dropped only then (it has none), so the signature must compare the launch, not the request as asked. Found on
    the H200: no GPU job ever used a prestarted child."""
    isolation = Isolation(mode="none")
    template = JobRequest(code="", device="cuda", memory_limit_mb=8192).validated()
    asked = JobRequest(code="x = 1", device="cuda", configs=["eager"], memory_limit_mb=8192)
    assert launch_signature(asked, isolation, True) == launch_signature(template, isolation, True)
    assert asked.memory_limit_mb == 8192  # the request itself is left as asked
    assert launch_signature(JobRequest(code="", device="cpu"), isolation, True) != launch_signature(
        template, isolation, True
    )
