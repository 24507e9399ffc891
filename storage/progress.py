"""A run's progress in words and seconds: its steps in the order they run, the one under way, the time left and the
wait in its queue. Pure logic on a run's events and on figures measured on earlier runs (storage.runstore reads
both from the database); no SQL here.

The time left is measured, not guessed: each step still to come is expected to take what the same step (stage and
config) took on the queue's recent runs with the same configs, scaled by how this run's finished steps compared
with theirs (a bigger model is slower at every stage). A step's time is its wall time as the worker saw it, from its
start to the next step's start (the last: to the report stored), so the time between the engine's stages (the
child's imports, writing and storing the report) is counted too: the stages' own seconds leave out about half of a
small job's time. Without such runs, the steps done so far are the yardstick. The estimate counts until the report
is readable: work after it (the warm compile) is shown apart.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from contract.vocab import STAGES, job_plan
from storage.config import Settings
from storage.models import FINISHED_STATUSES, IMPORT, RUNNING, SUCCEEDED, Run, utcnow

# The stages whose steps end before the report is readable; after it, the warm compile (runtime.compile_cache).
AFTER_REPORT = ("warm_compile",)
COMPILE_STAGES = ("dynamo", "aot", "inductor")
# How far this run's speed may stray from the recent runs' before the estimate stops trusting the comparison.
SPEED_RANGE = (0.2, 5.0)


@dataclass
class History:
    """What recent finished runs of a queue measured: the median wall seconds of each step (stage, config;
    step_walls) among runs with the same configs, the median seconds a job held a worker, and how many runs each
    figure comes from."""

    step_seconds: dict[tuple[str, str | None], float] = field(default_factory=dict)
    runs: int = 0
    job_seconds: float | None = None  # claim to release: the time a worker is busy with one job
    jobs: int = 0

    @classmethod
    def measured(cls, step_runs: list[tuple[list[dict], datetime]], job_seconds: list[float]) -> History:
        """From the steps of each recent run (progress_steps) with the time its report was stored, and the worker
        seconds of recent jobs."""
        samples: dict[tuple[str, str | None], list[float]] = {}
        for steps, readable_at in step_runs:
            for step, wall in step_walls(steps, readable_at):
                samples.setdefault((step["stage"], step["config"]), []).append(wall)
        return cls(
            step_seconds={key: statistics.median(values) for key, values in samples.items()},
            runs=len(step_runs),
            job_seconds=statistics.median(job_seconds) if job_seconds else None,
            jobs=len(job_seconds),
        )


def progress_steps(run: Run) -> list[dict]:
    """The job's steps in the order they ran, then those still to come (contract.vocab.job_plan): each {stage,
    config, state, seconds, elapsed_s, started_at}. A benchmark is one step per config."""
    steps: list[dict] = []
    for event in run.events:
        if event.kind != "stage" or event.stage not in STAGES:
            continue
        at = iso(event.created_at)
        step = next(
            (
                s
                for s in reversed(steps)
                if s["stage"] == event.stage
                and (s["config"] == event.config or event.config is None or s["config"] is None)
                and s["state"] == "started"
            ),
            None,
        )
        if step is None or event.state == "started":
            step = {
                "stage": event.stage,
                "config": event.config,
                "state": event.state,
                "seconds": None,
                "elapsed_s": event.elapsed_s,
                "started_at": at,
            }
            steps.append(step)
        step.update(
            state=event.state,
            config=step["config"] or event.config,
            seconds=event.seconds if event.seconds is not None else step["seconds"],
            elapsed_s=event.elapsed_s if event.elapsed_s is not None else step["elapsed_s"],
        )
    seen = [(s["stage"], s["config"]) for s in steps]
    never_started = "skipped" if run.status in FINISHED_STATUSES else "pending"
    for stage, config in job_plan(run.configs or []):
        if (stage, config) in seen:
            seen.remove((stage, config))
        elif (stage, None) in seen:  # an older event without its config
            seen.remove((stage, None))
        else:
            steps.append(
                {
                    "stage": stage,
                    "config": config,
                    "state": never_started,
                    "seconds": None,
                    "elapsed_s": None,
                    "started_at": None,
                }
            )
    return steps


def current_step(steps: list[dict]) -> dict | None:
    """The step running now: of those started and not ended, the one started last. The recorded compile's three
    stages run interleaved inside one call (engine/stages/capture.py): Dynamo's step stays open while AOTAutograd
    and then Inductor compile its graph, and the child says when each begins."""
    running = [s for s in steps if s["state"] == "started"]
    latest = max(enumerate(running), key=lambda pair: (pair[1]["started_at"] or "", pair[0]), default=None)
    return latest and latest[1]


def stage_progress(run: Run) -> list[dict]:
    """Each engine stage, in the order a job runs them, with its latest state (pending, started, finished,
    failed; skipped when the run ended without starting it, or when the job's configs do not run it) and its
    seconds. A stage that runs once per config (benchmark) is finished only when its last planned run is."""
    steps = progress_steps(run)
    progress: list[dict] = []
    for stage in STAGES:
        mine = [step for step in steps if step["stage"] == stage]
        if not mine:  # not part of this job (Inductor for an aot_eager job)
            progress.append({"stage": stage, "state": "skipped", "seconds": None, "elapsed_s": None})
            continue
        states = {step["state"] for step in mine}
        state = next((s for s in ("failed", "started") if s in states), None) or (
            "finished"
            if states == {"finished"}
            else "started"
            if "finished" in states and "pending" in states
            else mine[0]["state"]
        )
        seconds = [step["seconds"] for step in mine if step["seconds"] is not None]
        progress.append(
            {
                "stage": stage,
                "state": state,
                "seconds": sum(seconds) if seconds else None,
                "elapsed_s": max((step["elapsed_s"] or 0 for step in mine), default=None),
            }
        )
    return progress


def step_walls(steps: list[dict], readable_at: datetime | None) -> list[tuple[dict, float]]:
    """(step, wall seconds) of each step before the report that has ended in wall terms: from its start to the next
    step's start, the last one's to ``readable_at`` (when known)."""
    started = sorted(
        (s for s in steps if s["started_at"] and s["stage"] not in AFTER_REPORT), key=lambda s: s["started_at"]
    )
    starts = [datetime.fromisoformat(s["started_at"].removesuffix("Z")) for s in started]
    ends = starts[1:] + [readable_at]
    return [(step, (end - start).total_seconds()) for step, start, end in zip(started, starts, ends) if end is not None]


def time_left(steps: list[dict], history: History | None = None, now: datetime | None = None) -> float | None:
    """Seconds until the report is readable: the steps still to come before the warm compile, each expected to take
    the wall time recent runs measured for it (``history``) times this run's speed against them, less what the
    step under way has run already. Without history: from this run's own steps (steps_left_from_this_run). None
    when nothing measured can say."""
    now = now or utcnow()
    before_report = [s for s in steps if s["stage"] not in AFTER_REPORT]
    if not any(s["state"] in ("pending", "started") for s in before_report):
        return 0.0
    known = history.step_seconds if history else {}
    started = sorted((s for s in before_report if s["started_at"]), key=lambda s: s["started_at"])
    running = started[-1] if started else None  # the others have ended in wall terms: the next one has begun
    ahead = [s for s in before_report if s["started_at"] is None] + ([running] if running else [])
    if not all((s["stage"], s["config"]) in known for s in ahead):
        return steps_left_from_this_run(before_report, now)
    pairs = [
        (wall, known[(s["stage"], s["config"])])
        for s, wall in step_walls(started, None)
        if (s["stage"], s["config"]) in known
    ]
    expected_done = sum(e for _, e in pairs)
    speed = sum(a for a, _ in pairs) / expected_done if expected_done > 0.5 else 1.0
    speed = min(max(speed, SPEED_RANGE[0]), SPEED_RANGE[1])
    left = 0.0
    for step in ahead:
        expected = known[(step["stage"], step["config"])] * speed
        if step is running:
            expected = max(expected - _running_for(step, now), 0.0)
        left += expected
    return round(left, 1)


def steps_left_from_this_run(steps: list[dict], now: datetime) -> float | None:
    """Without earlier runs: each benchmark still to come about a finished benchmark's time, plus the recorded
    compile's time for a config's benchmark that compiles again, the timed rounds and profiling about a benchmark
    each; None until the recorded compile and one benchmark have finished."""
    done = [s for s in steps if s["state"] == "finished" and s["seconds"] is not None]
    compile_s = sum(s["seconds"] for s in done if s["stage"] in COMPILE_STAGES)
    benchmarks = [s["seconds"] for s in done if s["stage"] == "benchmark"]
    if not benchmarks or not any(s["stage"] == "dynamo" for s in done):
        return None
    timing = sum(benchmarks) / len(benchmarks)
    recorded = next((s["config"] for s in steps if s["stage"] == "dynamo"), None)
    left = 0.0
    for step in steps:
        if step["state"] not in ("pending", "started"):
            continue
        expected = timing
        if step["stage"] == "benchmark" and step["config"] not in (None, "eager", recorded):
            expected += compile_s  # a config's benchmark compiles it again unless it is eager or recorded
        if step["state"] == "started":
            expected = max(expected - _running_for(step, now), 0.0)
        left += expected
    return round(left, 1)


def _running_for(step: dict, now: datetime) -> float:
    started = parse_iso(step["started_at"])
    return max((now - started).total_seconds(), 0.0) if started else 0.0


def queue_wait(ahead: int, running_left: list[float], workers: int, history: History | None) -> float | None:
    """Seconds until a queued run starts: the ``ahead`` runs before it in its queue each hold a worker for the
    queue's measured job time, the ``running_left`` runs free theirs after those seconds, and the queue's
    ``workers`` take the next run as each becomes free. None without a measured job time or an online worker."""
    if history is None or history.job_seconds is None or workers < 1:
        return None
    free = sorted(running_left + [0.0] * max(workers - len(running_left), 0))[:workers]  # idle workers: free now
    for _ in range(ahead):
        free[0] += history.job_seconds
        free.sort()
    return round(free[0], 1)


def queue_words(ahead: int, wait_s: float | None, jobs: int, workers: int) -> str:
    """What the page says after a queued run's position: how many run before it, and the wait, with what it is
    measured from."""
    before = "next to start" if ahead == 0 else f"{ahead} run{'s' if ahead != 1 else ''} before it"
    if wait_s is None:
        return f" ({before}; the wait is estimated once a job of this queue has been timed)"
    wait = f"{wait_s:.0f} s" if wait_s < 90 else f"{wait_s / 60:.0f} min"
    on = f"{workers} worker{'s' if workers != 1 else ''}"
    return f" ({before}; about {wait} to wait, from the last {jobs} job{'s' if jobs != 1 else ''} on {on})"


def running_left(run: Run, history: History | None, now: datetime | None = None) -> float:
    """Seconds until a running run frees its worker: the queue's measured job time less what it has run."""
    if history is None or history.job_seconds is None or run.started_at is None:
        return 0.0
    return max(history.job_seconds - ((now or utcnow()) - run.started_at).total_seconds(), 0.0)


def job_runs_on(run: Run, settings: Settings) -> bool:
    """Whether the run's job may still be running: the run is, or its report was stored before the warm compile
    (runstore.store_early_report) and the final report has not filled it in, within the job's time limit since
    (a worker lost meanwhile never completes it; the report stays as stored)."""
    if run.status == RUNNING:
        return True
    if run.status != SUCCEEDED or run.kind == IMPORT or run.engine_seconds is not None or run.finished_at is None:
        return False
    return utcnow() - run.finished_at <= timedelta(seconds=settings.job_limits()["time_limit_s"])


def still_measuring(run: Run, steps: list[dict], settings: Settings) -> list[dict]:
    """The warm compile of a run whose report was stored before it, until the final report has filled it in; or
    that the job left for an idle worker (state "deferred"), until that work's figures are stored: the pages say so
    and reload then."""
    if run.status == SUCCEEDED and run.deferred_since is not None:
        return [{**step, "state": "deferred"} for step in steps if step["stage"] in AFTER_REPORT]
    if run.status != SUCCEEDED or not job_runs_on(run, settings):
        return []
    return [step for step in steps if step["stage"] in AFTER_REPORT]


def messages(run: Run) -> list[dict]:
    return [{"kind": e.kind, "text": e.text, "at": iso(e.created_at)} for e in run.events if e.kind != "stage"]


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="milliseconds") + "Z" if moment else None


def parse_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.removesuffix("Z")) if text else None
