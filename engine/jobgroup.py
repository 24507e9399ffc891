"""Every process of one job, as one unit: limited together, measured together, killed together.

Where the worker may create cgroups (a root worker on cgroup v1, or a delegated cgroup v2 subtree), each job gets
its own: the kernel then enforces the job's memory (all its processes together, swap included) and its number of
processes and threads, counts what hit a limit (so a failure names the right one), and lists every process of
the job, whatever it forked, double-forked or daemonised, so the parent can kill them all. Where the cpu controller
is there too, the job's processes share one CPU weight, lower than any other process's on the host (the web
server, the worker, other jobs), and at most the cores the job is given: a job of a thousand spinning processes
weighs as one. Without cgroups the
parent falls back to a watchdog: the processes descending from the job's first process, their resident memory
summed every poll. Parent side only; pure Python.
"""

from __future__ import annotations

import os
import signal
import time

CGROUP_ROOT = "/sys/fs/cgroup"
# A fork bomb is ended when it is seen, not at the job's time limit. Seen three ways: the kernel has kept refusing the
# job's forks at its process limit for FORK_REFUSALS_S, never pausing for REFUSAL_GAP_S (copies that catch the error
# and fork again: each copies the job's address space before the kernel refuses it, so under the job's CPU limit
# the refusals come in bursts, 0.25-1.25 s apart on the 2-core machine, and a check of every 0.25 s poll missed
# the bomb until the time limit in one run of three), or,
# for FORK_BOMB_S on end, the job has started more than FORK_RATE_PER_S processes a second while holding at least
# FORK_BOMB_SHARE of its process limit in processes (copies that die when a fork fails, so that the count churns
# below the limit: 60-130 a second and 200-470 of 512 processes measured on the 2-core machine with torch imported;
# an Inductor compile's g++ runs start under 5 a second here, perhaps 50 on a 16-core host, but as processes they
# are a compile pool's few dozen, never a quarter of the limit), or, for FORK_HOLD_S on end, the job has held at
# least FORK_HOLD_SHARE of its limit in processes, however slowly they came: a bomb starved of CPU by the job's low
# weight (a busy web tier beside it) forks under 25 a second and its count plateaus below the limit (about 370 of
# 512 in the embedded service at load 240: neither of the first two fired, and it ran to the time limit).
FORK_REFUSALS_S = 4.0
REFUSAL_GAP_S = 2.0
FORK_RATE_PER_S = 25
FORK_BOMB_S = 4.0
FORK_BOMB_SHARE = 0.25
FORK_HOLD_S = 10.0
FORK_HOLD_SHARE = 0.5
# A job's processes together weigh this much in the CPU scheduler against one other process's default (cgroup v1
# cpu.shares 1024, v2 cpu.weight 100): under contention the web server and the worker run first.
CPU_WEIGHT_SHARE = 0.5
CPU_PERIOD_US = 100_000
# The files of each cgroup version: limits written at creation, counters read when the job ends.
V1 = {
    "memory": ("memory", "memory.limit_in_bytes"),
    "swap": ("memory", "memory.memsw.limit_in_bytes"),
    "pids": ("pids", "pids.max"),
    "oom": ("memory", "memory.oom_control", "oom_kill"),
    "pids_hit": ("pids", "pids.events", "max"),
    "peak": ("memory", "memory.max_usage_in_bytes"),
    "cpu_weight": ("cpu", "cpu.shares"),
    "cpu_quota": ("cpu", "cpu.cfs_quota_us"),
    "cpu_period": ("cpu", "cpu.cfs_period_us"),
}
V2 = {
    "memory": ("", "memory.max"),
    "swap": ("", "memory.swap.max"),
    "pids": ("", "pids.max"),
    "oom": ("", "memory.events", "oom_kill"),
    "pids_hit": ("", "pids.events", "max"),
    "peak": ("", "memory.peak"),
    "cpu_weight": ("", "cpu.weight"),
    "cpu_max": ("", "cpu.max"),
}


class JobGroup:
    """One job's processes. ``cgroup`` is None when the machine gives us none: then the watchdog measures."""

    def __init__(self, name: str, memory_bytes: int | None, process_limit: int, cpu_cores: float | None = None):
        """``cpu_cores``: the most cores the job's processes may use together (None: the cores this process may
        run on, as a worker is given them)."""
        self.memory_bytes, self.process_limit = memory_bytes, process_limit
        self.cpu_cores = cpu_cores or float(len(os.sched_getaffinity(0)))
        self.root_pid: int | None = None
        self.dirs: dict[str, str] = {}  # controller ("" for v2) -> this job's cgroup folder
        self.files = V1
        self.cpu_limited = False  # the job's processes share one CPU weight and quota (the cpu controller)
        self._join_fds: list[int] = []
        try:
            self._create(name)
        except OSError:
            self._remove_dirs()
            self.dirs = {}
        if self.dirs:
            self._limit_cpu(name)
        self._join_fds = [
            os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for d in self.dirs.values()
        ]

    @property
    def enforced(self) -> bool:
        """True when the kernel limits the job as a whole (a cgroup); False: the watchdog does."""
        return bool(self.dirs)

    def describe(self) -> str:
        if not self.dirs:
            return "watchdog"
        return "cgroup v2" if self.files is V2 else "cgroup v1"

    def describe_cpu(self) -> str:
        """What limits the job's CPU, in words (report["isolation"], the worker's start line)."""
        if not self.cpu_limited:
            return "not limited: no cpu cgroup controller for the worker (its processes compete one by one)"
        weight = "cpu.shares" if self.files is V1 else "cpu.weight"
        return (
            f"{self.describe()} {weight} (the job's processes together weigh {CPU_WEIGHT_SHARE:g} of one other "
            f"process) and a quota of {self.cpu_cores:g} cores"
        )

    def _create(self, name: str) -> None:
        if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):
            self.files = V2
            controllers = {"": os.path.join(CGROUP_ROOT, _own_cgroup("")[1:])}
        else:
            controllers = {c: os.path.join(CGROUP_ROOT, c, _own_cgroup(c)[1:]) for c in ("memory", "pids")}
        for controller, parent in controllers.items():
            if not os.access(parent, os.W_OK):
                raise PermissionError(parent)
            folder = os.path.join(parent, name)
            os.mkdir(folder)
            self.dirs[controller] = folder
        if self.memory_bytes is not None:
            self._write("memory", str(self.memory_bytes))
            try:
                self._write("swap", str(self.memory_bytes) if self.files is V1 else "0")
            except OSError:  # no swap accounting on this kernel: there is then no swap to escape to either
                pass
        self._write("pids", str(self.process_limit))

    def _limit_cpu(self, name: str) -> None:
        """One weight and a quota for the job's processes together, where the cpu controller is ours to use (v1:
        its own hierarchy; v2: enabled for our subtree); else the job runs without (describe_cpu says so)."""
        quota = int(self.cpu_cores * CPU_PERIOD_US)
        try:
            if self.files is V1:
                folder = os.path.join(CGROUP_ROOT, "cpu", _own_cgroup("cpu")[1:], name)
                os.mkdir(folder)
                self.dirs["cpu"] = folder
                self._write("cpu_weight", str(int(1024 * CPU_WEIGHT_SHARE)))
                self._write("cpu_period", str(CPU_PERIOD_US))
                self._write("cpu_quota", str(quota))
            else:
                with open(os.path.join(os.path.dirname(self.dirs[""]), "cgroup.subtree_control")) as f:
                    if "cpu" not in f.read().split():
                        return
                self._write("cpu_weight", str(int(100 * CPU_WEIGHT_SHARE)))
                self._write("cpu_max", f"{quota} {CPU_PERIOD_US}")
        except (OSError, FileNotFoundError):
            return
        self.cpu_limited = True

    def join_in_child(self) -> None:
        """Popen's preexec_fn: the new process enters the job's cgroups before it runs anything (no allocation,
        no lock: only writes to descriptors opened by the parent)."""
        pid = str(os.getpid()).encode()
        for fd in self._join_fds:
            os.write(fd, pid)

    def started(self, pid: int) -> None:
        self.root_pid = pid
        for fd in self._join_fds:
            os.close(fd)
        self._join_fds = []

    def pids(self) -> list[int]:
        """Every live process of the job."""
        if self.dirs:
            folder = self.dirs.get("pids") or self.dirs[""]
            try:
                with open(os.path.join(folder, "cgroup.procs")) as f:
                    return [int(line) for line in f if line.strip()]
            except OSError:
                return []
        return _descendants(self.root_pid) if self.root_pid else []

    def memory_used(self, pids: list[int]) -> int:
        """Resident bytes of ``pids``, the job's processes, together (the watchdog's measure; a cgroup enforces its
        own)."""
        total = 0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                pass
        return total

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every process of the job until none is left; True when none is."""
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.pids()
            if self.root_pid and alive(self.root_pid):
                pids.append(self.root_pid)
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def counter(self, name: str) -> int:
        """A kernel counter of the job's cgroup: "oom" (processes the OOM killer ended), "pids_hit" (forks refused
        at the process limit), "peak" (bytes); 0 without a cgroup."""
        controller, filename, *key = self.files[name]
        folder = self.dirs.get(controller)
        if folder is None:
            return 0
        try:
            with open(os.path.join(folder, filename)) as f:
                text = f.read()
        except OSError:
            return 0
        if not key:
            return int(text.strip() or 0)
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key[0]:
                return int(parts[1])
        return 0

    def close(self) -> None:
        """Kill what is left and remove the cgroups."""
        self.kill_all()
        for fd in self._join_fds:
            os.close(fd)
        self._join_fds = []
        self._remove_dirs()

    def _write(self, name: str, value: str) -> None:
        controller, filename = self.files[name][:2]
        with open(os.path.join(self.dirs[controller], filename), "w") as f:
            f.write(value)

    def _remove_dirs(self) -> None:
        for folder in self.dirs.values():
            for _ in range(50):  # the last killed processes leave the cgroup a moment after they die
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def probe() -> tuple[bool, str]:
    """Whether each job gets a cgroup with its CPU limited on this host, and what confines a job's processes, in
    words (the worker's start line and /status), from a throw-away group."""
    group = JobGroup(f"pt2scope-job-{os.getpid()}-probe", None, 1)
    try:
        if not group.enforced:
            return False, (
                "no cgroup for jobs (the worker is not root and has no delegated cgroup subtree): memory by the "
                "parent's watchdog, processes by RLIMIT_NPROC, CPU not limited (one job's processes can take every "
                "core)"
            )
        return group.cpu_limited, f"a {group.describe()} per job (memory, processes); CPU: {group.describe_cpu()}"
    finally:
        group.close()


def remove_stale(older_than_s: float = 60.0) -> list[str]:
    """Remove job cgroups left empty by a worker that died mid-job (its jobs' processes killed since); a cgroup
    younger than ``older_than_s`` may belong to a job that is just starting, and is left alone."""
    removed = []
    v2 = os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers"))
    parents = []
    for controller in ("",) if v2 else ("memory", "pids", "cpu"):
        try:
            parents.append(os.path.join(CGROUP_ROOT, controller, _own_cgroup(controller)[1:]))
        except (OSError, FileNotFoundError):
            pass
    for parent in parents:
        try:
            names = [n for n in os.listdir(parent) if n.startswith("pt2scope-job-")]
        except OSError:
            continue
        for name in names:
            folder = os.path.join(parent, name)
            try:
                if time.time() - os.stat(folder).st_mtime > older_than_s:
                    os.rmdir(folder)  # refused while any process is in it
                    removed.append(folder)
            except OSError:
                pass
    return removed


def _own_cgroup(controller: str) -> str:
    """This process's cgroup path in the hierarchy of ``controller`` ("" for v2), from /proc/self/cgroup."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if (controller and controller in names.split(",")) or (not controller and names == ""):
                return path
    raise FileNotFoundError(f"no {controller or 'v2'} cgroup")


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it, from /proc (the watchdog's view without a cgroup)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if alive(pid):
            found.append(pid)
        todo.extend(children.get(pid, []))
    return found
