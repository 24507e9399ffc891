"""CPU time as /proc counts it: the machine's since boot by kind (/proc/stat's first line, in jiffies), read by the
suite's report of where it waits (tests/conftest.py), and a process's own (/proc/PID/stat), read by the tests that
measure who took the CPU."""

import os

KINDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_jiffies() -> dict[str, int]:
    with open("/proc/stat") as f:
        return dict(zip(KINDS, (int(v) for v in f.readline().split()[1:9])))


def process_cpu_seconds(pid: int) -> float | None:
    """The user and system time a process has run (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the command's name may hold spaces and parentheses
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None
