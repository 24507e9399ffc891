"""The Runtime tab: the speedup ladder with its verdicts, compile time by stage (cold and warm), the compile and job
timelines, time per kernel, GPU busy against wall time."""

from __future__ import annotations

# A compiled step whose GPU is busy less than this share of its wall time waits on the host (Python, guards,
# kernel launches): CUDA graphs (mode="reduce-overhead") remove most of that.
HOST_BOUND_BUSY_SHARE = 0.5


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
