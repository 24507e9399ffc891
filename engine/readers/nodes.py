"""Graph nodes as plain data, without torch: op names, the user's frames in a stack trace, op histograms.

Shared by the child's graph serializer (engine/fxgraph.py, which needs torch for live nodes) and the trace importer
(engine/traceimport.py, which reads printed graphs)."""

from __future__ import annotations

import re

from contract.userfile import is_user_file

FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n\s*(?P<code>[^\n]*)')


def short_op(target: str) -> str:
    """The op's plain name for histograms and kernel provenance: "aten.sin.default" -> "aten.sin"."""
    parts = target.split(".")
    if parts[0] in ("aten", "prims", "quantized", "inductor") and len(parts) >= 3:
        return ".".join(parts[:2])
    return target


def user_frames(stack_trace: str | None, user_file: str) -> list[dict]:
    """The frames of a stack trace that lie in the user's file, outermost first."""
    if not stack_trace:
        return []
    return [
        {"file": m["file"], "line": int(m["line"]), "func": m["func"], "code": m["code"].strip()}
        for m in FRAME.finditer(stack_trace)
        if is_user_file(m["file"], user_file)
    ]


def op_histogram(nodes: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in nodes:
        if n["op"] == "call_function" and n["target"] not in ("_operator.getitem",):
            key = short_op(n["target"])
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
