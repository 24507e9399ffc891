"""Heavy reads (a whole report, one huge graph) share a few slots per web process, so no run's big data can take
every thread and the CPU from the pages of everyone else: a request that finds no slot free within HEAVY_WAIT_S
is answered 503 with Retry-After instead of queueing without bound. Each heavy response is stored text, sent as
it is (never parsed or rebuilt per request), so its memory is bounded by the stored report's size cap."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from flask import abort, jsonify, make_response

HEAVY_SLOTS = 2  # per web process; gunicorn runs several processes of several threads each
HEAVY_WAIT_S = 20.0
_slots = threading.BoundedSemaphore(HEAVY_SLOTS)


@contextmanager
def heavy_slot(wait_s: float | None = None, slots: threading.BoundedSemaphore = _slots):
    """``wait_s``: how long a request may hold its thread waiting for one of ``slots`` (default HEAVY_WAIT_S, read
    at each call; work that is computed, not sent, such as a diff, waits little and has slots of its own: a thread
    that waits is one the other pages cannot have, and a thread that computes holds the process's GIL)."""
    if not slots.acquire(timeout=HEAVY_WAIT_S if wait_s is None else wait_s):
        abort(
            make_response(
                jsonify(error="The server is busy sending large reports: try again in a few seconds."),
                503,
                {"Retry-After": "5"},
            )
        )
    try:
        yield
    finally:
        slots.release()
