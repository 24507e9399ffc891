"""How busy the machine was while a job timed: the load average, the cores other processes took (CpuWindow), whether
that contended the step, and the summary the report carries (runtime.load). Torch-free: the caller says how many
threads its step runs."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

CONTENTION_CORES = 0.1  # a batch of rounds is contended when others took more of the step's cores than this (quiet
# here: 0.01-0.05; at 0.13 eager against backend_eager, the same ops, read a decided "1.10x faster")
NOTED_STOLEN_SHARE = 0.05  # a host that steals this much of the time is named in the load's text
MOST_STOLEN_SHARE = 0.9  # past this the others' share, scaled up by what the host left, is mostly noise


def machine_load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


@dataclass(frozen=True)
class CpuReading:
    """What a CpuWindow saw. ``other_cores``: the cores other processes took, as a share of the time this machine's
    cores ran (what they would have taken of a machine the host did not steal from); ``stolen_share``: the part of
    the time this machine's cores wanted to run that the host's hypervisor gave to other machines (steal)."""

    other_cores: float
    stolen_share: float


class CpuWindow:
    """What other processes took of the machine's cores while this one timed: every core's busy time
    (/proc/stat, machine-wide even in the sandbox's own /proc) less this process's own CPU time, over the window's
    wall time. A step that wants every core (Inductor's and ATen's OpenMP threads, one per core) and shares one
    with another process waits at each parallel region for its descheduled thread: on the 2 cores here, one
    busy loop beside the seed made eager 16x and Inductor 10x slower, and the speedup read "5.03x faster
    (5.00-5.83)", decided, where a quiet machine measures 3.3x (docs/benchmarks.md, "Contended rounds and the allocator").

    Steal is not another process's work: on a shared host the hypervisor runs other machines on this one's cores,
    and no batch timed again comes out quieter for it. Counted as busy (as it was), a host stealing half of the time
    (a CI machine on 7 Dec) read as "other processes used 1.27 cores" in every batch of a job on a machine with
    nothing else running, and no speedup was decided. Steal comes only while a core wants to run, so the share
    stolen is steal / (busy + steal), and the others' cores are scaled up by what was left."""

    def __init__(self):
        self.start = self._now()

    @staticmethod
    def _now() -> tuple[float, float, float, float] | None:
        """(cores' busy seconds without steal, stolen seconds, this process's CPU seconds, wall clock)."""
        try:
            with open("/proc/stat") as f:
                fields = f.readline().split()
            ticks = os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError):
            return None
        if fields[:1] != ["cpu"] or len(fields) < 9:
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
        return (user + nice + system + irq + softirq) / ticks, steal / ticks, time.process_time(), time.perf_counter()

    def read(self) -> CpuReading | None:
        """Since the window opened (None where /proc/stat is not there)."""
        end = self._now()
        if not (self.start and end) or end[3] <= self.start[3]:
            return None
        busy, stolen, own, wall = (e - s for e, s in zip(end, self.start))
        stolen_share = min(MOST_STOLEN_SHARE, stolen / (busy + stolen)) if busy + stolen > 0 else 0.0
        others = max(0.0, busy - own) / wall
        return CpuReading(other_cores=others / (1 - stolen_share), stolen_share=stolen_share)


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


def load_summary(
    before, after, *, other_cores=None, stolen_share=None, threads=None, dropped=0, kept_contended=False
) -> dict:
    """``other_cores``, ``stolen_share``: the means over the rounds kept (CpuReading); ``dropped``: rounds timed
    under contention and timed again; ``kept_contended``: no round could be timed without contention, so these
    rounds were."""
    cores = os.cpu_count() or 1
    busy = any(avg and avg[0] > cores for avg in (before, after))
    text = f"load {before[0] if before else '?'} -> {after[0] if after else '?'} (1-minute average) on {cores} cores"
    if other_cores is not None:
        text += f"; other processes used {other_cores:.2f} cores while timing (a step runs {threads} thread(s))"
    if stolen_share and stolen_share >= NOTED_STOLEN_SHARE:
        text += (
            f"; the host gave {stolen_share:.0%} of this machine's time to other machines (steal), so every figure "
            "is slower than this machine alone would measure and rounds vary more"
        )
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
        "stolen_share": None if stolen_share is None else round(stolen_share, 3),
        "step_threads": threads,
        "contended": kept_contended,
        "dropped_rounds": dropped,
        "text": text,
    }
