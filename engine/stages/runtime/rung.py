"""One rung of the benchmark ladder: a config's compiled function on its own model copy, the report entry it fills
(runtime.benchmarks[i]) and its timed rounds."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.stages.runtime.workload import Instance


@dataclass
class Rung:
    name: str
    inst: Instance
    fn: object
    entry: dict
    cudagraph_steps: bool = False
    rounds_ms: list = field(default_factory=list)  # per-step ms of each round
    steps_per_round: int = 1
    step_s: float = 0.0  # a warm step at best (warm_up), which sizes the rounds
