"""The AOTAutograd tab: forward and backward (or inference) graphs, the partition, functionalization and
decompositions. Reads the report's Aot model."""

from __future__ import annotations

from contract.compile_id import compile_key
from contract.graphs import aot_graph
from contract.report import Aot, Decomposition
from contract.vocab import CONFIGS


def graphs_heading(aot: Aot) -> str:
    """The graphs' heading by what they are: an inference job's graph is no forward/backward pair."""
    kinds = {graph.kind for graph in aot.graphs}
    if kinds and kinds <= {"inference"}:
        return "Inference graphs"
    if kinds and kinds <= {"forward", "backward", "joint"}:
        return "Forward and backward graphs"
    return "AOTAutograd graphs"


def graph_id_by_kind(aot: Aot, compile_id: str | None, kind: str) -> str | None:
    """The id of the AOT graph of this compile and kind (joint, forward, ...), if recorded."""
    key = compile_key(compile_id)
    return next(
        (
            aot_graph(i)
            for i, graph in enumerate(aot.graphs)
            if compile_key(graph.compile_id) == key and graph.kind == kind
        ),
        None,
    )


def no_decomposition_words(recorded_config: str | None) -> str:
    """Why a compile decomposed no op, by the backend that traced it."""
    backend = CONFIGS[recorded_config].backend if recorded_config in CONFIGS else None
    if backend == "aot_eager":
        return "No op was decomposed: aot_eager, the recorded config, applies no decomposition table (Inductor does)."
    if backend == "inductor":
        return "No op was decomposed: none of this graph's ATen ops is in Inductor's decomposition table."
    return "No op was decomposed."


def decomposition_chart(decomposition: Decomposition) -> dict | None:
    before, after = decomposition.histogram_before, decomposition.histogram_after
    backward = decomposition.histogram_after_backward
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
