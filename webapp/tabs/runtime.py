"""The Runtime tab: the speedup ladder with its verdicts, compile time by stage (cold and warm), the compile and job
timelines, time per kernel, GPU busy against wall time. Reads the report's Runtime and Timeline models.

Every page says a rung's outcome the one way ``outcome`` decides it: a figure is quoted as a speedup only when
its confidence interval decides it (``speedup.decided``); an interval that lies wholly on one side of 1 decides
the direction (slower in every round) even when it is too wide for a figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from contract.report import Benchmark, Runtime, Timeline, TimelineSpan
from contract.vocab import CONFIGS
from webapp.numbers import figure, ms, seconds, times
from webapp.tabs import debug  # noqa: F401 - the debug section, drawn on this tab as view.debug (_debug.html)

# A compiled step whose GPU is busy less than this share of its wall time waits on the host (Python, guards,
# kernel launches): CUDA graphs (mode="reduce-overhead") remove most of that.
HOST_BOUND_BUSY_SHARE = 0.5
# The engine's verdict margins (contract Speedup.verdict): beyond them a speedup is faster or slower, not the same.
FASTER_ABOVE, SLOWER_BELOW = 1.02, 0.98


@dataclass(frozen=True)
class Outcome:
    """What one rung's timing decides against plain eager.

    kind: faster, slower, same (a decided figure: ``speedup.decided``); faster_every_round, slower_every_round
    (the interval lies wholly past the margin but is too wide for a figure); undecided; baseline (eager itself);
    failed; unmeasured (no speedup recorded)."""

    kind: str
    words: str
    """the outcome in words, for a table cell or a headline"""

    @property
    def direction(self) -> str | None:
        """faster, slower or same when the rounds decide it, else None."""
        return {"faster_every_round": "faster", "slower_every_round": "slower"}.get(
            self.kind, self.kind if self.kind in ("faster", "slower", "same") else None
        )

    @property
    def decided(self) -> bool:
        """The figure itself is decided (it may be quoted)."""
        return self.kind in ("faster", "slower", "same", "baseline")


def outcome(benchmark: Benchmark) -> Outcome:
    if benchmark.config == "eager":
        return Outcome("baseline", "the baseline")
    if benchmark.status != "ok":
        return Outcome("failed", "failed")
    speedup = benchmark.speedup
    if speedup is None or speedup.value is None:
        return Outcome("unmeasured", "not measured")
    if speedup.decided:
        return Outcome(speedup.verdict or "same", speedup.text or f"{times(speedup.value)}")
    spread = f"{figure(speedup.low)}-{times(speedup.high)}" if speedup.low is not None else None
    rounds = f" over {benchmark.rounds} rounds" if benchmark.rounds else ""
    # With 7 rounds the interval is the rounds' whole range: past the margin, every round was.
    every = "in every round" if (benchmark.rounds or 0) <= 7 else "with 90% confidence"
    if speedup.source == "processes":  # the interval holds each fresh process's own 90% interval
        rounds, every = "", f"in each of {len(speedup.processes)} fresh processes"
    if speedup.high is not None and speedup.high < SLOWER_BELOW:
        return Outcome(
            "slower_every_round", f"slower than eager {every} ({spread}{rounds}); by how much is not decided"
        )
    if speedup.low is not None and speedup.low > FASTER_ABOVE:
        return Outcome(
            "faster_every_round", f"faster than eager {every} ({spread}{rounds}); by how much is not decided"
        )
    return Outcome("undecided", speedup.text or "not decided")


def speedup_text(benchmark: Benchmark) -> str | None:
    """A rung's speedup in words: the figure with its spread, or "not decided" with why (never a bare number)."""
    return outcome(benchmark).words if benchmark.speedup is not None or benchmark.config == "eager" else None


def speedup_decided(benchmark: Benchmark) -> bool:
    return outcome(benchmark).decided


NOTABLE_PAGE_FAULTS = 50  # per step: a step that faults in this many pages pays for it in time


def page_fault_notes(benchmarks: list[Benchmark]) -> list[str]:
    """Rungs whose step faults pages in again and again, in words (most steps fault none)."""
    return [
        f"{b.config}: {b.page_faults_per_step:,.0f} page faults per step: memory the allocator returned to "
        "the OS and takes back each step, which this step's time includes."
        for b in benchmarks
        if b.page_faults_per_step is not None and b.page_faults_per_step >= NOTABLE_PAGE_FAULTS
    ]


def cudagraph_note(benchmark: Benchmark) -> str | None:
    """The rung's CUDA-graph status in a few words, for beside its bar."""
    status = benchmark.cudagraphs.status
    if status in (None, "not_requested"):
        return None
    if status == "used":
        n = benchmark.cudagraphs.rerecords or 0
        return "CUDA graphs used" + (f", re-recorded {n}x" if n else "")
    if status == "skipped":
        return "CUDA graphs skipped"
    return "no CUDA graphs (CPU)"


def benchmark_rows(runtime: Runtime) -> dict:
    """The ladder's table: {rows, gpu_busy (any rung has a GPU-busy time)}. Each row: the rung, its figures
    formatted for people and its outcome. A config's name, what it runs and its CUDA-graph status share one cell,
    a median, its spread and GPU-busy time another, correctness and the largest error a third: six columns, which
    fit beside the source pane at 1280 px."""
    rows = []
    for b in runtime.benchmarks:
        c = b.correctness
        correctness = None
        if c is not None and c.verdict:
            correctness = c.verdict + (f" (tol {c.atol:.0e})" if c.atol is not None else "")
            if c.verdict != "match" and c.reason:
                correctness += f": {c.reason}"
            elif c.random_stream:  # a model that draws random numbers: say how both sides drew the same ones
                correctness += f"; random numbers: {c.random_stream}"
        rows.append(
            {
                "benchmark": b,
                "outcome": outcome(b),
                "median": ms(b.median_ms) if b.median_ms is not None else None,
                "spread": f"{figure(b.p10_ms)}-{ms(b.p90_ms)}" if b.p10_ms is not None else None,
                "latency": ms(b.latency_ms) if b.latency_ms is not None else None,
                "first_call": ms(b.first_call_ms) if b.first_call_ms is not None else None,
                "correctness": correctness,
                "max_error": f"{b.max_abs_error:.2g}" if b.max_abs_error is not None else None,
                "cudagraphs": b.cudagraphs.status.replace("_", " ")
                if b.cudagraphs.status not in (None, "not_requested")
                else None,
                "gpu_busy": ms(b.gpu_busy_ms) if b.gpu_busy_ms is not None else None,
                **across_processes(b),
            }
        )
    return {"rows": rows, "gpu_busy": any(row["gpu_busy"] for row in rows)}


def across_processes(benchmark: Benchmark) -> dict:
    """A rung's figures across the fresh measuring processes (runtime.processes) beside the capture process's own:
    {processes: "median (lowest-highest process median, N fresh processes)", processes_reading: how far it holds
    in words (noisy, host-bound), capture_speedup: the capture process's speedup in words}, each None where not measured. The Median column then reads the processes' figure
    first, the job's own process labelled under it."""
    p = benchmark.processes
    figure_text = None
    if p is not None:
        n = len(p.process_medians_ms)
        figure_text = f"{ms(p.median_ms)} ({figure(p.low_ms)}-{ms(p.high_ms)} over {n} fresh process{'es' * (n != 1)})"
    capture = benchmark.capture_speedup
    return {
        "processes": figure_text,
        "processes_reading": p.reading if p is not None else None,
        "capture_speedup": capture.text if capture is not None else None,
    }


def runtime_headline(runtime: Runtime) -> list[str]:
    """The Runtime tab's opening sentences: correctness first (where the ladder diverges), then what was timed and
    how noisy the machine was."""
    lines = []
    if runtime.correctness.text:
        lines.append(runtime.correctness.text)
    if runtime.mode.kind:
        lines.append(f"Timed as {runtime.mode.kind}" + (f" ({runtime.mode.reason})." if runtime.mode.reason else "."))
    if runtime.load.text:
        lines.append(f"Machine {runtime.load.text}.")
    outcomes = [(b.config, outcome(b)) for b in runtime.benchmarks if b.status == "ok" and b.config != "eager"]
    lines += [f"{config}: {o.words}." for config, o in outcomes if o.kind.endswith("_every_round")]
    undecided = [config for config, o in outcomes if o.kind == "undecided"]
    # Undecided because the fresh measuring processes disagree with each other (runtime.processes): say that, with
    # their figures, rather than blame one process's spread.
    texts = {b.config: b.speedup.text or "" for b in runtime.benchmarks if b.speedup is not None}
    disagree = [c for c in undecided if "processes disagree" in texts.get(c, "")]
    lines += [f"Speedup not decided for {c}: {texts[c].removeprefix('not decided: ')}." for c in disagree]
    undecided = [c for c in undecided if c not in disagree]
    if undecided and runtime.load.contended:
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


def ladder_chart(benchmarks: list[Benchmark]) -> dict | None:
    """Speedup over plain eager per config (median of paired rounds), a 90% confidence interval of it as error
    bars; an undecided speedup is drawn pale and labelled so, and each rung's CUDA-graph status sits beside its
    bar."""
    rows = [b for b in benchmarks if b.status == "ok" and b.median_ms]
    eager = next((b for b in rows if b.config == "eager"), None)
    if not eager or not rows:
        return None
    base = eager.median_ms or 0.0
    speedups: list[float] = []
    high: list[float] = []
    low: list[float] = []
    labels: list[str] = []
    for b in rows:
        s = b.speedup
        value = s.value if s and s.value is not None else base / (b.median_ms or 1.0)
        speedups.append(value)
        high.append(s.high - value if s and s.high is not None else 0)
        low.append(value - s.low if s and s.low is not None else 0)
        decided = outcome(b)
        label = (
            times(value)
            if decided.decided
            else (f"{decided.direction} ({times(value)})" if decided.direction else f"not decided ({times(value)})")
        )
        note = cudagraph_note(b)
        labels.append(f"{label}<br>{note}" if note else label)
    colors = ["#9aa5b1" if b.config == "eager" else "#b8460b" if speedup_decided(b) else "#e3b89c" for b in rows]
    return {
        "data": [
            {
                "type": "bar",
                "x": [b.config for b in rows],
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
    """runtime.compile_seconds (as a dict) with stages that add up to the total. Reports stored before the stages
    were exclusive (no "other": null once validated) counted the backward's Inductor time in inductor/codegen as
    well as in backward: there the forward's Inductor and code generation are shown as one stage, the backward
    taken out of it."""
    if not compile_seconds or compile_seconds.get("other") is not None or compile_seconds.get("total") is None:
        return compile_seconds or {}
    legacy = dict(compile_seconds)
    merged = (legacy.pop("inductor", 0) or 0) + (legacy.pop("codegen", 0) or 0) - (legacy.get("backward") or 0)
    legacy["inductor_and_codegen"] = round(max(0.0, merged), 4)
    return legacy


def compile_runs(runtime: Runtime) -> list[dict]:
    """Each compile of the same model that was timed, as {key, label, status, reason, seconds, caches}: the recorded
    (cold) compile and, where measured, the warm ones (runtime.compile_cache)."""
    runs = []
    for key, label in COMPILE_RUNS:
        entry = getattr(runtime.compile_cache, key)
        if key == "cold":  # the recorded compile: its seconds are the runtime's own where no cold entry was kept
            status, reason, wall = "ok", None, None
            compile_seconds = entry.seconds if entry else runtime.compile_seconds
        elif entry is None:
            continue
        else:
            status, reason, wall, compile_seconds = entry.status, entry.reason, entry.wall_seconds, entry.seconds
        runs.append(
            {
                "key": key,
                "label": label,
                "status": status,
                "reason": reason,
                "seconds": {
                    "total": None,
                    **exclusive_compile_seconds(compile_seconds.model_dump() if compile_seconds else {}),
                },
                "caches": entry.caches if entry and entry.caches else None,
                "wall_seconds": wall,
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
            value, total = run["seconds"].get(key), run["seconds"].get("total")
            cells.append(
                {"seconds": value, "share": value / total if isinstance(value, (int, float)) and total else None}
            )
        rows.append({"key": key, "label": label, "cells": cells})
    return rows


def compile_stage_chart(runtime: Runtime) -> dict | None:
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
        "text": [seconds(run["seconds"]["total"]) for run in runs],
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


def timeline_chart(timeline: list[TimelineSpan], limit: int = 80) -> dict | None:
    """The compile as a Gantt chart: one row per traced event, indented by nesting depth, longest kept."""
    events = list(timeline)
    if not events:
        return None
    if len(events) > limit:
        keep = {id(e) for e in sorted(events, key=lambda e: -e.dur_ms)[:limit]}
        events = [e for e in events if id(e) in keep]
    events.sort(key=lambda e: (e.start_ms, e.depth))
    labels = [f"{'· ' * e.depth}{e.name} [{e.compile_id}] #{i}" for i, e in enumerate(events)]
    palette = ["#3f6ea5", "#b8460b", "#1f7a3a", "#8e5bd0", "#c0392b", "#2c8c99", "#a07d00"]
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "y": labels,
                "x": [e.dur_ms for e in events],
                "base": [e.start_ms for e in events],
                "marker": {"color": [palette[e.depth % len(palette)] for e in events]},
                "customdata": [[e.name, e.dur_ms] for e in events],
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


def job_timeline_chart(timeline: Timeline) -> dict | None:
    """The job's wall time as a Gantt chart: one row per phase in time order (parts of a phase indented below
    it), coloured by the side that measured it; untracked gaps in light grey."""
    phases = timeline.phases
    if not phases:
        return None
    traces = []
    for side, color in SIDE_COLORS.items():
        mine = [(i, p) for i, p in enumerate(phases) if p.side == side]
        if not mine:
            continue
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": side,
                "y": [_phase_label(i, p) for i, p in mine],
                "x": [max(p.end_s - p.start_s, 0.001) for _, p in mine],
                "base": [p.start_s for _, p in mine],
                "marker": {"color": ["#d5d9de" if p.phase == "untracked" else color for _, p in mine]},
                "customdata": [[p.phase, p.end_s - p.start_s, p.start_s] for _, p in mine],
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
                    "text": "seconds since " + ("the request" if timeline.origin == "request" else "the job started")
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


def _phase_label(index: int, phase) -> str:
    config = f" ({phase.config})" if phase.config else ""
    prestart = "prestart: " if phase.prestart else ""  # the prestarted child, before the job reached it
    return f"{'· ' * phase.depth}{prestart}{phase.phase}{config} #{index}"


def kernel_time_chart(runtime: Runtime, limit: int = 20) -> dict | None:
    rows = sorted(runtime.kernel_profile, key=lambda r: -r.total_ms)[:limit]
    if not rows:
        return None
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "y": [r.kernel or r.name for r in rows],
                "x": [r.total_ms for r in rows],
                "marker": {"color": ["#b8460b" if r.generated else "#9aa5b1" for r in rows]},
                "text": [f"{100 * r.share:.1f}%" for r in rows],
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


def busy_chart(benchmarks: list[Benchmark]) -> dict | None:
    """Launch overhead at a glance: each rung's step as one bar, GPU busy time below and the host's share (wall
    time less GPU busy: launches, guards, Python) stacked on it, so that the bar's height is the measured step."""
    steps = [(b.config, b.gpu_busy_ms, b.median_ms) for b in benchmarks if b.gpu_busy_ms is not None and b.median_ms]
    if not steps:
        return None
    configs = [config for config, _, _ in steps]
    busy = [min(gpu, step) for _, gpu, step in steps]
    return {
        "data": [
            {
                "type": "bar",
                "name": "GPU busy",
                "x": configs,
                "y": busy,
                "marker": {"color": "#1f7a3a"},
                "hovertemplate": "%{x}: GPU busy %{y:.4g} ms per step<extra></extra>",
            },
            {
                "type": "bar",
                "name": "host overhead (launches, guards, Python)",
                "x": configs,
                "y": [step - used for (_, _, step), used in zip(steps, busy)],
                "marker": {"color": "#c2703d"},
                "hovertemplate": "%{x}: host %{y:.4g} ms per step<extra></extra>",
            },
        ],
        "layout": {"barmode": "stack", "yaxis": {"title": {"text": "ms per step (the bar: the measured step)"}}},
    }


def autotune_decisions(runtime: Runtime) -> list[dict]:
    """Each autotuning decision as the Runtime tab lists it: the rung, what was compared (an op's algorithms or a
    kernel's configs), the winner, how much faster it was than the library call (algorithms) or the runner-up,
    and every choice with its time relative to the winner's."""
    rows = []
    for decision in runtime.autotune:
        choices = decision.choices
        chosen = next((c for c in choices if c.chosen), None)
        timed = [c for c in choices if c.ms is not None]
        library = next((c for c in timed if c.kind == "library"), None)
        against = library if decision.kind == "algorithm" and library and library is not chosen else None
        if against is None and len(timed) > 1:
            against = next(c for c in timed if c is not chosen)
        rows.append(
            {
                "config": decision.config,
                "kind": "algorithms" if decision.kind == "algorithm" else "Triton configs",
                "op": decision.op,
                "inputs": decision.inputs,
                "chosen": chosen,
                "against": against,
                "gain": against.ms / chosen.ms if chosen and against and against.ms and chosen.ms else None,
                "failed": sum(c.ms is None for c in choices),
                "choices": [
                    {"choice": c, "relative": c.ms / chosen.ms if chosen and chosen.ms and c.ms is not None else None}
                    for c in choices
                ],
            }
        )
    return rows


def host_bound_diagnosis(benchmarks: list[Benchmark]) -> list[str]:
    """Plain words for each compiled config whose GPU mostly waits on the host."""
    by_config = {b.config: b for b in benchmarks}
    notes = []
    for b in benchmarks:
        busy, wall = b.gpu_busy_ms, b.median_ms
        if busy is None or not wall or b.config == "eager":
            continue
        share = busy / wall
        if share >= HOST_BOUND_BUSY_SHARE:
            notes.append(
                f"{b.config}: the GPU is busy {share:.0%} of each step ({figure(busy)} of {ms(wall)}): "
                "GPU-bound, the kernels themselves set the pace."
            )
            continue
        note = (
            f"{b.config}: host-bound. The GPU is busy only {share:.0%} of each step ({figure(busy)} of "
            f"{ms(wall)}); the rest is Python, guards and kernel launches."
        )
        if not (b.config in CONFIGS and CONFIGS[b.config].cudagraphs):
            note += ' mode="reduce-overhead" (CUDA graphs) replays the whole step with one launch, removing most of it'
            ro = by_config.get("inductor_reduce_overhead")
            if ro and ro.median_ms and ro.median_ms < wall:
                note += f": measured here, {ms(ro.median_ms)} per step ({times(wall / ro.median_ms)} faster)."
            elif ro and ro.median_ms:
                note += (
                    f"; measured here it was not faster ({ms(ro.median_ms)} per step): the replay's own "
                    "cost outweighs the launches saved at this size."
                )
            else:
                note += "; add the inductor_reduce_overhead config to measure it."
        notes.append(note)
    return notes
