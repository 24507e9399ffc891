"""How one job's child process is confined: bubblewrap namespaces, resource limits, a shared precompiled header.

Parent side only (engine.job and the workers use it; the child never imports it, and nothing here imports torch).
``child_command`` builds the whole launch command in one place:

    bwrap <namespaces, read-only system, the job folder writable> [setpriv <unprivileged uid>] prlimit <limits> python

Two facts measured on Linux 6.x shape it (docs/security.md):
- RLIMIT_NPROC is ignored for processes of the real root user. A worker running as root therefore starts the
  sandbox without a user namespace and drops to an unprivileged uid inside it (setpriv); a non-root worker uses a
  user namespace. In a user namespace the process count is kept per namespace, so the limit is per job.
- bubblewrap gives bound paths' parent folders their source's mode (``/root`` is 0700): they are created 0755.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import glob
import hashlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from contract.vocab import ISOLATION_MODES as MODES
from engine import jobgroup

ENGINE_DIR = os.path.dirname(os.path.abspath(__file__))
PROJECT_ROOT = os.path.dirname(ENGINE_DIR)
# The project packages a job's child imports: the engine and the torch-free types it writes the report with.
CHILD_PACKAGES = (ENGINE_DIR, os.path.join(PROJECT_ROOT, "contract"))
# The user name a job sees (USER, LOGNAME). Inductor names its precompiled-header folder after it:
# $TMPDIR/torchinductor_<user>/precompiled_headers, so it must be the same in every job.
JOB_USER = "pt2scope"
PCH_SUBDIR = os.path.join(f"torchinductor_{JOB_USER}", "precompiled_headers")
# Triton lists each cached kernel's files by absolute path (its __grp__ file), so a kernel built in one folder is
# found only at that same path: every sandboxed job sees its own Triton cache (JOB/triton-cache) at this fixed path.
SANDBOX_TRITON_CACHE = "/var/cache/pt2scope/triton"
# Kernel binaries as the caches keep them: C++ kernels (.so) under TORCHINDUCTOR_CACHE_DIR, Triton's under
# TRITON_CACHE_DIR (.cubin on NVIDIA, .hsaco on AMD). engine.measure.caches counts them; the trusted kernel cache keeps them.
BINARY_SUFFIXES = (".so", ".cubin", ".hsaco")
# The trusted kernel cache (publish_kernel_cache): its subfolders and the job folder each is bound into.
KERNEL_STORE_ROOTS = {"inductor": "inductor-cache", "triton": "triton-cache"}
KERNEL_STORE_CURRENT = "current"  # a link to the store's folder for the worker's toolchain and gallery
# What a kernel-cache lookup needs besides the binaries: a C++ kernel split in two is linked from objects that must
# exist too (codecache._worker_compile_cpp builds any missing target); a Triton kernel's folder also holds its
# metadata (.json) and group file.
INDUCTOR_STORE_SUFFIXES = (*BINARY_SUFFIXES, ".o")
# When the worker is root, each job runs as a uid of its own in [SANDBOX_UID_BASE, +SANDBOX_UID_SPAN), leased for
# the job's lifetime (UidLease): RLIMIT_NPROC counts per uid, files are owned per uid, and whatever still runs as
# the uid when the job ends is killed, so nothing of one job reaches a later one.
SANDBOX_UID_BASE = 100_000
SANDBOX_UID_SPAN = 65_536
UID_LEASE_DIR = "/run/pt2scope-uid-leases"
# The interpreter the child runs, by the path the sandbox binds: the virtual environment's real folder (a worktree's
# .venv may be a link to another checkout's, which does not exist inside).
CHILD_PYTHON = os.path.join(os.path.realpath(os.path.dirname(sys.executable)), os.path.basename(sys.executable))
SANDBOX_TMP_BYTES = 64 * 1024 * 1024  # the private /tmp and /dev/shm (memory-backed, so small; TMPDIR is on disk)
SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What the dynamic loader, g++ (through /etc/alternatives) and Triton's `ldconfig -p` read from /etc.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")


class IsolationError(RuntimeError):
    """The configured isolation cannot work on this machine (raised at start-up, never mid-job)."""


@dataclass(frozen=True)
class Isolation:
    """The operator's choice (PT2SCOPE_ISOLATION): "bubblewrap" (default) or "none" (no sandbox at all)."""

    mode: str = "bubblewrap"
    # Folder of precompiled headers made by a trusted warm-up (see warm_shared_pch); bound read-only into jobs.
    shared_pch_dir: str | None = None
    # Folder of kernel binaries compiled by trusted jobs of the gallery (see publish_kernel_cache); bound read-only.
    kernel_cache_dir: str | None = None

    @classmethod
    def from_env(cls, env=os.environ) -> Isolation:
        mode = env.get("PT2SCOPE_ISOLATION", "bubblewrap")
        if mode not in MODES:
            raise IsolationError(f"PT2SCOPE_ISOLATION={mode!r}: choose one of {', '.join(MODES)}")
        return cls(
            mode=mode,
            shared_pch_dir=env.get("PT2SCOPE_PCH_DIR") or None,
            kernel_cache_dir=env.get("PT2SCOPE_KERNEL_CACHE_DIR") or None,
        )


def child_command(
    isolation: Isolation,
    request,
    job_dir: str,
    env: dict,
    uid: int | None = None,
    seccomp_fd: int | None = None,
    status_fd: int | None = None,
) -> list[str]:
    """The one launch command of a job's child: sandbox, then limits, then ``python -m engine.child JOB_DIR``.

    ``request`` is an engine.job.JobRequest: its ``*_limit*`` fields are the limits. ``uid``: the job's leased uid
    (a root worker); ``seccomp_fd``: engine.seccomp.filter_fd(), inherited by bubblewrap; ``status_fd``: where
    bubblewrap writes JSON lines, ``{"exit-code": N}`` once the job's own process ended (bubblewrap itself lives
    on while any process the job left runs: the parent then kills them).
    """
    command = _prlimit(request) + [CHILD_PYTHON, "-m", "engine.child", job_dir]
    if isolation.mode == "none":
        return command
    return _bwrap(isolation, job_dir, env, request.device, uid, seccomp_fd, status_fd) + _drop_root(uid) + command


def describe(
    isolation: Isolation,
    request,
    *,
    group: str = "watchdog",
    cpu: str = "not limited",
    cpu_cores: float | None = None,
    job_space: bool = False,
    seccomp: bool = False,
) -> dict:
    """report["isolation"]: what confined this job, each limit and what enforces it.

    ``group``: engine.jobgroup.JobGroup.describe() ("cgroup v1", "cgroup v2" or "watchdog"); ``cpu``: its
    describe_cpu() and ``cpu_cores`` the cores it allows; ``job_space``: the job folder was a size-limited tmpfs; ``seccomp``: the seccomp filter was
    installed."""
    sandboxed = isolation.mode == "bubblewrap"
    enforced = _enforced_by(request, sandboxed, group, cpu, job_space)
    return {
        "mode": isolation.mode,
        "network": "none (own empty network namespace)" if sandboxed else "the worker's network",
        "filesystem": (
            "read-only system and Python; writable job folder only"
            if sandboxed
            else "everything the worker's user can reach"
        ),
        "user": (
            "a uid of its own, capabilities dropped"
            if sandboxed and os.geteuid() == 0
            else "unprivileged in its own user namespace"
            if sandboxed
            else "the worker's own user"
        ),
        "seccomp": (
            "namespaces, mounts, keyrings, bpf, perf events, ptrace, io_uring and module loading denied"
            if seccomp
            else "none"
        ),
        "shared_pch": bool(sandboxed and _shared_pch_files(isolation)),
        "shared_kernel_cache": kernel_store_id(isolation) if sandboxed else None,
        "limits": {**{name: getattr(request, name) for name in enforced}, "cpu_cores": cpu_cores},
        "enforced_by": enforced,
    }


def _enforced_by(request, sandboxed: bool, group: str, cpu: str, job_space: bool) -> dict:
    """What enforces each limit of this job, in words (report["isolation"]["enforced_by"])."""
    cgroup = group != "watchdog"
    enforced = {
        "time_limit_s": "parent (wall clock)",
        "user_code_time_limit_s": "the child (faulthandler's watchdog ends it; wall clock of each stage load and eager)",
        "stall_limit_s": "the child (a thread that ends it when nothing progresses after the eager run: engine/stall.py)",
        "cpu_cores": cpu,
        "cpu_time_limit_s": "RLIMIT_CPU",
        "memory_limit_mb": (
            f"{group} (the job's processes together, its tmpfs files included) and RLIMIT_AS (each process)"
            if cgroup
            else "parent watchdog (resident memory of the job's processes together, every "
            "0.25 s) and RLIMIT_AS (each process)"
        ),
        "process_limit": (
            f"{group} pids.max (the whole job; ended once its forks are refused for {jobgroup.FORK_REFUSALS_S:g} s "
            f"or it starts over {jobgroup.FORK_RATE_PER_S} processes a second for {jobgroup.FORK_BOMB_S:g} s holding a "
            f"{jobgroup.FORK_BOMB_SHARE:g} share of the limit)"
            if cgroup
            else "RLIMIT_NPROC"
        ),
        "open_files_limit": "RLIMIT_NOFILE",
        "file_size_limit_mb": "RLIMIT_FSIZE",
        "output_limit_mb": (
            "tmpfs size of the job folder (kernel)"
            if job_space
            else "parent (the job folder and deleted files the job holds open, every 0.25 s)"
        ),
    }
    if not cgroup and not sandboxed and os.geteuid() == 0:
        enforced["process_limit"] = "not enforced (RLIMIT_NPROC does not apply to root without the sandbox)"
    if request.memory_limit_mb is None:
        enforced["memory_limit_mb"] = "not enforced per job (CUDA: use a cgroup or container memory limit)"
    return enforced


def check(isolation: Isolation) -> str:
    """Start a throw-away sandbox to prove the configured isolation works here; return a one-line description.

    Raises IsolationError naming the cause and the way out; called when a worker (or the CLI) starts.
    """
    if isolation.mode == "none":
        return (
            "isolation: NONE - jobs run unsandboxed with the worker's user, network and files (PT2SCOPE_ISOLATION=none)"
        )
    if shutil.which("bwrap") is None:
        raise IsolationError(
            "bubblewrap (bwrap) is not on PATH: apt-get install -y bubblewrap, "
            "or set PT2SCOPE_ISOLATION=none to run jobs without a sandbox (not for public use)"
        )
    lease = UidLease.take()
    try:
        with tempfile.TemporaryDirectory(prefix="pt2scope-sandbox-check-") as job_dir:
            prepare_job_dir(job_dir, isolation, lease.uid)
            probe = (
                _bwrap(isolation, job_dir, {"PATH": "/usr/bin:/bin"}, "cpu", lease.uid)
                + _drop_root(lease.uid)
                + [CHILD_PYTHON, "-c", "import socket; print(len(socket.if_nameindex()))"]
            )
            try:
                result = subprocess.run(probe, capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise IsolationError(f"bubblewrap could not start a sandbox: {exc}") from None
    finally:
        lease.release()
    if result.returncode != 0:
        raise IsolationError(
            f"bubblewrap cannot start a sandbox here ({result.stderr.strip()[-300:]}); containers often forbid "
            "user namespaces (Docker's default seccomp profile does). Run workers where bubblewrap works, or set "
            "PT2SCOPE_ISOLATION=none to run jobs without a sandbox (not for public use)"
        )
    if result.stdout.strip() != "1":
        raise IsolationError(f"the sandbox sees {result.stdout.strip()} network interfaces, expected only lo")
    pch = "shared precompiled header " + ("on" if _shared_pch_files(isolation) else "off")
    kernels = "trusted kernel cache " + ("on" if kernel_store_id(isolation) else "off")
    return f"isolation: bubblewrap (no network, read-only system, unprivileged, {pch}, {kernels})"


def prepare_job_dir(job_dir: str, isolation: Isolation, uid: int | None = None) -> None:
    """Create the job's TMPDIR and header folder, writable by the job's user ``uid`` (its lease; the worker keeps
    the files)."""
    folders = [job_dir, os.path.join(job_dir, "tmp")]
    folders += [os.path.join(folders[1], *PCH_SUBDIR.split(os.sep)[: i + 1]) for i in range(2)]
    os.makedirs(folders[-1], exist_ok=True)
    if isolation.mode == "none":
        # No sandbox to bind the trusted headers read-only: linked into the job's header folder instead (a job run
        # without a sandbox is trusted code, docs/security.md).
        for path in _shared_pch_files(isolation):
            link = os.path.join(folders[-1], os.path.basename(path))
            if not os.path.lexists(link):
                os.symlink(path, link)
    if isolation.mode == "bubblewrap":
        # Each job's own cache folders, and in them the folders the trusted kernels are bound into: the job's to
        # write in (its other kernels, Inductor's source files and locks), never the bound files themselves.
        for root in KERNEL_STORE_ROOTS.values():
            folders.append(os.path.join(job_dir, root))
            os.makedirs(folders[-1], exist_ok=True)
        for _, root, relative in _kernel_store_files(isolation):
            for depth in range(1, len(relative.split("/"))):
                folders.append(os.path.join(job_dir, KERNEL_STORE_ROOTS[root], *relative.split("/")[:depth]))
                os.makedirs(folders[-1], exist_ok=True)
    if uid is not None and isolation.mode == "bubblewrap":
        for path in folders:
            os.chown(path, uid, uid)
        # bubblewrap enters the folder as root without capabilities, before it becomes the job's uid.
        os.chmod(job_dir, 0o711)


class UidLease:
    """A uid no other job on this host holds, for one job of a root worker (``uid`` None for a non-root worker,
    whose jobs each get a user namespace instead).

    Held by an exclusive lock on a file per uid in UID_LEASE_DIR (released by the kernel if the worker dies); a
    uid that still runs processes (left by a killed worker) is not taken. ``release`` kills whatever still runs as
    the uid before giving it back.
    """

    def __init__(self, uid: int | None, fd: int | None):
        self.uid, self._fd = uid, fd

    @classmethod
    def take(cls) -> UidLease:
        if os.geteuid() != 0:
            return cls(None, None)
        folder = _lease_dir()
        for _ in range(256):
            uid = SANDBOX_UID_BASE + secrets.randbelow(SANDBOX_UID_SPAN)
            fd = os.open(os.path.join(folder, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if not processes_of_uid(uid):
                return cls(uid, fd)
            os.close(fd)
        raise IsolationError("no free sandbox uid: every uid tried is held by a job or still runs processes")

    def release(self) -> None:
        if self._fd is None:
            return
        for _ in range(100):  # a process forking while we kill: kill again until none is left
            pids = processes_of_uid(self.uid)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)
        os.close(self._fd)
        self._fd = None


def _lease_dir() -> str:
    """UID_LEASE_DIR, or where /run is not writable (some containers) a root-only folder under /tmp: every
    worker of one host must use the same one, and both choices are the same on every worker of an image."""
    for folder in (UID_LEASE_DIR, os.path.join(tempfile.gettempdir(), "pt2scope-uid-leases")):
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            continue
        info = os.lstat(folder)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and not info.st_mode & 0o022:
            return folder
    raise IsolationError(f"no folder for sandbox uid leases: {UID_LEASE_DIR} cannot be created")


def processes_of_uid(uid: int) -> list[int]:
    """Live processes whose real or effective uid is ``uid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue
        uids = next((line.split()[1:3] for line in status.splitlines() if line.startswith("Uid:")), [])
        state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "")
        if str(uid) in uids and state != "Z":
            found.append(int(entry))
    return found


def mount_job_space(job_dir: str, size_bytes: int) -> bool:
    """Make ``job_dir`` a tmpfs of ``size_bytes`` (a root worker): the kernel then bounds everything the job
    writes, files unlinked but held open and fallocate included, and unmounting frees all of it at once. Its pages
    count against the job's memory cgroup. False where mounting is not allowed (the parent then measures)."""
    os.makedirs(job_dir, exist_ok=True)
    if os.geteuid() != 0:
        return False
    result = subprocess.run(
        [
            shutil.which("mount") or "/usr/bin/mount",
            "-t",
            "tmpfs",
            "-o",
            f"size={size_bytes},mode=0711,nosuid,nodev",
            "pt2scope-job",
            job_dir,
        ],
        capture_output=True,
        text=True,
    )
    return result.returncode == 0


def kill_processes_of_job_dir(job_dir: str) -> list[int]:
    """Kill every process whose command line names ``job_dir`` (its bubblewrap and its child both do): what a
    worker killed mid-job can leave running. Returns the pids killed."""
    needle = os.path.realpath(job_dir).encode()
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if any(arg == needle or arg.startswith(needle + b"/") for arg in args):
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
            except ProcessLookupError:
                pass
    return killed


def copy_job_files(source: str, target: str, uid: int | None, skip=frozenset()) -> None:
    """Copy a job's folder (written by the job: untrusted) into ``target``: its folders and regular files only,
    no link followed or copied, no fifo opened, the top-level names in ``skip`` left out; what is copied is owned
    by ``uid`` (a job's lease) where one is given. Raises OSError."""

    def copy(src: str, dst: str, top: bool) -> None:
        os.makedirs(dst, exist_ok=True)
        if uid is not None:
            os.chown(dst, uid, uid)
        with os.scandir(src) as entries:
            for entry in entries:
                if top and entry.name in skip:
                    continue
                to = os.path.join(dst, entry.name)
                if entry.is_dir(follow_symlinks=False):
                    copy(entry.path, to, False)
                elif entry.is_file(follow_symlinks=False):
                    fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                    with os.fdopen(fd, "rb") as f, open(to, "wb") as out:
                        shutil.copyfileobj(f, out, 1 << 20)
                    os.chmod(to, stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) & 0o755)
                    if uid is not None:
                        os.chown(to, uid, uid)

    copy(source, target, True)


def remove_job_dir(job_dir: str) -> None:
    """Delete a job's folder, unmounting its tmpfs first if it has one (lazily: a file still open somewhere cannot
    keep the space; the job's processes are dead by now)."""
    if os.path.ismount(job_dir):
        subprocess.run([shutil.which("umount") or "/usr/bin/umount", "--lazy", job_dir], capture_output=True)
    shutil.rmtree(job_dir, ignore_errors=True)


def exit_signal(returncode: int, isolation: Isolation) -> signal.Signals | None:
    """The signal that ended the child: negative codes directly, 128+N when bubblewrap passed the status on."""
    number = (
        -returncode
        if returncode < 0
        else (returncode - 128 if isolation.mode == "bubblewrap" and 128 < returncode < 128 + 65 else None)
    )
    try:
        return signal.Signals(number) if number else None
    except ValueError:
        return None


def limit_failure(exc: BaseException, request: dict) -> tuple[str, str] | None:
    """(kind, message) when an exception in the child is a limit being hit, else None (child side, pure Python).

    Walks the exception's causes: torch and the stages wrap the original error.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc)
        if isinstance(exc, MemoryError) or "can't allocate memory" in text or "std::bad_alloc" in text:
            limit = request.get("memory_limit_mb")
            where = f"the memory limit of {limit} MiB" if limit else "the memory available"
            return "memory", f"out of memory: the job reached {where} ({type(exc).__name__}: {text[:300]})"
        if (isinstance(exc, BlockingIOError) and exc.errno == errno.EAGAIN) or "can't start new thread" in text:
            return "processes", (
                f"process limit of {request.get('process_limit')} processes and threads reached "
                f"({type(exc).__name__}: {text[:200]})"
            )
        if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            return "output_limit", (
                f"file size limit of {request.get('file_size_limit_mb')} MiB reached: a file "
                f"the job wrote (its printed output counts) grew past it ({text[:200]})"
            )
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return "output_limit", (
                f"output limit of {request.get('output_limit_mb')} MiB reached: the job's folder "
                f"is full (/tmp and /dev/shm hold {SANDBOX_TMP_BYTES >> 20} MiB each) "
                f"({text[:200]})"
            )
        if isinstance(exc, OSError) and exc.errno == errno.EMFILE:
            return "open_files", f"open files limit of {request.get('open_files_limit')} reached ({text[:200]})"
        exc = exc.__cause__ or exc.__context__
    return None


def warm_shared_pch(isolation: Isolation, run_warmup) -> list[str]:
    """Fill isolation.shared_pch_dir with the precompiled headers of a trusted compile; return the files added.

    ``run_warmup(job_dir)`` runs a job of our own code (never a user's) in the sandbox. Its headers depend only
    on torch's headers and the compiler flags (Inductor names them by a hash of both), so every job can use them;
    each job gets them bound read-only, so no job can change what another job compiles with. Files are published
    by rename, so a job starting meanwhile binds whole files or none.
    """
    store = isolation.shared_pch_dir
    os.makedirs(store, exist_ok=True)
    stamp_path, stamp = os.path.join(store, ".built-for"), _toolchain_stamp()
    try:
        with open(stamp_path) as f:
            if f.read() == stamp:  # already made for this torch and compiler (e.g. by another worker)
                return []
    except OSError:
        pass
    with tempfile.TemporaryDirectory(prefix="pt2scope-pch-warmup-") as job_dir:
        run_warmup(job_dir)
        built = os.path.join(job_dir, "tmp", PCH_SUBDIR)
        added = []
        for name in sorted(os.listdir(built)) if os.path.isdir(built) else []:
            source = os.path.join(built, name)
            if not os.path.isfile(source) or os.path.islink(source) or os.path.exists(os.path.join(store, name)):
                continue
            staging = os.path.join(store, f".{name}.{os.getpid()}.tmp")
            shutil.copyfile(source, staging)
            os.chmod(staging, 0o444)
            os.replace(staging, os.path.join(store, name))
            added.append(name)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    return added


def _toolchain_stamp() -> str:
    """What the precompiled headers depend on, found without importing torch: its version and the compiler's."""
    compiler = os.environ.get("CXX", "g++")
    try:
        compiler_version = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.split("\n")[0]
    except (OSError, subprocess.TimeoutExpired):
        compiler_version = "unknown"
    return f"torch {_package_version('torch')}; {compiler_version}"


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "none"


@functools.cache
def _kernel_stamp() -> str:
    """What trusted kernel binaries depend on beyond their cache keys (which hash the kernel's source and compile
    command, not torch's ABI): torch, the C++ compiler, Triton. Cached: a job's launch checks it; the toolchain of a
    running worker does not change under it."""
    triton = next((v for v in map(_package_version, ("triton", "pytorch-triton")) if v != "none"), "none")
    return f"{_toolchain_stamp()}; triton {triton}"


def publish_kernel_cache(isolation: Isolation, sources: dict[str, str], run_trusted) -> list[str]:
    """Fill isolation.kernel_cache_dir with the kernel binaries trusted jobs compile; return the files published.

    ``sources``: {gallery file name: its code}, our own code (never a user's); ``run_trusted(job_dir, name, code)``
    runs one as a job in the sandbox with the engine's settings of a user's recorded compile, so that a user job of
    the same model generates the same kernel source and compile command, hence the same cache keys (kernel caches
    name their files by them: Inductor's C++ kernels JOB/inductor-cache/<2>/<key>.so, Triton's
    TRITON_CACHE_DIR/<key>/). The store keeps one folder per toolchain and gallery (a hash of both), never changed
    once published: it is built in a hidden folder and renamed into place, then KERNEL_STORE_CURRENT is pointed at
    it (a link replaced by rename), so a job starting meanwhile binds the old folder's files or the new one's.
    A folder already made for this toolchain and gallery (another worker, an earlier start) is reused.
    """
    store = isolation.kernel_cache_dir
    os.makedirs(store, exist_ok=True)
    stamp = _kernel_stamp()
    described = stamp + "".join(
        f"\n{name} {hashlib.sha256(code.encode()).hexdigest()}" for name, code in sorted(sources.items())
    )
    folder_id = hashlib.sha256(described.encode()).hexdigest()[:16]
    folder = os.path.join(store, folder_id)
    published = []
    if _read_stamp(folder) != stamp:
        staging = tempfile.mkdtemp(prefix=f".{folder_id}.", dir=store)
        for name, code in sorted(sources.items()):
            with tempfile.TemporaryDirectory(prefix="pt2scope-kernel-warmup-") as job_dir:
                run_trusted(job_dir, name, code)
                published += _copy_kernels(job_dir, staging)
        with open(os.path.join(staging, "manifest.json"), "w") as f:
            json.dump({"built_for": stamp, "sources": sorted(sources), "files": published}, f)
        for path, dirs, files in os.walk(staging):
            for name in files:
                os.chmod(os.path.join(path, name), 0o444)
            for name in dirs:
                os.chmod(os.path.join(path, name), 0o755)
        os.chmod(staging, 0o755)
        if os.path.exists(folder):  # left by a build for another toolchain under the same id (never reused)
            shutil.rmtree(folder)
        try:
            os.rename(staging, folder)
        except OSError:  # another worker published the same folder meanwhile: theirs is as good
            shutil.rmtree(staging, ignore_errors=True)
            published = []
    link = os.path.join(store, f".{KERNEL_STORE_CURRENT}.{os.getpid()}.tmp")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(folder_id, link)
    os.replace(link, os.path.join(store, KERNEL_STORE_CURRENT))
    return published


def _copy_kernels(job_dir: str, staging: str) -> list[str]:
    """Copy what a trusted job's kernel caches hold of its binaries into ``staging`` (<root>/<path in the cache>):
    Inductor's C++ binaries and objects, and each Triton kernel folder that holds a binary. Returns 'root/path's."""
    copied = []
    for root, job_root in KERNEL_STORE_ROOTS.items():
        base = os.path.join(job_dir, job_root)
        for path, _, files in os.walk(base):
            if root == "triton" and not any(name.endswith(BINARY_SUFFIXES) for name in files):
                continue
            for name in files:
                source = os.path.join(path, name)
                if os.path.islink(source) or not os.path.isfile(source) or ".tmp" in name:
                    continue
                if root == "inductor" and not name.endswith(INDUCTOR_STORE_SUFFIXES):
                    continue
                relative = os.path.relpath(source, base)
                target = os.path.join(staging, root, relative)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if not os.path.exists(target):
                    shutil.copyfile(source, target)
                    copied.append(f"{root}/{relative}")
    return copied


def _read_stamp(folder: str) -> str | None:
    try:
        with open(os.path.join(folder, "manifest.json")) as f:
            return json.load(f).get("built_for")
    except (OSError, ValueError, AttributeError):
        return None


def _kernel_store_folder(isolation: Isolation) -> str | None:
    """The store's current folder, if it was built for this worker's toolchain (else it is not used)."""
    if not isolation.kernel_cache_dir or isolation.mode != "bubblewrap":
        return None
    folder = os.path.realpath(os.path.join(isolation.kernel_cache_dir, KERNEL_STORE_CURRENT))
    if (
        os.path.dirname(folder) != os.path.realpath(isolation.kernel_cache_dir)
        or _read_stamp(folder) != _kernel_stamp()
    ):
        return None
    return folder


def kernel_store_id(isolation: Isolation) -> str | None:
    """The trusted kernel cache a job gets bound (its folder's name: a hash of the toolchain and the gallery files
    it was built from), or None: part of what a job's sandbox is (describe)."""
    folder = _kernel_store_folder(isolation)
    return os.path.basename(folder) if folder and _kernel_store_files(isolation) else None


def kernel_store_sources(isolation: Isolation) -> list[str]:
    """The gallery files the bound trusted kernel cache was built from ([] when none is bound)."""
    folder = _kernel_store_folder(isolation)
    try:
        with open(os.path.join(folder, "manifest.json")) as f:
            return list(json.load(f)["sources"])
    except (TypeError, OSError, ValueError, KeyError):
        return []


def _kernel_store_files(isolation: Isolation) -> list[tuple[str, str, str]]:
    """(file in the store, root, path under the root) for each trusted kernel file to bind."""
    folder = _kernel_store_folder(isolation)
    found = []
    for root in KERNEL_STORE_ROOTS if folder else ():
        base = os.path.join(folder, root)
        for path, _, files in os.walk(base):
            for name in files:
                source = os.path.join(path, name)
                if os.path.isfile(source) and not os.path.islink(source):
                    found.append((source, root, os.path.relpath(source, base).replace(os.sep, "/")))
    return sorted(found)


def _shared_pch_files(isolation: Isolation) -> list[str]:
    store = isolation.shared_pch_dir
    if not store or not os.path.isdir(store):
        return []
    return sorted(
        os.path.join(store, n)
        for n in os.listdir(store)
        if not n.startswith(".") and os.path.isfile(os.path.join(store, n))
    )


def _prlimit(request) -> list[str]:
    mib = 1024 * 1024
    cpu = int(request.cpu_time_limit_s)
    args = [
        f"--cpu={cpu}:{cpu + 5}",  # SIGXCPU at the limit (named in the report), SIGKILL 5 s later
        f"--nproc={request.process_limit}",
        f"--nofile={request.open_files_limit}",
        f"--fsize={request.file_size_limit_mb * mib}",
        "--core=0",
    ]
    if request.memory_limit_mb is not None:
        args.append(f"--as={request.memory_limit_mb * mib}")
    return [shutil.which("prlimit") or "/usr/bin/prlimit", *args, "--"]


def _drop_root(uid: int | None) -> list[str]:
    if uid is None:
        return []
    return [
        shutil.which("setpriv") or "/usr/bin/setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def _bwrap(
    isolation: Isolation,
    job_dir: str,
    env: dict,
    device: str,
    uid: int | None,
    seccomp_fd: int | None = None,
    status_fd: int | None = None,
) -> list[str]:
    """bubblewrap's command line for one job: its namespaces and privileges, its environment, then its file
    system (the system read-only, the job's folder writable, the trusted shared files read-only inside it)."""
    job_dir = os.path.realpath(job_dir)
    made: set[str] = set()  # folders already created in the sandbox (each --dir once)

    def parents(path):
        out = []
        for parent in _ancestors(path):
            if parent not in made:
                made.add(parent)
                out += ["--perms", "0755", "--dir", parent]
        return out

    args = _bwrap_namespaces(uid, seccomp_fd, status_fd) + _bwrap_env(isolation, env)
    args += _bwrap_system(device, parents)
    made.add("/tmp")
    args += _bwrap_job_files(isolation, job_dir, env, parents)
    return args + ["--chdir", job_dir, "--"]


def _bwrap_namespaces(uid: int | None, seccomp_fd: int | None, status_fd: int | None) -> list[str]:
    """New namespaces for everything but the file system's mounts, no capabilities but those setpriv needs."""
    args = [
        shutil.which("bwrap") or "bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "pt2scope",
        "--cap-drop",
        "ALL",
    ]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if status_fd is not None:
        args += ["--json-status-fd", str(status_fd)]
    if uid is None:  # not root: a user namespace, and none further inside it
        args += ["--unshare-user", "--disable-userns"]
    else:  # root: no user namespace (see the module docstring); setpriv drops to the job's uid
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    return args


def _bwrap_env(isolation: Isolation, env: dict) -> list[str]:
    """Only ``env``, with the Triton cache at its fixed path inside and the trusted kernels named."""
    args = ["--clearenv"]
    inside = {**env}
    if env.get("TRITON_CACHE_DIR"):
        inside["TRITON_CACHE_DIR"] = SANDBOX_TRITON_CACHE
    sources = kernel_store_sources(isolation)
    if sources:  # which trusted kernels the job's cache folders hold (the report names them)
        inside["PT2SCOPE_TRUSTED_KERNELS"] = ",".join(sources)
    for key, value in inside.items():
        args += ["--setenv", key, str(value)]
    return args


def _bwrap_system(device: str, parents) -> list[str]:
    """The system read-only, fresh /proc, /dev and size-limited tmpfs /tmp and /dev/shm; a GPU's device files."""
    args = ["--ro-bind", "/usr", "/usr"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC_FILES:
        if os.path.exists(path):
            args += parents(path) + ["--ro-bind", path, path]
    args += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(SANDBOX_TMP_BYTES),
        "--perms",
        "1777",
        "--tmpfs",
        "/dev/shm",
        "--size",
        str(SANDBOX_TMP_BYTES),
        "--perms",
        "1777",
        "--tmpfs",
        "/tmp",
    ]
    if device == "cuda":  # the GPU's device files, and /sys where the driver looks up the devices
        for node in sorted(glob.glob("/dev/nvidia*")):
            args += ["--dev-bind", node, node]
        args += ["--ro-bind", "/sys", "/sys"]
    return args


def _bwrap_job_files(isolation: Isolation, job_dir: str, env: dict, parents) -> list[str]:
    """The child's Python and packages and the compiler read-only, the job's folder writable, and the trusted
    precompiled headers and kernels read-only inside it."""
    args = []
    # The Python that runs the child, its virtual environment and the engine and contract packages: read-only.
    # Nothing else of the project (web app, instance folder with the database and broker, other jobs) exists there.
    python_dirs = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), *CHILD_PACKAGES}
    for path in sorted(python_dirs):
        if path != "/usr" and not path.startswith("/usr/"):
            args += parents(path) + ["--ro-bind", path, path]
    # The C/C++ compiler Inductor and Triton call, where it lives outside /usr (e.g. /opt/gcc on the GPU image).
    for path in _toolchain_dirs(env):
        if path not in python_dirs:
            args += parents(path) + ["--ro-bind", path, path]
    args += parents(job_dir) + ["--bind", job_dir, job_dir]
    # Trusted precompiled headers, each file bound read-only into this job's own (writable) header folder: the job
    # can add headers for other flags but cannot change, replace or delete these (they are mount points).
    pch_dir = os.path.join(job_dir, "tmp", PCH_SUBDIR)
    for path in _shared_pch_files(isolation):
        args += ["--ro-bind", path, os.path.join(pch_dir, os.path.basename(path))]
    job_triton_cache = env.get("TRITON_CACHE_DIR")
    if job_triton_cache:
        args += parents(SANDBOX_TRITON_CACHE) + ["--bind", job_triton_cache, SANDBOX_TRITON_CACHE]
    # Trusted kernel binaries, the same way: each file read-only into this job's own cache folder (its Triton
    # cache at the fixed path), where the kernel caches look them up by key.
    targets = {"inductor": os.path.join(job_dir, KERNEL_STORE_ROOTS["inductor"]), "triton": SANDBOX_TRITON_CACHE}
    for path, root, relative in _kernel_store_files(isolation):
        args += ["--ro-bind", path, os.path.join(targets[root], relative)]
    return args


def _toolchain_dirs(env: dict) -> list[str]:
    """Install prefixes (the folder above bin/) of the compilers on the child's PATH that lie outside /usr."""
    out = set()
    for name in (env.get("CC"), env.get("CXX"), "cc", "gcc", "c++", "g++"):
        found = name and shutil.which(name, path=env.get("PATH"))
        if found:
            real = os.path.realpath(found)
            if not real.startswith("/usr/"):
                out.add(os.path.dirname(os.path.dirname(real)))
    return sorted(out)


def _ancestors(path: str) -> list[str]:
    """'/a/b/c' -> ['/a', '/a/b'] (the folders bubblewrap must create before binding c)."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]
