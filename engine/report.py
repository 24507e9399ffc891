"""The report: the one contract between engine, workers, storage and pages (documented in docs/report-schema.md).

Pure Python (no torch), so the parent process, the workers and tests can build and read reports.
Bump SCHEMA_VERSION on any change that removes or renames a field or changes its meaning; adding a field is
backwards compatible and keeps the version.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Config:
    """One rung of the benchmark ladder: how the model is run."""

    name: str
    backend: str | None  # None: plain eager, no torch.compile
    mode: str | None = None
    label: str = ""


# The ladder, cheapest first. Plain eager is always measured: it is the baseline of every speedup and error.
CONFIGS = {
    c.name: c
    for c in (
        Config("eager", None, label="plain eager"),
        Config("backend_eager", "eager", label='backend="eager" (Dynamo only)'),
        Config("aot_eager", "aot_eager", label='backend="aot_eager" (Dynamo + AOTAutograd)'),
        Config("inductor_default", "inductor", "default", label='backend="inductor", mode="default"'),
        Config("inductor_reduce_overhead", "inductor", "reduce-overhead",
               label='backend="inductor", mode="reduce-overhead"'),
        Config("inductor_max_autotune", "inductor", "max-autotune", label='backend="inductor", mode="max-autotune"'),
    )
}
# max-autotune benchmarks many kernel variants: minutes on a CPU, so it is opt-in there.
DEFAULT_CONFIGS = {
    "cpu": ["eager", "backend_eager", "aot_eager", "inductor_default", "inductor_reduce_overhead"],
    "cuda": list(CONFIGS),
}

# Pipeline stages in the order a job passes through them; progress events and report["stages"] use these names.
STAGES = ("load", "eager", "dynamo", "aot", "inductor", "benchmark", "profile", "warm_compile", "report")


class ConfigError(ValueError):
    """A request the engine cannot run (unknown config or device); raised before any process starts."""


def parse_configs(names, device: str) -> list[str]:
    """Validate config names and return them in ladder order, plain eager always first."""
    if device not in DEFAULT_CONFIGS:
        raise ConfigError(f"unknown device {device!r}: choose one of {', '.join(DEFAULT_CONFIGS)}")
    if not names:
        return list(DEFAULT_CONFIGS[device])
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise ConfigError(f"unknown config {', '.join(map(repr, unknown))}: choose from {', '.join(CONFIGS)}")
    wanted = set(names) | {"eager"}
    return [n for n in CONFIGS if n in wanted]


def capture_config(configs: list[str]) -> Config:
    """The config whose compile is recorded in full: the deepest stage requested (inductor default if present)."""
    for name in ("inductor_default", "inductor_reduce_overhead", "inductor_max_autotune", "aot_eager",
                 "backend_eager"):
        if name in configs:
            return CONFIGS[name]
    return CONFIGS["backend_eager"]


def empty_report(request: dict) -> dict:
    """Every top-level key present from the start, so readers never need to test for a section."""
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "running",
        "failure": None,
        "request": request,
        "source": {"filename": request.get("filename", "model.py"), "code": request.get("code", "")},
        "environment": {},
        "caches": {},
        "summary": {"counts": {}, "kernel_names": [], "library_call_names": {}},
        "logs": {},
        "stages": [],
        "dynamo": {"graphs": [], "graph_breaks": [], "guards": [], "recompiles": [], "bytecode": [], "summary": {}},
        "aot": {"graphs": [], "partitions": [], "functionalization": [], "decompositions": []},
        "inductor": {"post_grad_graphs": [], "ir_pre_fusion": [], "ir_post_fusion": [], "fusion_decisions": [],
                     "kernels": [], "library_calls": [], "output_code": [], "metrics": {}},
        "runtime": {"compile_seconds": {}, "compile_cache": {}, "compile_timeline": [], "benchmarks": [], "cudagraphs": {},
                    "kernel_profile": [], "timing": {}},
        "user_output": {"stdout": "", "stderr": "", "truncated": False},
        "isolation": {},
        "unavailable": [],
        "errors": [],
    }


def failed_report(request: dict, stage: str, kind: str, message: str, *, file=None, line=None,
                  traceback_text: str = "", partial: dict | None = None) -> dict:
    """A report for a job that did not finish; keeps whatever the child managed to record (``partial``)."""
    report = partial if partial is not None else empty_report(request)
    report["status"] = "failed"
    report["failure"] = {"stage": stage, "kind": kind, "message": message, "file": file, "line": line,
                         "traceback": traceback_text}
    report["errors"].append({"stage": stage, "message": message})
    return report


def write_report(report: dict, path: str) -> None:
    """Write atomically: a reader never sees half a report."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, separators=(",", ":"), default=str)
    os.replace(tmp, path)


def read_report(path: str) -> dict:
    with open(path) as f:
        return json.load(f)
