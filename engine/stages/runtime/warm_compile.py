"""Cold vs warm compile (runtime.compile_cache): the same model compiled again in fresh processes (engine/warm.py),
as a user's next run of the script would (what the recorded compile found in the caches: compile_times.py). No
torch here: the child of a job's deferred work (engine/child.py) runs only this stage, and imports torch only for
the processes' fork server (engine.warm.ForkServer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from contract.limits import DEFAULT_LIMITS
from contract.vocab import CONFIGS, MEASURING_PROCESSES
from engine.measure.process_figures import merge_processes
from engine.stages.base import Stage

WARM_COMPILE_MIN_SECONDS = 30  # the job time a warm compile needs left (two fresh processes) before it is tried


def warm_compiles(
    job_dir: str,
    config_name: str,
    time_left_s: float,
    timed: list[str] = (),
    processes: int = MEASURING_PROCESSES[0],
    forks=None,
    process_limit_s: float | None = None,
) -> dict:
    """Cold vs warm (runtime.compile_cache): the same model and config compiled again in fresh processes
    (engine/warm.py) in the job's folder and sandbox. The first ("warmup") fills the graph caches the recorded
    compile kept off; the second ("warm") is what a user's next run of the script costs. With ``timed`` (configs),
    each is also a measuring process that times them after its compile (runtime.processes), and past two,
    ``processes`` asks for more of them ("measure-3", ...: warm compiles too, which only time). Each process gets an
    equal share of the time left for those still to run, and at most ``process_limit_s`` (a process that loads,
    compiles and times what the job itself did in less: one that runs longer is stuck). ``forks``: the child's
    engine.warm.ForkServer, which forks them with torch imported; None: each is a new interpreter."""
    labels = ["warmup", "warm"] + ([f"measure-{i}" for i in range(3, processes + 1)] if timed else [])
    out = {}
    for i, label in enumerate(labels):
        share = time_left_s / (len(labels) - i)
        if share < WARM_COMPILE_MIN_SECONDS / 2:
            out[label] = {"status": "skipped", "reason": f"only {time_left_s:.0f} s of the job's time left"}
            break
        budget = share if process_limit_s is None else min(share, process_limit_s)
        path = os.path.join(job_dir, f"compile-{label}.json")
        started = time.monotonic()
        argv = [job_dir, config_name, path, ",".join(timed)]
        returncode, stderr = _run_warm_process(argv, budget, os.path.join(job_dir, f"compile-{label}.stderr"), forks)
        if returncode is None:
            why = (
                "the stall limit plus the time this job took to load, compile and time the model itself (an "
                "endless loop in your code, reached only after some calls?)"
                if budget < share
                else "its share of the job's time left"
            )
            out[label] = {"status": "failed", "reason": f"did not finish within {budget:.0f} s: {why}"}
            break
        wall_s = time.monotonic() - started
        time_left_s -= wall_s
        if returncode != 0 or not os.path.exists(path):
            out[label] = {"status": "failed", "reason": (stderr or f"exit status {returncode}")[-2000:]}
            break
        with open(path) as f:
            started_as = "forked" if forks is not None else "spawned"
            out[label] = {**json.load(f), "wall_seconds": round(wall_s, 3), "started": started_as}
    return out


def _run_warm_process(argv: list[str], timeout_s: float, stderr_path: str, forks) -> tuple[int | None, str]:
    """engine.warm's main(argv) in a fresh process, forked by ``forks`` or a new interpreter: its exit code (None:
    killed at ``timeout_s``) and the tail of its stderr."""
    if forks is not None:
        returncode = forks.run(argv, timeout_s, stderr_path)
    else:
        with open(stderr_path, "w") as err:
            try:
                returncode = subprocess.run(
                    [sys.executable, "-m", "engine.warm", *argv],
                    cwd=argv[0],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    timeout=timeout_s,
                ).returncode
            except subprocess.TimeoutExpired:
                returncode = None
    try:
        with open(stderr_path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4000))
            return returncode, f.read().decode("utf-8", "replace")
    except OSError:
        return returncode, ""


PENDING = "still running when the report was stored: the page shows it when it is done"
WARM_LABELS = ("warmup", "warm")


class WarmCompileStage(Stage):
    """After the report is readable (the post-report phase, runtime.compile_cache and runtime.processes): the
    recorded Inductor config compiled again in two fresh processes in the job's folder and sandbox (cold vs warm:
    only Inductor's compile has caches worth warming), each of which then times every built-in config that the
    ladder timed, as a user's script would (engine.stages.runtime.processes); the request's measuring_processes
    past two adds more such processes.

    Once the report is readable the parent says whether to run them now or leave them for later (other jobs wait:
    engine.sink.Deferral); deferred, the entries say why and the job ends. A child of the deferred work alone
    (job.post_report_only) then runs them from the report the job left."""

    name = "warm_compile"

    def run(self, job) -> None:
        target, rt = job.state.target, job.report["runtime"]
        if target.backend != "inductor":
            return
        if not job.request.get("warm_compile", True):
            unrequested = {"status": "skipped", "reason": "not requested (the job was asked for no warm compile)"}
            rt["compile_cache"].update(warmup=dict(unrequested), warm=dict(unrequested))
            return
        # Only where the warm-compile processes run anyway: two more interpreters for every eager/aot_eager ladder
        # cost more than the job (tests/engine took 1,657 s with them, 630 s before); user:<name> rungs need the
        # user's backend, which a measuring process does not load.
        timed = [
            b["config"]
            for b in rt.get("benchmarks") or []
            if b["status"] == "ok" and b.get("median_ms") and b["config"] in CONFIGS
        ]
        measuring = "eager" in timed and len(timed) >= 2
        self._mark(rt, measuring, "pending", PENDING)
        if not job.post_report_only:
            job.save_early()
        t0 = job.begin(self.name, config=target.name)
        if not job.post_report_only and (reason := job.post_report_deferral()):
            self._mark(rt, measuring, "deferred", f"left for when the worker is idle: {reason}")
            job.end(self.name, t0, config=target.name)
            return
        with job.state.ctx.guard("runtime.warm_compile"):
            time_left = (
                job.request.get("time_limit_s", DEFAULT_LIMITS.time_limit_s) - (time.monotonic() - job.started) - 10
            )
            processes = job.request.get("measuring_processes", MEASURING_PROCESSES[0])
            forks = getattr(job.state, "warm_forks", None)
            results = warm_compiles(
                job.job_dir,
                target.name,
                time_left,
                timed if measuring else [],
                processes,
                forks,
                process_limit_s=job.stall.limit_s + self._job_so_far(job.report),
            )
            rt["compile_cache"].update(
                {
                    k: {n: v for n, v in r.items() if n != "timing"}
                    for k, r in results.items()
                    if k in ("warmup", "warm")
                }
            )
            if measuring:
                merge_processes(rt, results)
        self._settle(rt, measuring)
        job.end(self.name, t0, config=target.name)

    @staticmethod
    def _job_so_far(report: dict) -> float:
        """Seconds the job's own stages took before this one (the compile stages aot and inductor lie inside
        dynamo's): what one warm process, which does the same again, needs at most."""
        inside = ("aot", "inductor", "warm_compile")
        return sum(s["seconds"] for s in report["stages"] if s["name"] not in inside)

    @staticmethod
    def _mark(rt: dict, measuring: bool, status: str, reason: str) -> None:
        for label in WARM_LABELS:
            rt["compile_cache"][label] = {"status": status, "reason": reason}
        if measuring:
            rt["processes"] = {"status": status, "reason": reason, "method": None, "runs": []}

    @staticmethod
    def _settle(rt: dict, measuring: bool) -> None:
        """What never ran (the one before it failed, or this stage raised) says so instead of pending."""
        never = {"status": "skipped", "reason": "the warm compile did not get this far (see errors)"}
        for label in ("warmup", "warm"):
            if rt["compile_cache"][label]["status"] == "pending":
                rt["compile_cache"][label] = dict(never)
        if measuring and rt["processes"]["status"] == "pending":
            rt["processes"].update(status="failed", reason="the measuring processes did not run (see errors)")
