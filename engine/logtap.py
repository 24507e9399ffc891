"""One tap on torch's logs: the structured trace and the TORCH_LOGS artifacts, kept in memory per compile id.

torch.compile reports most of what it does through two channels (see ../shared/notes/capture-mechanisms.md):
- the structured trace (logger "torch.__trace"): records with ``metadata`` (event key, frame_id,
  frame_compile_id, attempt) and a ``payload``; emitted whenever the logger has a handler;
- the TORCH_LOGS artifacts (fusion, ir_pre_fusion, output_code, ...): records on loggers "<module>.__<name>",
  enabled by torch._logging.set_logs. We replace torch's stderr handler with ours, so nothing reaches the user's
  output, and attribute each record to the compile id active when it was logged.
"""
from __future__ import annotations

import json
import logging
import re
from collections import defaultdict

import torch

# The TORCH_LOGS artifacts the stages read. set_logs rejects unknown names, so each is enabled on its own.
ARTIFACTS = ("fusion", "ir_pre_fusion", "ir_post_fusion", "schedule", "output_code", "graph_breaks", "guards",
             "recompiles", "aot_graphs", "perf_hints", "cudagraphs", "post_grad_graphs", "inductor_metrics")


def current_compile_id() -> str | None:
    try:
        cid = torch._guards.CompileContext.current_compile_id()
    except Exception:
        return None
    return str(cid) if cid is not None else None


def _trace_compile_id(meta: dict) -> str | None:
    if meta.get("frame_id") is None:
        return None
    cid = f"{meta['frame_id']}/{meta.get('frame_compile_id', 0)}"
    return cid + (f"_{meta['attempt']}" if meta.get("attempt") else "")


class _Handler(logging.Handler):
    def __init__(self, sink):
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record):
        try:
            self.sink(record)
        except Exception:  # a broken record must never break the user's compile
            pass


class LogTap:
    def __init__(self):
        self.trace: list[dict] = []  # {"event", "compile_id", "metadata", "payload"}
        self.artifacts: dict[str, list[dict]] = defaultdict(list)  # name -> [{"compile_id", "text"}]
        self.enabled: list[str] = []
        self.missing: list[str] = []
        self._handler_trace = _Handler(self._on_trace)
        self._handler_artifact = _Handler(self._on_artifact)
        # Extra fields stamped on each artifact record, e.g. {"graph_kind": "backward"} while Inductor compiles
        # the backward: TORCH_LOGS records carry no such context of their own.
        self.tags: dict = {}

    def install(self) -> None:
        trace_logger = logging.getLogger("torch.__trace")
        trace_logger.setLevel(logging.DEBUG)
        trace_logger.addHandler(self._handler_trace)
        trace_logger.propagate = False
        for name in ARTIFACTS:
            try:
                torch._logging.set_logs(**{n: True for n in self.enabled + [name]})
                self.enabled.append(name)
            except Exception:
                self.missing.append(name)
        torch._logging.set_logs(**{n: True for n in self.enabled})
        from torch._logging._internal import log_registry

        for qname in log_registry.get_log_qnames():
            logger = logging.getLogger(qname)
            for h in list(logger.handlers):
                logger.removeHandler(h)
            logger.addHandler(self._handler_artifact)
            logger.propagate = False

    def uninstall_trace(self) -> None:
        """Detach from the structured trace; the TORCH_LOGS artifacts (CUDA-graph reasons) stay tapped."""
        logging.getLogger("torch.__trace").removeHandler(self._handler_trace)

    def _on_trace(self, record) -> None:
        meta = getattr(record, "metadata", {}) or {}
        keys = [k for k in meta if k not in ("frame_id", "frame_compile_id", "attempt", "has_payload")]
        event = keys[0] if keys else "unknown"
        if event == "artifact":
            event = "artifact:" + meta["artifact"].get("name", "")
        self.trace.append({"event": event, "compile_id": _trace_compile_id(meta), "metadata": meta.get(keys[0]) if
                           keys else None, "payload": getattr(record, "payload", None)})

    def _on_artifact(self, record) -> None:
        name = record.name.rpartition(".__")[2] if ".__" in record.name else "log:" + record.name
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        self.artifacts[name].append({"compile_id": current_compile_id(), "text": text, **self.tags})

    def events(self, event: str) -> list[dict]:
        return [e for e in self.trace if e["event"] == event]

    def artifact_texts(self, name: str) -> list[dict]:
        return self.artifacts.get(name, [])

    def clear(self) -> None:
        self.trace.clear()
        self.artifacts.clear()


# --- the same data read back from files a run with TORCH_TRACE / TORCH_LOGS_OUT wrote (the format tlparse reads) ---

_GLOG = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]+\] ")
_LOG_TAGS = re.compile(r"^(?:\[(?P<cid>[^\]]+)\] )?\[__(?P<name>\w+)\] ?(?P<text>.*)$")


def load_trace_log(path: str) -> list[dict]:
    """A structured-trace file -> events shaped like LogTap.trace (JSON header line, tab-indented payload)."""
    events, payload = [], None
    with open(path) as f:
        for line in f:
            if line.startswith("\t"):
                if payload is not None:
                    payload.append(line[1:])
                continue
            header = _GLOG.sub("", line, count=1)
            try:
                meta = json.loads(header)
            except ValueError:
                continue
            keys = [k for k in meta if k not in ("frame_id", "frame_compile_id", "attempt", "has_payload")]
            event = keys[0] if keys else "unknown"
            if event == "artifact":
                event = "artifact:" + meta["artifact"].get("name", "")
            payload = []
            events.append({"event": event, "compile_id": _trace_compile_id(meta),
                           "metadata": meta.get(keys[0]) if keys else None, "payload": payload})
    for e in events:
        e["payload"] = "".join(e["payload"]) or None
    return events


def load_torch_logs(path: str) -> dict[str, list[dict]]:
    """TORCH_LOGS text -> {artifact: [{"compile_id", "text"}]}; consecutive lines of one record are joined."""
    artifacts: dict[str, list[dict]] = defaultdict(list)
    last_key = None
    with open(path) as f:
        for line in f:
            prefix = _GLOG.match(line)
            if not prefix:
                continue
            tags = _LOG_TAGS.match(line[prefix.end():].rstrip("\n"))
            if not tags:
                continue
            key = (prefix.group(0), tags["name"], tags["cid"])
            if key == last_key:
                artifacts[tags["name"]][-1]["text"] += "\n" + tags["text"]
            else:
                artifacts[tags["name"]].append({"compile_id": tags["cid"], "text": tags["text"]})
            last_key = key
    return artifacts
