"""The progress events a job's child may send, as a small strict schema: anything else is dropped unread.

The child writes one JSON object per line to an inherited pipe (engine.child.Job.emit). The child runs the user's
code, so every line is untrusted: only the fields below survive, with their types and lengths checked, and a
job's events together are capped in bytes (EVENT_BYTES_LIMIT), so no job can flood the database or the pages of
its run. Parent side only (engine.job); pure Python.
"""

from __future__ import annotations

import json
import math

from contract.vocab import FAILURE_KINDS, STAGES, is_rung_name

MAX_LINE_BYTES = 64 * 1024  # a longer line is not ours: dropped whole
MAX_EVENTS = 5000  # forwarded per job (each one is a database row)
EVENT_BYTES_LIMIT = 1024 * 1024  # forwarded per job, all events together (as the parent re-encodes them)
MAX_MESSAGE_CHARS = 2000  # an event's message (the failure message is also in the report, in full)
STATES = ("started", "finished", "failed")


def parse(line: bytes) -> dict | None:
    """The event on one line, reduced to the schema's fields; None when the line is not a valid event."""
    if len(line) > MAX_LINE_BYTES:
        return None
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if isinstance(raw, dict) and raw.get("event") == "message":  # a line of progress in words (the bisect's steps)
        text = raw.get("text")
        if not isinstance(text, str) or not text:
            return None
        printable = "".join(c for c in text[:MAX_MESSAGE_CHARS] if c.isprintable() or c == " ")
        return {"event": "message", "text": printable} if printable else None
    if not isinstance(raw, dict) or raw.get("event") != "stage":
        return None
    stage, state = raw.get("stage"), raw.get("state")
    if not (isinstance(stage, str) and stage in STAGES and isinstance(state, str) and state in STATES):
        return None
    event = {"event": "stage", "stage": stage, "state": state}
    for key in ("elapsed_s", "seconds"):
        value = raw.get(key)
        if value is not None:
            if not _duration(value):
                return None
            event[key] = float(value)
    config = raw.get("config")
    if config is not None:
        if not is_rung_name(config):
            return None
        event["config"] = config
    kind = raw.get("kind")
    if kind is not None:
        if not (isinstance(kind, str) and kind in FAILURE_KINDS):
            return None
        event["kind"] = kind
    message = raw.get("message")
    if message is not None:
        if not isinstance(message, str):
            return None
        event["message"] = message[:MAX_MESSAGE_CHARS]
    return event


def size(event: dict) -> int:
    """What an event counts against EVENT_BYTES_LIMIT."""
    return len(json.dumps(event, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _duration(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value < 1e7
