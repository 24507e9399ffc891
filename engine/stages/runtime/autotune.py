"""Every autotuning decision of every rung (runtime.autotune): what was compared, how long each took, what won.

Two kinds, both private Inductor API (guarded):
- algorithm selection (max-autotune, and any op Inductor has templates for): Inductor benchmarks its template
  kernels against the library kernel at compile time and calls each feedback saver
  (``select_algorithm.add_feedback_saver``) with every choice's time;
- a Triton kernel with several configs (block sizes, warps, stages) benchmarks them at its first launch
  (``CachingAutotuner.benchmark_all_configs``, which returns each launcher's time).
A decision found in Inductor's autotune cache is not benchmarked again, so a later rung compiling the same kernel
may show none of its own.
"""

from __future__ import annotations

import contextlib
import math

MAX_CHOICES = 64  # per decision: max-autotune weighs a few dozen templates; more is noise on a page


class AutotuneWatch:
    def __init__(self, ctx):
        self.ctx = ctx
        self.rung: str | None = None
        self.decisions: list[dict] = []

    def install(self) -> None:
        with self.ctx.guard("inductor.autotune_choices"):
            from torch._inductor import select_algorithm

            select_algorithm.add_feedback_saver(self._algorithm_chosen)
        with self.ctx.guard("inductor.autotune_configs"):
            from torch._inductor.runtime.triton_heuristics import CachingAutotuner

            original, watch = CachingAutotuner.benchmark_all_configs, self

            def benchmark_all_configs(autotuner, *args, **kwargs):
                timings = original(autotuner, *args, **kwargs)
                with watch.ctx.guard("inductor.autotune_configs"):
                    watch._configs_chosen(autotuner, timings)
                return timings

            CachingAutotuner.benchmark_all_configs = benchmark_all_configs

    @contextlib.contextmanager
    def for_rung(self, name: str):
        """Decisions made inside belong to rung ``name`` (its compile and first call)."""
        self.rung = name
        try:
            yield
        finally:
            self.rung = None

    def _algorithm_chosen(self, timings: dict, name: str, input_nodes, *_rest) -> None:
        if self.rung is None:
            return
        choices = [
            {
                "name": str(getattr(choice, "name", type(choice).__name__)),
                "kind": "library" if "Extern" in type(choice).__name__ else "template",
                "ms": _ms(ms),
                "chosen": False,
                "description": str(getattr(choice, "description", "") or "")[:300] or None,
            }
            for choice, ms in timings.items()
        ]
        self._add("algorithm", str(name), [_size_of(node) for node in input_nodes], choices)

    def _configs_chosen(self, autotuner, timings: dict) -> None:
        if self.rung is None:
            return
        choices = [
            {"name": _config_words(launcher.config), "kind": "config", "ms": _ms(ms), "chosen": False}
            for launcher, ms in timings.items()
        ]
        self._add("configs", autotuner.fn.__name__, [], choices)

    def _add(self, kind: str, op: str, inputs: list[str], choices: list[dict]) -> None:
        choices.sort(key=lambda c: math.inf if c["ms"] is None else c["ms"])
        if choices and choices[0]["ms"] is not None:
            choices[0]["chosen"] = True
        self.decisions.append(
            {"config": self.rung, "kind": kind, "op": op, "inputs": inputs, "choices": choices[:MAX_CHOICES]}
        )


def _ms(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return round(value, 6) if math.isfinite(value) else None  # inf: the choice failed to compile or run


def _size_of(node) -> str:
    try:
        return f"{node.get_dtype()}".replace("torch.", "") + str(list(node.get_size()))
    except Exception:  # noqa: BLE001 - an input of an unusual kind: its type then
        return type(node).__name__


def _config_words(config) -> str:
    """``XBLOCK: 1024, num_warps: 4, num_stages: 1`` (a triton.Config)."""
    parts = [f"{k}: {v}" for k, v in getattr(config, "kwargs", {}).items()]
    parts += [f"{k}: {getattr(config, k)}" for k in ("num_warps", "num_stages") if hasattr(config, k)]
    return ", ".join(parts) or str(config)
