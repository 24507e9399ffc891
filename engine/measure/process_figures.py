"""The Runtime figures across the measuring processes (runtime.processes), torch-free: what each fresh process
timed (engine.stages.runtime.processes.time_here, in engine/warm.py) merged into the report by the child that
spawned them, the capture process's or a deferred job's (engine/child.py), which then needs no torch."""

from __future__ import annotations

import statistics

from engine.measure.stats import quantile, speedup_across_processes

METHOD = (
    "the ladder's interleaved timed rounds, run again in each fresh warm-compile process (engine/warm.py) after its "
    "compile, with the log tap detached and no capture hooks, in the job's folder and sandbox with its caches warm: "
    "each figure is the median of the processes' medians, its spread across processes their lowest and highest "
    "median, and a speedup is decided only when every process decided its own and their medians agree within 10%"
)


def process_run(label: str, result: dict) -> dict:
    """One measuring process as the report shows it (runtime.processes.runs[])."""
    timing = result.get("timing") or {}
    if result.get("status") != "ok" or not timing.get("rounds_ms"):
        reason = result.get("reason") or "; ".join(timing.get("errors") or []) or "no config was timed"
        return {"label": label, "status": "failed", "reason": reason[-2000:]}
    rounds = timing["rounds_ms"]
    eager = rounds.get("eager")
    load = timing.get("load") or {}
    return {
        "label": label,
        "status": "ok",
        "reason": "; ".join(timing.get("errors") or []) or None,
        "rounds": max(len(r) for r in rounds.values()),
        "medians_ms": {n: round(statistics.median(r), 4) for n, r in rounds.items()},
        "p10_ms": {n: round(quantile(r, 0.1), 4) for n, r in rounds.items()},
        "p90_ms": {n: round(quantile(r, 0.9), 4) for n, r in rounds.items()},
        "speedups": {
            n: round(statistics.median([e / t for e, t in zip(eager, r) if t > 0]), 4)
            for n, r in rounds.items()
            if eager and n != "eager"
        },
        "contended": bool(load.get("contended")),
        "load": load.get("text"),
        "wall_seconds": result.get("wall_seconds"),
    }


NOISY_SPREAD = 0.05  # processes' medians further apart than this (of their median) are called noisy
HOST_BOUND_BUSY = 0.6  # a GPU step whose kernels keep the GPU busy for less of it than this is host-bound


def reading(medians: list[float], median: float, gpu_busy_ms: float | None) -> str:
    """How far a figure across processes holds, in words (benchmarks[].processes.reading). On an H200 host a
    host-bound step's process medians moved 11-59% from one fresh process to the next while GPU-bound ones agreed
    within 1-2% (docs/benchmarks.md, "GPU: the job across fresh processes against a user's loop")."""
    n, apart = len(medians), (max(medians) - min(medians)) / median if median else 0.0
    words = [
        f"noisy: the {n} processes' medians are {apart:.0%} apart"
        if apart > NOISY_SPREAD
        else f"the {n} processes agree within {apart:.0%}"
    ]
    if gpu_busy_ms is not None and median:
        busy = gpu_busy_ms / median
        words.append(
            f"host-bound: the GPU is busy for {busy:.0%} of the step, so this is the host's launch speed, which "
            "moves from process to process and core to core"
            if busy < HOST_BOUND_BUSY
            else f"GPU-bound: the GPU is busy for {min(busy, 1):.0%} of the step"
        )
    return "; ".join(words)


def merge_processes(rt: dict, results: dict[str, dict]) -> None:
    """The Runtime figures across the measuring processes (``results``: label -> engine/warm.py's output): fills
    runtime.processes, and for every timed config `processes` (its medians across processes) and `speedup` (decided
    across processes), keeping the capture process's own as `capture_speedup`."""
    runs = [process_run(label, result) for label, result in results.items()]
    ok = [(run, results[run["label"]]["timing"]["rounds_ms"]) for run in runs if run["status"] == "ok"]
    rt["processes"] = {
        "status": "ok" if len(ok) >= 2 else "failed",
        "reason": None if len(ok) >= 2 else f"{len(ok)} of {len(runs)} measuring processes timed the configs",
        "method": METHOD,
        "runs": runs,
    }
    contended = [run["label"] for run, _ in ok if run["contended"]]
    contended_by = (
        f"the machine was busy in every round of the {' and '.join(contended)} process{'es' * (len(contended) > 1)}"
        if contended
        else None
    )
    for entry in rt.get("benchmarks") or []:
        name = entry["config"]
        medians = [run["medians_ms"][name] for run, rounds in ok if name in rounds]
        if entry["status"] != "ok" or not medians:
            continue
        median = round(statistics.median(medians), 4)
        entry["processes"] = {
            "median_ms": median,
            "low_ms": min(medians),
            "high_ms": max(medians),
            "process_medians_ms": medians,
            "reading": reading(medians, median, entry.get("gpu_busy_ms")),
        }
        if name == "eager" or entry.get("speedup") is None:
            continue
        paired = [(rounds["eager"], rounds[name]) for _, rounds in ok if "eager" in rounds and name in rounds]
        entry["capture_speedup"] = {**entry["speedup"], "source": "capture_process"}
        entry["speedup"] = speedup_across_processes(
            [e for e, _ in paired], [r for _, r in paired], contended_by=contended_by
        )
        entry["speedup_vs_eager"] = entry["speedup"]["value"]
