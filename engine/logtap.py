"""One tap on torch's logs: the structured trace and the TORCH_LOGS artifacts, kept in memory per compile id.

torch.compile reports most of what it does through two channels:
- the structured trace (logger "torch.__trace"): records with ``metadata`` (event key, frame_id,
  frame_compile_id, attempt) and a ``payload``; emitted whenever the logger has a handler;
- the TORCH_LOGS artifacts (fusion, ir_pre_fusion, output_code, ...): records on loggers "<module>.__<name>",
  enabled by torch._logging.set_logs. We replace torch's stderr handler with ours, so nothing reaches the user's
  output, and attribute each record to the compile id active when it was logged.

What is switched on is what is read: every reader of the log declares, in ``PARSERS`` (like tlparse's
src/parsers.rs), the trace events and TORCH_LOGS artifacts it reads, and only those artifacts are enabled (each
costs compile time). Readers are plain functions over event lists; ``read(log, name)`` hands one its declared
inputs from a live ``LogTap`` or from a ``LoadedLog`` (a TORCH_TRACE / TORCH_LOGS_OUT file read back), and refuses
an input it did not declare. Records that cannot be read are counted (``malformed``) into the report's ``logs``.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from contract.compile_id import canonical
from engine.readers.tracelog import trace_event


@dataclass(frozen=True)
class Parser:
    """One reader of the log: the trace events and TORCH_LOGS artifacts it reads, and how (``read(log, **context)``
    gets a view of the log that holds only those)."""

    name: str
    trace_events: tuple[str, ...]
    artifacts: tuple[str, ...]
    read: Callable | None
    # Read after the recorded compile too (the benchmark ladder's CUDA-graph reasons): stays on when the rest is off.
    after_capture: bool = False


PARSERS: dict[str, Parser] = {}


def declare(
    name: str, *, trace: tuple = (), logs: tuple = (), read: Callable | None = None, after_capture: bool = False
) -> Parser:
    """Register a reader; stage modules do this at import, before the tap is installed."""
    PARSERS[name] = Parser(name, tuple(trace), tuple(logs), read, after_capture)
    return PARSERS[name]


def artifacts_read(*, after_capture_only: bool = False) -> list[str]:
    """The TORCH_LOGS artifacts some registered reader declares: the only ones switched on."""
    names = {a for p in PARSERS.values() if p.after_capture or not after_capture_only for a in p.artifacts}
    return sorted(names)


class UndeclaredInput(KeyError):
    """A reader asked for a trace event or artifact it did not declare (its declaration would switch it off)."""


class _DeclaredView:
    """What one reader may see of a log: its declared events and artifacts, nothing else."""

    def __init__(self, log, parser: Parser):
        self._log, self._parser = log, parser

    @property
    def trace(self) -> list[dict]:
        return [e for e in self._log.trace if e["event"] in self._parser.trace_events]

    def events(self, event: str) -> list[dict]:
        if event not in self._parser.trace_events:
            raise UndeclaredInput(f"{self._parser.name} reads trace event {event!r} without declaring it")
        return self._log.events(event)

    def artifact_texts(self, name: str) -> list[dict]:
        if name not in self._parser.artifacts:
            raise UndeclaredInput(f"{self._parser.name} reads artifact {name!r} without declaring it")
        return self._log.artifact_texts(name)

    def malformed(self, kind: str, reason: str, text="") -> None:
        self._log.note_malformed(kind, self._parser.name, reason, text)


def read(log, name: str, **context):
    """Run the registered reader ``name`` over a log (LogTap or LoadedLog)."""
    parser = PARSERS.get(name)
    if parser is None:
        # Readers register when the module that declares them is imported (engine.stages.*): a missing one is
        # a missing import, which the bare KeyError did not say.
        known = sorted(PARSERS)
        raise KeyError(
            f"no log reader {name!r} is registered: import the module that declares it (registered: {known})"
        )
    return parser.read(_DeclaredView(log, parser), **context)


def current_compile_id() -> str | None:
    """The compile id (with the attempt, as the structured trace spells it) of the compile running now."""
    import torch

    context = torch._guards.CompileContext
    try:
        trace_id = context.current_trace_id() if hasattr(context, "current_trace_id") else None
        if trace_id is not None:
            return str(trace_id)
        cid = context.current_compile_id()
    except Exception:
        return None
    return str(cid) if cid is not None else None


class _Handler(logging.Handler):
    def __init__(self, sink, on_error):
        super().__init__(logging.DEBUG)
        self.sink, self.on_error = sink, on_error

    def emit(self, record):
        try:
            self.sink(record)
        except Exception as exc:  # a broken record must never break the user's compile: count it instead
            try:
                self.on_error(record, exc)
            except Exception:
                pass


class _Malformed:
    """Records that could not be read, counted by kind with a few samples (shared by LogTap and LoadedLog)."""

    SAMPLES = 20

    def _init_malformed(self):
        self.malformed_counts: Counter = Counter()
        self.malformed_samples: list[dict] = []

    def note_malformed(self, kind: str, source: str, reason: str, text="") -> None:
        self.malformed_counts[kind] += 1
        if len(self.malformed_samples) < self.SAMPLES:
            self.malformed_samples.append(
                {"kind": kind, "source": source, "reason": str(reason)[:300], "text": str(text or "")[:300]}
            )

    def events(self, event: str) -> list[dict]:
        return [e for e in self.trace if e["event"] == event]

    def artifact_texts(self, name: str) -> list[dict]:
        return self.artifacts.get(name, [])

    def summary(self) -> dict:
        """The report's ``logs`` section."""
        records = Counter(e["event"] for e in self.trace)
        records.update({name: len(texts) for name, texts in self.artifacts.items()})
        return {
            "artifacts_enabled": list(getattr(self, "enabled", [])),
            "artifacts_unknown": list(getattr(self, "missing", [])),
            "parsers": [
                {"name": p.name, "trace_events": list(p.trace_events), "artifacts": list(p.artifacts)}
                for p in PARSERS.values()
            ],
            "records": dict(sorted(records.items())),
            "malformed": {
                "count": sum(self.malformed_counts.values()),
                "by_kind": dict(self.malformed_counts),
                "samples": self.malformed_samples,
            },
        }


class LogTap(_Malformed):
    def __init__(self, on_record=lambda: None):
        """``on_record()``: called on each record heard (the job's progress: engine/stall.py)."""
        self.on_record = on_record
        self.trace: list[dict] = []  # {"event", "compile_id", "metadata", "payload", "data"?, **tags}
        self.artifacts: dict[str, list[dict]] = defaultdict(list)  # name -> [{"compile_id", "text"}]
        self.enabled: list[str] = []
        self.missing: list[str] = []
        self._init_malformed()
        self._handler_trace = _Handler(self._on_trace, self._on_broken_record)
        self._handler_artifact = _Handler(self._on_artifact, self._on_broken_record)
        # Extra fields stamped on each record, e.g. {"graph_kind": "backward"} while Inductor compiles the backward,
        # {"call_index": 1} while the model runs on example_inputs[1]: records carry no such context of their own.
        self.tags: dict = {}

    def install(self, artifacts=None) -> None:
        """Tap the trace and switch on ``artifacts`` (default: those the registered readers declare)."""
        import torch

        trace_logger = logging.getLogger("torch.__trace")
        trace_logger.setLevel(logging.DEBUG)
        trace_logger.addHandler(self._handler_trace)
        trace_logger.propagate = False
        for name in artifacts_read() if artifacts is None else artifacts:
            try:  # set_logs rejects unknown names, so each is tried on its own
                torch._logging.set_logs(**{n: True for n in self.enabled + [name]})
                self.enabled.append(name)
            except Exception:
                self.missing.append(name)
        torch._logging.set_logs(**{n: True for n in self.enabled})
        self._take_over_handlers()

    def _take_over_handlers(self) -> None:
        """Replace torch's stderr handlers with ours (set_logs puts its own back every time it is called)."""
        from torch._logging._internal import log_registry

        for qname in log_registry.get_log_qnames():
            logger = logging.getLogger(qname)
            for h in list(logger.handlers):
                logger.removeHandler(h)
            logger.addHandler(self._handler_artifact)
            logger.propagate = False

    def uninstall_trace(self) -> None:
        """Detach from the structured trace and switch off every artifact no reader needs after the recorded compile
        (later compiles would pay for them); the CUDA-graph reasons stay tapped."""
        import torch

        logging.getLogger("torch.__trace").removeHandler(self._handler_trace)
        keep = [name for name in artifacts_read(after_capture_only=True) if name in self.enabled]
        try:
            torch._logging.set_logs(**{n: True for n in keep})
            self._take_over_handlers()
        except Exception as exc:
            self.note_malformed("set_logs", "logtap", f"could not narrow the logs: {exc}")

    def uninstall(self) -> None:
        """Detach from the trace and every log, and put torch's logging back as a plain script has it (a measuring
        process, engine/warm.py, times its rounds with nothing of ours attached)."""
        import torch
        from torch._logging._internal import log_registry

        logging.getLogger("torch.__trace").removeHandler(self._handler_trace)
        for qname in log_registry.get_log_qnames():
            logging.getLogger(qname).removeHandler(self._handler_artifact)
        torch._logging.set_logs()  # torch's defaults: its own handlers, no artifact
        self.enabled = []

    def _on_trace(self, record) -> None:
        self.on_record()
        meta = getattr(record, "metadata", {}) or {}
        event = trace_event(meta, getattr(record, "payload", None), self)
        event.update(self.tags)
        self.trace.append(event)

    def _on_artifact(self, record) -> None:
        self.on_record()
        name = record.name.rpartition(".__")[2] if ".__" in record.name else "log:" + record.name
        try:
            text = record.getMessage()
        except Exception as exc:  # bad %-formatting in a torch log call: keep the raw message, count it
            self.note_malformed("log_format", name, f"{type(exc).__name__}: {exc}", record.msg)
            text = str(record.msg)
        self.artifacts[name].append({"compile_id": current_compile_id(), "text": text, **self.tags})

    def _on_broken_record(self, record, exc) -> None:
        self.note_malformed("handler_error", getattr(record, "name", "?"), f"{type(exc).__name__}: {exc}")

    def clear(self) -> None:
        self.trace.clear()
        self.artifacts.clear()


# --- the same data read back from files a run with TORCH_TRACE / TORCH_LOGS_OUT wrote (the format tlparse reads) ---

_GLOG = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]+\] ")
_LOG_TAGS = re.compile(r"^(?:\[(?P<cid>[^\]]+)\] )?\[__(?P<name>\w+)\] ?(?P<text>.*)$")


class LoadedLog(_Malformed):
    """A log read back from files (TORCH_TRACE's structured trace, TORCH_LOGS_OUT's text), read like a LogTap."""

    def __init__(self, trace=None, artifacts=None):
        self.trace: list[dict] = list(trace or [])
        self.artifacts: dict[str, list[dict]] = defaultdict(list, artifacts or {})
        self._init_malformed()

    @classmethod
    def load(cls, trace_path: str | None = None, logs_path: str | None = None) -> LoadedLog:
        log = cls()
        if trace_path:
            log.trace = load_trace_log(trace_path, log)
        if logs_path:
            log.artifacts.update(load_torch_logs(logs_path, log))
        return log


def load_trace_log(path: str, log: _Malformed | None = None) -> list[dict]:
    """A structured-trace file -> events shaped like LogTap.trace (JSON header line, tab-indented payload); lines
    that are neither are counted as malformed in ``log``."""
    log = log if log is not None else LoadedLog()
    records: list[tuple[dict, list[str]]] = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if line.startswith("\t"):
                if records:
                    records[-1][1].append(line[1:])
                else:
                    log.note_malformed("trace_line", path, f"line {number}: payload before any record", line)
                continue
            header = _GLOG.sub("", line, count=1)
            try:
                meta = json.loads(header)
                if not isinstance(meta, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                if line.strip():
                    log.note_malformed("trace_line", path, f"line {number}: {exc}", line)
                continue
            records.append((meta, []))
    return [trace_event(meta, "".join(lines) or None, log) for meta, lines in records]


def load_torch_logs(path: str, log: _Malformed | None = None) -> dict[str, list[dict]]:
    """TORCH_LOGS text -> {artifact: [{"compile_id", "text"}]}; consecutive lines of one record are joined. A line
    without torch's log prefix is counted as malformed in ``log``; prefixed lines of other loggers are skipped."""
    log = log if log is not None else LoadedLog()
    artifacts: dict[str, list[dict]] = defaultdict(list)
    last_key = None
    with open(path) as f:
        for number, line in enumerate(f, 1):
            prefix = _GLOG.match(line)
            if not prefix:
                if line.strip():
                    log.note_malformed("log_line", path, f"line {number}: no log prefix", line)
                continue
            tags = _LOG_TAGS.match(line[prefix.end() :].rstrip("\n"))
            if not tags:
                continue
            key = (prefix.group(0), tags["name"], tags["cid"])
            if key == last_key:
                artifacts[tags["name"]][-1]["text"] += "\n" + tags["text"]
            else:
                artifacts[tags["name"]].append({"compile_id": canonical(tags["cid"]), "text": tags["text"]})
            last_key = key
    return artifacts
