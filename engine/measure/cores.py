"""Which host core a GPU step's rounds run on: each round on the next of the process's allowed cores, in a shuffled
order, so that a process's figure is the host's, not the luck of the core its thread started on.

A GPU step's host thread is one busy thread, and the scheduler leaves it on the core it started on. The cores of a
host are not equally fast: on one H200 node, 13 of 16 cores ran the 1024² seed's eager step at 0.030-0.032 ms and 3
at 0.038-0.044 ms, the same 3 for every step tried, with the thread pinned to each core in turn; on another, every
core's speed moved by the minute (bench/gpu_host_cores.py; docs/benchmarks.md, "GPU: the host core and the
compile-worker pool"; why, on these virtual machines, is not measured). A host-bound step's process then reads the
speed of its one core, and two fresh processes cannot average that out. Visiting the cores round by round makes
every process's median a sample of the host's cores; the rounds of one config and eager stay paired on one core,
so speedups compare like with like.

A CPU step runs one OpenMP thread per core and is never moved (its threads are the OpenMP runtime's to place).
Torch-free: the caller says whether the step is a GPU's."""

from __future__ import annotations

import os
import random


def current_core() -> int | None:
    """The core this thread last ran on (field 39 of /proc/thread-self/stat; Python has no sched_getcpu)."""
    try:
        with open("/proc/thread-self/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    return int(fields[36])  # field 39 counts from 1 and includes pid and comm


class CoreRotation:
    """Pins this thread to the next core of a shuffled list at each ``next_round()``; ``restore()`` gives it back
    the cores it had. Does nothing where the step is not a GPU's, only one core is allowed, or the affinity cannot
    be set (then ``describe()`` says why)."""

    def __init__(self, gpu_step: bool, seed: int | None = None):
        try:
            self.home = os.sched_getaffinity(0)
        except (AttributeError, OSError):
            self.home = set()
        self.order = sorted(self.home) if gpu_step and len(self.home) > 1 else []
        random.Random(seed).shuffle(self.order)
        self.gpu_step, self.rounds, self.visited, self.failed = gpu_step, 0, set(), None

    def next_round(self) -> None:
        if not self.order or self.failed:
            return
        core = self.order[self.rounds % len(self.order)]
        try:
            os.sched_setaffinity(0, {core})
        except OSError as exc:  # a cpuset changed under the job, or a sandbox that refuses: stay where it is
            self.failed = f"{type(exc).__name__}: {exc}"
            return
        self.rounds += 1
        self.visited.add(core)

    def restore(self) -> None:
        if self.rounds:  # also after a later pin failed: the thread is on the last core it was moved to
            try:
                os.sched_setaffinity(0, self.home)
            except OSError:  # the cpuset shrank under the job: the kernel keeps the thread where it may run
                pass

    def describe(self) -> str | None:
        if not self.gpu_step:
            return None  # a CPU step: every core is the step's
        if self.failed:
            moved = f"the first {self.rounds} rounds each on the next core, then " if self.rounds else ""
            return f"{moved}rounds on the core the thread was on: its affinity could not be set ({self.failed})"
        if not self.home:
            return "rounds on whichever core the scheduler chose: this process's cores could not be read"
        if not self.order:
            return "rounds on the one core this process may use"
        return (
            f"each round on the next of this process's {len(self.order)} host cores, in a shuffled order "
            f"({len(self.visited)} visited), so a host-bound figure is not the speed of the one core the thread "
            "started on; a config's round and eager's of the same index ran on the same core"
        )
