"""The report's one summary: every count, computed once at the end of the job (docs/report-schema.md, `summary`).

Pure Python over the finished report (no torch): the CLI, the API's run summary and the pages read
report["summary"] and never recount. Names, labels and meanings: contract/counts.py (COUNTS, in this order).
"""
from __future__ import annotations


def summarize(report: dict) -> dict:
    dynamo, aot, inductor = report.get("dynamo") or {}, report.get("aot") or {}, report.get("inductor") or {}
    breaks = dynamo.get("graph_breaks") or []
    guard_counts = [g.get("count") for g in dynamo.get("guards") or []]
    library: dict[str, int] = {}
    for call in inductor.get("library_calls") or []:
        library[call["name"]] = library.get(call["name"], 0) + call["count"]
    kernels = inductor.get("kernels") or []
    counts = {
        "dynamo_graphs": len(dynamo.get("graphs") or []),
        "graph_breaks": sum(b.get("count") or 1 for b in breaks),
        "unique_graph_breaks": len(breaks),
        "recompiles": len(dynamo.get("recompiles") or []),
        # torch's own count per frame; unknown (None) if torch reported none for some frame
        "guards": None if None in guard_counts else sum(guard_counts),
        "aot_graphs": len(aot.get("graphs") or []),
        "generated_kernels": len(kernels),
        "library_calls": sum(library.values()),
    }
    return {"counts": counts, "kernel_names": [k.get("name") for k in kernels][:20],
            "library_call_names": dict(sorted(library.items(), key=lambda item: -item[1]))}
