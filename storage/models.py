"""Stored runs. Times are naive UTC (SQLite has no time zones; PostgreSQL columns match it)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
# What made a run: a pasted or uploaded model the engine ran ("job"), or an uploaded TORCH_TRACE log ("import").
JOB, IMPORT = "job", "import"
FINISHED_STATUSES = (SUCCEEDED, FAILED)


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def new_slug() -> str:
    """The run's public id and the path of its link: 128 random bits, so links cannot be guessed or enumerated."""
    return secrets.token_urlsafe(16)


class Base(DeclarativeBase):
    pass


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(32), unique=True, default=new_slug)
    status: Mapped[str] = mapped_column(String(16), default=QUEUED)
    queue: Mapped[str] = mapped_column(String(8))  # "cpu" or "gpu": the Celery queue its device needs

    # The request, as validated.
    filename: Mapped[str] = mapped_column(String(255))
    code: Mapped[str] = mapped_column(Text)
    device: Mapped[str] = mapped_column(String(8))
    train: Mapped[bool | None]
    configs: Mapped[list[str]] = mapped_column(JSON)
    # The request and the software that will measure it, hashed (runstore.fingerprint): an identical submission is
    # answered with this run. Null when no single software version was online to measure it.
    fingerprint: Mapped[str | None] = mapped_column(String(64))

    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Who submitted it, as a keyed hash of the address (webapp.security.client_id): for rate limits only.
    client: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # Who runs it: the reaper fails the run when this worker stops beating or this process is gone.
    worker_name: Mapped[str | None] = mapped_column(String(255))
    worker_pid: Mapped[int | None]
    # When the worker was done with it (report and every figure after it stored): started_at to this is the time
    # a job holds a worker, which the queue's wait estimate reads (storage.progress).
    released_at: Mapped[datetime | None]
    # When the job left its post-report work for an idle worker (workers.deferred), until that work's figures are
    # stored: the pages say it is still to come (storage.progress.still_measuring).
    deferred_since: Mapped[datetime | None]

    error_stage: Mapped[str | None] = mapped_column(String(32))
    error_kind: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    error_file: Mapped[str | None] = mapped_column(String(255))
    error_line: Mapped[int | None]
    error_traceback: Mapped[str | None] = mapped_column(Text)

    kind: Mapped[str] = mapped_column(String(16), default=JOB, server_default=JOB)
    # An import's further ranks are runs of their own, each pointing at the first rank's run; a re-run of another
    # run's code with other settings points at that run (its "compare with" default).
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"), index=True)
    rank: Mapped[int | None]

    environment: Mapped[dict | None] = mapped_column(JSON)  # the report's environment (small)
    summary: Mapped[dict | None] = mapped_column(JSON)  # counts and headline numbers for the Overview
    engine_seconds: Mapped[float | None]  # the report's runtime.job_seconds: the engine's own time

    events: Mapped[list[RunEvent]] = relationship(
        back_populates="run", order_by="RunEvent.id", cascade="all, delete-orphan", passive_deletes=True
    )

    __table_args__ = (
        Index("ix_runs_status_queue", "status", "queue"),
        Index("ix_runs_client_created_at", "client", "created_at"),
        Index("ix_runs_fingerprint", "fingerprint"),
    )


class RunEvent(Base):
    """One progress event from the engine, stored as it arrives so the run page can show it live."""

    __tablename__ = "run_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))  # the engine's "event" field: "stage", "message", ...
    stage: Mapped[str | None] = mapped_column(String(32))
    state: Mapped[str | None] = mapped_column(String(16))
    config: Mapped[str | None] = mapped_column(String(64))  # the config a stage ran with (a benchmark's rung)
    elapsed_s: Mapped[float | None]
    seconds: Mapped[float | None]
    text: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    run: Mapped[Run] = relationship(back_populates="events")


class ReportSection(Base):
    """One top-level key of a run's report, as JSON text.

    Why not one report blob or a file: a tab needs one or two sections, and the big ones (Inductor's output code
    and IR, Dynamo's graphs) would otherwise be read and parsed to draw any tab. Rows rather than files so the
    report lives wherever the database lives (several web hosts behind PostgreSQL, restarts, backups), and the
    download assembles the raw texts without parsing them.
    """

    __tablename__ = "report_sections"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)  # the key's place in the report, kept for the download
    body: Mapped[str] = mapped_column(Text)
    # The section as the pages read it, without its graphs' nodes (contract.graphs.section_outline); null when
    # it holds no graph, or the run was stored before outlines were.
    outline: Mapped[str | None] = mapped_column(Text)


class ReportGraph(Base):
    """One graph of a run's report as the viewer reads it (contract.graphs.graph_payload), as JSON text.

    Built once, when the report is stored (or on the first request for a run stored before), so the graph endpoint
    sends stored text: building it from its section parses every graph of that stage (seconds for 20,000 nodes).
    In the database rather than process memory: several web processes on several hosts serve the same runs.
    """

    __tablename__ = "report_graphs"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    graph_id: Mapped[str] = mapped_column(String(64), primary_key=True)  # dynamo-0, func-0-before, ...
    body: Mapped[str] = mapped_column(Text)


class TraceUpload(Base):
    """An uploaded TORCH_TRACE log waiting for a worker to import it; deleted once imported. In the database,
    like reports, because the web and worker hosts share nothing else. Its bytes are in TraceUploadChunk rows
    (``body`` only for uploads stored before chunks were)."""

    __tablename__ = "trace_uploads"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    filename: Mapped[str] = mapped_column(String(255))
    size: Mapped[int]
    body: Mapped[bytes | None] = mapped_column(LargeBinary)


class TraceUploadChunk(Base):
    """One piece of an upload, in order (seq): written as the web process reads the upload and read back the same
    way by the worker, so neither holds a whole upload (four 250 MB uploads at once took a web process to 2.2 GiB)."""

    __tablename__ = "trace_upload_chunks"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class ReportPiece(Base):
    """A small piece of data derived from a run's report when it is stored, as JSON text: the provenance of one
    line of the user's file (key "provenance-L<line>"; contract.provenance). Derived once so that a request for
    it reads one small row instead of parsing the report's graphs (seconds and a gigabyte for a huge graph)."""

    __tablename__ = "report_pieces"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    body: Mapped[str] = mapped_column(Text)


class WorkerHeartbeat(Base):
    """A live worker, refreshed every few seconds: tells the pages whether a GPU worker is online, and the status
    page what each worker runs jobs on."""

    __tablename__ = "worker_heartbeats"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    queues: Mapped[list[str]] = mapped_column(JSON)
    pid: Mapped[int]
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_seen: Mapped[datetime] = mapped_column(default=utcnow)
    # workers.device.describe(): CPU model, GPU names, torch and Triton versions (null for workers that predate it)
    device: Mapped[dict | None] = mapped_column(JSON)
