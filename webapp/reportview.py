"""What the report tabs draw, shaped from the stored report sections (docs/report-schema.md); never imports torch.

Graph ids, lookup and stored graph payloads are the report's vocabulary: contract/graphs.py.
"""
from __future__ import annotations

from collections import defaultdict

# The templates call these as view.*: the graph vocabulary lives in contract/graphs.py.
from contract import graphs
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
    ceiling = measured_bandwidth if isinstance(measured_bandwidth, (int, float)) and measured_bandwidth > 0 \
        else copy_bandwidth_ceiling(device_name)
    kernels = inductor.get("kernels") or []
    # Inductor counts bytes for the whole compile (metrics.num_bytes_accessed); with one kernel they are its bytes.
    total_bytes = (inductor.get("metrics") or {}).get("num_bytes_accessed")
    rows = []
    for kernel in kernels:
        measured = profile.get(kernel.get("name")) or {}
        total_ms, calls = measured.get("total_ms"), measured.get("calls") or 0
        bytes_accessed = kernel.get("bytes_accessed") or (total_bytes if len(kernels) == 1 else None)
        bandwidth = (bytes_accessed * calls / (total_ms / 1e3)
                     if bytes_accessed and total_ms and calls else None)
        rows.append({**kernel, "bytes_accessed": bytes_accessed, "total_ms": total_ms, "calls": calls or None, "share": measured.get("share"),
                     "bandwidth": bandwidth, "roofline_share": bandwidth / ceiling if bandwidth and ceiling else None})
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
    for i, graph in enumerate(inductor.get("post_grad_graphs") or []):
        if graph.get("compile_id") == kernel.get("compile_id") and graph.get("kind") == kernel.get("graph_kind"):
            return graphs.post_grad_graph(i)
    return None


def fusion_summary(decisions: list[dict]) -> list[dict]:
    """Inductor's fusion decisions in plain words, per (compile id, graph kind), with counts."""
    groups: dict[tuple, dict] = {}
    for decision in decisions:
        key = (decision.get("compile_id"), decision.get("kind"))
        group = groups.setdefault(key, {"compile_id": key[0], "kind": key[1], "fused": [], "not_fused": [],
                                        "reasons": defaultdict(int)})
        count = decision.get("count") or 1
        first = _scheduler_node(decision.get("first"), decision.get("first_ops"))
        second = _scheduler_node(decision.get("second"), decision.get("second_ops"))
        if decision.get("action") == "fused":
            group["fused"].append({"text": f"fused {first} with {second}", "count": count})
        else:
            reason = decision.get("reason") or "no reason recorded"
            group["not_fused"].append({"text": f"did not fuse {first} with {second}: {reason}", "count": count})
            group["reasons"][reason] += count
    for group in groups.values():
        group["reasons"] = sorted(group["reasons"].items(), key=lambda item: -item[1])
    return list(groups.values())


def _scheduler_node(name, ops, shown: int = 6) -> str:
    ops = list(dict.fromkeys(ops or []))
    if not ops:
        return str(name)
    listed = ", ".join(ops[:shown]) + (f", +{len(ops) - shown} more" if len(ops) > shown else "")
    return f"{name} ({listed})"


def ir_pairs(inductor: dict) -> list[dict]:
    """Scheduler IR before and after fusion, matched by compile id and graph kind."""
    after = {(ir.get("compile_id"), ir.get("kind")): ir for ir in inductor.get("ir_post_fusion") or []}
    return [{"compile_id": ir.get("compile_id"), "kind": ir.get("kind"), "before": ir.get("text") or "",
             "after": (after.get((ir.get("compile_id"), ir.get("kind"))) or {}).get("text") or ""}
            for ir in inductor.get("ir_pre_fusion") or []]


# Dynamo


def source_context(code: str, line: int | None, around: int = 2) -> list[dict]:
    """The user's lines around ``line``: [{number, text, focus}]."""
    lines = code.splitlines()
    if not isinstance(line, int) or not 1 <= line <= len(lines):
        return []
    return [{"number": n, "text": lines[n - 1], "focus": n == line}
            for n in range(max(1, line - around), min(len(lines), line + around) + 1)]


def guards_by_compile_id(dynamo: dict) -> list[dict]:
    """Each compiled frame's guards, with the recompile (which guard failed) that led to it, if any."""
    recompiles = defaultdict(list)
    for recompile in dynamo.get("recompiles") or []:
        recompiles[recompile.get("compile_id")].append(recompile)
    rows = []
    for guard in dynamo.get("guards") or []:
        text = guard.get("text") or ""
        rows.append({"compile_id": guard.get("compile_id"), "text": text.strip("\n"),
                     "count": sum(1 for line in text.splitlines() if "GUARD" in line or "GLOBAL_STATE" in line),
                     "recompiles": recompiles.pop(guard.get("compile_id"), [])})
    for compile_id, orphans in recompiles.items():  # a recompile whose guards were not recorded
        rows.append({"compile_id": compile_id, "text": "", "count": 0, "recompiles": orphans})
    return rows


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
    undecided = [b["config"] for b in runtime.get("benchmarks") or []
                 if b.get("status") == "ok" and b.get("config") != "eager" and not speedup_decided(b)]
    if undecided:
        lines.append(f"Speedup not decided for {', '.join(undecided)}: the rounds' spread is too wide to quote a "
                     "figure (measurements too noisy).")
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
    return {"data": [{"type": "bar", "x": [b["config"] for b in rows], "y": speedups,
                      "text": labels, "textposition": "inside", "insidetextanchor": "end",
                      "marker": {"color": colors},
                      "error_y": {"type": "data", "symmetric": False, "array": high, "arrayminus": low,
                                  "color": "#1d232a"},
                      "customdata": [speedup_text(b) or "" for b in rows],
                      "hovertemplate": "%{x}: %{customdata}<extra></extra>"}],
            "layout": {"yaxis": {"title": {"text": "speedup over plain eager (×)"}, "rangemode": "tozero"},
                       "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                                   "line": {"dash": "dot", "color": "#68717d"}}]}}


COMPILE_STAGES = (("dynamo", "Dynamo (whole frame)"), ("aot_autograd", "AOTAutograd + backend"),
                  ("inductor", "Inductor"), ("codegen", "code generation"), ("backward", "backward compile"))


def compile_stage_chart(compile_seconds: dict) -> dict | None:
    stages = [(label, compile_seconds.get(key)) for key, label in COMPILE_STAGES
              if isinstance(compile_seconds.get(key), (int, float))]
    if not any(seconds for _, seconds in stages):
        return None
    return {"data": [{"type": "bar", "orientation": "h", "y": [label for label, _ in stages],
                      "x": [seconds for _, seconds in stages], "marker": {"color": "#3f6ea5"},
                      "text": [f"{seconds:.2f} s" for _, seconds in stages], "textposition": "auto",
                      "hovertemplate": "%{y}: %{x:.3f} s<extra></extra>"}],
            "layout": {"xaxis": {"title": {"text": "seconds (stages nest: each includes the ones below it)"}},
                       "yaxis": {"autorange": "reversed"}, "margin": {"l": 170}}}


def timeline_chart(timeline: list[dict], limit: int = 80) -> dict | None:
    """The compile as a Gantt chart: one row per traced event, indented by nesting depth, longest kept."""
    events = [e for e in timeline if isinstance(e.get("dur_ms"), (int, float))]
    if not events:
        return None
    if len(events) > limit:
        keep = {id(e) for e in sorted(events, key=lambda e: -e["dur_ms"])[:limit]}
        events = [e for e in events if id(e) in keep]
    events.sort(key=lambda e: (e.get("start_ms") or 0, e.get("depth") or 0))
    labels = [f"{'· ' * (e.get('depth') or 0)}{e.get('name')} [{e.get('compile_id')}] #{i}"
              for i, e in enumerate(events)]
    palette = ["#3f6ea5", "#b8460b", "#1f7a3a", "#8e5bd0", "#c0392b", "#2c8c99", "#a07d00"]
    return {"data": [{"type": "bar", "orientation": "h", "y": labels, "x": [e["dur_ms"] for e in events],
                      "base": [e.get("start_ms") or 0 for e in events],
                      "marker": {"color": [palette[(e.get("depth") or 0) % len(palette)] for e in events]},
                      "customdata": [[e.get("name"), e["dur_ms"]] for e in events],
                      "hovertemplate": "%{customdata[0]}: %{customdata[1]:.1f} ms<extra></extra>"}],
            "layout": {"height": max(260, 16 * len(events) + 80), "xaxis": {"title": {"text": "ms since the compile began"}},
                       "yaxis": {"autorange": "reversed", "showticklabels": True, "tickfont": {"size": 10}},
                       "margin": {"l": 300}, "bargap": 0.15}}


def kernel_time_chart(kernel_profile: list[dict], limit: int = 20) -> dict | None:
    rows = sorted((r for r in kernel_profile if isinstance(r.get("total_ms"), (int, float))),
                  key=lambda r: -r["total_ms"])[:limit]
    if not rows:
        return None
    return {"data": [{"type": "bar", "orientation": "h", "y": [r.get("kernel") or r.get("name") for r in rows],
                      "x": [r["total_ms"] for r in rows],
                      "marker": {"color": ["#b8460b" if r.get("generated") else "#9aa5b1" for r in rows]},
                      "text": [f"{100 * (r.get('share') or 0):.1f}%" for r in rows], "textposition": "auto",
                      "hovertemplate": "%{y}: %{x:.4f} ms per step<extra></extra>"}],
            "layout": {"height": max(220, 22 * len(rows) + 80), "yaxis": {"autorange": "reversed"},
                       "xaxis": {"title": {"text": "ms per step (orange: generated by Inductor; grey: library calls)"}},
                       "margin": {"l": 330}}}


def busy_chart(benchmarks: list[dict]) -> dict | None:
    rows = [b for b in benchmarks if isinstance(b.get("gpu_busy_ms"), (int, float)) and b.get("median_ms")]
    if not rows:
        return None
    configs = [b["config"] for b in rows]
    return {"data": [{"type": "bar", "name": "wall time per step", "x": configs, "y": [b["median_ms"] for b in rows],
                      "marker": {"color": "#9aa5b1"}},
                     {"type": "bar", "name": "GPU busy per step", "x": configs, "y": [b["gpu_busy_ms"] for b in rows],
                      "marker": {"color": "#1f7a3a"}}],
            "layout": {"barmode": "group", "yaxis": {"title": {"text": "ms"}}}}


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
            notes.append(f"{b['config']}: the GPU is busy {share:.0%} of each step ({busy:.3f} of {wall:.3f} ms): "
                         "GPU-bound, the kernels themselves set the pace.")
            continue
        note = (f"{b['config']}: host-bound. The GPU is busy only {share:.0%} of each step ({busy:.3f} of "
                f"{wall:.3f} ms); the rest is Python, guards and kernel launches.")
        if b.get("mode") != "reduce-overhead":
            note += ' mode="reduce-overhead" (CUDA graphs) replays the whole step with one launch, removing most of it'
            ro = by_config.get("inductor_reduce_overhead") or {}
            if ro.get("median_ms") and ro["median_ms"] < wall:
                note += f": measured here, {ro['median_ms']:.3f} ms per step ({wall / ro['median_ms']:.2f}x faster)."
            elif ro.get("median_ms"):
                note += (f"; measured here it was not faster ({ro['median_ms']:.3f} ms per step): the replay's own "
                         "cost outweighs the launches saved at this size.")
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
    traces = [{"type": "bar", "name": name, "x": ops, "y": [histogram.get(op, 0) for op in ops],
               "marker": {"color": color}}
              for name, histogram, color in (("before decomposition", before, "#9aa5b1"),
                                             ("after (forward / inference)", after, "#b8460b"),
                                             ("after (backward)", backward, "#3f6ea5")) if histogram]
    return {"data": traces, "layout": {"barmode": "group", "yaxis": {"title": {"text": "nodes"}},
                                       "xaxis": {"tickangle": -30}}}
