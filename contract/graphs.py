"""The report's graphs as every tier addresses them: graph ids, lookup, and the compact payload the viewer reads.

A graph is addressed by a short id that is also its URL fragment (``#graph-aot-1``, a node ``#graph-aot-1/addmm``)
and the key it is stored under:

    dynamo-I          dynamo.graphs[I]
    aot-I             aot.graphs[I] (joint, forward, backward, inference)
    func-I-before     aot.functionalization[I].before (mutations marked); func-I-after the functionalized graph
    postgrad-I        inductor.post_grad_graphs[I] (nodes marked with their kernel)
    backend-I         debug.backend_graphs[I] (the graph a user's own backend received; Runtime tab)

The pages get the same grammar from static/js/contract.js (generated from here by ``python -m contract.docs``).
Storage builds each graph's payload (graph_payload) and the sections' outlines (section_outline, graphs without
nodes) once, when a report is stored; the pages list outlines and fetch one payload when a viewer is shown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from contract.compile_id import compile_key

# prefix -> (report section, key of the graph list in it, report tab that shows it)
PREFIXES = {
    "dynamo": ("dynamo", "graphs", "dynamo"),
    "aot": ("aot", "graphs", "aot"),
    "func": ("aot", "functionalization", "aot"),
    "postgrad": ("inductor", "post_grad_graphs", "inductor"),
    "backend": ("debug", "backend_graphs", "runtime"),
}
FUNCTIONALIZATION_SIDES = ("before", "after")
# One pattern for Python and (with its named groups rewritten) JavaScript.
PATTERN = r"^(?:(?P<prefix>dynamo|aot|postgrad|backend)-(?P<index>\d+)|(?P<func>func)-(?P<func_index>\d+)-(?P<side>before|after))$"
_GRAPH_ID = re.compile(PATTERN)


@dataclass(frozen=True)
class GraphId:
    prefix: str  # a key of PREFIXES
    index: int
    side: str | None = None  # "before"/"after" for func, else None

    def __post_init__(self):
        if (
            self.prefix not in PREFIXES
            or self.index < 0
            or (self.side is None) == (self.prefix == "func")
            or self.side not in (None, *FUNCTIONALIZATION_SIDES)
        ):
            raise ValueError(f"not a graph id: {self.prefix!r}, {self.index!r}, {self.side!r}")

    def __str__(self) -> str:
        return f"{self.prefix}-{self.index}" + (f"-{self.side}" if self.side else "")

    @classmethod
    def parse(cls, text: str) -> GraphId | None:
        match = _GRAPH_ID.match(text) if isinstance(text, str) else None
        if not match:
            return None
        if match["func"]:
            return cls("func", int(match["func_index"]), match["side"])
        return cls(match["prefix"], int(match["index"]))

    @property
    def section(self) -> str:
        """The report section that holds this graph."""
        return PREFIXES[self.prefix][0]

    @property
    def tab(self) -> str:
        """The report tab that draws this graph."""
        return PREFIXES[self.prefix][2]

    def find(self, section: dict) -> dict | None:
        """This graph in its section (report[self.section]), or None if the section has no such graph."""
        try:
            entry = section[PREFIXES[self.prefix][1]][self.index]
            return entry[self.side] if self.side else entry
        except (IndexError, KeyError, TypeError):
            return None


def dynamo_graph(index: int) -> str:
    return str(GraphId("dynamo", index))


def aot_graph(index: int) -> str:
    return str(GraphId("aot", index))


def post_grad_graph(index: int) -> str:
    return str(GraphId("postgrad", index))


def backend_graph(index: int) -> str:
    return str(GraphId("backend", index))


def functionalization_graph(index: int, side: str) -> str:
    return str(GraphId("func", index, side))


def javascript_pattern() -> str:
    """PATTERN for a JavaScript RegExp (named groups are ``(?<name>...)`` there)."""
    return PATTERN.replace("(?P<", "(?<")


def graph_section(graph_id: str) -> str | None:
    parsed = GraphId.parse(graph_id)
    return parsed.section if parsed else None


def find_graph(section: dict, graph_id: str) -> dict | None:
    """The graph with this id in its stage's section, or None."""
    parsed = GraphId.parse(graph_id)
    return parsed.find(section) if parsed else None


def graph_title(graph_id: str, graph: dict) -> str:
    parsed = GraphId.parse(graph_id)
    stage = parsed.prefix if parsed else None
    compile_id, kind = graph.get("compile_id", "?"), graph.get("kind") or ""
    if stage == "dynamo":
        return f"Dynamo graph {compile_id}"
    if parsed is not None and parsed.prefix == "func":
        return f"{'Before' if parsed.side == 'before' else 'After'} functionalization {compile_id}"
    if stage == "postgrad":
        return f"Post-grad {kind} graph {compile_id}"
    if stage == "backend":
        return f"Graph your backend received, compile {compile_id}"
    return f"{kind.capitalize() or 'AOT'} graph {compile_id}"


def graphs_of_tab(tab: str, section: dict) -> list[dict]:
    """The graphs a stage tab shows, in report order: {id, title, graph} (nodes stay on the server until asked)."""
    ids = []
    if tab == "dynamo":
        ids = [dynamo_graph(i) for i in range(len(section.get("graphs") or []))]
    elif tab == "aot":
        ids = [aot_graph(i) for i in range(len(section.get("graphs") or []))]
    elif tab == "inductor":
        ids = [post_grad_graph(i) for i in range(len(section.get("post_grad_graphs") or []))]
    elif tab == "debug":  # the debug section's graphs, drawn on the Runtime tab
        ids = [backend_graph(i) for i in range(len(section.get("backend_graphs") or []))]
    return [
        {"id": gid, "graph": graph, "title": graph_title(gid, graph)}
        for gid in ids
        if (graph := find_graph(section, gid)) is not None
    ]


def graph_id_by_kind(aot: dict, compile_id: str, kind: str) -> str | None:
    """The id of the AOT graph of this compile id and kind (joint, forward, ...), if recorded."""
    key = compile_key(compile_id)
    return next(
        (
            aot_graph(i)
            for i, graph in enumerate(aot.get("graphs") or [])
            if compile_key(graph.get("compile_id")) == key and graph.get("kind") == kind
        ),
        None,
    )


def functionalization_graphs(aot: dict) -> list[dict]:
    """Per Dynamo graph: the before/after pair and the rewrites, for the AOT tab."""
    pairs = []
    for i, entry in enumerate(aot.get("functionalization") or []):
        sides = {
            side: {"id": graph_id, "graph": entry[side], "title": graph_title(graph_id, entry[side])}
            for side in FUNCTIONALIZATION_SIDES
            if isinstance(entry.get(side), dict)
            for graph_id in [functionalization_graph(i, side)]
        }
        pairs.append({"entry": entry, **sides})
    return pairs


# The node fields the viewer shows, each sent as a column of per-node indexes into its distinct values: a graph
# repeats a few ops, targets, dtypes, module stacks and source lines thousands of times, and arrays of small
# integers are several times smaller and faster for a browser to parse than one object per node.
NODE_COLUMNS = ("op", "target", "shape", "dtype", "file", "line", "code", "module_stack", "original_aten", "marks")


def graph_payload(graph_id: str, graph: dict) -> dict:
    """What the graph viewer needs, in columns (see NODE_COLUMNS): ``names``; ``arg_offsets``/``args``, the edges as
    node numbers (node i reads args[arg_offsets[i]:arg_offsets[i + 1]]; a name not in the graph is dropped); and
    ``columns[key] = {values, index}`` (node i's value is values[index[i]]). Plus the graph's Python code."""
    nodes = graph.get("nodes") or []
    number = {node.get("name"): i for i, node in enumerate(nodes)}
    arg_offsets, args = [0], list[int]()
    for node in nodes:
        args.extend(number[name] for name in node.get("args") or [] if name in number)
        arg_offsets.append(len(args))
    return {
        "id": graph_id,
        "title": graph_title(graph_id, graph),
        "kind": graph.get("kind"),
        "compile_id": graph.get("compile_id"),
        "code": graph.get("code") or "",
        "count": len(nodes),
        "names": [node.get("name") for node in nodes],
        "arg_offsets": arg_offsets,
        "args": args,
        "columns": {key: _dictionary_column([node.get(key) for node in nodes]) for key in NODE_COLUMNS},
    }


def _dictionary_column(values: list) -> dict:
    distinct: dict = {}
    column: dict[str, list] = {"values": [], "index": []}
    for value in values:
        # Lists and dicts (shapes, module stacks, marks) are not hashable; the type keeps True apart from 1.
        key = json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else (type(value), value)
        if key not in distinct:
            distinct[key] = len(column["values"])
            column["values"].append(value)
        column["index"].append(distinct[key])
    return column


def report_graphs(report: dict) -> list[tuple[str, dict]]:
    """Every graph of a report that has a viewer, as (graph id, graph)."""
    graphs = [
        (entry["id"], entry["graph"])
        for tab in ("dynamo", "aot", "inductor", "debug")  # each reads its section
        for entry in graphs_of_tab(tab, report.get(tab) or {})
    ]
    for pair in functionalization_graphs(report.get("aot") or {}):
        graphs += [(pair[side]["id"], pair[side]["graph"]) for side in ("before", "after") if side in pair]
    return graphs


def section_outline(section) -> dict | None:
    """A stage section as its tab reads it: every graph without its nodes (the viewer fetches those from the
    graph endpoint) and every kernel's device code without its IR texts (its fold fetches them: megabytes for a
    model of many kernels), so drawing a tab never parses either. None when the section holds neither."""
    if not isinstance(section, dict):
        return None
    outline = {}
    if isinstance(section.get("kernels"), list) and any(
        isinstance(k, dict) and k.get("device_code") for k in section["kernels"]
    ):
        outline["kernels"] = [_without_ir_texts(kernel) for kernel in section["kernels"]]
    for key in ("graphs", "post_grad_graphs", "backend_graphs"):
        if isinstance(section.get(key), list):
            outline[key] = [_without_nodes(graph) for graph in section[key]]
    if isinstance(section.get("functionalization"), list):
        outline["functionalization"] = [
            {**entry, **{side: _without_nodes(entry[side]) for side in ("before", "after") if side in entry}}
            if isinstance(entry, dict)
            else entry
            for entry in section["functionalization"]
        ]
    return {**section, **outline} if outline else None


def _without_ir_texts(kernel):
    code = kernel.get("device_code") if isinstance(kernel, dict) else None
    if not isinstance(code, dict) or not isinstance(code.get("stages"), list):
        return kernel
    stages = [{**stage, "text": "", "lines": []} if isinstance(stage, dict) else stage for stage in code["stages"]]
    return {**kernel, "device_code": {**code, "stages": stages}}


def _without_nodes(graph):
    if not isinstance(graph, dict) or "nodes" not in graph:
        return graph
    outline = {key: value for key, value in graph.items() if key != "nodes"}
    outline["num_nodes"] = graph.get("num_nodes") or len(graph["nodes"] or [])
    return outline
