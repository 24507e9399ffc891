"""What autotuning measured, on every rung: Inductor's algorithm selector (max-autotune: Triton/C++ templates
against ATen, per op) through its feedback savers, and autotuned Triton kernels (several configs) through
CachingAutotuner.benchmark_all_configs; plus what each loaded Triton kernel's launcher says (the config it runs,
its registers, spills, shared memory and cache folder) for engine/tritonir.py.

Private torch API, each piece guarded: what this torch lacks is reported unavailable and the rest goes on.
"""

from __future__ import annotations

import math

_KINDS = {
    "TritonTemplateCaller": "triton template",
    "ExternKernelCaller": "aten",
    "CppTemplateCaller": "cpp template",
    "CUDATemplateCaller": "cutlass",
    "CUTLASSTemplateCaller": "cutlass",
}
MAX_OPS = 200  # autotuned ops kept per job (a model with thousands of matmuls repeats a few shapes)


class AutotuneRecorder:
    """Installed once per job (the patches are process-wide; a job's child runs one job). ``config`` names the
    rung being compiled or first run, set by the capture stage and the ladder."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.config: str | None = None
        self.ops: list[dict] = []

    def install(self) -> None:
        with self.ctx.guard("inductor.autotune.select_algorithm"):
            from torch._inductor import select_algorithm

            select_algorithm.add_feedback_saver(self.on_select)
        with self.ctx.guard("inductor.autotune.triton_configs"):
            from torch._inductor.runtime.triton_heuristics import CachingAutotuner

            original = CachingAutotuner.benchmark_all_configs
            if not getattr(original, "_pt2scope", False):
                recorder = self

                def benchmark_all_configs(tuner, *args, **kwargs):
                    timings = original(tuner, *args, **kwargs)
                    try:
                        recorder.on_configs(tuner, timings)
                    except Exception as exc:  # noqa: BLE001 - recording must never fail the user's kernel
                        recorder.ctx.error("inductor.autotune.triton_configs", exc)
                    return timings

                benchmark_all_configs._pt2scope = True  # type: ignore[attr-defined]
                CachingAutotuner.benchmark_all_configs = benchmark_all_configs

    def on_select(self, timings, name, input_nodes, choices, *rest) -> None:
        """A feedback saver (select_algorithm.FeedbackFunction): timings {choice: ms} of one op's choices."""
        if len(self.ops) >= MAX_OPS:
            return
        candidates = []
        for choice in choices:
            time_ms = timings.get(choice)
            candidates.append(
                {
                    "name": str(getattr(choice, "name", choice)),
                    "kind": _KINDS.get(type(choice).__name__, "other"),
                    "description": _text(getattr(choice, "description", None)),
                    "time_ms": float(time_ms) if _finite(time_ms) else None,
                    "chosen": False,
                }
            )
        self._add("select_algorithm", str(name), [_input_text(n) for n in input_nodes or []], candidates)

    def on_configs(self, tuner, timings: dict) -> None:
        """An autotuned Triton kernel's configs, each benchmarked: {launcher: ms}."""
        if len(self.ops) >= MAX_OPS or len(timings) < 2:
            return
        candidates = []
        for launcher, time_ms in timings.items():
            extra = ", ".join(
                f"{label} {value}"
                for label, value in (
                    ("registers", getattr(launcher, "n_regs", None)),
                    ("spills", getattr(launcher, "n_spills", None)),
                    ("shared", getattr(launcher, "shared", None)),
                )
                if value is not None
            )
            candidates.append(
                {
                    "name": str(getattr(launcher, "config", launcher)),
                    "kind": "triton config",
                    "description": extra or None,
                    "time_ms": float(time_ms) if _finite(time_ms) else None,
                    "chosen": False,
                }
            )
        self._add("triton configs", tuner.fn.__name__, [], candidates)

    def _add(self, source: str, op: str, inputs: list[str], candidates: list[dict]) -> None:
        candidates.sort(key=lambda c: (c["time_ms"] is None, c["time_ms"] or 0.0))
        chosen = candidates[0] if candidates and candidates[0]["time_ms"] is not None else None
        if chosen:
            chosen["chosen"] = True
        fallbacks = [c for c in candidates if c["kind"] == "aten"]
        text = None
        if chosen:
            text = (
                f"{len(candidates)} candidates; {chosen['name']} ({chosen['kind']}) won at {chosen['time_ms']:.4g} ms"
            )
            if fallbacks and chosen["kind"] != "aten" and fallbacks[0]["time_ms"]:
                text += (
                    f", {fallbacks[0]['time_ms'] / chosen['time_ms']:.2f}x faster than ATen's {fallbacks[0]['name']}"
                )
            elif chosen["kind"] == "aten":
                text += ": the ATen fallback beat every generated candidate"
        self.ops.append(
            {
                "config": self.config,
                "source": source,
                "op": op,
                "inputs": inputs,
                "candidates": candidates,
                "chosen": chosen["name"] if chosen else None,
                "text": text,
            }
        )


def launched_kernels() -> list[dict]:
    """What each loaded Triton kernel's launcher says: [{name, file, cache_hash, n_regs, n_spills, shared,
    config: {num_warps, num_stages, block}}]. Only a kernel with one launcher left (autotuned already, or a single
    config) has a launched variant. Read from Inductor's loaded output-code modules (PyCodeCache)."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    modules = list(PyCodeCache.modules) + list(getattr(PyCodeCache, "modules_no_attr", {}).values())
    out, seen = [], set()
    for module in modules:
        for value in list(vars(module).values()):
            if not isinstance(value, CachingAutotuner) or id(value) in seen:
                continue
            seen.add(id(value))
            launchers = list(getattr(value, "launchers", None) or [])
            if len(launchers) != 1:
                continue
            launcher = launchers[0]
            config = getattr(launcher, "config", None)
            fn = getattr(value, "fn", None)
            code = getattr(getattr(fn, "fn", None), "__code__", None)
            out.append(
                {
                    "name": getattr(fn, "__name__", None),
                    "file": getattr(code, "co_filename", None),
                    "cache_hash": getattr(launcher, "cache_hash", None),
                    "n_regs": _int(getattr(launcher, "n_regs", None)),
                    "n_spills": _int(getattr(launcher, "n_spills", None)),
                    "shared": _int(getattr(launcher, "shared", None)),
                    "config": {
                        "num_warps": _int(getattr(config, "num_warps", None)),
                        "num_stages": _int(getattr(config, "num_stages", None)),
                        "block": dict(getattr(config, "kwargs", {}) or {}),
                    }
                    if config is not None
                    else {},
                }
            )
    return out


def _int(value):
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _text(value) -> str | None:
    return str(value)[:500] if value not in (None, "") else None


def _input_text(node) -> str:
    """``f32[64, 128]`` for an IR node (its dtype and size), else its name."""
    try:
        dtype = str(node.get_dtype()).replace("torch.", "")
        return f"{dtype}[{', '.join(str(s) for s in node.get_size())}]"
    except Exception:  # noqa: BLE001 - an IR node without a layout
        return str(getattr(node, "get_name", lambda: node)())
