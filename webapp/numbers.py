"""Numbers for people: three significant figures, thousands separated, never e-notation (1,580 ms, not
1.58e+03 ms). Every page formats times, rates and sizes with these (Jinja filters of the same names)."""

from __future__ import annotations

import math


def figure(value, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures in plain notation: 1583.2 -> "1,580", 0.0004567 -> "0.000457",
    3.0 -> "3"; "—" for no number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "—"
    if value == 0:
        return "0"
    places = digits - 1 - math.floor(math.log10(abs(value)))  # negative: rounds to tens, hundreds, ...
    text = f"{round(value, places):,.{max(0, places)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def ms(value) -> str:
    """A time in milliseconds: "3.97 ms", "1,580 ms", "0.0473 ms"."""
    return f"{figure(value)} ms" if isinstance(value, (int, float)) else "—"


def seconds(value) -> str:
    """A time in seconds: "2.78 s", "0.033 s", "118 s"."""
    return f"{figure(value)} s" if isinstance(value, (int, float)) else "—"


def times(value) -> str:
    """A ratio: "3.8x", "0.0142x"."""
    return f"{figure(value)}x" if isinstance(value, (int, float)) else "—"


def rate(bytes_per_s) -> str:
    """A bandwidth in the unit that keeps it readable: "412 GB/s", "3.5 MB/s" (never "0.0 GB/s")."""
    return _scaled(bytes_per_s, "B/s")


def data_size(size) -> str:
    """Bytes as "4.19 MB" (decimal units, as bandwidths are)."""
    return _scaled(size, "B")


def _scaled(value, unit: str) -> str:
    if not isinstance(value, (int, float)) or value < 0:
        return "—"
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{figure(value / scale)} {prefix}{unit}"
    return f"{figure(value)} {unit}"


FILTERS = {"figure": figure, "ms": ms, "seconds": seconds, "times": times, "rate": rate, "data_size": data_size}
