"""The AOTAutograd tab: forward and backward graphs, the partition, functionalization and decompositions."""

from __future__ import annotations

# The template lists the tab's graphs and finds each compile's graph of a kind.
from contract.graphs import functionalization_graphs, graph_id_by_kind, graphs_of_tab  # noqa: F401


def decomposition_chart(decomposition: dict) -> dict | None:
    before, after = decomposition.get("histogram_before") or {}, decomposition.get("histogram_after") or {}
    backward = decomposition.get("histogram_after_backward") or {}
    ops = sorted(set(before) | set(after) | set(backward), key=lambda op: -(before.get(op, 0) + after.get(op, 0)))
    if not ops:
        return None
    traces = [
        {"type": "bar", "name": name, "x": ops, "y": [histogram.get(op, 0) for op in ops], "marker": {"color": color}}
        for name, histogram, color in (
            ("before decomposition", before, "#9aa5b1"),
            ("after (forward / inference)", after, "#b8460b"),
            ("after (backward)", backward, "#3f6ea5"),
        )
        if histogram
    ]
    return {
        "data": traces,
        "layout": {"barmode": "group", "yaxis": {"title": {"text": "nodes"}}, "xaxis": {"tickangle": -30}},
    }
