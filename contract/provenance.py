"""Provenance: each line of the user's file to the Dynamo nodes, ATen nodes and kernels behind it.

Computed once, when a report is stored (storage.runstore.store_report), one piece per line, so the page fetches
only the line the user selects: computed per request it cost seconds and a gigabyte of web memory for a
1,000,000-node graph. Each list is capped at MAX_PER_LINE entries with the total kept, so no piece can be huge.
"""

from __future__ import annotations

from collections import defaultdict

from contract.graphs import graph_title, graphs_of_tab
from contract.userfile import is_user_file

MAX_PER_LINE = 500  # nodes (or kernels) of one kind listed for one line; "totals" has the full counts
KINDS = ("dynamo", "aten", "kernels")


def empty_entry() -> dict:
    return {"dynamo": [], "aten": [], "kernels": [], "totals": {kind: 0 for kind in KINDS}}


def by_line(report: dict, filename: str) -> dict[int, dict]:
    """{line: {dynamo: [{graph, node, title}], aten: [...], kernels: [name], totals: {kind: count}}}; a line whose
    nodes reached a backend of the user's own (debug.backend_graphs) also has backend: [{graph, node, title}]."""
    lines: dict[int, dict] = defaultdict(empty_entry)
    dynamo, aot, inductor, debug = (_section(report, name) for name in ("dynamo", "aot", "inductor", "debug"))

    def add(line: int, kind: str, item) -> None:
        entry = lines[line]
        entry["totals"][kind] = entry["totals"].get(kind, 0) + 1
        if len(entry.setdefault(kind, [])) < MAX_PER_LINE:
            entry[kind].append(item)

    def collect(kind: str, graph_id: str, graph: dict):
        for node in graph.get("nodes") or []:  # the ops a line became (inputs are not what it computes)
            if (
                isinstance(node, dict)
                and str(node.get("op", "")).startswith("call_")
                and isinstance(node.get("line"), int)
                and is_user_file(node.get("file"), filename)
            ):
                add(
                    node["line"],
                    kind,
                    {"graph": graph_id, "node": node.get("name"), "title": graph_title(graph_id, graph)},
                )

    for entry in graphs_of_tab("dynamo", dynamo):
        collect("dynamo", entry["id"], entry["graph"])
    for tab, section in (("aot", aot), ("inductor", inductor)):
        for entry in graphs_of_tab(tab, section):
            collect("aten", entry["id"], entry["graph"])
    for entry in graphs_of_tab("debug", debug):  # the graphs the user's own backends received
        collect("backend", entry["id"], entry["graph"])
    for kernel in inductor.get("kernels") or []:
        if not isinstance(kernel, dict):
            continue
        for source_line in kernel.get("source_lines") or []:
            if (
                isinstance(source_line, dict)
                and isinstance(source_line.get("line"), int)
                and is_user_file(source_line.get("file"), filename)
                and kernel.get("name") not in lines[source_line["line"]]["kernels"]
            ):
                add(source_line["line"], "kernels", kernel.get("name"))
    return dict(sorted(lines.items()))


def _section(report: dict, name: str) -> dict:
    """A stage's section, or {} where the report holds none (an imported log's, a failed job's)."""
    section = report.get(name)
    return section if isinstance(section, dict) else {}
