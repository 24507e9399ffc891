"""Each attack in attacks/ run as a job (real bubblewrap, real torch, the worker's own run_job with scratch=True):
it fails cleanly and promptly, names the right cause, and leaves nothing behind (no process, no folder, no mount,
no cgroup, no disk space)."""

import json
import os
import threading
import time

import pytest

from engine import events, jobgroup, sandbox
from engine import job as job_module
from engine.job import JobRequest, run_job
from engine.sandbox import Isolation
from tests.cpustat import process_cpu_seconds
from tests.support import Collected

ATTACKS = os.path.join(os.path.dirname(__file__), "attacks")
# Tight limits so each attack ends in seconds (the defaults are in docs/security.md). The memory limit is also each
# process's address space (RLIMIT_AS): importing the CUDA build of torch (requirements/torch.txt) reserves 3.2 GB of
# it, so 4096 MiB is about the least a job runs under (3584 MiB already fails at start-up).
LIMITS = dict(time_limit_s=60.0, memory_limit_mb=4096, process_limit=64, output_limit_mb=32, file_size_limit_mb=32)


def attack(name: str) -> str:
    with open(os.path.join(ATTACKS, f"{name}.py")) as f:
        return f.read()


def run_attack(tmp_path, name: str, sink=None, **limits) -> tuple[dict, float]:
    job_dir = str(tmp_path / name)
    started = time.monotonic()
    report = run_job(
        JobRequest(code=attack(name), configs=["eager"], **{**LIMITS, **limits}),
        job_dir=job_dir,
        sink=sink,
        isolation=Isolation(),
        scratch=True,
    )
    assert not os.path.exists(job_dir), "the job's folder outlived it"
    assert job_dir not in open("/proc/self/mounts").read()
    return report, time.monotonic() - started


def leftover_cgroups() -> list[str]:
    found = []
    for folder, dirs, _ in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(folder, d) for d in dirs if d.startswith(f"pt2scope-job-{os.getpid()}-")]
        if folder.count("/") > 6:
            dirs.clear()
    return found


def test_malformed_and_flooding_events_are_dropped_or_capped_and_the_job_succeeds(tmp_path):
    sink = Collected()
    report, _ = run_attack(tmp_path, "malformed_events", sink)
    received = sink.events
    assert report["status"] == "ok", report["failure"]
    stages = [e for e in received if e["event"] == "stage"]
    assert all(isinstance(e["stage"], str) and len(e["stage"]) <= 32 for e in stages)
    assert not any("\x00" in json.dumps(e, ensure_ascii=False) for e in received)
    assert sum(events.size(e) for e in received) <= events.EVENT_BYTES_LIMIT + 1000
    assert "further progress events were dropped" in received[-1]["text"]
    # A message in words (as the bisect sends its steps) is kept, cut to its cap, with only printable characters.
    (note,) = [e for e in received if e["event"] == "message" and e["text"].startswith("note")]
    assert note == {"event": "message", "text": "note" + "z" * (events.MAX_MESSAGE_CHARS - 6)}


def test_a_failing_event_handler_kills_the_whole_job_at_once(tmp_path):
    def broken_database(event):
        raise RuntimeError("database is gone")

    report, seconds = run_attack(tmp_path, "orphan_daemon", Collected(on_event=broken_database))
    assert seconds < 20
    failure = report["failure"]
    assert failure["kind"] == "internal_error" and "error id" in failure["message"]
    assert "RuntimeError" in failure["message"] and "database is gone" not in failure["message"]
    assert leftover_cgroups() == []


def test_an_orphan_daemon_is_gone_before_the_next_job_which_gets_its_own_uid_and_budget(tmp_path):
    # Address space enough for 64 threads' stacks and arenas: the process limit is what the daemon exhausts.
    first, _ = run_attack(tmp_path, "orphan_daemon", memory_limit_mb=8192)
    assert first["status"] == "ok", first["failure"]
    first_uid = int(first["user_output"]["stdout"].split("UID")[1].split()[0])
    assert sandbox.processes_of_uid(first_uid) == []  # the daemon and its threads died with the job
    second, _ = run_attack(tmp_path, "many_threads", memory_limit_mb=8192)
    assert second["status"] == "ok", second["failure"]
    assert int(second["user_output"]["stdout"].split("UID")[1].split()[0]) != first_uid
    assert leftover_cgroups() == []


@pytest.mark.parametrize("name", ["unlinked_open_file", "fallocate_burst"])
def test_the_output_limit_holds_for_hidden_files_and_bursts(tmp_path, name):
    report, seconds = run_attack(tmp_path, name)
    assert report["failure"]["kind"] == "output_limit", report["failure"]
    assert "32 MiB" in report["failure"]["message"] and seconds < 30
    # The folder was a tmpfs of 32 MiB: nothing reached the host's disk, and unmounting freed every byte.
    assert report["isolation"]["enforced_by"]["output_limit_mb"] == "tmpfs size of the job folder (kernel)"


def test_memory_is_limited_for_the_job_as_a_whole(tmp_path):
    report, _ = run_attack(tmp_path, "memory_forks")
    assert report["failure"]["kind"] == "memory", report["failure"]
    assert "processes together reached the memory limit of 4096 MiB" in report["failure"]["message"]


def test_user_namespaces_mounts_and_keyrings_are_refused_and_dev_shm_is_writable(tmp_path):
    report, _ = run_attack(tmp_path, "user_namespace")
    assert report["status"] == "ok", report["failure"]
    line = next(text for text in report["user_output"]["stdout"].splitlines() if text.startswith("FOUND"))
    found = json.loads(line[len("FOUND") :])
    assert found["unshare_user"] == found["unshare_mount"] == found["keyctl"] == "Operation not permitted"
    assert found["mount_tmpfs"] == "Operation not permitted" and found["unshare_binary"] != 0
    assert found["dev_shm"] > 0
    assert report["isolation"]["seccomp"] != "none"


@pytest.mark.parametrize(
    "name, kind, message",
    [
        ("exit_code", "crash", "exited with code 3"),
        ("thread_budget", "processes", "process limit of 64 processes and threads reached"),
        ("sleeping_loop", "timeout", "time limit of 20 s reached during stage 'load' at model.py:7"),
        ("fork_bomb", "processes", "process limit of 64"),  # the child's, the kernel's refusals or the fork rate
    ],
)
def test_each_failure_names_its_real_cause(tmp_path, name, kind, message):
    # Address space enough for 64 threads (each reserves a stack and an arena): the process limit is what runs out.
    # The sleeping loop's limit leaves the child's imports (torch, Dynamo, Inductor: 7-8 s on this 2-core machine on
    # 7 Dec, where 8 s in all once sufficed) time to finish before the stack is dumped 1.5 s ahead of the limit.
    report, seconds = run_attack(
        tmp_path, name, time_limit_s=20.0 if name == "sleeping_loop" else 120.0, memory_limit_mb=8192
    )
    assert report["failure"]["kind"] == kind and message in report["failure"]["message"], (report["failure"], seconds)
    # Not the time limit: the fork bomb's copies die as soon as the job's own process has ended (its 63 spinning
    # copies can delay that process on a loaded 2-core machine, hence the margin).
    assert seconds < 100, seconds
    if name == "sleeping_loop":
        assert report["failure"]["line"] == 7


def test_a_fork_bomb_under_the_default_process_limit_ends_in_seconds_as_processes(tmp_path):
    """Under 512 processes a fork bomb's copies die as fast as they are born (each fork of a process that has
    imported torch is slow, and one that fails ends its copy), so the count churns below the limit and the job's own
    process may fork on for minutes (before: 116-145 s here, 900 s on a quieter machine): the parent ends it by its
    rate of new processes."""
    report, seconds = run_attack(tmp_path, "fork_bomb", process_limit=512, memory_limit_mb=8192)
    failure = report["failure"]
    assert failure["kind"] == "processes", failure
    assert "(a fork bomb?)" in failure["message"] and "process limit of 512" in failure["message"], failure
    assert seconds < 60, seconds
    assert leftover_cgroups() == []


def test_a_fork_bomb_whose_copies_keep_trying_ends_in_seconds_as_processes(tmp_path, monkeypatch):
    """Copies that catch the refusal and fork again never let the job's own process fail: the parent ends the job
    once the kernel has kept refusing its forks for FORK_REFUSALS_S (before: at the time limit; then, checked in
    every 0.25 s poll, at the time limit in one run of three: the refusals come in bursts up to 1.25 s apart). The hold
    check would end it too (it holds 63 of 64 processes): held off here so that this is the refusal check's test
    (in a slow suite run the hold check once came first, at 10 s)."""
    monkeypatch.setattr(job_module, "FORK_HOLD_S", 3600.0)
    report, seconds = run_attack(tmp_path, "fork_bomb_persistent", memory_limit_mb=8192)
    failure = report["failure"]
    assert failure["kind"] == "processes", failure
    assert failure["message"].startswith("process limit of 64 processes and threads reached, and the job kept")
    refused = int(failure["message"].split("the kernel refused ")[1].split()[0])
    assert (
        refused > 0
        and f"forks, for {jobgroup.FORK_REFUSALS_S:g} s on end during stage 'load' (a fork bomb?)" in failure["message"]
    )
    assert seconds < LIMITS["time_limit_s"] / 2, seconds  # far from the 60 s limit that ended it before
    assert leftover_cgroups() == []


def test_a_slow_fork_bomb_that_holds_half_the_process_limit_ends_as_processes(tmp_path):
    """Forking under the rate check and below the limit (the kernel refuses nothing), it holds half of the job's
    process limit: ended once it has for FORK_HOLD_S (before: at the time limit, as a CPU-starved bomb in the
    service was)."""
    report, seconds = run_attack(tmp_path, "slow_fork_bomb", memory_limit_mb=8192, user_code_time_limit_s=60.0)
    failure = report["failure"]
    assert failure["kind"] == "processes", failure
    assert failure["message"].startswith("the job held "), failure
    assert f"over 50% of its process limit of 64, for {jobgroup.FORK_HOLD_S:g} s on end" in failure["message"]
    assert seconds < LIMITS["time_limit_s"] / 2, seconds
    assert leftover_cgroups() == []


@pytest.mark.parametrize(
    "name, stage, loop_lines", [("endless_loop", "load", (4, 5)), ("endless_forward", "eager", (7, 8))]
)
def test_an_endless_loop_of_the_users_code_ends_at_its_own_limit_naming_the_line(tmp_path, name, stage, loop_lines):
    """The line named is the one the stack dump caught the loop on: either of its two lines (the `while`, which the
    loop jumps back to, or its body; a clean clone's run once caught the `while`), never a line outside it."""
    report, seconds = run_attack(tmp_path, name, user_code_time_limit_s=5.0)
    failure = report["failure"]
    assert failure["kind"] == "timeout" and failure["stage"] == stage, failure
    line = failure["line"]
    assert line in loop_lines, failure
    assert failure["message"].startswith(f"your code ran for 5 s in stage '{stage}' at model.py:{line}"), failure
    assert "PT2SCOPE_USER_CODE_TIME_LIMIT" in failure["message"]
    assert seconds < LIMITS["time_limit_s"] / 2, seconds  # the job's own 60 s limit is not what ended it
    assert report["isolation"]["limits"]["user_code_time_limit_s"] == 5.0


@pytest.mark.parametrize(
    "name, stage, line",
    [
        ("loop_when_compiled", "dynamo", None),
        ("loop_after_some_calls", "benchmark", 11),
        ("loop_in_backend", "benchmark", 7),
    ],
)
def test_an_endless_loop_past_the_eager_run_ends_at_the_stall_limit(tmp_path, name, stage, line):
    """Loops the eager run never reaches (only when compiled, at the twentieth call, in the user's backend): once the
    job makes no progress for the stall limit it is stopped, naming the stage and, where the stack shows one, the
    user's line (before: at the job's own time limit, a quarter of an hour by default)."""
    report, seconds = run_attack(tmp_path, name, stall_limit_s=5.0)
    failure = report["failure"]
    assert failure["kind"] == "timeout" and failure["stage"] == stage, failure
    assert failure["message"].startswith(f"no progress for 5 s during stage '{stage}'"), failure
    assert failure["line"] == line and "PT2SCOPE_STALL_LIMIT" in failure["message"], failure
    if line is None:
        assert "a loop that Dynamo traces for ever shows no line of yours" in failure["message"]
    assert seconds < LIMITS["time_limit_s"] / 2, seconds
    assert report["isolation"]["limits"]["stall_limit_s"] == 5.0
    assert leftover_cgroups() == []


def test_a_jobs_spinning_processes_together_get_less_cpu_than_one_process_outside_it(tmp_path):
    """The job's cgroup has one CPU weight for all its processes (engine.jobgroup.CPU_WEIGHT_SHARE of one other
    process): while eight of them spin, each in a session of its own, a spinning thread of this process (as the web
    server would be) gets about as much CPU as the eight together. Without the cpu controller it would get one ninth
    of the two cores, an eighth of what they get (the kernel's autogroup weighs each session as one; sessions are
    the user's to make).

    Measured as CPU time of the thread against the job's processes over the same seconds, not as the thread's share
    of the wall clock: on a shared host the hypervisor runs other machines on these cores (steal), which takes from
    both alike, and a CI host that stole 28-50% of the time failed the wall-clock form (7 Dec: share 0.36)."""
    finished = []
    job = threading.Thread(target=lambda: finished.append(run_attack(tmp_path, "cpu_hog", memory_limit_mb=8192)))
    job.start()
    try:

        def spinning() -> list[int]:
            procs = [os.path.join(d, "cgroup.procs") for d in leftover_cgroups() if "/pids/" in d]
            pids = [int(pid) for p in procs if os.path.exists(p) for pid in open(p).read().split()]
            return pids if len(pids) >= 8 else []

        deadline = time.monotonic() + 60
        while not spinning() and time.monotonic() < deadline:
            time.sleep(0.1)
        hog = spinning()
        assert hog, "the hog's eight processes never ran"
        wall, mine, theirs = time.monotonic(), time.thread_time(), [process_cpu_seconds(pid) for pid in hog]
        while time.monotonic() - wall < 3.0:
            pass
        mine = time.thread_time() - mine
        theirs = sum(
            after - before
            for after, before in zip(map(process_cpu_seconds, hog), theirs)
            if after is not None and before is not None  # ran through the window (the hog spins for 12 s)
        )
    finally:
        job.join()
    # With the weight: the thread weighs twice the job, so on its core it gets 2/3 to 4/5 of the time as the job's
    # processes spread over both cores (the rest of that core and all of the other go to the job), a ratio of
    # 0.5-1.0; without it about 0.22 cores against 1.78, 0.125. The bound lies between, over 2x from each.
    seen = f"this thread {mine:.2f} s, the job's processes {theirs:.2f} s"
    print(seen)  # shown with -rP: the figure on a run that passes
    assert theirs > 0.5 and mine / theirs > 0.3, seen
    report, _ = finished[0]
    assert report["isolation"]["enforced_by"]["cpu_cores"].startswith("cgroup"), report["isolation"]


def test_a_thread_refused_for_address_space_is_named_memory_not_processes(tmp_path):
    report, _ = run_attack(
        tmp_path, "thread_budget"
    )  # 4096 MiB: after torch, a few dozen threads' reservations exhaust it
    assert report["failure"]["kind"] == "memory", report["failure"]
    assert "process limit of 64 was not reached" in report["failure"]["message"]


@pytest.fixture
def no_cgroups(monkeypatch):
    """A machine that gives jobs no cgroup (a non-root worker without a delegated subtree): the watchdog's turn."""
    monkeypatch.setattr(jobgroup, "CGROUP_ROOT", "/nonexistent-cgroup-root")


def test_without_cgroups_the_watchdog_limits_the_memory_of_the_job_as_a_whole(tmp_path, no_cgroups):
    report, _ = run_attack(tmp_path, "memory_forks")
    assert report["isolation"]["enforced_by"]["memory_limit_mb"].startswith("parent watchdog")
    assert report["failure"]["kind"] == "memory", report["failure"]
    assert "processes together reached the memory limit of 4096 MiB" in report["failure"]["message"]


def test_without_a_tmpfs_the_parent_counts_deleted_files_held_open(tmp_path, no_cgroups):
    job_dir = str(tmp_path / "job")  # not scratch: the folder stays on disk, as for a non-root worker
    report = run_job(
        JobRequest(code=attack("unlinked_open_file"), configs=["eager"], **LIMITS),
        job_dir=job_dir,
        isolation=Isolation(),
    )
    assert report["failure"]["kind"] == "output_limit", report["failure"]
    assert "deleted files" in report["isolation"]["enforced_by"]["output_limit_mb"]


def test_without_the_sandbox_an_orphan_daemon_still_dies_with_its_job(tmp_path):
    """PT2SCOPE_ISOLATION=none (a root worker): no PID namespace, but the job's cgroup lists the daemon too."""
    job_dir = str(tmp_path / "job")
    report = run_job(
        JobRequest(code=attack("orphan_daemon"), configs=["eager"], **{**LIMITS, "memory_limit_mb": 8192}),
        job_dir=job_dir,
        isolation=Isolation(mode="none"),
        scratch=True,
    )
    assert report["status"] == "ok", report["failure"]
    survivors = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if job_dir.encode() in f.read():
                    survivors.append(pid)
        except OSError:
            pass
    assert survivors == []
