"""A report's compile as a Chrome trace (the Trace Event Format's JSON object form, which Perfetto and
chrome://tracing open): torch's own compile events (runtime.compile_timeline, read from its chromium events) as one
process, and the job's measured phases (timeline) as another, one thread per side that measured them.

torch's spans count from its first event, which comes at the start of the recorded compile's first call: they are
placed at the start of the job's `compile` phase (an imported log, which has no job timeline, starts at 0). The
report keeps no thread per span, and torch's threads overlap (an `async_compile.wait` spans kernels compiled
meanwhile): each span goes on the first track where it nests, as the viewers need (a misnested one is dropped).
"""

from __future__ import annotations

COMPILE_PID, JOB_PID = 1, 2
SIDE_TIDS = {"web": 1, "worker": 2, "parent": 3, "child": 4}


def chrome_trace(runtime: dict, timeline: dict | None, label: str) -> dict:
    """The trace of one report's ``runtime`` and ``timeline`` sections; ``label`` names the run in it."""
    phases = (timeline or {}).get("phases") or []
    compile_start_s = next((p["start_s"] for p in phases if p["phase"] == "compile" and p["depth"] == 0), 0.0)
    events = [
        _name("process_name", COMPILE_PID, None, f"torch.compile: {runtime.get('recorded_config') or 'the compile'}")
    ]
    tracks: list[list[float]] = []  # per track, the ends of the spans still open at the last start
    for span in sorted(runtime.get("compile_timeline") or [], key=lambda s: (s["start_ms"], -s["dur_ms"])):
        start, end = span["start_ms"], span["start_ms"] + max(span["dur_ms"], 0.0)
        track = next((t for t in tracks if _nests(t, start, end)), None)
        if track is None:
            track = []
            tracks.append(track)
            name = "torch's compile events" if len(tracks) == 1 else f"overlapping events ({len(tracks)})"
            events.append(_name("thread_name", COMPILE_PID, len(tracks), name))
        track.append(end)
        events.append(
            {
                "name": span["name"] or "(unnamed)",
                "cat": "torch.compile",
                "ph": "X",
                "ts": round(compile_start_s * 1e6 + start * 1e3, 3),
                "dur": round((end - start) * 1e3, 3),
                "pid": COMPILE_PID,
                "tid": tracks.index(track) + 1,
                "args": {"compile_id": span["compile_id"], "depth": span["depth"]},
            }
        )
    if phases:
        events.append(_name("process_name", JOB_PID, None, f"pt2scope job: {label}"))
        for side, tid in SIDE_TIDS.items():
            if any(p["side"] == side for p in phases):
                events.append(_name("thread_name", JOB_PID, tid, side))
    for phase in phases:
        args = {"depth": phase["depth"]}
        if phase.get("config"):
            args["config"] = phase["config"]
        if phase.get("prestart"):
            args["prestart"] = True
        events.append(
            {
                "name": phase["phase"],
                "cat": "pt2scope.job",
                "ph": "X",
                "ts": round(phase["start_s"] * 1e6, 3),
                "dur": round(max(phase["end_s"] - phase["start_s"], 0.0) * 1e6, 3),
                "pid": JOB_PID,
                "tid": SIDE_TIDS[phase["side"]],
                "args": args,
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"run": label, "compile_events_from": "the job's compile phase start"},
    }


def _nests(open_ends: list[float], start: float, end: float) -> bool:
    """Whether a span fits a track whose open spans end at ``open_ends`` (those ended by ``start`` are closed)."""
    while open_ends and open_ends[-1] <= start:
        open_ends.pop()
    return not open_ends or end <= open_ends[-1]


def _name(kind: str, pid: int, tid: int | None, name: str) -> dict:
    event = {"name": kind, "ph": "M", "pid": pid, "args": {"name": name}}
    if tid is not None:
        event["tid"] = tid
    return event
