"""Two reports side by side: what changed between two runs (pasted or imported), as plain data. No torch, no web.

    compare(a, b) -> {summary, compile_seconds, benchmarks, graphs, kernels, guards}

- summary: counts (graphs, graph breaks, recompiles, AOT graphs, kernels) and the compile total, with deltas;
- compile_seconds: per stage; benchmarks: per config, median, speedup and max error in each run, and its memory
  (debug.memory: the peak per step, eager's peak over it, the bytes saved for backward);
- graphs: each stage's graphs paired (by compile id and kind, else by order), with nodes added, removed and
  changed. Nodes are matched by the graph's structure: the op and target of each node, in the graph's order, not
  by name (FX names shift whenever an earlier node is added) nor by source line (two torch versions' logs, or two
  versions of a file, put the same ops at other lines: counted as `moved`, never as added and removed);
- kernels: matched by name, else by graph kind and ATen ops, with a unified diff of their sources;
- guards: per compile id, the guard lines only one run has (object ids and addresses, which differ in every
  process, are masked first; torch's "Guard latency = ..." line is a timing, not a guard, and is left out).

The counts are the report's own (report["summary"], contract/counts.py, as the Overview and the tabs read them),
never recounted here; a frame's guard count is the one the Dynamo tab shows (``guard_counts``: compile id ->
count, given by the page, else torch's count per frame).
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict

from contract.counts import summarize
from contract.graphs import graphs_of_tab

SOURCE_DIFF_LINES = 400  # a kernel's diff is cut after this many lines
_VOLATILE = re.compile(r"0x[0-9a-f]{6,}|\b\d{7,}\b")  # ids and addresses
_GUARD_WHERE = re.compile(r"\s+# .*$")  # "  # x.py:3 in f": where the guard was made
_GUARD_TIMING = re.compile(r"^\s*Guard (eval )?latency\b", re.I)  # "Guard latency = 156.92 us": a timing, no guard


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _delta(a, b):
    a, b = _number(a), _number(b)
    return None if a is None or b is None else round(b - a, 6)


def summary(report: dict, guard_counts: dict | None = None) -> dict:
    """The counts every page shows (report["summary"]["counts"], else counted by contract.counts.summarize the one
    way), and the compile total. Guards: torch's count summed over frames; where torch gave none for a frame, the
    Dynamo tab's count per frame (``guard_counts``) summed."""
    counts = ((report.get("summary") or {}).get("counts")) or summarize(report)["counts"]
    inductor, runtime = report.get("inductor") or {}, report.get("runtime") or {}
    guards = counts.get("guards")
    if guards is None and guard_counts is not None:
        guards = sum(guard_counts.values())
    return {
        "dynamo_graphs": counts.get("dynamo_graphs"),
        "graph_breaks": counts.get("graph_breaks"),
        "recompiles": counts.get("recompiles"),
        "guards": guards,
        "aot_graphs": counts.get("aot_graphs"),
        "post_grad_graphs": len(inductor.get("post_grad_graphs") or []),
        "kernels": counts.get("generated_kernels"),
        "compile_seconds_total": (runtime.get("compile_seconds") or {}).get("total"),
    }


_NUMBERING = re.compile(r"\d+")
# Ops whose target is a name the graph made up (primals_1, arg0_1, _tensor_constant0, output): only its numbering
# differs from one torch version or run to the next.
_NAMED_TARGETS = ("placeholder", "get_attr", "output")
ALIGNED_NODES = 4000  # graphs whose differing middles are longer are matched by key, without their order


def node_key(node: dict) -> tuple:
    """What a node computes: its op and target (a made-up name's numbering masked). Not its name, which shifts
    whenever an earlier node is added, nor the user's line behind it, which moves with every edit of the file
    above it and is not what two torch versions' graphs differ in."""
    op, target = node.get("op"), node.get("target")
    if op in _NAMED_TARGETS and isinstance(target, str):
        target = _NUMBERING.sub("#", target)
    return op, target


def _node_view(node: dict) -> dict:
    return {
        "name": node.get("name"),
        "op": node.get("op"),
        "target": node.get("target"),
        "line": node.get("line"),
        "shape": node.get("shape"),
        "dtype": node.get("dtype"),
    }


def _matched_pairs(a_nodes: list[dict], b_nodes: list[dict]) -> list[tuple[int, int]]:
    """The nodes of two graphs that are the same op in the same place of the graph's order, as (i in a, j in b):
    the longest matching sequences of node keys (difflib), after the common start and end. A differing middle
    too long to align is matched by key alone, in order within a key."""
    a_keys, b_keys = [node_key(n) for n in a_nodes], [node_key(n) for n in b_nodes]
    start = 0
    while start < min(len(a_keys), len(b_keys)) and a_keys[start] == b_keys[start]:
        start += 1
    end = 0
    while end < min(len(a_keys), len(b_keys)) - start and a_keys[-1 - end] == b_keys[-1 - end]:
        end += 1
    pairs = [(i, i) for i in range(start)]
    middle_a, middle_b = a_keys[start : len(a_keys) - end], b_keys[start : len(b_keys) - end]
    if middle_a and middle_b and max(len(middle_a), len(middle_b)) <= ALIGNED_NODES:
        matcher = difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=False)
        for block in matcher.get_matching_blocks():
            pairs += [(start + block.a + k, start + block.b + k) for k in range(block.size)]
    elif middle_a and middle_b:
        pending = defaultdict(list)
        for i, key in enumerate(middle_a):
            pending[key].append(start + i)
        for j, key in enumerate(middle_b):
            if pending.get(key):
                pairs.append((pending[key].pop(0), start + j))
    pairs += [(len(a_keys) - end + k, len(b_keys) - end + k) for k in range(end)]
    return pairs


def diff_nodes(a_nodes: list[dict], b_nodes: list[dict]) -> dict:
    """Nodes added, removed and changed (same op, other shape, dtype or number of inputs) between two graphs,
    matched by op and target in the graphs' order (_matched_pairs). ``moved``: matched nodes whose user line
    differs (the same op, at another line of the file): counted, never an addition and a removal."""
    added, changed, same, moved = [], [], 0, 0
    pairs = _matched_pairs(a_nodes, b_nodes)
    matched_a, matched_b = {i for i, _ in pairs}, {j for _, j in pairs}
    for i, j in pairs:
        old, node = a_nodes[i], b_nodes[j]
        what = [field for field in ("shape", "dtype") if old.get(field) != node.get(field)]
        if len(old.get("args") or []) != len(node.get("args") or []):
            what.append("inputs")
        if old.get("line") != node.get("line"):
            moved += 1
        if what:
            changed.append({"a": _node_view(old), "b": _node_view(node), "fields": what})
        else:
            same += 1
    added = [_node_view(node) for j, node in enumerate(b_nodes) if j not in matched_b]
    removed = [_node_view(node) for i, node in enumerate(a_nodes) if i not in matched_a]
    return {"added": added, "removed": removed, "changed": changed, "same": same, "moved": moved}


def _pair(a_items: list, b_items: list, key) -> list[tuple]:
    """Pair items by key (in order within a key); the rest by position; unpaired sides are None."""
    by_key = defaultdict(list)
    for i, item in enumerate(b_items):
        by_key[key(item)].append(i)
    pairs, used = [], set()
    unmatched_a = []
    for item in a_items:
        candidates = by_key.get(key(item))
        if candidates:
            j = candidates.pop(0)
            used.add(j)
            pairs.append((item, b_items[j]))
        else:
            unmatched_a.append(item)
    rest_b = [b_items[j] for j in range(len(b_items)) if j not in used]
    for i in range(max(len(unmatched_a), len(rest_b))):
        pairs.append((unmatched_a[i] if i < len(unmatched_a) else None, rest_b[i] if i < len(rest_b) else None))
    return pairs


def diff_graphs(a: dict, b: dict) -> list[dict]:
    out = []
    for tab in ("dynamo", "aot", "inductor"):
        a_graphs, b_graphs = graphs_of_tab(tab, a.get(tab) or {}), graphs_of_tab(tab, b.get(tab) or {})
        key = lambda entry: (entry["graph"].get("compile_id"), entry["graph"].get("kind"))  # noqa: E731
        for ga, gb in _pair(a_graphs, b_graphs, key):
            base = ga or gb
            entry = {
                "stage": tab,
                "title": base["title"],
                "a_id": ga and ga["id"],
                "b_id": gb and gb["id"],
                "a_title": ga and ga["title"],
                "b_title": gb and gb["title"],
                "a_nodes": len(ga["graph"].get("nodes") or []) if ga else 0,
                "b_nodes": len(gb["graph"].get("nodes") or []) if gb else 0,
            }
            entry.update(
                diff_nodes(ga["graph"].get("nodes") or [] if ga else [], gb["graph"].get("nodes") or [] if gb else [])
            )
            entry["identical"] = bool(ga and gb) and not (entry["added"] or entry["removed"] or entry["changed"])
            out.append(entry)
    return out


def _kernel_shape(kernel: dict) -> tuple:
    return kernel.get("graph_kind"), tuple(sorted(kernel.get("aten_ops") or []))


def diff_kernels(a: dict, b: dict) -> dict:
    a_kernels = (a.get("inductor") or {}).get("kernels") or []
    b_kernels = (b.get("inductor") or {}).get("kernels") or []
    by_name: dict[str, list[dict]] = {}
    for kernel in b_kernels:
        by_name.setdefault(kernel.get("name"), []).append(kernel)
    matched, rest_a = [], []
    for kernel in a_kernels:
        same_name = by_name.get(kernel.get("name"))
        if same_name:
            matched.append((kernel, same_name.pop(0), "name"))
        else:
            rest_a.append(kernel)
    rest_b = [k for ks in by_name.values() for k in ks]
    only_a = []
    for kernel in rest_a:
        twin = next((k for k in rest_b if _kernel_shape(k) == _kernel_shape(kernel)), None)
        if twin is None:
            only_a.append(kernel)
            continue
        rest_b.remove(twin)
        matched.append((kernel, twin, "graph kind and ATen ops"))
    rows = []
    for ka, kb, how in matched:
        source_a, source_b = ka.get("source") or "", kb.get("source") or ""
        lines = list(
            difflib.unified_diff(
                source_a.splitlines(),
                source_b.splitlines(),
                ka.get("name") or "",
                kb.get("name") or "",
                lineterm="",
                n=2,
            )
        )
        rows.append(
            {
                "a": ka.get("name"),
                "b": kb.get("name"),
                "matched_by": how,
                "graph_kind": kb.get("graph_kind"),
                "compile_id_a": ka.get("compile_id"),
                "compile_id_b": kb.get("compile_id"),
                "same_source": source_a == source_b,
                "diff": "\n".join(lines[:SOURCE_DIFF_LINES]),
                "diff_truncated": len(lines) > SOURCE_DIFF_LINES,
            }
        )
    brief = lambda k: {
        "name": k.get("name"),
        "graph_kind": k.get("graph_kind"),  # noqa: E731
        "compile_id": k.get("compile_id"),
        "aten_ops": k.get("aten_ops") or [],
    }
    return {"matched": rows, "only_a": [brief(k) for k in only_a], "only_b": [brief(k) for k in rest_b]}


def guard_lines(text: str) -> list[str]:
    lines = []
    for line in (text or "").splitlines():
        line = _VOLATILE.sub("N", _GUARD_WHERE.sub("", line)).rstrip()
        if line.strip() and not _GUARD_TIMING.match(line):
            lines.append(line)
    return lines


def diff_guards(a: dict, b: dict, guard_counts: tuple[dict, dict] | None = None) -> list[dict]:
    """Per compile id, the guards only one run checks. ``count_a``/``count_b``: the frame's guards as the Dynamo
    tab counts them (``guard_counts``), else torch's count, else None (unknown)."""
    counts = [
        guard_counts[i] if guard_counts else {g.get("compile_id"): g.get("count") for g in _guards(r)}
        for i, r in enumerate((a, b))
    ]
    a_guards = {g.get("compile_id"): guard_lines(g.get("text")) for g in (a.get("dynamo") or {}).get("guards") or []}
    b_guards = {g.get("compile_id"): guard_lines(g.get("text")) for g in (b.get("dynamo") or {}).get("guards") or []}
    out = []
    for compile_id in list(dict.fromkeys([*a_guards, *b_guards])):
        la, lb = a_guards.get(compile_id), b_guards.get(compile_id)
        set_a, set_b = set(la or []), set(lb or [])
        only_a = [line for line in la or [] if line not in set_b]
        only_b = [line for line in lb or [] if line not in set_a]
        out.append(
            {
                "compile_id": compile_id,
                "in_a": la is not None,
                "in_b": lb is not None,
                "only_a": only_a,
                "only_b": only_b,
                "same": not only_a and not only_b and la is not None and lb is not None,
                "count_a": counts[0].get(compile_id) if la is not None else None,
                "count_b": counts[1].get(compile_id) if lb is not None else None,
            }
        )
    return out


def _guards(report: dict) -> list[dict]:
    return (report.get("dynamo") or {}).get("guards") or []


def diff_benchmarks(a: dict, b: dict) -> list[dict]:
    a_rows = {r.get("config"): r for r in (a.get("runtime") or {}).get("benchmarks") or []}
    b_rows = {r.get("config"): r for r in (b.get("runtime") or {}).get("benchmarks") or []}
    a_memory, b_memory = _memory_by_config(a), _memory_by_config(b)
    out = []
    for config in list(dict.fromkeys([*a_rows, *b_rows])):
        ra, rb = a_rows.get(config) or {}, b_rows.get(config) or {}
        ma, mb = a_memory.get(config) or {}, b_memory.get(config) or {}
        out.append(
            {
                "config": config,
                **{
                    f"{side}_{field}": row.get(field)
                    for side, row in (("a", ra), ("b", rb))
                    for field in ("median_ms", "speedup_vs_eager", "speedup", "max_abs_error", "status")
                },
                **{
                    f"{side}_{field}": memory.get(field)
                    for side, memory in (("a", ma), ("b", mb))
                    for field in ("peak_bytes", "compression_ratio")
                },
                **{f"{side}_saved_bytes": _saved_bytes(memory) for side, memory in (("a", ma), ("b", mb))},
                "median_ms_delta": _delta(ra.get("median_ms"), rb.get("median_ms")),
                "peak_bytes_delta": _delta(ma.get("peak_bytes"), mb.get("peak_bytes")),
            }
        )
    return out


def _memory_by_config(report: dict) -> dict:
    return {m.get("config"): m for m in (report.get("debug") or {}).get("memory") or []}


def _saved_bytes(memory: dict) -> int | None:
    return (memory.get("saved_for_backward") or {}).get("bytes")


def compare(a: dict, b: dict, guard_counts: tuple[dict, dict] | None = None) -> dict:
    """Everything that differs between report ``a`` and report ``b`` (docs/report-schema.md, "Comparing two
    reports"). ``guard_counts``: each side's guards per compile id as the Dynamo tab counts them."""
    sa, sb = (summary(r, guard_counts[i] if guard_counts else None) for i, r in enumerate((a, b)))
    seconds_a = (a.get("runtime") or {}).get("compile_seconds") or {}
    seconds_b = (b.get("runtime") or {}).get("compile_seconds") or {}
    return {
        "summary": [{"metric": key, "a": sa[key], "b": sb[key], "delta": _delta(sa[key], sb[key])} for key in sa],
        "compile_seconds": [
            {
                "stage": key,
                "a": seconds_a.get(key),
                "b": seconds_b.get(key),
                "delta": _delta(seconds_a.get(key), seconds_b.get(key)),
            }
            for key in dict.fromkeys([*seconds_a, *seconds_b])
        ],
        "benchmarks": diff_benchmarks(a, b),
        "graphs": diff_graphs(a, b),
        "kernels": diff_kernels(a, b),
        "guards": diff_guards(a, b, guard_counts),
    }
