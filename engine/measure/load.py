"""How busy the machine was while a job timed: the load average, the cores other processes took (CpuWindow), whether
that contended the step, and the summary the report carries (runtime.load). Torch-free: the caller says how many
threads its step runs."""

from __future__ import annotations

import os
import time

CONTENTION_CORES = 0.1  # a batch of rounds is contended when others took more of the step's cores than this (quiet
# here: 0.01-0.05; at 0.13 eager against backend_eager, the same ops, read a decided "1.10x faster")


def machine_load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


class CpuWindow:
    """What other processes took of the machine's cores while this one timed: every core's busy time
    (/proc/stat, machine-wide even in the sandbox's own /proc) less this process's own CPU time, over the window's
    wall time. A step that wants every core (Inductor's and ATen's OpenMP threads, one per core) and shares one
    with another process waits at each parallel region for its descheduled thread: on the 2 cores here, one
    busy loop beside the seed made eager 16x and Inductor 10x slower, and the speedup read "5.03x faster
    (5.00-5.83)", decided, where a quiet machine measures 3.3x (docs/benchmarks.md, "Contended rounds and the allocator")."""

    def __init__(self):
        self.start = self._now()

    @staticmethod
    def _now() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat") as f:
                fields = f.readline().split()
            ticks = os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError):
            return None
        if fields[:1] != ["cpu"] or len(fields) < 9:
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
        return (user + nice + system + irq + softirq + steal) / ticks, time.process_time(), time.perf_counter()

    def other_cores(self) -> float | None:
        """Cores other processes used on average since the window opened (None where /proc/stat is not there)."""
        end = self._now()
        if not (self.start and end) or end[2] <= self.start[2]:
            return None
        others = (end[0] - self.start[0]) - (end[1] - self.start[1])
        return max(0.0, others / (end[2] - self.start[2]))


def host_allocator() -> str:
    """What the job's child was given (engine.job.MALLOC_SETTINGS), read back from its own environment."""
    fixed = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("MALLOC_") and k.endswith("_"))
    if fixed:
        return f"glibc malloc, fixed thresholds ({', '.join(fixed)}): freed memory is reused, not returned to the OS"
    return "the process's allocator as found (glibc: thresholds that adapt to the process's history)"


def contended(other_cores: float | None, threads: int) -> bool:
    """Other processes took, on average, more than CONTENTION_CORES of the cores this step wants."""
    spare = (os.cpu_count() or 1) - threads
    return other_cores is not None and other_cores > spare + CONTENTION_CORES


def load_summary(before, after, *, other_cores=None, threads=None, dropped=0, kept_contended=False) -> dict:
    """``other_cores``: the mean over the rounds kept; ``dropped``: rounds timed under contention and timed again;
    ``kept_contended``: no round could be timed without contention, so these rounds were."""
    cores = os.cpu_count() or 1
    busy = any(avg and avg[0] > cores for avg in (before, after))
    text = f"load {before[0] if before else '?'} -> {after[0] if after else '?'} (1-minute average) on {cores} cores"
    if other_cores is not None:
        text += f"; other processes used {other_cores:.2f} cores while timing (a step runs {threads} thread(s))"
    if kept_contended:
        text += (
            ": the machine was busy in every round, so these figures are not what a quiet machine measures and "
            "speedups are not decided; run the job again when the machine is quieter"
        )
    elif busy:
        text += ": the machine was busy while timing, figures are noisier than on a quiet machine"
    if dropped:
        text += f" ({dropped} rounds timed while other processes took the step's cores were dropped and retimed)"
    return {
        "loadavg_before": before,
        "loadavg_after": after,
        "cpu_count": cores,
        "busy": busy,
        "other_cpu_cores": None if other_cores is None else round(other_cores, 3),
        "step_threads": threads,
        "contended": kept_contended,
        "dropped_rounds": dropped,
        "text": text,
    }
