"""The user's own backends (the series' Part 4: "write your own backend"): a file may define ``backend = fn`` or
``backends = {"name": fn}``, each ``fn(gm, example_inputs)`` returning a callable. Each becomes a rung of the
ladder, ``user:<name>`` (contract.vocab.user_rung), timed and checked like the built-in configs; every call is
recorded for the report's ``debug`` section: the graph received (with the user's lines on its nodes), the example
inputs, what the backend returned, what it printed and what it raised, at the user's line.

Child process only: the backends are the user's code.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time

import torch

from contract.graphs import backend_graph
from contract.userfile import is_user_file
from contract.vocab import Config, user_rung
from engine.fxgraph import serialize_graph
from engine.logtap import current_compile_id
from engine.readers.nodes import op_histogram
from engine.usercode import describe, user_traceback

MAX_RECORDED_CALLS = 16  # per backend; later calls are counted (calls_dropped)
MAX_PRINTED_CHARS = 4000  # of what one call printed
MAX_VALUE_CHARS = 200  # a non-tensor input's repr


def rung_config(name: str, fn) -> Config:
    """A Config for the user backend's rung: its backend is the rung's name (the function itself is passed to
    torch.compile by the ladder), its label names the function."""
    rung = user_rung(name)
    return Config(rung, rung, label=f"your backend {function_name(fn)}")  # type: ignore[arg-type]


def function_name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def def_line(fn, filename: str) -> int | None:
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return code.co_firstlineno if code is not None and is_user_file(code.co_filename, filename) else None


class _Tee(io.TextIOBase):
    """stdout during a backend call: kept for the report and passed on (the job's user output keeps it too)."""

    def __init__(self, through):
        self.through, self.kept = through, io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.through.write(text)

    def flush(self) -> None:
        self.through.flush()


class RecordingBackend:
    """Wraps one user backend: each call is recorded into ``debug`` (the report's section, shared by every
    backend: graphs are numbered across them), then the backend's own result is returned."""

    def __init__(self, name: str, fn, filename: str, debug: dict):
        self.name, self.fn, self.filename, self.debug = name, fn, filename, debug
        self.entry = {
            "name": name,
            "rung": user_rung(name),
            "function": function_name(fn),
            "line": def_line(fn, filename),
            "calls": [],
            "calls_dropped": 0,
        }
        debug["user_backends"].append(self.entry)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs):
        calls = self.entry["calls"]
        record = len(calls) < MAX_RECORDED_CALLS
        call = None
        if record:
            call = self._start_call(gm, example_inputs)
            calls.append(call)
        else:
            self.entry["calls_dropped"] += 1
        tee = _Tee(sys.stdout)
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(tee):
                result = self.fn(gm, example_inputs)
            if not callable(result):
                raise TypeError(
                    f"backend {self.name} returned {type(result).__name__}, not a callable: a backend returns the "
                    "function that runs the graph (e.g. `return gm.forward`)"
                )
        except Exception as exc:
            if call is not None:
                message, line = describe(exc, self.filename)
                call.update(
                    status="failed",
                    error=message[:2000],
                    line=line,
                    traceback=user_traceback(exc, self.filename),
                )
            raise
        finally:
            if call is not None:
                call["seconds"] = round(time.perf_counter() - t0, 6)
                call["printed"] = tee.kept.getvalue()[-MAX_PRINTED_CHARS:]
        if call is not None:
            call["returned"] = returned_words(result, gm, self.filename)
        return result

    def _start_call(self, gm, example_inputs) -> dict:
        graphs = self.debug["backend_graphs"]
        compile_id = current_compile_id()
        graph = serialize_graph(gm, self.filename, compile_id=compile_id)
        graph["ops"] = op_histogram(graph["nodes"])
        graphs.append(graph)
        return {
            "index": len(self.entry["calls"]),
            "compile_id": compile_id,
            "graph": backend_graph(len(graphs) - 1),
            "inputs": [input_spec(value) for value in example_inputs],
            "ops": graph["ops"],
            "status": "ok",
            "returned": None,
            "error": None,
            "line": None,
            "traceback": None,
            "printed": "",
            "seconds": 0.0,
        }


def input_spec(value) -> dict:
    """One example input as the report's InputSpec."""
    if isinstance(value, torch.Tensor):
        return {
            "kind": "tensor",
            "shape": [_size(d) for d in value.shape],
            "stride": [_size(d) for d in value.stride()],
            "dtype": str(value.dtype).removeprefix("torch."),
            "device": str(value.device),
            "requires_grad": bool(value.requires_grad),
        }
    kind = (
        "symint"
        if isinstance(value, torch.SymInt)
        else next((k for k, t in (("bool", bool), ("int", int), ("float", float)) if isinstance(value, t)), "other")
    )
    return {"kind": kind, "value": repr(value)[:MAX_VALUE_CHARS]}


def _size(d) -> int | str:
    return int(d) if isinstance(d, int) else str(d)


def returned_words(result, gm, filename: str) -> str:
    """What a backend returned, in words."""
    if getattr(result, "__self__", None) is gm and getattr(result, "__name__", "") in ("forward", "_lazy_forward"):
        return "gm.forward (the graph it received, run as it is)"
    if result is gm:
        return "gm (the graph it received, run as it is)"
    line = def_line(result, filename)
    where = f" ({filename}:{line})" if line else ""
    kind = "a function" if hasattr(result, "__code__") else f"a callable {type(result).__name__}"
    return f"{kind} {function_name(result)}{where}"
