"""What the report tabs draw, shaped from the stored report sections (docs/report-schema.md); never imports torch.

Graph ids, lookup and stored graph payloads are the report's vocabulary: contract/graphs.py.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

# The templates call these as view.*: the graph vocabulary lives in contract/graphs.py.
from contract import graphs
from contract.compile_id import compile_key
from contract.counts import COUNT_LABELS  # noqa: F401 - the pages' names for the report's counts
from contract.graphs import functionalization_graphs, graph_id_by_kind, graph_title, graphs_of_tab  # noqa: F401
from contract.userfile import is_user_file  # noqa: F401 (templates call view.is_user_file)

# Measured copy bandwidth (bytes/s) of each device we have a ceiling for, keyed by a substring of
# environment.device_name: the denominator of a kernel's "roofline share". H200: 4.27 TB/s, a device-to-device
# copy measured on the project's H200 (shared/notes/gpu-baseline.md). Reports since issue 9 carry the worker's own
# measured bandwidth (runtime.memory_bandwidth, CPU too), which takes precedence.
COPY_BANDWIDTH_CEILINGS = {"H200": 4.27e12}

# A compiled step whose GPU is busy less than this share of its wall time waits on the host (Python, guards,
# kernel launches): CUDA graphs (mode="reduce-overhead") remove most of that.
HOST_BOUND_BUSY_SHARE = 0.5


# Kernels


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
# A field the generic renderer draws is put in the page up to this size (its JSON); a bigger one is fetched
# when its fold is opened.
INLINE_FIELD_BYTES = 4000


def json_size(value) -> int:
    return len(json.dumps(value, default=str))


def size_words(size: int) -> str:
    return f"{size / 1024:.0f} KiB" if size >= 1024 else f"{size} bytes"


def find_part(section: dict, kind: str, key: str) -> dict | None:
    """What one lazily drawn part of a tab shows (pages.part), by kind and key; None if there is no such part.
    kernel/NAME, fusion/GRAPH-GROUP (indexes into fusion_groups), ir/INDEX (into ir_pairs), guards/INDEX (into
    guards_by_compile_id)."""
    try:
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
        if kind == "field":
            return {"key": key, "value": section[key]} if key in section else None
        if kind == "guards":
            row = guards_by_compile_id(section)[int(key)]
            return {"row": row, "tree": guard_tree(row["text"], row["failed"])[0]}
    except (StopIteration, ValueError, IndexError):
        return None
    return None


# Dynamo


def source_context(code: str, line: int | None, around: int = 2) -> list[dict]:
    """The user's lines around ``line``: [{number, text, focus}]."""
    lines = code.splitlines()
    if not isinstance(line, int) or not 1 <= line <= len(lines):
        return []
    return [
        {"number": n, "text": lines[n - 1], "focus": n == line}
        for n in range(max(1, line - around), min(len(lines), line + around) + 1)
    ]


def guards_by_compile_id(dynamo: dict) -> list[dict]:
    """Each compiled frame's guards, with the recompile (which guard failed) that led to it, if any, and the
    guards of this frame that a later call failed (``failed``: [{guard, recompile}], the recompile it caused).
    Joined on the compile key, so "0/1" and "0/1_1" meet."""
    recompiles = defaultdict(list)
    rejected = defaultdict(list)  # compile id of a rejected cache entry -> what failed in it
    for recompile in dynamo.get("recompiles") or []:
        recompiles[compile_key(recompile.get("compile_id"))].append(recompile)
        for entry_id, guard in failed_guards(recompile):
            rejected[compile_key(entry_id)].append({"guard": guard, "recompile": recompile.get("compile_id")})
    rows = []
    for guard in dynamo.get("guards") or []:
        text = guard.get("text") or ""
        count = guard.get("count")
        rows.append(
            {
                "compile_id": guard.get("compile_id"),
                "text": text.strip("\n"),
                # torch's own count where the report has it, else the guards (leaves) of the tree
                "count": count
                if isinstance(count, int)
                else sum(root["count"] if root["children"] else 1 for root in guard_tree(text, [])[0]),
                "recompiles": recompiles.pop(compile_key(guard.get("compile_id")), []),
                "failed": rejected.get(compile_key(guard.get("compile_id")), []),
            }
        )
    for orphans in recompiles.values():  # a recompile whose guards were not recorded
        rows.append(
            {"compile_id": orphans[0].get("compile_id"), "text": "", "count": 0, "recompiles": orphans, "failed": []}
        )
    return rows


def failed_guards(recompile: dict) -> list[tuple[str | None, str]]:
    """(compile id of the cache entry whose guard failed, the failed guard in words) for one recompile: from
    ``failed_guards`` where the report has it, else parsed from torch's reasons (``"0/0: tensor 'x' size
    mismatch ..."``)."""
    recorded = recompile.get("failed_guards")
    if isinstance(recorded, list) and recorded:
        return [(g.get("compile_id"), g.get("guard") or "") for g in recorded if isinstance(g, dict)]
    out = []
    for reason in recompile.get("reasons") or ([recompile["reason"]] if recompile.get("reason") else []):
        match = re.match(r"^(\d+/\d+(?:_\d+)?): (.*)$", str(reason), re.S)
        out.append((match.group(1), match.group(2)) if match else (None, str(reason)))
    return out


_GUARD_LINE = re.compile(r"^((?:\| )*)\+- (.*)$")


def guard_tree(text: str, failed: list[dict]) -> tuple[list[dict], list[dict]]:
    """Dynamo's guard tree dump as nested nodes {label, text, where, kind, children, count, failed, open}, and
    the leaves that match a failed guard (a tensor's size/stride/dtype mismatch matches its TENSOR_MATCH; any
    other guard matches the line that holds its expression). Folds leading to a failed guard are open."""
    roots, stack, leaves = [], [], []
    for line in text.splitlines():
        match = _GUARD_LINE.match(line)
        if not match:
            if stack and line.strip() and not line.startswith("TREE_GUARD_MANAGER"):
                stack[-1]["text"] += " " + line.strip()
            continue
        depth = len(match.group(1)) // 2
        body, _, where = match.group(2).partition("  # ")
        label, sep, rest = body.partition(": ")
        if not sep or not re.match(r"^[A-Za-z_]+$", label):
            label, rest = body.strip(), ""
        node = {
            "label": label,
            "text": rest.strip(),
            "where": where.strip().replace("  # ", " · "),
            "kind": "manager" if label.endswith("GuardManager") or label == "GuardManager" else "guard",
            "children": [],
            "failed": None,
            "open": depth == 0,
        }
        del stack[depth:]
        (stack[-1]["children"] if stack else roots).append(node)
        stack.append(node)

    def visit(node) -> bool:  # counts the guards under each fold; marks failed leaves, opens their folds
        hit = False
        for child in node["children"]:
            hit = visit(child) or hit
        node["count"] = sum(child["count"] if child["children"] else 1 for child in node["children"])
        if not node["children"]:
            for f in failed:
                if _guard_matches(node, f["guard"]):
                    node["failed"] = f["guard"]
                    leaves.append({**node, "recompile": f["recompile"]})
                    hit = True
                    break
        if hit:
            node["open"] = True
        return hit or bool(node["failed"])

    for root in roots:
        visit(root)
    return roots, leaves


def _guard_matches(node: dict, guard: str) -> bool:
    tensor = re.match(r"^tensor '([^']+)'", guard.strip())
    if tensor:
        name = tensor.group(1)
        return node["label"] == "TENSOR_MATCH" and (f"'{name}'" in node["text"] or f"[{name!r}]" in node["text"])
    expression = guard.strip()
    return bool(expression) and expression in f"{node['label']}: {node['text']}"


def compact_bytecode(text: str) -> str:
    """dis output with its padding collapsed (line, offset, opname, argument, (meaning)), so the full arguments
    fit beside each other in two columns."""
    out = []
    for line in text.splitlines():
        match = re.match(r"^\s*(\d+)?\s+(>>)?\s*(\d+) ([A-Z_]+[A-Z0-9_]*)(?:\s+(\S+))?(?:\s+(\(.*\)))?\s*$", line)
        if not match:
            out.append(line.strip())
            continue
        number, jump, offset, opname, arg, meaning = match.groups()
        out.append(
            (
                f"{number or '':>3} {'>>' if jump else '  '}{offset:>4} {opname}"
                + (f" {arg}" if arg else "")
                + (f" {meaning}" if meaning else "")
            ).rstrip()
        )
    return "\n".join(out)


# Runtime


def speedup_text(benchmark: dict) -> str | None:
    """A rung's speedup in words: the figure with its spread, or "not decided" when the spread does not decide it
    (never a bare number). Reports from before issue 9 carry only a number: it is shown as undecided."""
    speedup = benchmark.get("speedup")
    if isinstance(speedup, dict) and speedup.get("text"):
        return speedup["text"]
    if isinstance(benchmark.get("speedup_vs_eager"), (int, float)):
        return f"not decided: no spread recorded ({benchmark['speedup_vs_eager']:.2f}x from one median)"
    return None


def speedup_decided(benchmark: dict) -> bool:
    return bool((benchmark.get("speedup") or {}).get("decided"))


NOTABLE_PAGE_FAULTS = 50  # per step: a step that faults in this many pages pays for it in time


def page_fault_notes(benchmarks: list[dict]) -> list[str]:
    """Rungs whose step faults pages in again and again, in words (most steps fault none)."""
    return [
        f"{b['config']}: {b['page_faults_per_step']:,.0f} page faults per step: memory the allocator returned to "
        "the OS and takes back each step, which this step's time includes."
        for b in benchmarks
        if isinstance(b.get("page_faults_per_step"), (int, float)) and b["page_faults_per_step"] >= NOTABLE_PAGE_FAULTS
    ]


def cudagraph_note(benchmark: dict) -> str | None:
    """The rung's CUDA-graph status in a few words, for beside its bar."""
    cg = benchmark.get("cudagraphs") or {}
    status = cg.get("status")
    if status in (None, "not_requested"):
        return None
    if status == "used":
        n = cg.get("rerecords") or 0
        return "CUDA graphs used" + (f", re-recorded {n}x" if n else "")
    if status == "skipped":
        return "CUDA graphs skipped"
    return "no CUDA graphs (CPU)"


def runtime_headline(runtime: dict) -> list[str]:
    """The Runtime tab's opening sentences: correctness first (where the ladder diverges), then what was timed and
    how noisy the machine was."""
    lines = []
    correctness = runtime.get("correctness") or {}
    if correctness.get("text"):
        lines.append(correctness["text"])
    mode = runtime.get("mode") or {}
    if mode.get("kind"):
        lines.append(f"Timed as {mode['kind']}" + (f" ({mode['reason']})." if mode.get("reason") else "."))
    load = runtime.get("load") or {}
    if load.get("text"):
        lines.append(f"Machine {load['text']}.")
    undecided = [
        b["config"]
        for b in runtime.get("benchmarks") or []
        if b.get("status") == "ok" and b.get("config") != "eager" and not speedup_decided(b)
    ]
    if undecided and load.get("contended"):
        lines.append(
            f"Speedup not decided for {', '.join(undecided)}: other processes took the cores the step needs in "
            "every round, so no figure of this run is a quiet machine's."
        )
    elif undecided:
        lines.append(
            f"Speedup not decided for {', '.join(undecided)}: the rounds' spread is too wide to quote a "
            "figure (measurements too noisy)."
        )
    return lines


def ladder_chart(benchmarks: list[dict]) -> dict | None:
    """Speedup over plain eager per config (median of paired rounds), a 90% confidence interval of it as error bars; an
    undecided speedup is drawn pale and labelled so, and each rung's CUDA-graph status sits beside its bar."""
    rows = [b for b in benchmarks if b.get("status") == "ok" and b.get("median_ms")]
    eager = next((b for b in rows if b.get("config") == "eager"), None)
    if not eager or not rows:
        return None
    base = eager["median_ms"]
    speedups, high, low = [], [], []
    for b in rows:
        s = b.get("speedup") if isinstance(b.get("speedup"), dict) else None
        value = s["value"] if s and s.get("value") is not None else base / b["median_ms"]
        speedups.append(value)
        high.append((s["high"] - value) if s and s.get("high") is not None else 0)
        low.append((value - s["low"]) if s and s.get("low") is not None else 0)
    labels = []
    for b, value in zip(rows, speedups):
        label = f"{value:.2f}×" if speedup_decided(b) or b["config"] == "eager" else f"not decided ({value:.2f}×)"
        note = cudagraph_note(b)
        labels.append(f"{label}<br>{note}" if note else label)
    colors = ["#9aa5b1" if b["config"] == "eager" else "#b8460b" if speedup_decided(b) else "#e3b89c" for b in rows]
    return {
        "data": [
            {
                "type": "bar",
                "x": [b["config"] for b in rows],
                "y": speedups,
                "text": labels,
                "textposition": "inside",
                "insidetextanchor": "end",
                "marker": {"color": colors},
                "error_y": {"type": "data", "symmetric": False, "array": high, "arrayminus": low, "color": "#1d232a"},
                "customdata": [speedup_text(b) or "" for b in rows],
                "hovertemplate": "%{x}: %{customdata}<extra></extra>",
            }
        ],
        "layout": {
            "yaxis": {"title": {"text": "speedup over plain eager (×)"}, "rangemode": "tozero"},
            "shapes": [
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "y0": 1,
                    "y1": 1,
                    "line": {"dash": "dot", "color": "#68717d"},
                }
            ],
        },
    }


# The exclusive compile stages of runtime.compile_seconds, in pipeline order: they add up to its total.
COMPILE_STAGES = (
    ("dynamo", "Dynamo (tracing, guards, bytecode)"),
    ("aot_autograd", "AOTAutograd (+ pre-grad and joint passes)"),
    ("inductor", "Inductor (lowering, scheduling)"),
    ("codegen", "code generation and kernel compile"),
    ("inductor_and_codegen", "Inductor and code generation"),  # reports stored before they were apart
    ("backward", "backward compile (at the first .backward())"),
    ("other", "other (autotuning at the first run)"),
)
COMPILE_STAGE_COLORS = ("#3f6ea5", "#8e5bd0", "#b8460b", "#c0392b", "#a07d00", "#1f7a3a", "#9aa5b1")
# The compiles of runtime.compile_cache, as the page names them.
COMPILE_RUNS = (
    ("cold", "cold (this job)"),
    ("warmup", "graph caches empty, kernels cached"),
    ("warm", "warm (every cache filled)"),
)
CACHES = (("fx_graph", "FX graph cache"), ("aot_autograd", "AOTAutograd cache"), ("kernels", "kernel binaries"))


def exclusive_compile_seconds(compile_seconds: dict) -> dict:
    """runtime.compile_seconds with stages that add up to the total. Reports stored before the stages were exclusive
    (no "other": null once validated) counted the backward's Inductor time in inductor/codegen as well as in backward: there the
    forward's Inductor and code generation are shown as one stage, the backward taken out of it."""
    if not compile_seconds or compile_seconds.get("other") is not None or compile_seconds.get("total") is None:
        return compile_seconds or {}
    legacy = dict(compile_seconds)
    merged = (legacy.pop("inductor", 0) or 0) + (legacy.pop("codegen", 0) or 0) - (legacy.get("backward") or 0)
    legacy["inductor_and_codegen"] = round(max(0.0, merged), 4)
    return legacy


def compile_runs(runtime: dict) -> list[dict]:
    """Each compile of the same model that was timed, as {key, label, status, reason, seconds, caches}: the recorded
    (cold) compile and, where measured, the warm ones (runtime.compile_cache)."""
    cache = runtime.get("compile_cache") or {}
    runs = []
    for key, label in COMPILE_RUNS:
        entry = cache.get(key) or ({"seconds": runtime.get("compile_seconds")} if key == "cold" else None)
        if not entry:
            continue
        runs.append(
            {
                "key": key,
                "label": label,
                "status": entry.get("status", "ok"),
                "reason": entry.get("reason"),
                "seconds": {"total": None, **exclusive_compile_seconds(entry.get("seconds"))},
                "caches": entry.get("caches") or {},
                "wall_seconds": entry.get("wall_seconds"),
            }
        )
    return runs


def compile_stage_table(runs: list[dict]) -> list[dict]:
    """The table beside the chart: one row per exclusive stage any compile spent time in, one cell per compile
    ({seconds, share of that compile's total}); a compile's cells add up to its total."""
    rows = []
    for key, label in COMPILE_STAGES:
        if not any(isinstance(run["seconds"].get(key), (int, float)) for run in runs):
            continue
        cells = []
        for run in runs:
            seconds, total = run["seconds"].get(key), run["seconds"].get("total")
            cells.append(
                {"seconds": seconds, "share": seconds / total if isinstance(seconds, (int, float)) and total else None}
            )
        rows.append({"key": key, "label": label, "cells": cells})
    return rows


def compile_stage_chart(runtime: dict) -> dict | None:
    """One stacked bar per timed compile (cold, and warm where measured): the segments are exclusive stages, so a
    bar's length is its total."""
    runs = [run for run in compile_runs(runtime) if run["status"] == "ok" and run["seconds"].get("total")]
    if not runs:
        return None
    labels = [run["label"] for run in runs]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": label,
            "y": labels,
            "x": [run["seconds"].get(key) or 0 for run in runs],
            "marker": {"color": color},
            "hovertemplate": f"{label}: %{{x:.3f}} s<extra></extra>",
        }
        for (key, label), color in zip(COMPILE_STAGES, COMPILE_STAGE_COLORS)
        if any(run["seconds"].get(key) for run in runs)
    ]
    totals = {
        "type": "scatter",
        "mode": "text",
        "showlegend": False,
        "y": labels,
        "x": [run["seconds"]["total"] for run in runs],
        "textposition": "middle right",
        "text": [f"{run['seconds']['total']:.2f} s" for run in runs],
        "hoverinfo": "skip",
    }
    longest = max(run["seconds"]["total"] for run in runs)
    # The legend (one entry per stage) sits above the plot, in its own margin, so that it covers no bar; the x range
    # leaves room for the totals written after each bar.
    return {
        "data": data + [totals],
        "layout": {
            "barmode": "stack",
            "height": 190 + 50 * len(runs),
            "yaxis": {"autorange": "reversed"},
            "xaxis": {
                "title": {"text": "seconds (stages are exclusive: they add up to each bar's total)"},
                "range": [0, longest * 1.18],
            },
            "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
            "margin": {"l": 250, "r": 30, "t": 90},
        },
    }


def timeline_chart(timeline: list[dict], limit: int = 80) -> dict | None:
    """The compile as a Gantt chart: one row per traced event, indented by nesting depth, longest kept."""
    events = [e for e in timeline if isinstance(e.get("dur_ms"), (int, float))]
    if not events:
        return None
    if len(events) > limit:
        keep = {id(e) for e in sorted(events, key=lambda e: -e["dur_ms"])[:limit]}
        events = [e for e in events if id(e) in keep]
    events.sort(key=lambda e: (e.get("start_ms") or 0, e.get("depth") or 0))
    labels = [
        f"{'· ' * (e.get('depth') or 0)}{e.get('name')} [{e.get('compile_id')}] #{i}" for i, e in enumerate(events)
    ]
    palette = ["#3f6ea5", "#b8460b", "#1f7a3a", "#8e5bd0", "#c0392b", "#2c8c99", "#a07d00"]
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "y": labels,
                "x": [e["dur_ms"] for e in events],
                "base": [e.get("start_ms") or 0 for e in events],
                "marker": {"color": [palette[(e.get("depth") or 0) % len(palette)] for e in events]},
                "customdata": [[e.get("name"), e["dur_ms"]] for e in events],
                "hovertemplate": "%{customdata[0]}: %{customdata[1]:.1f} ms<extra></extra>",
            }
        ],
        "layout": {
            "height": max(260, 16 * len(events) + 80),
            "xaxis": {"title": {"text": "ms since the compile began"}},
            "yaxis": {"autorange": "reversed", "showticklabels": True, "tickfont": {"size": 10}},
            "margin": {"l": 300},
            "bargap": 0.15,
        },
    }


SIDE_COLORS = {"web": "#68717d", "worker": "#2c8c99", "parent": "#3f6ea5", "child": "#b8460b"}


def job_timeline_chart(timeline: dict) -> dict | None:
    """The job's wall time as a Gantt chart: one row per phase in time order (parts of a phase indented below
    it), coloured by the side that measured it; untracked gaps in light grey."""
    phases = [p for p in timeline.get("phases") or [] if isinstance(p.get("start_s"), (int, float))]
    if not phases:
        return None
    traces = []
    for side, color in SIDE_COLORS.items():
        mine = [(i, p) for i, p in enumerate(phases) if p.get("side") == side]
        if not mine:
            continue
        colors = ["#d5d9de" if p["phase"] == "untracked" else color for _, p in mine]
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": side,
                "y": [_phase_label(i, p) for i, p in mine],
                "x": [max(p["end_s"] - p["start_s"], 0.001) for _, p in mine],
                "base": [p["start_s"] for _, p in mine],
                "marker": {"color": colors},
                "customdata": [[p["phase"], p["end_s"] - p["start_s"], p["start_s"]] for _, p in mine],
                "hovertemplate": "%{customdata[0]}: %{customdata[1]:.3f} s from %{customdata[2]:.3f} s"
                "<extra>" + side + "</extra>",
            }
        )
    order = [_phase_label(i, p) for i, p in enumerate(phases)]
    return {
        "data": traces,
        "layout": {
            "height": max(260, 18 * len(phases) + 90),
            "barmode": "overlay",
            "xaxis": {
                "title": {
                    "text": "seconds since "
                    + ("the request" if timeline.get("origin") == "request" else "the job started")
                }
            },
            "yaxis": {
                "autorange": "reversed",
                "categoryorder": "array",
                "categoryarray": order,
                "tickfont": {"size": 10},
            },
            "margin": {"l": 220},
            "bargap": 0.2,
        },
    }


def _phase_label(index: int, phase: dict) -> str:
    config = f" ({phase['config']})" if phase.get("config") else ""
    prestart = "prestart: " if phase.get("ahead") else ""  # the prestarted child, before the job reached it
    return f"{'· ' * (phase.get('depth') or 0)}{prestart}{phase['phase']}{config} #{index}"


def kernel_time_chart(kernel_profile: list[dict], limit: int = 20) -> dict | None:
    rows = sorted(
        (r for r in kernel_profile if isinstance(r.get("total_ms"), (int, float))), key=lambda r: -r["total_ms"]
    )[:limit]
    if not rows:
        return None
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "y": [r.get("kernel") or r.get("name") for r in rows],
                "x": [r["total_ms"] for r in rows],
                "marker": {"color": ["#b8460b" if r.get("generated") else "#9aa5b1" for r in rows]},
                "text": [f"{100 * (r.get('share') or 0):.1f}%" for r in rows],
                "textposition": "auto",
                "hovertemplate": "%{y}: %{x:.4f} ms per step<extra></extra>",
            }
        ],
        "layout": {
            "height": max(220, 22 * len(rows) + 80),
            "yaxis": {"autorange": "reversed"},
            "xaxis": {"title": {"text": "ms per step"}},
        },
    }


def busy_chart(benchmarks: list[dict]) -> dict | None:
    rows = [b for b in benchmarks if isinstance(b.get("gpu_busy_ms"), (int, float)) and b.get("median_ms")]
    if not rows:
        return None
    configs = [b["config"] for b in rows]
    return {
        "data": [
            {
                "type": "bar",
                "name": "wall time per step",
                "x": configs,
                "y": [b["median_ms"] for b in rows],
                "marker": {"color": "#9aa5b1"},
            },
            {
                "type": "bar",
                "name": "GPU busy per step",
                "x": configs,
                "y": [b["gpu_busy_ms"] for b in rows],
                "marker": {"color": "#1f7a3a"},
            },
        ],
        "layout": {"barmode": "group", "yaxis": {"title": {"text": "ms"}}},
    }


def host_bound_diagnosis(benchmarks: list[dict]) -> list[str]:
    """Plain words for each compiled config whose GPU mostly waits on the host."""
    by_config = {b.get("config"): b for b in benchmarks}
    notes = []
    for b in benchmarks:
        busy, wall = b.get("gpu_busy_ms"), b.get("median_ms")
        if not isinstance(busy, (int, float)) or not wall or b.get("config") == "eager":
            continue
        share = busy / wall
        if share >= HOST_BOUND_BUSY_SHARE:
            notes.append(
                f"{b['config']}: the GPU is busy {share:.0%} of each step ({busy:.3f} of {wall:.3f} ms): "
                "GPU-bound, the kernels themselves set the pace."
            )
            continue
        note = (
            f"{b['config']}: host-bound. The GPU is busy only {share:.0%} of each step ({busy:.3f} of "
            f"{wall:.3f} ms); the rest is Python, guards and kernel launches."
        )
        if b.get("mode") != "reduce-overhead":
            note += ' mode="reduce-overhead" (CUDA graphs) replays the whole step with one launch, removing most of it'
            ro = by_config.get("inductor_reduce_overhead") or {}
            if ro.get("median_ms") and ro["median_ms"] < wall:
                note += f": measured here, {ro['median_ms']:.3f} ms per step ({wall / ro['median_ms']:.2f}x faster)."
            elif ro.get("median_ms"):
                note += (
                    f"; measured here it was not faster ({ro['median_ms']:.3f} ms per step): the replay's own "
                    "cost outweighs the launches saved at this size."
                )
            else:
                note += "; add the inductor_reduce_overhead config to measure it."
        notes.append(note)
    return notes


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
