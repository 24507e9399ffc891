"""The Inductor tab: generated kernels by time with bandwidth and roofline share, fusion decisions grouped by reason
in words, the scheduler IR before and after fusion as one diff. Reads the report's Inductor (and Runtime) models."""

from __future__ import annotations

import re

from contract import graphs
from contract.compile_id import compile_key
from contract.report import Inductor, Runtime
from webapp.numbers import data_size, figure, rate, times

# Measured copy bandwidth (bytes/s) of each device we have a ceiling for, keyed by a substring of
# environment.device_name: the denominator of a kernel's "roofline share" in reports without the worker's own
# measured bandwidth (runtime.memory_bandwidth, since issue 9, CPU too). H200: 4.27 TB/s (bytes read + written), a
# device-to-device copy timed with triton.testing.do_bench (median) on the project's H200, torch 2.11.0+cu130,
# 29 November 2026.
COPY_BANDWIDTH_CEILINGS = {"H200": 4.27e12}


def bandwidth_ceiling(runtime: Runtime | None, device_name: str | None) -> dict | None:
    """The one denominator of every kernel's roofline share, and the caption's words for it: {bytes_per_s, words}:
    the worker's measured copy bandwidth where the report has it, else the device's known ceiling; None when
    neither is known (then no share is shown)."""
    measured = runtime.memory_bandwidth.bytes_per_s if runtime else None
    if runtime and measured:
        method = runtime.memory_bandwidth.method
        return {
            "bytes_per_s": measured,
            "words": f"this worker's measured copy bandwidth, {rate(measured)}" + (f" ({method})" if method else ""),
        }
    known = next((value for key, value in COPY_BANDWIDTH_CEILINGS.items() if key in (device_name or "")), None)
    if known:
        return {"bytes_per_s": known, "words": f"the copy bandwidth measured on an {device_name}, {rate(known)}"}
    return None


def kernel_rows(inductor: Inductor, runtime: Runtime | None, device_name: str | None) -> list[dict]:
    """Generated kernels, slowest first (measured per step by the profiler), with bandwidth where bytes are known
    and its share of bandwidth_ceiling's one denominator: {kernel, index, bytes_accessed, total_ms, calls, share,
    bandwidth, roofline_share, time, bandwidth_text, roofline_text, bytes_text}."""
    profile = {row.kernel: row for row in (runtime.kernel_profile if runtime else []) if row.kernel}
    ceiling = bandwidth_ceiling(runtime, device_name)
    kernels = inductor.kernels
    # Inductor counts bytes for the whole compile (metrics.num_bytes_accessed); with one kernel they are its bytes.
    total_bytes = inductor.metrics.num_bytes_accessed
    rows: list[dict] = []
    for index, kernel in enumerate(kernels):
        measured = profile.get(kernel.name)
        total_ms, calls = (measured.total_ms, measured.calls) if measured else (None, 0)
        bytes_accessed = kernel.bytes_accessed or (total_bytes if len(kernels) == 1 else None)
        bandwidth = bytes_accessed * calls / (total_ms / 1e3) if bytes_accessed and total_ms and calls else None
        roofline = bandwidth / ceiling["bytes_per_s"] if bandwidth and ceiling else None
        rows.append(
            {
                "kernel": kernel,
                "name": kernel.name,
                "index": index,
                "bytes_accessed": bytes_accessed,
                "total_ms": total_ms,
                "calls": calls or None,
                "share": measured.share if measured else None,
                "bandwidth": bandwidth,
                "roofline_share": roofline,
                "bandwidth_text": rate(bandwidth) if bandwidth else None,
                "roofline_text": f"{figure(100 * roofline)}%" if roofline is not None else None,
                # Beyond the copy bandwidth a kernel's data came from a cache, not from memory.
                "above_ceiling": roofline is not None and roofline > 1,
                "bytes_text": data_size(bytes_accessed) if bytes_accessed else None,
            }
        )
    rows.sort(key=lambda row: (row["total_ms"] is None, -(row["total_ms"] or 0), row["name"]))
    return rows


ROOF_NAMES = {"fp32": "FP32", "tf32": "TF32", "bf16": "BF16"}


def roofline_points(runtime: Runtime | None) -> list:
    """The profiled generated kernels the roofline can place: floating-point work, bytes and time all known."""
    rows = runtime.kernel_profile if runtime else []
    return [r for r in rows if r.kernel and r.arithmetic_intensity and r.flops_per_s]


def roofline_chart(runtime: Runtime | None) -> dict | None:
    """Each profiled kernel at (FLOP per byte, FLOP/s achieved) under this worker's roofs: the copy bandwidth's
    slope and the measured compute peak of each dtype the kernels compute in. Log axes; hover gives the figures."""
    points = roofline_points(runtime)
    bandwidth = runtime.memory_bandwidth.bytes_per_s if runtime else None
    if runtime is None or not points or not bandwidth:
        return None
    peaks = runtime.compute_peaks
    used = sorted({p.peak for p in points if p.peak}, key=list(ROOF_NAMES).index)
    ridges = [getattr(peaks, name) / bandwidth for name in used if getattr(peaks, name)]
    low = min([p.arithmetic_intensity for p in points] + ridges) / 4
    high = max([p.arithmetic_intensity for p in points] + ridges) * 4
    data = []
    for name in used:
        peak = getattr(peaks, name)
        ridge = peak / bandwidth
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"roof: {rate(bandwidth)} copy, {figure(peak / 1e12)} TFLOP/s {ROOF_NAMES[name]}",
                "x": [low, ridge, high] if ridge > low else [low, high],
                "y": [low * bandwidth, peak, peak] if ridge > low else [peak, peak],
                "line": {"color": "#52606d" if name == "fp32" else "#8a4f9e", "width": 2},
                "hoverinfo": "skip",
            }
        )
    for bound, color in (("memory", "#1f6fb2"), ("compute", "#c2703d")):
        mine = [p for p in points if p.bound == bound]
        if not mine:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{bound}-bound kernels",
                "x": [p.arithmetic_intensity for p in mine],
                "y": [p.flops_per_s for p in mine],
                "text": [
                    f"{p.kernel}<br>{figure(p.arithmetic_intensity)} FLOP/B, {figure(p.flops_per_s / 1e9)} GFLOP/s"
                    f"<br>{figure(100 * (p.attainable_share or 0))}% of its roof; {figure(100 * p.share)}% of the step"
                    for p in mine
                ],
                "hovertemplate": "%{text}<extra></extra>",
                "marker": {"color": color, "size": [8 + 24 * (p.share**0.5) for p in mine], "opacity": 0.8},
            }
        )
    return {
        "data": data,
        "layout": {
            "xaxis": {"type": "log", "title": {"text": "arithmetic intensity (FLOP per byte)"}},
            # SI prefixes: Plotly's default writes 1e11 as "100B", which reads as bytes.
            "yaxis": {"type": "log", "exponentformat": "SI", "title": {"text": "achieved FLOP/s"}},
            "legend": {"orientation": "h", "y": -0.3},
            "margin": {"b": 96},
            "height": 380,
        },
    }


def roofline_words(runtime: Runtime | None) -> list[str]:
    """The roofline in sentences: how many kernels are memory-bound, the slowest one's distance from its roof, and
    what the chart leaves out."""
    points = roofline_points(runtime)
    if not points:
        return []
    placed = sorted(points, key=lambda p: -p.total_ms)
    memory = [p for p in placed if p.bound == "memory"]
    words = [
        f"{len(memory)} of {len(placed)} placed kernel{'s' if len(placed) != 1 else ''} "
        f"{'is' if len(memory) == 1 else 'are'} memory-bound: at their arithmetic intensity the copy bandwidth, not "
        "the compute peak, is the roof."
    ]
    slowest = placed[0]
    if slowest.attainable_share is not None:
        limit = "the bandwidth roof" if slowest.bound == "memory" else f"the {ROOF_NAMES[slowest.peak]} peak"
        words.append(
            f"The slowest, {slowest.kernel} ({figure(100 * slowest.share)}% of the step), reaches "
            f"{figure(100 * slowest.attainable_share)}% of {limit}"
            + (
                ": its data came partly from a cache, faster than memory."
                if slowest.attainable_share > 1
                else f"; at most {times(1 / slowest.attainable_share)} faster is possible for it at this intensity."
                if slowest.attainable_share > 0
                else "."
            )
        )
    unplaced = [r.name for r in (runtime.kernel_profile if runtime else []) if r.kernel and r not in points]
    if unplaced:
        words.append(
            f"Not placed: {len(unplaced)} kernel{'s' if len(unplaced) != 1 else ''} without floating-point work or "
            "without a byte count (copies, index arithmetic); library calls are not placed either (Inductor "
            "counts no bytes for them)."
        )
    return words


def kernel_times(runtime: Runtime | None) -> dict | None:
    """The post-grad graphs' time overlay (static/js/graph-view.js): {by: "kernel", times: {kernel: {share, ms}}},
    each generated kernel's share of the profiled step and its milliseconds per step; None where none was
    profiled."""
    rows = runtime.kernel_profile if runtime else []
    times = {r.kernel: {"share": round(r.share, 6), "ms": round(r.total_ms, 6)} for r in rows if r.kernel}
    return {"by": "kernel", "times": times} if times else None


def line_times(inductor: Inductor, runtime: Runtime | None) -> dict:
    """The Dynamo graphs' time overlay, through the user's lines: {by: "line", times: {line: {share, ms,
    kernels}}}, each line of the user's file with the kernels built from it (a kernel's source lines) and their
    shares of the profiled step summed (a kernel built from several lines counts in full for each)."""
    profile = (kernel_times(runtime) or {}).get("times") or {}
    times: dict[str, dict] = {}
    for kernel in inductor.kernels:
        if kernel.name not in profile:
            continue
        for line in {source.line for source in kernel.source_lines}:
            entry = times.setdefault(str(line), {"share": 0.0, "ms": 0.0, "kernels": []})
            if kernel.name not in entry["kernels"]:
                entry["share"] += profile[kernel.name]["share"]
                entry["ms"] += profile[kernel.name]["ms"]
                entry["kernels"].append(kernel.name)
    return {"by": "line", "times": times}


def other_profiled_ops(runtime: Runtime | None, limit: int = 12) -> list:
    """What the step spent outside generated kernels (library calls such as aten::mm), by time."""
    rows = [row for row in (runtime.kernel_profile if runtime else []) if not row.generated]
    return sorted(rows, key=lambda row: -row.total_ms)[:limit]


def graph_id_of_kernel(inductor: Inductor, compile_id: str | None, graph_kind: str | None) -> str | None:
    """The post-grad graph a kernel (or a fusion decision) was generated from: the same compile and graph kind."""
    key = compile_key(compile_id)
    for i, graph in enumerate(inductor.post_grad_graphs):
        if compile_key(graph.compile_id) == key and graph.kind == graph_kind:
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


def fusion_groups(inductor: Inductor) -> list[dict]:
    """Fusion decisions per graph (compile id, forward/backward), grouped by what was decided and why, in words,
    most frequent first: {compile_id, kind, graph_id, fused, not_fused, groups: [{action, reason, words, pairs,
    weighed, decisions}]}: ``pairs`` distinct pairs of scheduler nodes, ``weighed`` the times Inductor weighed them.
    Each decision names its two scheduler nodes (opN) with the graph nodes and kernel of each."""
    kernel_of: dict[tuple, str] = {}
    for kernel in inductor.kernels:
        for node in kernel.source_nodes:
            kernel_of.setdefault((kernel.compile_id, kernel.graph_kind, node), kernel.name)
    by_graph: dict[tuple, dict] = {}
    for decision in inductor.fusion_decisions:
        key = (decision.compile_id, decision.kind)
        graph = by_graph.setdefault(
            key,
            {
                "compile_id": key[0],
                "kind": key[1],
                "fused": 0,
                "not_fused": 0,
                "graph_id": graph_id_of_kernel(inductor, *key),
                "by_reason": {},
            },
        )
        action = decision.action
        graph[action] += decision.count
        reason = None if action == "fused" else decision.reason or "no reason recorded"
        group = graph["by_reason"].setdefault(
            (action, reason),
            {
                "action": action,
                "reason": reason,
                "weighed": 0,
                "decisions": [],
                "words": "fused" if reason is None else f"not fused: {FUSION_REASONS.get(reason, reason)}",
            },
        )
        group["weighed"] += decision.count
        group["decisions"].append(
            {
                "first": _fusion_side(decision.first, decision.first_ops, key, kernel_of),
                "second": _fusion_side(decision.second, decision.second_ops, key, kernel_of),
                "count": decision.count,
            }
        )
    out = []
    for graph in by_graph.values():
        groups = sorted(graph.pop("by_reason").values(), key=lambda g: (g["action"] != "fused", -len(g["decisions"])))
        out.append({**graph, "groups": [{**g, "pairs": len(g["decisions"])} for g in groups]})
    return out


def _fusion_side(name, ops, graph_key: tuple, kernel_of: dict) -> dict:
    """One scheduler node of a fusion decision: its name, graph nodes and the kernels those went into."""
    ops = list(dict.fromkeys(ops or []))
    kernels = list(dict.fromkeys(k for op in ops if (k := kernel_of.get((*graph_key, op)))))
    return {"name": name, "ops": ops, "kernels": kernels}


def ir_pairs(inductor: Inductor) -> list[dict]:
    """Scheduler IR before and after fusion, matched by compile id and graph kind."""
    after = {(compile_key(ir.compile_id), ir.kind): ir for ir in inductor.ir_post_fusion}
    return [
        {
            "compile_id": ir.compile_id,
            "kind": ir.kind,
            "before": ir.text,
            "after": match.text if (match := after.get((compile_key(ir.compile_id), ir.kind))) else "",
        }
        for ir in inductor.ir_pre_fusion
    ]


_IR_NODE = re.compile(r"^(\w+): (\w+)\(")
_IR_BUFFER = re.compile(r"^    (buf\d+): ")


def ir_nodes(text: str) -> list[dict]:
    """The scheduler nodes of one IR dump (Inductor's ir_pre_fusion / ir_post_fusion), in order: {name, type,
    members (the opN a fused node is made of), buffers (those it writes), text (its own lines)}. A fused node's
    members (each printed after a ``NAME.snodes[i] =`` line) belong to it, not to the top level."""
    nodes: list[dict] = []
    previous, in_members = "", False
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


def ir_diff(inductor: Inductor, pair: dict) -> list[dict]:
    """IR before against after fusion, one row per scheduler node after fusion: {name, type, fused (it merged
    several nodes), members [{name, ops}], buffers [{name, node (the graph node computing it)}], kernel, before
    (the members' IR), after (its own)}."""
    before = {node["name"]: node for node in ir_nodes(pair["before"])}
    ops_of: dict[str, list[str]] = {}
    node_of_buffer: dict[str, str] = {}
    graph = (pair["compile_id"], pair["kind"])
    for scheduler in inductor.scheduler:  # each opN's graph nodes, where the report has them
        if (scheduler.compile_id, scheduler.kind) == graph:
            for name, snode in scheduler.nodes.items():
                ops_of[name] = list(dict.fromkeys(snode.origins))
                for buffer in snode.writes:
                    if ops_of[name]:
                        node_of_buffer.setdefault(buffer, ops_of[name][-1])
    for decision in inductor.fusion_decisions:
        if (decision.compile_id, decision.kind) == graph:
            for name, ops in ((decision.first, decision.first_ops), (decision.second, decision.second_ops)):
                if "_" not in name:
                    ops_of.setdefault(name, list(dict.fromkeys(ops)))
    kernel_of: dict[str, str] = {}
    for kernel in inductor.kernels:
        if (kernel.compile_id, kernel.graph_kind) == graph:
            for buffer in kernel.writes:
                kernel_of.setdefault(buffer, kernel.name)
    rows: list[dict] = []
    for node in ir_nodes(pair["after"]):
        rows.append(
            {
                "name": node["name"],
                "type": node["type"],
                "fused": len(node["members"]) > 1,
                "members": [{"name": m, "ops": ops_of.get(m, [])} for m in node["members"]],
                "buffers": [{"name": b, "node": node_of_buffer.get(b)} for b in node["buffers"]],
                "kernel": next((kernel_of[b] for b in node["buffers"] if b in kernel_of), None),
                "after": node["text"],
                "before": "\n\n".join(before[m]["text"] for m in node["members"] if m in before),
            }
        )
    return rows


# Fusion decisions sent per fetch: a group of a large graph holds a thousand pairs.
FUSION_PAGE = 150


def find_part(section: Inductor, kind: str, key: str) -> dict | None:
    """One lazily drawn part of the Inductor tab: kernel/INDEX, devicecode/INDEX (a kernel's IR texts),
    fusion/GRAPH-GROUP[-START] (indexes into
    fusion_groups), ir/INDEX (into ir_pairs), irnode/INDEX-NAME; None if there is no such part."""
    if kind == "kernel":
        kernel = section.kernels[int(key)]
        return {
            "kernel": kernel,
            "index": int(key),
            "graph_id": graph_id_of_kernel(section, kernel.compile_id, kernel.graph_kind),
        }
    if kind == "devicecode":
        kernel = section.kernels[int(key)]
        return {"kernel": kernel} if kernel.device_code and kernel.device_code.stages else None
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
        return {"row": next(row for row in ir_diff(section, pair) if row["name"] == name)}
    if kind == "ir":
        pair = ir_pairs(section)[int(key)]
        return {
            "pair": pair,
            "rows": ir_diff(section, pair),
            "index": int(key),
            "graph_id": graph_id_of_kernel(section, pair["compile_id"], pair["kind"]),
        }
    return None
