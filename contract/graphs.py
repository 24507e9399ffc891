"""The report's graphs as every tier addresses them: graph ids, lookup, and the compact payload the viewer reads.

A graph is addressed by a short id that is also its URL fragment (``#graph-aot-1``, a node ``#graph-aot-1/addmm``):

    dynamo-I          dynamo.graphs[I]
    aot-I             aot.graphs[I] (joint, forward, backward, inference)
    func-I-before     aot.functionalization[I].before (mutations marked); func-I-after the functionalized graph
    postgrad-I        inductor.post_grad_graphs[I] (nodes marked with their kernel)

Storage builds each graph's payload (graph_payload) and the sections' outlines (section_outline, graphs without
nodes) once, when a report is stored; the pages list outlines and fetch one payload when a viewer is shown.
"""
from __future__ import annotations

import json
import re

GRAPH_ID = re.compile(r"^(dynamo|aot|postgrad)-(\d+)$|^func-(\d+)-(before|after)$")
SECTION_OF_GRAPH = {"dynamo": "dynamo", "aot": "aot", "func": "aot", "postgrad": "inductor"}

def graph_section(graph_id: str) -> str | None:
    match = GRAPH_ID.match(graph_id)
    return SECTION_OF_GRAPH[graph_id.split("-", 1)[0]] if match else None


def find_graph(section: dict, graph_id: str) -> dict | None:
    """The graph with this id in its stage's section, or None."""
    match = GRAPH_ID.match(graph_id)
    if not match:
        return None
    stage, index, func_index, side = match.groups()
    try:
        if func_index is not None:
            return section.get("functionalization", [])[int(func_index)][side]
        key = {"dynamo": "graphs", "aot": "graphs", "postgrad": "post_grad_graphs"}[stage]
        return section.get(key, [])[int(index)]
    except (IndexError, KeyError, TypeError):
        return None


def graph_title(graph_id: str, graph: dict) -> str:
    stage = graph_id.split("-", 1)[0]
    compile_id, kind = graph.get("compile_id", "?"), graph.get("kind") or ""
    if stage == "dynamo":
        return f"Dynamo graph {compile_id}"
    if stage == "func":
        side = "before" if graph_id.endswith("before") else "after"
        return f"{'Before' if side == 'before' else 'After'} functionalization {compile_id}"
    if stage == "postgrad":
        return f"Post-grad {kind} graph {compile_id}"
    return f"{kind.capitalize() or 'AOT'} graph {compile_id}"


def graphs_of_tab(tab: str, section: dict) -> list[dict]:
    """The graphs a stage tab shows, in report order: {id, title, graph} (nodes stay on the server until asked)."""
    ids = []
    if tab == "dynamo":
        ids = [f"dynamo-{i}" for i in range(len(section.get("graphs") or []))]
    elif tab == "aot":
        ids = [f"aot-{i}" for i in range(len(section.get("graphs") or []))]
    elif tab == "inductor":
        ids = [f"postgrad-{i}" for i in range(len(section.get("post_grad_graphs") or []))]
    return [{"id": gid, "graph": graph, "title": graph_title(gid, graph)}
            for gid in ids if (graph := find_graph(section, gid)) is not None]


def graph_id_by_kind(aot: dict, compile_id: str, kind: str) -> str | None:
    """The id of the AOT graph of this compile id and kind (joint, forward, ...), if recorded."""
    return next((f"aot-{i}" for i, graph in enumerate(aot.get("graphs") or [])
                 if graph.get("compile_id") == compile_id and graph.get("kind") == kind), None)


def functionalization_graphs(aot: dict) -> list[dict]:
    """Per Dynamo graph: the before/after pair and the rewrites, for the AOT tab."""
    pairs = []
    for i, entry in enumerate(aot.get("functionalization") or []):
        sides = {side: {"id": f"func-{i}-{side}", "graph": entry[side], "title": graph_title(f"func-{i}-{side}",
                                                                                          entry[side])}
                 for side in ("before", "after") if isinstance(entry.get(side), dict)}
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
    arg_offsets, args = [0], []
    for node in nodes:
        args.extend(number[name] for name in node.get("args") or [] if name in number)
        arg_offsets.append(len(args))
    return {"id": graph_id, "title": graph_title(graph_id, graph), "kind": graph.get("kind"),
            "compile_id": graph.get("compile_id"), "code": graph.get("code") or "", "count": len(nodes),
            "names": [node.get("name") for node in nodes], "arg_offsets": arg_offsets, "args": args,
            "columns": {key: _dictionary_column([node.get(key) for node in nodes]) for key in NODE_COLUMNS}}


def _dictionary_column(values: list) -> dict:
    distinct: dict = {}
    column = {"values": [], "index": []}
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
    graphs = [(entry["id"], entry["graph"]) for tab in ("dynamo", "aot", "inductor")  # each tab reads its section
              for entry in graphs_of_tab(tab, report.get(tab) or {})]
    for pair in functionalization_graphs(report.get("aot") or {}):
        graphs += [(pair[side]["id"], pair[side]["graph"]) for side in ("before", "after") if side in pair]
    return graphs


def section_outline(section) -> dict | None:
    """A stage section as its tab reads it: every graph without its nodes (the viewer fetches those from the
    graph endpoint), so drawing a tab never parses thousands of nodes. None when the section holds no graph."""
    if not isinstance(section, dict):
        return None
    outline = {}
    for key in ("graphs", "post_grad_graphs"):
        if isinstance(section.get(key), list):
            outline[key] = [_without_nodes(graph) for graph in section[key]]
    if isinstance(section.get("functionalization"), list):
        outline["functionalization"] = [
            {**entry, **{side: _without_nodes(entry[side]) for side in ("before", "after") if side in entry}}
            if isinstance(entry, dict) else entry for entry in section["functionalization"]]
    return {**section, **outline} if outline else None


def _without_nodes(graph):
    if not isinstance(graph, dict) or "nodes" not in graph:
        return graph
    outline = {key: value for key, value in graph.items() if key != "nodes"}
    outline["num_nodes"] = graph.get("num_nodes") or len(graph["nodes"] or [])
    return outline
