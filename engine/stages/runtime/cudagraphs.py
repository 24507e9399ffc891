"""What CUDA graph trees did for each rung: used (recordings, re-recordings with torch's reasons) or skipped (why)."""

from __future__ import annotations

import logging
import re

import torch

from contract.vocab import CONFIGS
from engine import logtap

_CUDAGRAPH_LOGS = ("cudagraphs", "perf_hints")  # the artifacts where Inductor says why it skipped CUDA graphs
_RECORDING = re.compile(
    r"\] (?P<kind>Re-recording|Recording) function=(?P<func>\S+?),(?:.*?reason=(?P<reason>.*))?", re.S
)


class CudagraphWatch:
    """What CUDA graph trees did for one rung while it compiled and warmed up (the watch is entered then): Inductor's
    skip reasons (artifacts, counter) and the recordings and re-recordings, with torch's reasons, that
    cudagraph_trees logs at debug level (left at its level during the timed rounds, where it costs)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.messages: list[str] = []
        self.texts: list[str] = []
        self.skips = 0
        self.logger = logging.getLogger("torch._inductor.cudagraph_trees")
        self.handler = _ListHandler(self.messages)

    def __enter__(self):
        self.logs_before = {name: len(self.ctx.tap.artifact_texts(name)) for name in _CUDAGRAPH_LOGS}
        self.skips_before = _cudagraph_skips()
        self.level = self.logger.level
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)
        self.texts += [
            a["text"] for log in _CUDAGRAPH_LOGS for a in self.ctx.tap.artifact_texts(log)[self.logs_before[log] :]
        ]
        self.skips += _cudagraph_skips() - self.skips_before

    def status(self, device: str, config_name: str) -> dict:
        return cudagraph_status(device, config_name, self.texts, self.skips, self.messages)


class _ListHandler(logging.Handler):
    def __init__(self, sink):
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record):
        try:
            self.sink.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a log line we cannot format is not worth failing a job
            pass


def cudagraph_status(device: str, config_name: str, texts: list[str], skips: int, messages: list[str] = ()) -> dict:
    config = CONFIGS.get(config_name)  # a user backend's rung is no built-in config: no mode, no CUDA graphs
    if config is None or not config.cudagraphs:
        return {"status": "not_requested"}
    if device != "cuda":
        same_as = ' the same code as mode="default"' if config.mode == "reduce-overhead" else " without them"
        return {
            "status": "not_applicable",
            "reason": f'CUDA graphs exist only on CUDA devices: on the CPU mode="{config.mode}" runs{same_as}.',
        }
    recordings = [m for m in (_RECORDING.search(x) for x in messages) if m]
    rerecords = [m for m in recordings if m["kind"] == "Re-recording"]
    counts = {
        "recordings": sum(1 for m in recordings if m["kind"] == "Recording"),
        "rerecords": len(rerecords),
        "rerecord_reasons": list(dict.fromkeys((m["reason"] or "").strip()[:500] for m in rerecords))[:10],
    }
    reasons = [t.strip()[:1000] for t in texts if "skipping cudagraphs" in t.lower()]
    reasons += [m.strip()[:1000] for m in messages if "skipping cudagraph" in m.lower()]
    if reasons or skips:
        return {
            "status": "skipped",
            **counts,
            "reason": "; ".join(dict.fromkeys(reasons)) or f"{skips} cudagraph skip(s)",
        }
    reason = "the compiled graphs were recorded and replayed as CUDA graphs"
    if counts["rerecords"]:
        reason += f"; {counts['rerecords']} re-recorded: " + "; ".join(counts["rerecord_reasons"][:3])
    return {"status": "used", "reason": reason, **counts}


def _cudagraph_skips() -> int:
    try:
        return int(torch._dynamo.utils.counters["inductor"]["cudagraph_skips"])
    except Exception:
        return 0


# The benchmark ladder reads these after the recorded compile (benchmark_config): they stay on for its compiles.
logtap.declare(
    "runtime.cudagraphs",
    logs=_CUDAGRAPH_LOGS,
    after_capture=True,
    read=lambda log: {name: log.artifact_texts(name) for name in _CUDAGRAPH_LOGS},
)
