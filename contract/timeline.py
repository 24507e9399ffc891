"""The job's timeline: one small recorder each side (web, worker, parent, child) writes its phases with, and the
merge of each side's phases into the report's ``timeline`` (contract.report.Timeline).

Times are unix seconds while recorded (one clock for every process on a host, and the web's row time for the
request), and seconds since the timeline's origin in the report. Each side that receives the timeline from the side
below it (the parent the child's, the worker the parent's) re-bases it on its own, earlier origin and adds its
own phases, so the outermost side's origin is the report's: the request, when the job came through the service.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

from contract.vocab import TIMELINE_PHASES, TIMELINE_SIDES

# A gap shorter than this between two top-level phases is clock granularity and bookkeeping, not a phase.
UNTRACKED_MIN_S = 0.002


class Recorder:
    """Phases of one side, as (phase, start, end) in unix seconds."""

    def __init__(self, side: str):
        assert side in TIMELINE_SIDES, side
        self.side = side
        self.phases: list[dict] = []

    def add(self, phase: str, start: float, end: float, *, depth: int = 0, config: str | None = None) -> None:
        assert phase in TIMELINE_PHASES, phase
        self.phases.append(
            {
                "phase": phase,
                "side": self.side,
                "start_s": start,
                "end_s": end,
                "depth": depth,
                "config": config,
                "prestart": False,  # the prestart's phases: mark_prestart
            }
        )

    def mark_prestart(self, until: float) -> None:
        """What was recorded before ``until`` (the job's hand-over to a prestarted child) was the prestart's, off the
        job's critical path (the phases' field ``prestart``); a phase still going on then is split there, and its rest is
        the job's (the job waited)."""
        phases = []
        for phase in self.phases:
            if phase["end_s"] <= until:
                phases.append({**phase, "prestart": True})
            elif phase["start_s"] < until:
                phases += [{**phase, "end_s": until, "prestart": True}, {**phase, "start_s": until}]
            else:
                phases.append(phase)
        self.phases = phases

    @contextmanager
    def span(self, phase: str, **extra):
        start = time.time()
        try:
            yield
        finally:
            self.add(phase, start, time.time(), **extra)


def merged(
    inner: dict | None,
    origin_unix_s: float,
    origin: str,
    *recorders: Recorder,
    prestarted: bool = False,
    report_stored_unix: float | None = None,
) -> dict:
    """The timeline of ``inner`` (a report's timeline from the side below, or None) re-based on ``origin_unix_s``,
    with the recorders' phases added, sorted, and the gaps between top-level phases named ``untracked``. Phases
    marked ``prestart`` (before a prestarted child got its job) are kept but cover none of the wall time.
    ``report_stored_unix``: when the report was first stored, before the warm compile (else inner's, re-based)."""
    phases, report_stored_s = [], None
    if report_stored_unix is not None:
        report_stored_s = round(report_stored_unix - origin_unix_s, 4)
    if inner and inner.get("origin_unix_s") is not None:
        shift = inner["origin_unix_s"] - origin_unix_s
        if report_stored_s is None and inner.get("report_stored_s") is not None:
            report_stored_s = round(inner["report_stored_s"] + shift, 4)
        phases = [
            {**p, "start_s": p["start_s"] + shift, "end_s": p["end_s"] + shift}
            for p in inner.get("phases") or []
            if p["phase"] != "untracked"
        ]
    for recorder in recorders:
        phases += [
            {**p, "start_s": p["start_s"] - origin_unix_s, "end_s": p["end_s"] - origin_unix_s} for p in recorder.phases
        ]
    phases.sort(key=lambda p: (p["start_s"], p["depth"]))
    top = [p for p in phases if p["depth"] == 0 and not p.get("prestart")]
    gaps, reached = [], 0.0
    for phase in top:
        if phase["start_s"] - reached > UNTRACKED_MIN_S:
            gaps.append(
                {
                    "phase": "untracked",
                    "side": phase["side"],
                    "start_s": reached,
                    "end_s": phase["start_s"],
                    "depth": 0,
                    "config": None,
                    "prestart": False,
                }
            )
        reached = max(reached, phase["end_s"])
    phases = sorted(phases + gaps, key=lambda p: (p["start_s"], p["depth"]))
    for phase in phases:
        phase["start_s"], phase["end_s"] = round(phase["start_s"], 4), round(phase["end_s"], 4)
    untracked = sum(g["end_s"] - g["start_s"] for g in gaps)
    return {
        "origin": origin,
        "origin_unix_s": round(origin_unix_s, 4),
        "wall_s": round(reached, 4),
        "untracked_s": round(untracked, 4),
        "report_stored_s": report_stored_s,
        "prestarted": prestarted or bool(inner and inner.get("prestarted")),
        "phases": phases,
    }


def phase_seconds(timeline: dict) -> dict[str, float]:
    """Seconds per phase name over the top-level phases (benchmarks as ``benchmark:<config>``; the phases of a
    prestarted child, before its job, as ``prestart:<phase>``, outside the wall time): what bench/ sums."""
    totals: dict[str, float] = {}
    for phase in timeline.get("phases") or []:
        if phase["depth"] == 0:
            name = ("prestart:" if phase.get("prestart") else "") + phase["phase"]
            name += f":{phase['config']}" if phase.get("config") else ""
            totals[name] = round(totals.get(name, 0.0) + phase["end_s"] - phase["start_s"], 4)
    return totals
