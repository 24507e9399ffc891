"""What the report tabs draw, shaped from the report's section models (contract/report.py): one module per tab,
the template of each tab calls its module as ``view.*``; never imports torch.

overview (the story of the four stages, and the facts every page shares: counts and stage states), dynamo, aot,
inductor, runtime; generic: what every tab shares (the other fields, drawn generically). Graph ids, lookup and
stored graph payloads are the report's vocabulary: contract/graphs.py.

The pages read sections as stored, which storage validated and upgraded to the current schema version when it
stored them (contract.report.UPGRADES turns older shapes into the current one), so readers know one shape.
"""

from __future__ import annotations

from typing import get_type_hints

from pydantic import TypeAdapter

from contract.report import Report
from webapp.tabs import aot, dynamo, generic, inductor, runtime

# The module each stage tab's template calls as ``view``.
VIEWS = {"dynamo": dynamo, "aot": aot, "inductor": inductor, "runtime": runtime}
# The long parts of a tab drawn only when opened (templates/report/parts.html), by kind: the module that finds them.
PART_VIEWS = {
    "kernel": inductor,
    "devicecode": inductor,
    "fusion": inductor,
    "ir": inductor,
    "irnode": inductor,
    "guards": dynamo,
    "field": generic,
}
_SECTION_TYPES: dict[str, TypeAdapter] = {name: TypeAdapter(hint) for name, hint in get_type_hints(Report).items()}
# Where stored outlines (contract.graphs.section_outline) left a graph's nodes out: the viewer fetches them.
_GRAPH_LISTS = ("graphs", "post_grad_graphs", "backend_graphs")


def section_models(sections: dict) -> dict:
    """Stored sections (parsed JSON, graphs as outlines where the page loaded outlines) as the report's models:
    ``{"dynamo": Dynamo, "runtime": Runtime, "summary": Summary, ...}``. An outline's graphs get an empty node
    list (their ``num_nodes`` stays the graph's own)."""
    return {name: _SECTION_TYPES[name].validate_python(_with_node_lists(value)) for name, value in sections.items()}


def _with_node_lists(section):
    if not isinstance(section, dict):
        return section
    filled = {
        key: [{"nodes": [], **graph} for graph in section[key]]
        for key in _GRAPH_LISTS
        if isinstance(section.get(key), list)
    }
    if isinstance(section.get("functionalization"), list):
        filled["functionalization"] = [
            {**entry, **{side: {"nodes": [], **entry[side]} for side in ("before", "after")}}
            for entry in section["functionalization"]
        ]
    return {**section, **filled}


def find_part(section, kind: str, key: str) -> dict | None:
    """What one lazily drawn part of a tab shows (pages.part), by kind and key; None if there is no such part.
    ``section``: the tab's section model (generic parts read the stored dict)."""
    view = PART_VIEWS.get(kind)
    try:
        return view.find_part(section, kind, key) if view else None
    except (StopIteration, ValueError, IndexError):
        return None
