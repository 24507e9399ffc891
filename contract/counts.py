"""The report's counts: one name, one label and one meaning each, read by the CLI, the API and the pages alike.

The engine computes them once, at the end of each job (engine/child.py: ``summarize`` -> report["summary"]); the
CLI, the API's run summary and the pages read report["summary"] and never recount. Storage calls the same function
only for a report stored before the engine wrote a summary (summary.counts null).
"""

from __future__ import annotations

# (key in summary.counts, label shown to people, what it counts)
COUNTS = (
    ("dynamo_graphs", "Dynamo graphs", "FX graphs Dynamo captured"),
    ("graph_breaks", "graph breaks", "graph breaks as they occurred"),
    ("unique_graph_breaks", "unique graph breaks", "distinct graph breaks (file, line, reason)"),
    ("recompiles", "recompiles", "compiles of a frame after its first"),
    ("guards", "guards", "guards over all compiled frames (torch's count per frame, summed)"),
    ("aot_graphs", "AOTAutograd graphs", "joint, forward, backward and inference graphs"),
    ("generated_kernels", "generated kernels", "kernels Inductor generated (definitions in the output code)"),
    ("library_calls", "library calls", "calls to library kernels (extern mm/addmm, ATen fallbacks)"),
)
COUNT_LABELS = {key: label for key, label, _ in COUNTS}


def summarize(report: dict) -> dict:
    """report["summary"] from a finished (or partial) report: pure Python over its sections, no torch."""
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
    return {
        "counts": counts,
        "kernel_names": [k.get("name") for k in kernels][:20],
        "library_call_names": dict(sorted(library.items(), key=lambda item: -item[1])),
    }
