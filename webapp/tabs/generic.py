"""What every tab shares: its graphs as the viewer lists them, and the fields a tab has no purpose-built view for,
drawn by the generic renderer (webapp/render.py), small ones inline and big ones when opened."""

from __future__ import annotations

import json

from contract.compile_id import CompileId
from contract.counts import COUNT_LABELS
from contract.graphs import functionalization_graphs, graphs_of_tab

# A field the generic renderer draws is put in the page up to this size (its JSON); a bigger one is fetched
# when its fold is opened.
INLINE_FIELD_BYTES = 4000
# The graph lists of each stage section, as contract/graphs.py reads them.
GRAPH_LISTS = {"dynamo": "graphs", "aot": "graphs", "inductor": "post_grad_graphs", "debug": "backend_graphs"}


def graph_entries(tab: str, section) -> list[dict]:
    """The graphs a stage tab shows ({id, title, graph}), from its section model (graphs as outlines: the viewer
    fetches the nodes)."""
    key = GRAPH_LISTS[tab]
    return graphs_of_tab(tab, {key: [graph.model_dump(exclude={"nodes"}) for graph in getattr(section, key)]})


def functionalization_entries(aot) -> list[dict]:
    """The AOT section's functionalization pairs ({entry, before, after}) for the viewer, from its model."""
    pairs = [entry.model_dump(exclude={"before": {"nodes"}, "after": {"nodes"}}) for entry in aot.functionalization]
    return [
        {**pair, "entry": entry}
        for pair, entry in zip(functionalization_graphs({"functionalization": pairs}), aot.functionalization)
    ]


def compile_id_title(text: str | None) -> str:
    """A compile id in words, for its tooltip: "frame 0, compile 1 of it (a recompile), attempt 1"."""
    parsed = CompileId.parse(text)
    if parsed is None:
        return "compile id: which frame Dynamo compiled, and which compile of it"
    words = f"compile id {text}: frame {parsed.frame_id} (the {_ordinal(parsed.frame_id + 1)} frame Dynamo compiled), "
    words += (
        "its first compile"
        if parsed.frame_compile_id == 0
        else f"its compile {parsed.frame_compile_id}: a recompile after a guard failed"
    )
    if parsed.attempt:
        words += f"; attempt {parsed.attempt}: Dynamo restarted its analysis of the frame"
    return words


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def counted(counts, key: str) -> str:
    """One of the report's counts with its label: "3 graph breaks", "1 generated kernel" (contract/counts.py)."""
    n, label = getattr(counts, key), COUNT_LABELS[key]
    return f"{n} {label[:-1] if n == 1 and label.endswith('s') else label}"


def json_size(value) -> int:
    return len(json.dumps(value, default=str))


def size_words(size: int) -> str:
    return f"{size / 1024:.0f} KiB" if size >= 1024 else f"{size} bytes"


def find_part(section: dict, kind: str, key: str) -> dict | None:
    """field/KEY: one of a tab's other fields (the stored dict), drawn when its fold is opened."""
    if kind == "field":
        return {"key": key, "value": section[key]} if key in section else None
    return None
