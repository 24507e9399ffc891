"""The report's counts: one name, one label and one meaning each, read by the CLI, the API and the pages alike.

The engine computes them once (engine/summary.py -> report["summary"]["counts"]); nobody else recounts.
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
