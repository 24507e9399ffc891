"""Every attack of tests/security/attacks run as a job, as a worker runs it (real bubblewrap, run_job with a scratch
tmpfs folder): held, partial or broken per attack, with what ended it and how long it took.

held: the job ended as the attack's row expects (failure kind, and the words of its message), within the seconds
the row allows; partial: the right kind but late, or the right outcome with the wrong words; broken: anything
else. The limits are the security tests' tight ones (tests/security/test_job_boundary.py); the rows named "(default
limits)" keep the defaults' (an endless loop must end within 120 s of a job under them). The attacks that need a second job or a measurement beside it (the orphan daemon's next job,
the kernel cache's store, the CPU hog's share of a core) are the tests' alone.
Usage: python bench/hostile_inputs.py [NAME ...]   (results: docs/benchmarks.md, "Hostile inputs")
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.job import JobRequest, run_job  # noqa: E402
from engine.sandbox import Isolation  # noqa: E402
from storage.config import PROJECT_ROOT  # noqa: E402

ATTACKS = os.path.join(PROJECT_ROOT, "tests", "security", "attacks")
LIMITS = dict(time_limit_s=60.0, memory_limit_mb=8192, process_limit=64, output_limit_mb=32, file_size_limit_mb=32)
# attack -> (limits beyond LIMITS, the failure kind expected (None: the job succeeds), words of its message, most s)
EXPECTED = {
    "exit_code": ({}, "crash", "exited with code 3", 30),
    "sleeping_loop": ({"time_limit_s": 20.0}, "timeout", "at model.py:7", 30),
    "endless_loop": ({"user_code_time_limit_s": 5.0}, "timeout", "your code ran for 5 s in stage 'load'", 30),
    "endless_forward": ({"user_code_time_limit_s": 5.0}, "timeout", "your code ran for 5 s in stage 'eager'", 30),
    "endless_forward (default limits)": ({"time_limit_s": 900.0}, "timeout", "your code ran for 90 s", 120),
    "loop_when_compiled": ({"stall_limit_s": 5.0}, "timeout", "no progress for 5 s during stage 'dynamo'", 30),
    "loop_when_compiled (default limits)": ({"time_limit_s": 900.0}, "timeout", "no progress for 90 s", 120),
    "loop_after_some_calls": ({"stall_limit_s": 5.0}, "timeout", "stage 'benchmark' at model.py:11", 30),
    "loop_in_backend": ({"stall_limit_s": 5.0}, "timeout", "stage 'benchmark' at model.py:7", 30),
    "fork_bomb": ({}, "processes", "process limit of 64", 30),
    "fork_bomb (default limits)": ({"process_limit": 512}, "processes", "(a fork bomb?)", 30),
    "fork_bomb_persistent": ({}, "processes", "the kernel refused", 30),
    "slow_fork_bomb": ({"user_code_time_limit_s": 60.0}, "processes", "the job held", 30),
    "thread_budget": ({}, "processes", "process limit of 64", 30),
    "memory_forks": ({"memory_limit_mb": 4096}, "memory", "processes together reached the memory limit", 60),
    "fallocate_burst": ({}, "output_limit", "32 MiB", 30),
    "unlinked_open_file": ({}, "output_limit", "32 MiB", 30),
    "report_wrong_type": ({}, "invalid_report", "report from the job is invalid", 30),
    "nul_in_exception": ({}, "user_exception", "ValueError: bad", 30),  # stored escaped: test_reliability.py
    "malformed_events": ({}, None, "", 60),
    "user_namespace": ({}, None, "", 60),
}


def run(name: str) -> tuple[str, str, float]:
    """(verdict, what happened, seconds) for one attack."""
    extra, kind, words, most_s = EXPECTED[name]
    with open(os.path.join(ATTACKS, name.split(" ")[0] + ".py")) as f:
        code = f.read()
    with tempfile.TemporaryDirectory(prefix="pt2scope-hostile-") as root:
        started = time.monotonic()
        report = run_job(
            JobRequest(code=code, configs=["eager"], **{**LIMITS, **extra}),
            job_dir=os.path.join(root, "job"),
            isolation=Isolation(),
            scratch=True,
        )
        seconds = time.monotonic() - started
    failure = report.get("failure") or {}
    got = failure.get("kind")
    said = f"{got}: {failure.get('message', '')[:110]}" if got else "succeeded"
    said = said.replace("|", "/").replace("\n", " ").encode("utf-8", "backslashreplace").decode()
    if got != kind:
        return "broken", said, seconds
    if words not in (failure.get("message") or "") or seconds > most_s:
        return "partial", said, seconds
    return "held", said, seconds


def main() -> None:
    names = sys.argv[1:] or list(EXPECTED)
    print(f"load {open('/proc/loadavg').read().split()[0]}; {len(names)} attacks, each a sandboxed job")
    print("| attack | verdict | seconds | what ended it |\n| --- | --- | --- | --- |")
    verdicts = []
    for name in names:
        verdict, said, seconds = run(name)
        verdicts.append(verdict)
        printable = "".join(c if c.isprintable() else repr(c)[1:-1] for c in said)  # a NUL would make the table binary
        print(f"| {name} | {verdict} | {seconds:.1f} | {printable} |", flush=True)
    print(", ".join(f"{verdicts.count(v)} {v}" for v in ("held", "partial", "broken")))


if __name__ == "__main__":
    main()
