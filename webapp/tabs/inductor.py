"""The Inductor tab: generated kernels by time with bandwidth and roofline share, fusion decisions grouped by reason
in words, the scheduler IR before and after fusion as one diff."""

from __future__ import annotations

import re

from contract import graphs
from contract.compile_id import compile_key
from contract.counts import COUNT_LABELS  # noqa: F401 - the tab's names for the report's counts
from contract.graphs import graphs_of_tab  # noqa: F401 - the template lists the tab's graphs

# Measured copy bandwidth (bytes/s) of each device we have a ceiling for, keyed by a substring of
# environment.device_name: the denominator of a kernel's "roofline share". H200: 4.27 TB/s, a device-to-device
# copy measured on the project's H200 (shared/notes/gpu-baseline.md). Reports since issue 9 carry the worker's own
# measured bandwidth (runtime.memory_bandwidth, CPU too), which takes precedence.
COPY_BANDWIDTH_CEILINGS = {"H200": 4.27e12}


def kernel_rows(inductor: dict, runtime: dict, device_name: str | None) -> list[dict]:
    """Generated kernels, slowest first (measured per step by the profiler), with bandwidth where bytes are known;
    the roofline share is against the worker's measured copy bandwidth (runtime.memory_bandwidth), else the
    device's known ceiling."""
    profile = {row.get("kernel"): row for row in runtime.get("kernel_profile") or [] if row.get("kernel")}
    measured_bandwidth = (runtime.get("memory_bandwidth") or {}).get("bytes_per_s")
    ceiling = (
        measured_bandwidth
        if isinstance(measured_bandwidth, (int, float)) and measured_bandwidth > 0
        else copy_bandwidth_ceiling(device_name)
    )
    kernels = inductor.get("kernels") or []
    # Inductor counts bytes for the whole compile (metrics.num_bytes_accessed); with one kernel they are its bytes.
    total_bytes = (inductor.get("metrics") or {}).get("num_bytes_accessed")
    rows = []
    for index, kernel in enumerate(kernels):
        measured = profile.get(kernel.get("name")) or {}
        total_ms, calls = measured.get("total_ms"), measured.get("calls") or 0
        bytes_accessed = kernel.get("bytes_accessed") or (total_bytes if len(kernels) == 1 else None)
        bandwidth = bytes_accessed * calls / (total_ms / 1e3) if bytes_accessed and total_ms and calls else None
        rows.append(
            {
                **kernel,
                "index": index,
                "bytes_accessed": bytes_accessed,
                "total_ms": total_ms,
                "calls": calls or None,
                "share": measured.get("share"),
                "bandwidth": bandwidth,
                "roofline_share": bandwidth / ceiling if bandwidth and ceiling else None,
            }
        )
    rows.sort(key=lambda row: (row["total_ms"] is None, -(row["total_ms"] or 0), row.get("name") or ""))
    return rows


def copy_bandwidth_ceiling(device_name: str | None) -> float | None:
    return next((value for key, value in COPY_BANDWIDTH_CEILINGS.items() if key in (device_name or "")), None)


def other_profiled_ops(runtime: dict, limit: int = 12) -> list[dict]:
    """What the step spent outside generated kernels (library calls such as aten::mm), by time."""
    rows = [row for row in runtime.get("kernel_profile") or [] if not row.get("generated")]
    return sorted(rows, key=lambda row: -(row.get("total_ms") or 0))[:limit]


def graph_id_of_kernel(inductor: dict, kernel: dict) -> str | None:
    """The post-grad graph a kernel was generated from (same compile id and forward/backward kind)."""
    key = compile_key(kernel.get("compile_id"))
    for i, graph in enumerate(inductor.get("post_grad_graphs") or []):
        if compile_key(graph.get("compile_id")) == key and graph.get("kind") == kernel.get("graph_kind"):
            return graphs.post_grad_graph(i)
    return None


# Inductor's reasons for not fusing two scheduler nodes (torch/_inductor/scheduler.py), in words.
FUSION_REASONS = {
    "intermediate nodes between node1 & node2": "another node has to run between them: fusing would make a cycle",
    "no shared data": "they share no buffer: fusing would save no memory traffic",
    "Nodes are too far away. Fusing them may increase peak memory.": "they are too far apart in the schedule: fusing may raise peak memory",
    "score_fusion_memory_threshold": "they share too little memory traffic for fusing to pay off",
    "exceeds max fusion": "the fused kernel would take more inputs than Inductor allows",
}


def fusion_groups(inductor: dict) -> list[dict]:
    """Fusion decisions per graph (compile id, forward/backward), grouped by what was decided and why, in words,
    most frequent first: {compile_id, kind, graph_id, fused, not_fused, groups: [{action, reason, words, count,
    decisions}]}. Each decision names its two scheduler nodes (opN) with the graph nodes and kernel of each."""
    kernel_of = {}
    for kernel in inductor.get("kernels") or []:
        for node in kernel.get("source_nodes") or []:
            kernel_of.setdefault((kernel.get("compile_id"), kernel.get("graph_kind"), node), kernel.get("name"))
    graphs: dict[tuple, dict] = {}
    for decision in inductor.get("fusion_decisions") or []:
        key = (decision.get("compile_id"), decision.get("kind"))
        graph = graphs.setdefault(
            key,
            {
                "compile_id": key[0],
                "kind": key[1],
                "fused": 0,
                "not_fused": 0,
                "graph_id": graph_id_of_kernel(inductor, {"compile_id": key[0], "graph_kind": key[1]}),
                "by_reason": {},
            },
        )
        count = decision.get("count") or 1
        action = "fused" if decision.get("action") == "fused" else "not_fused"
        graph[action] += count
        reason = None if action == "fused" else decision.get("reason") or "no reason recorded"
        group = graph["by_reason"].setdefault(
            (action, reason),
            {
                "action": action,
                "reason": reason,
                "count": 0,
                "decisions": [],
                "words": "fused" if action == "fused" else f"not fused: {FUSION_REASONS.get(reason, reason)}",
            },
        )
        group["count"] += count
        group["decisions"].append(
            {
                "first": _fusion_side(decision.get("first"), decision.get("first_ops"), key, kernel_of),
                "second": _fusion_side(decision.get("second"), decision.get("second_ops"), key, kernel_of),
                "count": count,
            }
        )
    out = []
    for graph in graphs.values():
        groups = sorted(graph.pop("by_reason").values(), key=lambda g: (g["action"] != "fused", -g["count"]))
        out.append({**graph, "groups": groups})
    return out


def _fusion_side(name, ops, graph_key: tuple, kernel_of: dict) -> dict:
    """One scheduler node of a fusion decision: its name, graph nodes and the kernels those went into."""
    ops = list(dict.fromkeys(ops or []))
    kernels = list(dict.fromkeys(k for op in ops if (k := kernel_of.get((*graph_key, op)))))
    return {"name": name, "ops": ops, "kernels": kernels}


def ir_pairs(inductor: dict) -> list[dict]:
    """Scheduler IR before and after fusion, matched by compile id and graph kind."""
    after = {(compile_key(ir.get("compile_id")), ir.get("kind")): ir for ir in inductor.get("ir_post_fusion") or []}
    return [
        {
            "compile_id": ir.get("compile_id"),
            "kind": ir.get("kind"),
            "before": ir.get("text") or "",
            "after": (after.get((compile_key(ir.get("compile_id")), ir.get("kind"))) or {}).get("text") or "",
        }
        for ir in inductor.get("ir_pre_fusion") or []
    ]


_IR_NODE = re.compile(r"^(\w+): (\w+)\(")
_IR_BUFFER = re.compile(r"^    (buf\d+): ")


def ir_nodes(text: str) -> list[dict]:
    """The scheduler nodes of one IR dump (Inductor's ir_pre_fusion / ir_post_fusion), in order: {name, type,
    members (the opN a fused node is made of), buffers (those it writes), text (its own lines)}. A fused node's
    members (each printed after a ``NAME.snodes[i] =`` line) belong to it, not to the top level."""
    nodes, previous, in_members = [], "", False
    for line in text.splitlines():
        match = _IR_NODE.match(line)
        if match and not previous.rstrip().endswith("] ="):
            name, kind = match.groups()
            nodes.append(
                {
                    "name": name,
                    "type": kind,
                    "members": name.split("_") if "Fused" in kind else [name],
                    "buffers": [],
                    "lines": [line],
                }
            )
            in_members = False
        elif nodes:
            if re.match(rf"^{re.escape(nodes[-1]['name'])}\.snodes\[\d+\] =", line):
                in_members = True
            elif not in_members and (buffer := _IR_BUFFER.match(line)):
                nodes[-1]["buffers"].append(buffer.group(1))
            nodes[-1]["lines"].append(line)
        previous = line
    for node in nodes:
        node["text"] = "\n".join(node.pop("lines")).rstrip()
    return nodes


def fused_node_count(text: str) -> int:
    """How many nodes of an after-fusion IR dump are fused ones (cheap: their headers only)."""
    return len(re.findall(r"^\w+: \w*Fused\w*\(", text, re.M))


def ir_diff(inductor: dict, pair: dict) -> list[dict]:
    """IR before against after fusion, one row per scheduler node after fusion: {name, type, fused (it merged
    several nodes), members [{name, ops}], buffers [{name, node (the graph node computing it)}], kernel, before
    (the members' IR), after (its own)}."""
    before = {node["name"]: node for node in ir_nodes(pair["before"])}
    ops_of, node_of_buffer = {}, {}
    for scheduler in inductor.get("scheduler") or []:  # each opN's graph nodes, where the report has them
        if (scheduler.get("compile_id"), scheduler.get("kind")) == (pair["compile_id"], pair["kind"]):
            for name, node in (scheduler.get("nodes") or {}).items():
                ops_of[name] = list(dict.fromkeys(node.get("origins") or []))
                for buffer in node.get("writes") or []:
                    if ops_of[name]:
                        node_of_buffer.setdefault(buffer, ops_of[name][-1])
    for decision in inductor.get("fusion_decisions") or []:
        if (decision.get("compile_id"), decision.get("kind")) == (pair["compile_id"], pair["kind"]):
            for side in ("first", "second"):
                name = decision.get(side)
                if isinstance(name, str) and "_" not in name:
                    ops_of.setdefault(name, list(dict.fromkeys(decision.get(f"{side}_ops") or [])))
    kernel_of = {}
    for kernel in inductor.get("kernels") or []:
        if (kernel.get("compile_id"), kernel.get("graph_kind")) == (pair["compile_id"], pair["kind"]):
            for buffer in kernel.get("writes") or []:
                kernel_of.setdefault(buffer, kernel.get("name"))
    rows = []
    for node in ir_nodes(pair["after"]):
        kernel = next((kernel_of[b] for b in node["buffers"] if b in kernel_of), None)
        rows.append(
            {
                "name": node["name"],
                "type": node["type"],
                "fused": len(node["members"]) > 1,
                "members": [{"name": m, "ops": ops_of.get(m, [])} for m in node["members"]],
                "buffers": [{"name": b, "node": node_of_buffer.get(b)} for b in node["buffers"]],
                "kernel": kernel,
                "after": node["text"],
                "before": "\n\n".join(before[m]["text"] for m in node["members"] if m in before),
            }
        )
    return rows


# Fusion decisions sent per fetch: a group of a large graph holds a thousand pairs.
FUSION_PAGE = 150


def find_part(section: dict, kind: str, key: str) -> dict | None:
    """One lazily drawn part of the Inductor tab: kernel/NAME, fusion/GRAPH-GROUP[-START] (indexes into
    fusion_groups), ir/INDEX (into ir_pairs), irnode/INDEX-NAME; None if there is no such part."""
    if kind == "kernel":
        kernel = (section.get("kernels") or [])[int(key)]
        return {"kernel": kernel, "graph_id": graph_id_of_kernel(section, kernel)}
    if kind == "fusion":
        graph_index, group_index = (int(n) for n in key.split("-")[:2])
        start = int(key.split("-")[2]) if key.count("-") == 2 else 0
        graph = fusion_groups(section)[graph_index]
        group = graph["groups"][group_index]
        end = start + FUSION_PAGE
        return {
            "graph": graph,
            "group": {**group, "decisions": group["decisions"][start:end]},
            "more": {"key": f"{graph_index}-{group_index}-{end}", "left": len(group["decisions"]) - end}
            if end < len(group["decisions"])
            else None,
        }
    if kind == "irnode":
        index, name = key.split("-", 1)
        pair = ir_pairs(section)[int(index)]
        row = next(row for row in ir_diff(section, pair) if row["name"] == name)
        return {"row": row}
    if kind == "ir":
        pair = ir_pairs(section)[int(key)]
        return {
            "pair": pair,
            "rows": ir_diff(section, pair),
            "index": int(key),
            "graph_id": graph_id_of_kernel(section, {"compile_id": pair["compile_id"], "graph_kind": pair["kind"]}),
        }
    return None
