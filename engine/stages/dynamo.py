"""TorchDynamo: captured FX graphs, guards, graph breaks, recompiles and bytecode, per compile id.

Sources: the capture backend hands every Dynamo GraphModule to ``on_graph`` (structured nodes, taken while
node.meta is alive); the structured trace gives readable graph code, graph-break reasons and C++ guards; the
"recompiles" artifact gives recompile reasons; ``register_bytecode_hook`` gives original and transformed
bytecode, decompiled by depyf where it can.
"""
from __future__ import annotations

import dis
import re

import torch

from contract.userfile import is_user_file
from engine.fxgraph import op_histogram, serialize_graph
from engine.logtap import current_compile_id
from engine.stages.base import Collector

_BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+?):(?P<line>\d+)")
_RECOMPILE_LINE = re.compile(r"^\s*-?\s*(?P<reason>\d+/\d+: .+)$")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n\s*(?P<code>[^\n]*)')


class DynamoCollector(Collector):
    section = "dynamo"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.graphs: list[dict] = []
        self.graph_modules: list[tuple] = []  # (compile_id, gm, example_inputs) for later analyses (functionalization)
        self.bytecode: list[dict] = []

    def install(self) -> None:
        with self.ctx.guard("dynamo.bytecode"):
            torch._dynamo.convert_frame.register_bytecode_hook(self._on_bytecode)

    def on_graph(self, gm: torch.fx.GraphModule, example_inputs) -> None:
        if not self.ctx.recording:
            return
        compile_id = current_compile_id()
        graph = serialize_graph(gm, self.ctx.user_file, compile_id=compile_id)
        graph["ops"] = op_histogram(graph["nodes"])
        self.graphs.append(graph)
        self.graph_modules.append((compile_id, gm, example_inputs))

    def _on_bytecode(self, code, new_code) -> None:
        if not self.ctx.recording:
            return
        entry = {"compile_id": current_compile_id(), "name": code.co_name, "file": code.co_filename,
                 "line": code.co_firstlineno, "original": _dis(code), "transformed": _dis(new_code),
                 "decompiled": None}
        try:
            import depyf
        except ImportError:
            self.ctx.mark_unavailable("dynamo.decompiled_bytecode", "depyf is not installed")
        else:
            try:
                entry["decompiled"] = depyf.decompile(new_code)
            except Exception as exc:  # depyf does not know every bytecode of every Python version
                entry["decompile_error"] = f"{type(exc).__name__}: {exc}"[:300]
        self.bytecode.append(entry)

    def collect(self, report: dict) -> None:
        tap = self.ctx.tap
        section = report[self.section]
        readable = {e["compile_id"]: e["payload"] for e in tap.events("dynamo_output_graph") if e["payload"]}
        for graph in self.graphs:
            graph["code"] = readable.get(graph["compile_id"], graph["code"])
        section["graphs"] = self.graphs
        section["graph_breaks"] = parse_graph_breaks(tap.events("artifact:dynamo_graph_break_reason"),
                                                     self.ctx.user_file)
        section["guards"] = [{"compile_id": e["compile_id"], "text": e["payload"]}
                             for e in tap.events("dynamo_cpp_guards_str") if e["payload"]]
        if not section["guards"]:  # older torch: only the TORCH_LOGS "guards" artifact
            section["guards"] = [{"compile_id": a["compile_id"], "text": a["text"]}
                                 for a in tap.artifact_texts("guards") if "GUARDS" in a["text"] or "+-" in a["text"]]
        section["recompiles"] = parse_recompiles(tap.events("artifact:recompile_reasons"),
                                                 tap.artifact_texts("recompiles"))
        section["bytecode"] = self.bytecode
        section["summary"] = {
            "graph_count": len(self.graphs),
            "graph_break_count": sum(b["count"] for b in section["graph_breaks"]),
            "unique_graph_breaks": len(section["graph_breaks"]),
            "recompile_count": len(section["recompiles"]),
            "op_count": sum(sum(g["ops"].values()) for g in self.graphs),
        }
        if not tap.events("artifact:dynamo_graph_break_reason") and tap.artifact_texts("graph_breaks"):
            self.ctx.mark_unavailable("dynamo.graph_break_reason_trace",
                                      "the structured trace had no graph-break artifact on this torch")


def _dis(code) -> str:
    try:
        return dis.Bytecode(code).dis()
    except Exception as exc:
        return f"<dis failed: {exc}>"


def parse_graph_breaks(events: list[dict], user_file: str) -> list[dict]:
    """Graph-break artifacts -> [{reason, explanation, hints, file, line, code, count, compile_ids, user_stack}],
    deduplicated by (file, line, reason)."""
    merged: dict[tuple, dict] = {}
    for e in events:
        text = e["payload"] or ""
        where = _BREAK_AT.search(text)
        title, explanation, hints, link = _break_details(text)
        user_stack = [
            {"file": m["file"], "line": int(m["line"]), "func": m["func"], "code": m["code"].strip()}
            for m in _FRAME.finditer(text.split("User code traceback:", 1)[-1].split("\nTraceback", 1)[0])
        ]
        in_user = [f for f in user_stack if is_user_file(f["file"], user_file)]
        frame = in_user[-1] if in_user else (user_stack[-1] if user_stack else {})
        file = where["file"] if where else frame.get("file")
        line = int(where["line"]) if where else frame.get("line")
        key = (file, line, title)
        if key in merged:
            merged[key]["count"] += 1
            merged[key]["compile_ids"].append(e["compile_id"])
            continue
        merged[key] = {"reason": title, "explanation": explanation, "hints": hints, "doc_url": link,
                       "file": file, "line": line, "code": frame.get("code"), "count": 1,
                       "compile_ids": [e["compile_id"]], "user_stack": in_user or user_stack, "text": text[:6000]}
    return list(merged.values())


def _break_details(text: str) -> tuple[str, str, list[str], str | None]:
    body = text.split("Graph Break Reason:", 1)[-1].split("User code traceback:", 1)[0]
    lines = [ln.strip() for ln in body.splitlines()]
    explanation = next((ln.removeprefix("Explanation:").strip() for ln in lines if ln.startswith("Explanation:")), "")
    hints = [ln.removeprefix("Hint:").strip() for ln in lines if ln.startswith("Hint:")]
    link = next((ln.rsplit(" ", 1)[-1] for ln in lines if "please visit:" in ln), None)
    # The headline is the first line after the generic "Encountered graph break ..." preamble.
    candidates = [ln for ln in lines if ln and not ln.startswith(("Encountered graph break", "Explanation:",
                                                                   "Hint:", "Developer debug", "For more details"))]
    title = candidates[0] if candidates else (lines[0] if lines else "graph break")
    return title, explanation, hints, link


def parse_recompiles(trace_events: list[dict], log_records: list[dict]) -> list[dict]:
    """Recompile reasons, one entry per new compile id: [{compile_id, reasons, reason, function}]."""
    out = []
    for e in trace_events:
        reasons = [r.strip() for r in (e["payload"] or "").splitlines() if r.strip()]
        out.append({"compile_id": e["compile_id"], "reasons": reasons, "reason": "; ".join(reasons)})
    functions = [re.search(r"Recompiling function (\S+) in (\S+)", r["text"]) for r in log_records]
    for entry, match in zip(out, [m for m in functions if m]):
        entry["function"], entry["where"] = match[1], match[2]
    if not out:  # torch without the recompile_reasons artifact: parse the log text
        for r in log_records:
            reasons = [m["reason"] for m in map(_RECOMPILE_LINE.match, r["text"].splitlines()) if m]
            if reasons:
                out.append({"compile_id": r["compile_id"], "reasons": reasons, "reason": "; ".join(reasons)})
    return out
