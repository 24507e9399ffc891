"""Reading and writing runs: the one place that knows how runs, their progress and their reports are stored.

Used by the web app (create, read) and the workers (claim, progress, results, heartbeats, reaping); neither
touches the tables directly.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast, get_type_hints

from pydantic import TypeAdapter
from sqlalchemy import LargeBinary, delete, func, insert, select, update
from sqlalchemy import text as sql_text
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.expression import FunctionElement

from contract import graphs, provenance
from contract.chrome_trace import chrome_trace
from contract.counts import summarize as summarize_counts
from contract.report import SCHEMA_VERSION, Report, ReportError, check_version, checked_report
from storage import progress
from storage.config import Settings
from storage.models import (
    FAILED,
    IMPORT,
    JOB,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    ReportGraph,
    ReportPiece,
    ReportSection,
    Run,
    RunEvent,
    TraceUpload,
    TraceUploadChunk,
    WorkerHeartbeat,
    utcnow,
)
from storage.text import storable, storable_json

QUEUE_FOR_DEVICE = {"cpu": "cpu", "cuda": "gpu"}
# The most one run's report may take once stored (sections, outlines and graph payloads together): beyond it the
# report is refused with a message in the run (Settings.report_limit_mb sets it for the workers).
REPORT_LIMIT_BYTES = 256 * 1024 * 1024
# The worker's last word on a report's timeline (its own phases, the store's seconds), asked for just before the
# timeline is written: see _write_report.
FinishTimeline = Callable[[dict | None], dict]


@dataclass
class Submission:
    """A validated request (see webapp.submission)."""

    code: str
    filename: str
    device: str
    train: bool | None
    configs: list[str]
    fresh: bool = False  # measure again even when an identical run exists


def create_run(
    session: Session,
    submission: Submission,
    client: str | None = None,
    limit: tuple[int, datetime] | None = None,
    parent: Run | None = None,
    fingerprint: str | None = None,
) -> Run | None:
    """Store a new queued run (create_or_join_run without joining an identical one); None over the rate limit."""
    run, _ = create_or_join_run(session, submission, client, limit, parent, fingerprint, join=False)
    return run


def create_or_join_run(
    session: Session,
    submission: Submission,
    client: str | None = None,
    limit: tuple[int, datetime] | None = None,
    parent: Run | None = None,
    fingerprint: str | None = None,
    join: bool = True,
) -> tuple[Run | None, bool]:
    """(run, True) for the run that already measures an identical submission (identical_run, with ``join`` and a
    ``fingerprint``), else (a new queued run, False). With ``limit`` (count, since): a new run only if ``client``
    submitted fewer than count runs since then, else (None, False). The checks and the insert hold locks (the
    fingerprint's and the client's; PostgreSQL: advisory locks; SQLite: the database's write lock), so a class
    pressing Run on the same code at once gets one run, and parallel submissions cannot all pass one rate check.
    ``parent``: the run this one re-runs with other settings (its page then offers the comparison)."""
    keys = [k for k in (fingerprint if join else None, client if limit is not None else None) if k is not None]
    if keys:
        _lock(session, keys)
        identical = identical_run(session, fingerprint) if join else None
        if identical is not None:
            session.commit()
            return identical, True
        if _over_limit(session, client, limit):
            session.rollback()
            return None, False
    run = Run(
        code=submission.code,
        filename=submission.filename,
        device=submission.device,
        train=submission.train,
        configs=submission.configs,
        queue=QUEUE_FOR_DEVICE[submission.device],
        client=client,
        parent_id=parent.id if parent else None,
        fingerprint=fingerprint,
    )
    session.add(run)
    session.commit()
    return run, False


class _utf8_bytes(FunctionElement):
    """A text column's stored UTF-8 bytes, read without decoding them (SQLite: CAST AS BLOB; PostgreSQL:
    convert_to, since a cast of text to bytea would read backslashes as escapes)."""

    type = LargeBinary()
    inherit_cache = True


@compiles(_utf8_bytes)
def _utf8_bytes_sqlite(element, compiler, **kw) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS BLOB)"


@compiles(_utf8_bytes, "postgresql")
def _utf8_bytes_postgresql(element, compiler, **kw) -> str:
    return f"convert_to({compiler.process(element.clauses, **kw)}, 'UTF8')"


def _lock(session: Session, keys: list[str]) -> None:
    """Begin a transaction holding a lock per key (PostgreSQL: advisory locks; SQLite: the database's write lock),
    so that a check and the insert after it are one step for everyone holding the same key."""
    session.commit()  # end the request's reads: the locks and the checks belong to one new transaction
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        session.execute(sql_text("BEGIN IMMEDIATE"))
    elif dialect == "postgresql":
        for key in sorted(int.from_bytes(hashlib.sha256(k.encode()).digest()[:8], "big", signed=True) for k in keys):
            session.execute(select(func.pg_advisory_xact_lock(key)))


def _over_limit(session: Session, client: str | None, limit: tuple[int, datetime] | None) -> bool:
    if limit is None or client is None:
        return False
    count, since = limit
    return len(recent_submissions(session, client, since)) >= count


UPLOAD_CHUNK_BYTES = 4 * 1024**2


class UploadTooLarge(ValueError):
    pass


def create_import(
    session: Session,
    filename: str,
    stream,
    max_bytes: int,
    client: str | None = None,
    limit: tuple[int, datetime] | None = None,
) -> Run | None:
    """A run for an uploaded TORCH_TRACE log, with the upload waiting beside it for a worker: read from the binary
    ``stream`` and stored a chunk at a time (never whole in memory). Raises UploadTooLarge past ``max_bytes``, and
    ValueError for an empty upload; nothing is stored then. With ``limit`` (count, since): None, nothing read,
    when ``client`` submitted count runs since then. The check and the run's row are one step under the client's
    lock (as for create_or_join_run: parallel uploads cannot all pass one check); the row is committed before the
    upload is read, so the lock is not held while bytes arrive, and removed if the upload is refused."""
    run = Run(kind=IMPORT, code="", filename=filename, device="cpu", train=None, configs=[], queue="cpu", client=client)
    if limit is not None and client is not None:
        _lock(session, [client])
        if _over_limit(session, client, limit):
            session.rollback()
            return None
        session.add(run)
        session.commit()  # counted from now on; the client's lock is released
        try:
            return _store_upload(session, run, filename, stream, max_bytes)
        except ValueError:
            session.execute(delete(Run).where(Run.id == run.id))
            session.commit()
            raise
    session.add(run)
    session.flush()
    return _store_upload(session, run, filename, stream, max_bytes)


def _store_upload(session: Session, run: Run, filename: str, stream, max_bytes: int) -> Run:
    size, seq = 0, 0
    while chunk := stream.read(UPLOAD_CHUNK_BYTES):
        size += len(chunk)
        if size > max_bytes:
            session.rollback()
            raise UploadTooLarge(f"larger than {max_bytes} bytes")
        # A core insert: an ORM object would keep every chunk in the session until the commit.
        session.execute(insert(TraceUploadChunk).values(run_id=run.id, seq=seq, data=chunk))
        seq += 1
        del chunk
    if size == 0:
        session.rollback()
        raise ValueError("empty upload")
    session.add(TraceUpload(run_id=run.id, filename=filename, size=size, body=None))
    session.commit()
    return run


def write_upload(session: Session, run_id: int, path: str) -> TraceUpload | None:
    """Write a waiting upload's bytes to ``path``, a chunk at a time; its TraceUpload row (None: it is gone)."""
    upload = session.get(TraceUpload, run_id)
    if upload is None:
        return None
    with open(path, "wb") as f:
        if upload.body is not None:  # stored before uploads were chunked
            f.write(upload.body)
        seq = 0
        while (data := _upload_chunk(session, run_id, seq)) is not None:
            f.write(data)
            seq += 1
            del data
    session.expunge(upload)
    return upload


def _upload_chunk(session: Session, run_id: int, seq: int) -> bytes | None:
    return session.execute(
        select(TraceUploadChunk.data).where(TraceUploadChunk.run_id == run_id, TraceUploadChunk.seq == seq)
    ).scalar()


def drop_upload(session: Session, run_id: int) -> None:
    session.execute(delete(TraceUploadChunk).where(TraceUploadChunk.run_id == run_id))
    session.execute(delete(TraceUpload).where(TraceUpload.run_id == run_id))
    session.commit()


def store_import(session: Session, run_id: int, first: dict, further: Iterable[dict] = ()) -> None:
    """Store an import's reports: the first rank's in the run itself, each further rank's in a run of its own (kind
    "import", parent_id the first run), one report at a time (``further`` may read each as it is asked for). The
    first rank's report lists every rank, a further rank's the first rank and itself (engine.traceimport); each
    listed rank's ``id`` then names the run of that rank."""
    run = session.get_one(Run, run_id)
    ranks = first["trace_import"]["ranks"]
    rank_runs = [run]
    for info in ranks[1:]:
        rank_run = Run(
            kind=IMPORT,
            code="",
            filename=run.filename,
            device=run.device,
            train=None,
            configs=[],
            queue=run.queue,
            client=None,
            parent_id=run.id,
            status=RUNNING,
            rank=info["rank"],
            started_at=run.started_at,
        )
        session.add(rank_run)
        rank_runs.append(rank_run)
    run.rank = first["trace_import"]["rank"]
    session.commit()  # the ranks' runs (and their ids) exist before any report is stored
    for info, rank_run in zip(ranks, rank_runs):
        info["id"] = rank_run.slug
    for rank_run, report in zip(rank_runs[1:], further):
        own = report["trace_import"]["ranks"]
        own[0]["id"], own[-1]["id"] = run.slug, rank_run.slug
        store_report(session, rank_run.id, report)
        session.expire_all()  # nothing of this rank's report stays in the session
    drop_upload(session, run_id)
    store_report(session, run_id, first)


def import_ranks(session: Session, run: Run, trace_import: dict) -> dict:
    """An imported run's trace_import section with every rank of its upload: a further rank's report lists only
    the first rank and itself (store_import), so the list and the differing ranks come from the first rank's run."""
    if run.parent_id is None:
        return trace_import
    parent = session.get(Run, run.parent_id)
    first = load_sections(session, parent, ["trace_import"]).get("trace_import") if parent else None
    if not first:
        return trace_import
    return {**trace_import, "ranks": first["ranks"], "differing_ranks": first["differing_ranks"]}


# The software whose versions decide what a job measures: torch, Triton, Python on the worker, and this report
# contract. A worker's heartbeat carries them (workers.device.describe), so the web tier needs no torch to know.
VERSION_KEYS = ("torch", "triton", "python")


def queue_software(session: Session, settings: Settings, queue: str) -> dict | None:
    """The software versions the online workers of ``queue`` run, when they all run the same; None when none is
    online or they differ (a submission could then be measured by either, so no earlier run stands for it)."""
    seen = {
        tuple((w.device or {}).get(key) for key in VERSION_KEYS)
        for w in online_workers(session, settings)
        if queue in w.queues
    }
    if len(seen) != 1:
        return None
    versions = dict(zip(VERSION_KEYS, seen.pop()))
    return {**versions, "report_schema": SCHEMA_VERSION} if versions["torch"] else None


def fingerprint(submission: Submission, software: dict | None) -> str | None:
    """What makes two submissions measure the same thing: code (inputs included: they are built by it), file
    name, device, train flag, configs and the software versions; None without known versions."""
    if software is None:
        return None
    key = {
        "code": submission.code,
        "filename": submission.filename,
        "device": submission.device,
        "train": submission.train,
        "configs": submission.configs,
        "software": software,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def identical_run(session: Session, fingerprint: str | None) -> Run | None:
    """The newest run with this fingerprint that succeeded or is still going (a classroom pressing Run at once
    shares the first one); None if there is none. A failed run is never reused: it may have been the machine."""
    if fingerprint is None:
        return None
    return session.scalar(
        select(Run)
        .where(Run.fingerprint == fingerprint, Run.status.in_((QUEUED, RUNNING, SUCCEEDED)))
        .order_by(Run.id.desc())
        .limit(1)
    )


def recent_submissions(session: Session, client: str, since: datetime) -> list[datetime]:
    """When this client submitted runs since ``since``, oldest first (the rate limit counts them)."""
    return list(
        session.scalars(
            select(Run.created_at).where(Run.client == client, Run.created_at >= since).order_by(Run.created_at)
        )
    )


def recent_runs(session: Session, limit: int) -> list[Run]:
    """The newest runs (for the listing, when the operator allows one)."""
    return list(session.scalars(select(Run).order_by(Run.id.desc()).limit(limit)))


def get_run(session: Session, slug: str) -> Run | None:
    return session.scalar(select(Run).where(Run.slug == slug))


def fair_order(session: Session, queue: str, kind: str | None = None) -> list[int]:
    """The ids of the queued runs of a queue (of one kind: jobs and imports are claimed by their own tasks) in the order the
    workers start them: round-robin across clients, so one client's many runs never hold back another's. A run's
    round is how many runs its client has had served while the queue was waiting (running, or started or released
    since the oldest queued run was submitted) or queued before it; the rounds run in turn, each in the order of
    submission (a classroom's single runs go before one student's fifth). Read by every waiting page's poll: only
    the three columns it needs, never the runs' code."""
    kinds = (kind,) if kind is not None else (JOB, IMPORT)
    waiting = session.execute(
        select(Run.id, Run.client, Run.created_at)
        .where(Run.status == QUEUED, Run.queue == queue, Run.kind.in_(kinds))
        .order_by(Run.id)
    ).all()
    if not waiting:
        return []
    oldest = waiting[0].created_at
    served = select(Run.client).where(
        Run.queue == queue,
        Run.kind.in_(kinds),
        Run.status != QUEUED,
        (Run.status == RUNNING) | (Run.started_at >= oldest) | (Run.released_at >= oldest),
    )
    rounds, keyed = Counter(session.scalars(served)), []
    for run_id, client, _ in waiting:
        keyed.append((rounds[client], run_id))
        rounds[client] += 1
    return [run_id for _, run_id in sorted(keyed)]


def queue_position(session: Session, run: Run) -> int | None:
    """1 for the next run its queue will start (fair_order); None once it is no longer waiting."""
    if run.status != QUEUED:
        return None
    order = fair_order(session, run.queue)
    return order.index(run.id) + 1 if run.id in order else None


def queue_estimate(session: Session, settings: Settings, run: Run) -> dict | None:
    """A queued run's place and expected wait: {position, ahead, workers, wait_s, from_jobs, text} (wait_s None
    until a job of the queue has been measured; text: the words the pages show after the position); None once it
    is no longer waiting."""
    position = queue_position(session, run)
    if position is None:
        return None
    history = queue_history(session, run.queue, run.configs or [])
    now = utcnow()
    running = session.scalars(select(Run).where(Run.status == RUNNING, Run.queue == run.queue))
    workers = sum(1 for w in online_workers(session, settings) if run.queue in w.queues)
    wait = progress.queue_wait(
        position - 1, [progress.running_left(r, history, now) for r in running], workers, history
    )
    return {
        "position": position,
        "ahead": position - 1,
        "workers": workers,
        "wait_s": wait,
        "from_jobs": history.jobs,
        "text": progress.queue_words(position - 1, wait, history.jobs, workers),
    }


# Recent runs whose measured times the estimates use, and how long those figures are reused (every waiting page
# polls twice a second; the figures change only when a job ends).
HISTORY_RUNS = 20
HISTORY_TTL_S = 10.0
_history_cache: dict[tuple, tuple[float, progress.History]] = {}


def queue_history(session: Session, queue: str, configs: list[str]) -> progress.History:
    """What the queue's recent finished jobs measured (progress.History): step seconds from those with these
    configs, worker seconds per job from any."""
    key = (session.get_bind().engine.url.render_as_string(), queue, tuple(configs))
    cached = _history_cache.get(key)
    if cached and time.monotonic() - cached[0] < HISTORY_TTL_S:
        return cached[1]
    finished = select(Run).where(Run.queue == queue, Run.kind != IMPORT, Run.released_at.is_not(None))
    recent = session.scalars(finished.order_by(Run.id.desc()).limit(HISTORY_RUNS)).all()
    alike = [
        r
        for r in session.scalars(
            finished.where(Run.status == SUCCEEDED).order_by(Run.id.desc()).limit(HISTORY_RUNS * 5)
        )
        if r.configs == configs
    ][:HISTORY_RUNS]
    history = progress.History.measured(
        [(progress.progress_steps(r), r.finished_at) for r in alike if r.finished_at],
        [(r.released_at - r.started_at).total_seconds() for r in recent if r.started_at and r.released_at],
    )
    _history_cache[key] = (time.monotonic(), history)
    return history


def time_left(session: Session, run: Run, steps: list[dict]) -> float | None:
    """Seconds until the run's report is readable (progress.time_left, with its queue's history)."""
    if run.status != RUNNING:
        return None
    return progress.time_left(steps, queue_history(session, run.queue, run.configs or []))


def claim_next(session: Session, queue: str, kind: str, worker_name: str, pid: int) -> Run | None:
    """Move the fairest queued run of this queue and kind (fair_order) to running for this worker; None when none
    is queued. Each task message claims one run, not necessarily its own: there is one message per queued run, so
    every run is claimed once. The claim is one conditional UPDATE: two workers never claim the same run."""
    for run_id in fair_order(session, queue, kind):
        result = session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == QUEUED)
            .values(status=RUNNING, started_at=utcnow(), worker_name=worker_name, worker_pid=pid)
        )
        claimed = cast(CursorResult, result).rowcount  # an UPDATE's result is a cursor's
        session.commit()
        if claimed:
            return session.get(Run, run_id, populate_existing=True)
    return None


def release_run(session: Session, run_id: int) -> None:
    """The worker is done with the run (its report and every figure after it stored): the queue's job times."""
    session.execute(update(Run).where(Run.id == run_id).values(released_at=utcnow()))
    session.commit()


def claim_run(session: Session, run_id: int, worker_name: str, pid: int) -> Run | None:
    """Move a queued run to running for this worker; None if it is not queued (a redelivery, or reaped)."""
    run = session.get(Run, run_id)
    if run is None or run.status != QUEUED:
        return None
    run.status, run.started_at, run.worker_name, run.worker_pid = RUNNING, utcnow(), worker_name, pid
    session.commit()
    return run


def record_event(session: Session, run_id: int, event: dict) -> None:
    """Store one progress event (engine.events has their schema; every field is made storable here as well)."""
    text = event.get("text")
    if text is None and event.get("event") != "stage":  # keep unknown events readable rather than dropping them
        text = json.dumps({k: v for k, v in event.items() if k != "event"}, default=str)
    config = event.get("config")
    session.add(
        RunEvent(
            run_id=run_id,
            kind=storable(event.get("event", "message"), 32),
            stage=_short_text(event.get("stage"), 32),
            state=_short_text(event.get("state"), 16),
            config=_short_text(config, 64),
            elapsed_s=_number(event.get("elapsed_s")),
            seconds=_number(event.get("seconds")),
            text=storable(text),
        )
    )
    session.commit()


# The sections a stage tab reads, and the engine stage whose end completes them: the child collects the
# recorded compile's artifacts in its "report" stage, before the benchmarks, so these tabs can be read while the
# benchmarks still run. The engine hands over the partial report when that stage ends (engine.sink), the worker
# stores it.
SECTIONS_READY_AFTER = {"dynamo": "report", "aot": "report", "inductor": "report"}


def store_report(
    session: Session,
    run_id: int,
    report: dict,
    limit_bytes: int = REPORT_LIMIT_BYTES,
    finish_timeline: FinishTimeline | None = None,
    *,
    job_runs_on: bool = False,
) -> None:
    """Validate the engine's report (contract.report), store it section by section (with each section's outline,
    each graph as the viewer reads it and each line's provenance, so pages never build them) and finish the run as
    succeeded or failed. A report that does not validate is not stored: the run fails naming the field it got
    wrong; nor is one larger than ``limit_bytes`` as stored: the run fails with kind "report_limit".
    ``finish_timeline``: see _write_report. ``job_runs_on``: the report is the one handed over before the warm
    compile (store_early_report), so the run gets no engine seconds yet, in the same commit as its status."""
    run = session.get_one(Run, run_id)
    try:
        report = checked_report(report)
    except ReportError as exc:
        _delete_report(session, run_id)
        _set_error(
            run, {"stage": "report", "kind": "invalid_report", "message": f"report from the job is invalid: {exc}"}
        )
        run.finished_at = utcnow()
        session.commit()
        return
    stored_bytes = _write_report(session, run_id, report, run.filename, limit_bytes, finish_timeline)
    if stored_bytes > limit_bytes:  # one run's report must not fill the database nor slow every page reading it
        _set_error(
            run,
            {
                "stage": "report",
                "kind": "report_limit",
                "message": (
                    f"the report takes {round(stored_bytes / 2**20, 2):g} MiB once stored, more than the limit of "
                    f"{round(limit_bytes / 2**20, 2):g} MiB (PT2SCOPE_REPORT_LIMIT_MB): it was not kept. Use a smaller model, "
                    "fewer configs or less output."
                ),
            },
        )
        run.finished_at = utcnow()
        session.commit()
        return
    run.environment = storable_json(report.get("environment") or {})
    run.summary = storable_json(summarize(report))
    run.engine_seconds = None if job_runs_on else _number((report.get("runtime") or {}).get("job_seconds"))
    failure = report.get("failure")
    if report.get("status") == "ok" and not failure:
        run.status = SUCCEEDED
        run.deferred_since = utcnow() if left_for_later(report) else None
    else:
        failure = failure or {"stage": "report", "kind": "unknown", "message": "the engine reported a failure"}
        _set_error(run, failure)
    run.finished_at = utcnow()
    session.commit()


# What a job's final report changes after the report it handed over before its warm compile (engine.sink): the
# warm compile's figures (runtime), its stage entry and its events' output; the timeline is written last.
SECTIONS_AFTER_EARLY_REPORT = ("runtime", "stages", "user_output")


def complete_early_report(session: Session, run_id: int, report: dict, finish_timeline: FinishTimeline) -> None:
    """Fill in the warm compile of a run whose early report is stored (store_early_report): its sections, then the
    timeline, then the engine seconds (the pages stop saying "still measuring": still_measuring), in one commit."""
    for name in SECTIONS_AFTER_EARLY_REPORT:
        _replace_section(session, run_id, name, report[name])
    _replace_section(session, run_id, "timeline", finish_timeline(report.get("timeline")))
    run = session.get_one(Run, run_id)
    run.engine_seconds = _number((report.get("runtime") or {}).get("job_seconds"))
    run.deferred_since = utcnow() if left_for_later(report) else None
    session.commit()


def left_for_later(report: dict) -> bool:
    """The job left its post-report work for an idle worker (engine.sink.Deferral): its warm compile's entries or
    its measuring processes read "deferred"."""
    runtime = report.get("runtime") or {}
    entries = [
        *((runtime.get("compile_cache") or {}).get(k) or {} for k in ("warmup", "warm")),
        runtime.get("processes"),
    ]
    return any((entry or {}).get("status") == "deferred" for entry in entries)


def fail_warm_compile(session: Session, run_id: int, report: dict, finish_timeline: FinishTimeline) -> None:
    """A job that failed after its early report was stored (killed at its time limit in the warm compile, say)
    keeps the early report, with the warm compile's pending entries marked failed and why; its timeline is the
    failed job's."""
    failure = report.get("failure") or {}
    run = session.get_one(Run, run_id)
    _mark_warm_compile_failed(session, run, f"the job ended in the warm compile: {failure.get('message')}")
    _replace_section(session, run_id, "timeline", finish_timeline(report.get("timeline")))
    run.engine_seconds = _number((report.get("runtime") or {}).get("job_seconds"))
    session.commit()


# What a job's deferred post-report work changes in its stored report (engine.job.run_post_report): the figures
# (runtime, but for the job's own seconds), the warm compile's stage entry, what failed or was unavailable in it.
SECTIONS_AFTER_DEFERRED_WORK = ("runtime", "stages", "errors", "unavailable")


def complete_deferred(session: Session, run_id: int, report: dict) -> None:
    """Fill in the post-report work a job left for later (its runtime.compile_cache reads "deferred"): where that
    work's report is a success, its sections; else the deferred entries read failed, and why. The job's timeline
    and seconds stay the job's: this work held no one's job."""
    run = session.get_one(Run, run_id)
    run.deferred_since = None
    if report.get("status") != "ok" or report.get("failure"):
        message = (report.get("failure") or {}).get("message") or "it ended without a report"
        _mark_warm_compile_failed(session, run, f"the deferred warm compile failed: {message}", ("deferred",))
    else:
        stored = load_sections(session, run, ["runtime"]).get("runtime") or {}
        report["runtime"]["job_seconds"] = stored.get("job_seconds")
        for name in SECTIONS_AFTER_DEFERRED_WORK:
            _replace_section(session, run_id, name, report[name])
    session.commit()


def waiting_runs(session: Session, queue: str) -> int:
    """How many runs (jobs and imports) wait in a queue."""
    return session.scalar(select(func.count()).where(Run.status == QUEUED, Run.queue == queue)) or 0


def _mark_warm_compile_failed(session: Session, run: Run, reason: str, states=("pending",)) -> None:
    """What the early report left pending (or a job deferred: ``states``) reads failed, and why: the warm compile's
    cold-vs-warm entries, the measuring processes. The caller commits."""
    runtime = load_sections(session, run, ["runtime"]).get("runtime") or {}
    failed = {"status": "failed", "reason": reason}
    for label in ("warmup", "warm"):
        if (runtime.get("compile_cache") or {}).get(label, {}).get("status") in states:
            runtime["compile_cache"][label] = failed
    if (runtime.get("processes") or {}).get("status") in states:
        runtime["processes"].update(failed)
    _replace_section(session, run.id, "runtime", runtime)


def _replace_section(session: Session, run_id: int, name: str, value) -> None:
    """Rewrite one section of a stored report (validated as that section of the contract); nothing when the run
    has no such section (its report was not stored). The caller commits."""
    section = session.get(ReportSection, (run_id, name))
    if section is not None:
        section.body = _json_text(_section_value(name, value))


def _section_value(name: str, value):
    adapter: TypeAdapter = TypeAdapter(get_type_hints(Report)[name])  # a model, or a list of them (stages)
    return adapter.dump_python(adapter.validate_python(value))


def _delete_report(session: Session, run_id: int) -> None:
    session.execute(delete(ReportSection).where(ReportSection.run_id == run_id))
    session.execute(delete(ReportGraph).where(ReportGraph.run_id == run_id))
    session.execute(delete(ReportPiece).where(ReportPiece.run_id == run_id))


def store_partial_report(session: Session, run_id: int, report: dict) -> bool:
    """Store what a running job has recorded so far (engine.sink's partial: every stage's artifacts, validated like
    a final report), so the tabs whose stage has ended can be read before the job finishes; the final report replaces it. The run
    stays running. False (nothing stored) when the partial report does not validate."""
    try:
        report = checked_report(report)
    except ReportError:
        return False
    _write_report(session, run_id, report, limit_bytes=REPORT_LIMIT_BYTES)
    session.commit()
    return True


def _write_report(
    session: Session,
    run_id: int,
    report: dict,
    filename: str | None = None,
    limit_bytes: int | None = None,
    finish_timeline: FinishTimeline | None = None,
) -> int:
    """Replace the run's stored report by ``report``; return the bytes it takes. Over ``limit_bytes`` nothing is
    stored (the old rows are deleted all the same). ``filename``: the user's file (default: the report's).
    ``finish_timeline(timeline) -> timeline``: called once every other row is built, just before the timeline's,
    so that the timeline is written once and its store phase covers the store (all but the commit)."""
    filename = filename or (report.get("source") or {}).get("filename") or "model.py"
    _delete_report(session, run_id)
    rows: list[ReportSection | ReportGraph | ReportPiece] = []
    stored_bytes = 0
    timeline_position = None
    for position, (name, value) in enumerate(report.items()):
        if name == "timeline" and finish_timeline is not None:
            timeline_position = position
            continue
        stored_bytes += _add_section(rows, run_id, name, position, value)
    for graph_id, graph in graphs.report_graphs(report):
        rows.append(
            ReportGraph(run_id=run_id, graph_id=graph_id, body=_json_text(graphs.graph_payload(graph_id, graph)))
        )
        stored_bytes += len(rows[-1].body)
    rows.append(ReportPiece(run_id=run_id, key=PROVENANCE_DERIVED, body="true"))
    for line, entry in provenance.by_line(report, filename).items():
        rows.append(ReportPiece(run_id=run_id, key=provenance_key(line), body=_json_text(entry)))
        stored_bytes += len(rows[-1].body)
    if finish_timeline is not None:
        timeline = _section_value("timeline", finish_timeline(report.get("timeline")))
        stored_bytes += _add_section(rows, run_id, "timeline", timeline_position, timeline)
    if limit_bytes is None or stored_bytes <= limit_bytes:
        session.add_all(rows)
    return stored_bytes


def _add_section(rows: list, run_id: int, name: str, position: int | None, value) -> int:
    """One section's row (with its outline) added to ``rows``; the bytes it takes."""
    outline = graphs.section_outline(value)
    section = ReportSection(
        run_id=run_id,
        name=name,
        position=position,
        body=_json_text(value),
        outline=None if outline is None else _json_text(outline),
    )
    rows.append(section)
    return len(section.body) + len(section.outline or "")


def _upgrade_stored_report(session: Session, run: Run) -> None:
    """A report stored under an older schema_version is upgraded in place on its first read (contract.report's
    upgrades), so every reader sees the current version; an unknown version raises ReportError saying so."""
    body = session.scalar(
        select(ReportSection.body).where(ReportSection.run_id == run.id, ReportSection.name == "schema_version")
    )
    if body is None and not has_report(session, run):
        return
    version = None if body is None else json.loads(body)
    if version == SCHEMA_VERSION:
        return
    check_version({"schema_version": version})
    report = checked_report(json.loads(b"".join(_stored_report_pieces(session, run))))
    try:
        _write_report(session, run.id, report, run.filename)
        session.commit()
    except IntegrityError:  # another web process upgraded it first: the same rows
        session.rollback()


def fail_run(session: Session, run: Run, stage: str, kind: str, message: str) -> None:
    _set_error(run, {"stage": stage, "kind": kind, "message": message})
    run.finished_at = utcnow()
    session.commit()


def _set_error(run: Run, failure: dict) -> None:
    run.status = FAILED
    run.error_stage = _short_text(failure.get("stage"), 32)
    run.error_kind = _short_text(failure.get("kind"), 64)
    run.error_message = storable(failure.get("message"))
    run.error_file = _short_text(failure.get("file"), 255)
    line = failure.get("line")
    run.error_line = line if isinstance(line, int) and not isinstance(line, bool) and 0 <= line < 2**31 else None
    run.error_traceback = storable(failure.get("traceback")) or None


def summarize(report: dict) -> dict:
    """Headline numbers for the Overview and the API, stored on the run so that tab never loads the big sections.
    The counts are the engine's (report["summary"], docs/report-schema.md), never recounted here; a report stored
    before the engine wrote them (summary.counts null) gets them from the same function (contract.counts.summarize)."""
    stored_counts = report.get("summary") or {}
    counts = stored_counts if stored_counts.get("counts") else summarize_counts(report)
    runtime = report.get("runtime") or {}
    measured = [
        b
        for b in runtime.get("benchmarks") or []
        if isinstance(b.get("speedup_vs_eager"), (int, float)) and b.get("config") != "eager"
    ]
    best = max(measured, key=lambda b: b["speedup_vs_eager"], default=None)
    return {
        **counts["counts"],
        "kernel_names": counts.get("kernel_names") or [],
        "library_call_names": counts.get("library_call_names") or {},
        "best_config": best and best.get("config"),
        "best_speedup": best and best["speedup_vs_eager"],
        # Quote best_speedup only when decided; else best_speedup_text says "not decided: ..." with the figures.
        "best_speedup_decided": bool(best and (best.get("speedup") or {}).get("decided")),
        "best_speedup_text": best and (best.get("speedup") or {}).get("text"),
        "correctness_text": (runtime.get("correctness") or {}).get("text"),
        "first_divergent_stage": (runtime.get("correctness") or {}).get("first_divergent_stage"),
    }


def load_sections(
    session: Session,
    run: Run,
    names: list[str] | None = None,
    *,
    exclude: list[str] | None = None,
    outlines: bool = False,
) -> dict:
    """The named report sections (or all but ``exclude``), parsed, in report order; with ``outlines``, their
    graphs without nodes (graphs.section_outline) where the outline was stored."""
    _upgrade_stored_report(session, run)
    text = func.coalesce(ReportSection.outline, ReportSection.body) if outlines else ReportSection.body
    query = select(ReportSection.name, text).where(ReportSection.run_id == run.id)
    if names is not None:
        query = query.where(ReportSection.name.in_(names))
    if exclude:
        query = query.where(ReportSection.name.not_in(exclude))
    return {name: json.loads(body) for name, body in session.execute(query.order_by(ReportSection.position))}


def report_piece(session: Session, run: Run, key: str) -> str | None:
    """A piece kept with the run's report (ReportPiece), its JSON text; None when there is none."""
    piece = session.get(ReportPiece, (run.id, key))
    return None if piece is None else piece.body


def keep_report_piece(session: Session, run: Run, key: str, body: str) -> None:
    """Keep ``body`` with the run's report under ``key`` (gone with the report when it is stored again); another web
    process that kept the same piece first wins."""
    session.add(ReportPiece(run_id=run.id, key=key, body=body))
    try:
        session.commit()
    except IntegrityError:
        session.rollback()


def section_bytes(session: Session, run: Run, names: list[str]) -> int:
    """What the named sections of a run's report take as stored (their JSON text), read without loading them."""
    query = select(func.coalesce(func.sum(func.length(ReportSection.body)), 0)).where(
        ReportSection.run_id == run.id, ReportSection.name.in_(names)
    )
    return int(session.scalar(query) or 0)


def has_report(session: Session, run: Run) -> bool:
    return bool(session.scalar(select(func.count()).select_from(ReportSection).where(ReportSection.run_id == run.id)))


def graph_json_text(session: Session, run: Run, graph_id: str) -> str | None:
    """One graph as the viewer reads it (graphs.graph_payload), JSON text; None if the report has no such
    graph."""
    _upgrade_stored_report(session, run)
    body = session.scalar(
        select(ReportGraph.body).where(ReportGraph.run_id == run.id, ReportGraph.graph_id == graph_id)
    )
    if body is not None:
        return body
    # A run stored before graphs were: build this one from its section once, for every later request.
    section_name = graphs.graph_section(graph_id)
    if section_name is None:
        return None
    graph = graphs.find_graph(load_sections(session, run, [section_name]).get(section_name) or {}, graph_id)
    if graph is None:
        return None
    body = _json_text(graphs.graph_payload(graph_id, graph))
    try:
        session.add(ReportGraph(run_id=run.id, graph_id=graph_id, body=body))
        session.commit()
    except IntegrityError:  # another web process stored it first: the same text
        session.rollback()
    return body


# The marker that a run's provenance was derived (even when no line has any), so it never is again.
PROVENANCE_DERIVED = "provenance-derived"


def provenance_key(line: int) -> str:
    return f"provenance-L{line}"


def line_provenance_text(session: Session, run: Run, line: int) -> str:
    """One line's provenance (contract.provenance), JSON text, as stored with the report. A run stored before
    provenance was has it derived once, on the first request, for every later one."""
    body = session.scalar(
        select(ReportPiece.body).where(ReportPiece.run_id == run.id, ReportPiece.key == provenance_key(line))
    )
    if body is not None:
        return body
    if session.get(ReportPiece, (run.id, PROVENANCE_DERIVED)) is not None:
        return _json_text(provenance.empty_entry())  # derived already: nothing came from this line
    pieces = provenance.by_line(load_sections(session, run, ["dynamo", "aot", "inductor", "debug"]), run.filename)
    try:
        session.add(ReportPiece(run_id=run.id, key=PROVENANCE_DERIVED, body="true"))
        session.add_all(
            ReportPiece(run_id=run.id, key=provenance_key(n), body=_json_text(entry)) for n, entry in pieces.items()
        )
        session.commit()
    except IntegrityError:  # another web process stored them first: the same text
        session.rollback()
    return _json_text(pieces.get(line) or provenance.empty_entry())


def report_json_pieces(session: Session, run: Run) -> list[bytes]:
    """The whole report as stored (upgraded to the current version): UTF-8 pieces whose concatenation is its JSON
    text, each section's stored bytes as the database hands them over. Why pieces of bytes and not one str: a
    report of 50 MB built as text was decoded, formatted, joined and encoded again, four copies each made in one
    call that holds the web process's GIL for tens of milliseconds, so every other page served by that process
    waited on each (bench/heavy_reads.py); sent piece by piece, the socket writes release it."""
    _upgrade_stored_report(session, run)
    return _stored_report_pieces(session, run)


def _stored_report_pieces(session: Session, run: Run) -> list[bytes]:
    rows = session.execute(
        select(ReportSection.name, _utf8_bytes(ReportSection.body))
        .where(ReportSection.run_id == run.id)
        .order_by(ReportSection.position)
    )
    pieces: list[bytes] = []
    for name, body in rows:
        pieces += [b"," if pieces else b"{", json.dumps(name).encode() + b":", body]
    return [*(pieces or [b"{"]), b"}"]


def compile_trace_text(session: Session, run: Run) -> str:
    """The run's compile as a Chrome trace (contract.chrome_trace), as JSON text."""
    sections = load_sections(session, run, ["runtime", "timeline"])
    return json.dumps(
        chrome_trace(sections.get("runtime") or {}, sections.get("timeline"), f"{run.filename} ({run.slug})")
    )


def store_early_report(
    session: Session,
    run_id: int,
    report: dict,
    limit_bytes: int = REPORT_LIMIT_BYTES,
    finish_timeline: FinishTimeline | None = None,
) -> bool:
    """Store the report a job hands over before its warm compile (engine.sink's early) as the run's:
    succeeded, readable, but with no engine seconds yet (the job runs on): that is what still_measuring reads. One
    commit: a reader between a commit of "succeeded" and one of "no engine seconds" saw a finished run with nothing
    still measuring, and its page stopped polling before the warm compile's figures came.
    False when it was not stored as a success (refused as too large): the final report then decides."""
    store_report(session, run_id, report, limit_bytes, finish_timeline, job_runs_on=True)
    return session.get_one(Run, run_id).status == SUCCEEDED


def error_of(run: Run) -> dict | None:
    if run.status != FAILED:
        return None
    return {
        "stage": run.error_stage,
        "kind": run.error_kind,
        "message": run.error_message,
        "file": run.error_file,
        "line": run.error_line,
        "traceback": run.error_traceback,
    }


# Workers: heartbeats and the reaper.


def beat(session: Session, name: str, queues: list[str], pid: int, device: dict | None = None) -> None:
    heartbeat = session.get(WorkerHeartbeat, name)
    if heartbeat is None or heartbeat.pid != pid:  # a new worker, or a restarted one reusing the name
        session.merge(
            WorkerHeartbeat(name=name, queues=queues, pid=pid, started_at=utcnow(), last_seen=utcnow(), device=device)
        )
    else:
        heartbeat.last_seen, heartbeat.queues = utcnow(), queues
        if device is not None:
            heartbeat.device = device
    session.commit()


def forget_worker(session: Session, name: str) -> None:
    session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.name == name))
    session.commit()


def online_workers(session: Session, settings: Settings) -> list[WorkerHeartbeat]:
    """Workers whose heartbeat is fresh, by name."""
    fresh_after = utcnow() - timedelta(seconds=settings.worker_stale_after_s)
    return list(
        session.scalars(
            select(WorkerHeartbeat).where(WorkerHeartbeat.last_seen >= fresh_after).order_by(WorkerHeartbeat.name)
        )
    )


def online_queues(session: Session, settings: Settings) -> set[str]:
    """The queues some live worker consumes ("cpu", "gpu")."""
    return {queue for worker in online_workers(session, settings) for queue in worker.queues}


def queue_lengths(session: Session) -> dict[str, dict[str, int]]:
    """Runs waiting and running on each queue, counted in the database: the same for every broker, and a message
    a broker still holds may belong to a run that was already reaped."""
    lengths = {queue: {QUEUED: 0, RUNNING: 0} for queue in QUEUE_FOR_DEVICE.values()}
    counts = session.execute(
        select(Run.queue, Run.status, func.count())
        .where(Run.status.in_((QUEUED, RUNNING)))
        .group_by(Run.queue, Run.status)
    )
    for queue, status, count in counts:
        lengths.setdefault(queue, {QUEUED: 0, RUNNING: 0})[status] = count
    return lengths


def reap_stale_runs(
    session: Session, settings: Settings, *, run_id: int | None = None, local_worker: str | None = None
) -> list[str]:
    """Fail runs stuck in "running" because their worker died; return their slugs. A run whose report was stored
    before its warm compile (store_early_report) and whose worker died in it keeps that report, with the warm
    compile marked failed and why (else its pages would say "still measuring" until the time limit, then show the
    warm compile pending for ever).

    A dead worker cannot report, and the SQLite broker does not redeliver its message, so without this a run
    stays "running" forever. A run is stuck when its worker stopped beating, restarted since it claimed the run,
    ran past the hard time limit, or (checked only by that worker itself, ``local_worker``) the process that
    claimed it no longer exists.
    """
    now = utcnow()
    heartbeats = {h.name: h for h in session.scalars(select(WorkerHeartbeat))}
    recent = now - timedelta(seconds=settings.hard_time_limit_s + settings.worker_stale_after_s)
    measuring = (
        (Run.status == SUCCEEDED)
        & (Run.kind == JOB)
        & Run.engine_seconds.is_(None)
        & Run.released_at.is_(None)
        & (Run.finished_at >= recent)  # its early report's job may still run (progress.job_runs_on)
    )
    query = select(Run).where((Run.status == RUNNING) | measuring)
    if run_id is not None:
        query = query.where(Run.id == run_id)
    reaped = []
    for run in session.scalars(query):
        why = _why_stuck(run, heartbeats.get(run.worker_name or ""), settings, now, local_worker)
        if why is None:
            continue
        if run.status == RUNNING:
            _set_error(run, {"stage": _last_stage(run), "kind": "worker_lost", "message": why + "; submit it again."})
            run.finished_at = now
        else:
            _mark_warm_compile_failed(session, run, f"the warm compile did not finish: {why}")
            run.engine_seconds = round((now - (run.started_at or run.created_at)).total_seconds(), 3)
        reaped.append(run.slug)
    session.commit()
    return reaped


def _why_stuck(run: Run, heartbeat, settings: Settings, now: datetime, local_worker: str | None) -> str | None:
    """Why the run's worker can no longer finish it, or None while it may."""
    started_at = run.started_at or run.created_at  # claim_run sets it with the status: the fallback is earlier
    if started_at < now - timedelta(seconds=settings.hard_time_limit_s + settings.worker_stale_after_s):
        return f"the job ran past the hard time limit of {settings.hard_time_limit_s:g} s"
    if heartbeat is None or heartbeat.last_seen < now - timedelta(seconds=settings.worker_stale_after_s):
        return f"worker {run.worker_name} stopped responding while running the job"
    if heartbeat.started_at > started_at:
        return f"worker {run.worker_name} restarted while running the job"
    if run.worker_name == local_worker and run.worker_pid and not process_exists(run.worker_pid):
        return f"the worker process (pid {run.worker_pid}) running the job died"
    return None


def _last_stage(run: Run) -> str:
    stages = [e.stage for e in run.events if e.kind == "stage" and e.stage]
    return stages[-1] if stages else "load"


def process_exists(pid: int) -> bool:
    """A process of this host with this pid runs (perhaps another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _json_text(value) -> str:
    text = json.dumps(value, separators=(",", ":"), default=str)
    if "\\ud" in text:  # maybe a lone surrogate (a pair is fine): no page could show it, so escape it visibly
        try:
            json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(storable_json(value), separators=(",", ":"), default=str)
    return text


def _short_text(value, max_chars: int) -> str | None:
    """A field a job sets that should be a short string: anything else is dropped, a string made storable."""
    return storable(value, max_chars) if isinstance(value, str) else None


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
