"""The machine's CPU time since boot by kind (/proc/stat's first line, in jiffies): read by the suite's report of
where it waits (tests/conftest.py) and by the tests that measure a share of CPU on a shared host."""

KINDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_jiffies() -> dict[str, int]:
    with open("/proc/stat") as f:
        return dict(zip(KINDS, (int(v) for v in f.readline().split()[1:9])))
