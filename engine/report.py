"""The report: the one contract between engine, workers, storage and pages (documented in docs/report-schema.md).

Pure Python (no torch), so the parent process, the workers and tests can build and read reports.
Bump SCHEMA_VERSION on any change that removes or renames a field or changes its meaning; adding a field is
backwards compatible and keeps the version.
"""
from __future__ import annotations

import json
import os

from contract.vocab import CONFIGS, DEFAULT_CONFIGS, STAGES, Config, ConfigError, parse_configs

__all__ = ["CONFIGS", "DEFAULT_CONFIGS", "SCHEMA_VERSION", "STAGES", "Config", "ConfigError", "capture_config",
           "empty_report", "failed_report", "parse_configs", "read_report", "write_report"]

SCHEMA_VERSION = 1


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
        "stages": [],
        "dynamo": {"graphs": [], "graph_breaks": [], "guards": [], "recompiles": [], "bytecode": [], "summary": {}},
        "aot": {"graphs": [], "partitions": [], "functionalization": [], "decompositions": []},
        "inductor": {"post_grad_graphs": [], "ir_pre_fusion": [], "ir_post_fusion": [], "fusion_decisions": [],
                     "kernels": [], "output_code": [], "metrics": {}},
        "runtime": {"compile_seconds": {}, "compile_timeline": [], "benchmarks": [], "cudagraphs": {},
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
