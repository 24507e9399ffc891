"""Which host cores a GPU step's timed rounds ran on. The thread stays where the scheduler puts it, as in a user's
own loop; the cores are recorded so that a figure that differs from the next process's can be told apart by core.

Why the thread is not moved: on 4 December 2026 one H200 node ran host-bound steps 1.2-1.7x slower on 3 of its 16
cores, and for a while every GPU step's rounds visited the cores one round each. Measured on 6 December (an H100
node, bench/gpu_host_cores.py, six fresh processes of each kind interleaved): processes that moved their thread each
round were slower than processes left alone in every case (median of the six: the 1024² seed eager 0.0478 against
0.0347 ms, compiled 0.0799 against 0.0582, the 4096² compiled seed 0.0721 against 0.0647, a transformer block
0.364 against 0.290), and the per-core sweep's "slow cores" were fast for a fresh process pinned there from its
start (core 4: 0.0612 ms in the sweep, 0.0317 pinned): a move costs the host speed, so moving every round measured
the moves, not the user's loop (docs/benchmarks.md, "GPU: moving the host thread").

A CPU step runs one OpenMP thread per core: every core is the step's, nothing is recorded.
Torch-free: the caller says whether the step is a GPU's."""

from __future__ import annotations


def current_core() -> int | None:
    """The core this thread last ran on (field 39 of /proc/thread-self/stat; Python has no sched_getcpu)."""
    try:
        with open("/proc/thread-self/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    return int(fields[36])  # field 39 counts from 1 and includes pid and comm


class CoresSeen:
    """``next_round()`` notes the core the thread is on (a GPU step only); ``describe()`` says which ones."""

    def __init__(self, gpu_step: bool):
        self.gpu_step, self.cores = gpu_step, []

    def next_round(self) -> None:
        if self.gpu_step:
            self.cores.append(current_core())

    def describe(self) -> str | None:
        if not self.gpu_step:
            return None  # a CPU step: every core is the step's
        seen = sorted({c for c in self.cores if c is not None})
        if not seen:
            return "on the core the scheduler gave the thread, as in a user's loop (which one could not be read)"
        # No count of rounds here: contended batches' rounds are timed, then dropped (runtime.timing.rounds counts
        # the kept ones), and their cores are still where the thread ran.
        moved = f" (moved by the scheduler {self._moves()} times)" if len(seen) > 1 else ""
        return (
            f"on the core{'s' if len(seen) > 1 else ''} the scheduler gave the thread, as in a user's loop: "
            f"{', '.join(map(str, seen))}{moved}; the thread is never moved, since a move costs a host-bound step "
            "its speed"
        )

    def _moves(self) -> int:
        return sum(a != b for a, b in zip(self.cores, self.cores[1:]))
