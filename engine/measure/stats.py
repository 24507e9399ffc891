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
    verdict = None
    if decided:
        verdict = "faster" if low > 1 + SAME_BAND else "slower" if high < 1 - SAME_BAND else "same"
    text = (
        f"{value:.2f}x {'faster' if verdict == 'faster' else 'slower' if verdict == 'slower' else 'no measurable difference'}"
        f" ({low:.2f}-{high:.2f})"
        if decided
        else f"not decided: {contended_by or 'measurements too noisy'} ({low:.2f}-{high:.2f}x over {len(ratios)} rounds)"
    )
    return {
        "value": round(value, 4),
        "low": round(low, 4),
        "high": round(high, 4),
        "decided": decided,
        "verdict": verdict,
        "text": text,
    }


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]
