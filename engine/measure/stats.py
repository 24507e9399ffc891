"""The statistics of timed rounds: quantiles, a distribution-free confidence interval of the median, and a paired
speedup that says whether its interval decides it. Torch-free."""

from __future__ import annotations

import math
import statistics

MEDIAN_COVERAGE = 0.9  # the speedup's low-high: a distribution-free 90% confidence interval of the median
DECIDED_RATIO = 1.2  # a speedup is decided when its median's confidence interval lies within a 20% band
SAME_BAND = 0.02  # a decided speedup within 2% of 1 reads "same"


def median_interval(values: list[float], coverage: float = MEDIAN_COVERAGE) -> tuple[float, float]:
    """A distribution-free confidence interval of the median: the order statistics x(k) and x(n+1-k), k the
    largest with P(Binomial(n, 1/2) < k) <= (1 - coverage) / 2. With 7 values that is their whole range (98%), with
    14 the 4th to 11th, with 21 the 7th to 15th: more rounds narrow it, whatever the noise's distribution."""
    xs = sorted(values)
    n, alpha = len(xs), (1 - coverage) / 2
    k, below = 0, 0.0
    for j in range(n):
        below += math.comb(n, j) / 2**n
        if below > alpha:
            break
        k = j + 1
    return (xs[k - 1], xs[n - k]) if k else (xs[0], xs[-1])


def speedup(eager_rounds: list[float], rounds: list[float], *, contended_by: str | None = None) -> dict:
    """Paired per-round speedup (eager's round over this config's: they ran side by side): the median, a 90%
    confidence interval of it, and whether that interval decides the figure. ``contended_by``: why rounds timed
    under contention (CpuWindow) decide nothing, however narrow their interval."""
    ratios = [e / r for e, r in zip(eager_rounds, rounds) if r > 0]
    if not ratios:
        return {"value": None, "low": None, "high": None, "decided": False, "verdict": None, "text": "not measured"}
    value = statistics.median(ratios)
    low, high = median_interval(ratios)
    decided = low > 0 and high / low <= DECIDED_RATIO and not contended_by
    why = None if decided else contended_by or "measurements too noisy"
    return decided_speedup(value, low, high, why, "", f"over {len(ratios)} rounds")


def decided_speedup(value: float, low: float, high: float, why: str | None, basis: str, over: str) -> dict:
    """A speedup figure as the report holds it: decided when there is no ``why`` (then faster, slower or the same
    by where its interval lies), its text the figure with its interval and ``basis`` (", 2 fresh processes: ..."),
    or "not decided: why" with the interval ``over`` what it was measured."""
    verdict = None
    if why is None:
        verdict = "faster" if low > 1 + SAME_BAND else "slower" if high < 1 - SAME_BAND else "same"
    word = {"faster": "faster", "slower": "slower"}.get(verdict or "", "no measurable difference")
    return {
        "value": round(value, 4),
        "low": round(low, 4),
        "high": round(high, 4),
        "decided": why is None,
        "verdict": verdict,
        "text": f"{value:.2f}x {word} ({low:.2f}-{high:.2f}{basis})"
        if why is None
        else f"not decided: {why} ({low:.2f}-{high:.2f}x {over})",
    }


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


AGREE_RATIO = 1.1  # processes agree when their median speedups lie within a 10% band


def speedup_across_processes(
    eager_by_process: list[list[float]], rounds_by_process: list[list[float]], *, contended_by: str | None = None
) -> dict:
    """The speedup of a config measured in several fresh processes, each with its own paired rounds (eager's and
    this config's, side by side in that process): the median of the processes' medians, an interval that holds
    every process's 90% interval (so what differs from one process to the next, the address-space layout, the
    allocator's history, where the threads landed, is in it), and decided only when every process decided its own
    figure, their medians agree within AGREE_RATIO and the whole interval lies within DECIDED_RATIO. Fewer than two
    measured processes decide nothing: one process cannot show the spread across processes."""
    per = [speedup(e, r) for e, r in zip(eager_by_process, rounds_by_process) if e and r]
    per = [p for p in per if p["value"] is not None]
    values = [p["value"] for p in per]
    base = {"source": "processes", "processes": [round(v, 4) for v in values]}
    if not values:
        return {
            **base,
            "value": None,
            "low": None,
            "high": None,
            "decided": False,
            "verdict": None,
            "text": "not measured in fresh processes",
        }
    value = statistics.median(values)
    low, high = min(p["low"] for p in per), max(p["high"] for p in per)
    listed = ", ".join(f"{v:.2f}x" for v in values)
    if contended_by:
        why = contended_by
    elif len(per) < 2:
        why = "only one fresh process was measured, so the spread across processes is unknown"
    elif not all(p["decided"] for p in per):
        why = "measurements too noisy within a process"
    elif max(values) / min(values) > AGREE_RATIO or high / low > DECIDED_RATIO:
        why = f"the {len(per)} processes disagree ({listed})"
    else:
        why = None
    return {
        **base,
        **decided_speedup(
            value, low, high, why, f", {len(per)} fresh processes: {listed}", f"over {len(per)} fresh processes"
        ),
    }
