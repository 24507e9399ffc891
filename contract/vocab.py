"""Words every tier spells the same way: stages, benchmark configs, isolation modes.

The engine runs them, storage records them, the web app offers and checks them; all read them from here (the
engine's engine/report.py re-exports the config names it has always exported).
"""
from __future__ import annotations

from dataclasses import dataclass

# How a job's child is isolated (docs/security.md): engine/sandbox.py implements them; settings validate the choice.
ISOLATION_MODES = ("bubblewrap", "none")

# Pipeline stages in the order a job passes through them; progress events and report["stages"] use these names.
STAGES = ("load", "eager", "dynamo", "aot", "inductor", "benchmark", "profile", "report")


@dataclass(frozen=True)
class Config:
    """One rung of the benchmark ladder: how the model is run."""

    name: str
    backend: str | None  # None: plain eager, no torch.compile
    mode: str | None = None
    label: str = ""


# The ladder, cheapest first. Plain eager is always measured: it is the baseline of every speedup and error.
CONFIGS = {
    c.name: c
    for c in (
        Config("eager", None, label="plain eager"),
        Config("backend_eager", "eager", label='backend="eager" (Dynamo only)'),
        Config("aot_eager", "aot_eager", label='backend="aot_eager" (Dynamo + AOTAutograd)'),
        Config("inductor_default", "inductor", "default", label='backend="inductor", mode="default"'),
        Config("inductor_reduce_overhead", "inductor", "reduce-overhead",
               label='backend="inductor", mode="reduce-overhead"'),
        Config("inductor_max_autotune", "inductor", "max-autotune", label='backend="inductor", mode="max-autotune"'),
    )
}
# max-autotune benchmarks many kernel variants: minutes on a CPU, so it is opt-in there.
DEFAULT_CONFIGS = {
    "cpu": ["eager", "backend_eager", "aot_eager", "inductor_default", "inductor_reduce_overhead"],
    "cuda": list(CONFIGS),
}


class ConfigError(ValueError):
    """A request the engine cannot run (unknown config or device); raised before any process starts."""


def parse_configs(names, device: str) -> list[str]:
    """Validate config names and return them in ladder order, plain eager always first."""
    if device not in DEFAULT_CONFIGS:
        raise ConfigError(f"unknown device {device!r}: choose one of {', '.join(DEFAULT_CONFIGS)}")
    if not names:
        return list(DEFAULT_CONFIGS[device])
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise ConfigError(f"unknown config {', '.join(map(repr, unknown))}: choose from {', '.join(CONFIGS)}")
    wanted = set(names) | {"eager"}
    return [n for n in CONFIGS if n in wanted]
