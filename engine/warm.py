"""A warm compile: the job's model compiled again in a fresh process, with the caches the job's compiles left.

``python -m engine.warm JOB_DIR CONFIG OUT`` runs inside the job's sandbox and folder (spawned by the child, after
the benchmark ladder): it loads the user's file as the child did, compiles it with CONFIG's backend and mode with
every cache at torch's defaults (the recorded compile had the graph caches off to see IR and fusion; on CPU its
kernels carry profiler names, set here too so that its kernel binaries can be reused), calls it once
on each input set (and backward when training), and writes OUT (JSON): the exclusive compile seconds, as the
recorded compile's (runtime.compile_seconds), and the cache hits and misses per stage. Run twice, the first run
fills the FX-graph and AOTAutograd caches that the second then hits: a user's second run of the same script.

``python -m engine.warm JOB_DIR CONFIG OUT CONFIGS`` is also a measuring process (runtime.processes): after its
compile it detaches the log tap and times every config of CONFIGS (comma-separated) in the ladder's interleaved
rounds (engine.stages.runtime.processes.time_here); OUT then holds them too, under "timing".

Inside a job the child does not start these processes from nothing: a fresh interpreter spent most of its life
importing torch and Inductor (16 of a 22.5 s warm compile on an H100, docs/benchmarks.md). ForkServer keeps a copy
of the child made once those imports are done and before anything else (no user code, no compile, no CUDA, no
thread pool, none of our hooks), and forks each warm process from it: a process that has compiled nothing, exactly
as a new one, without the imports. Where the server cannot start (the job's process limit, or the CUDA driver
started before the fork, which would leave the forks unable to use the GPU) they start as new interpreters.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
import warnings

# Every engine module main() imports (tests/engine/test_child_helpers.py reads main's imports and checks): the fork
# server imports them before it forks, so that no warm process pays for one.
MAIN_IMPORTS = (
    "contract.vocab",
    "engine.logtap",
    "engine.usercode",
    "engine.measure.caches",
    "engine.measure.compile_metrics",
    "engine.readers.inductor_log",
    "engine.stages.inductor",
    "engine.stages.runtime.compile_times",
    "engine.stages.runtime.processes",
    "engine.stages.runtime.workload",
)


class ForkServer:
    """A copy of the job's child, forked once torch, Inductor and the engine are imported and before anything else
    runs (engine.child), that forks a warm process (``main``) on request. Protocol, JSON lines: the child writes
    ``[argv, stderr_path]``; the server answers ``{"pid": N}`` once forked and ``{"exit": CODE}`` when it ended. The
    server ends when the child closes its end (the child's exit, a kill included)."""

    def __init__(self, device: str) -> None:
        if device == "cuda":
            if cuda_driver_started():
                raise OSError("the CUDA driver was started before the fork: a fork could not use the GPU")
            try:  # Triton: its import (not CUDA's start, which a fork cannot share) is a second or two
                import triton  # noqa: F401
            except ImportError:  # Inductor then says so in the warm process, as in the job
                pass
        for module in MAIN_IMPORTS:
            __import__(module)  # imported once here rather than in every warm process
        requests_r, self._requests = os.pipe()
        self._replies, replies_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        with warnings.catch_warnings():  # 3.12 warns of fork with threads: the server starts none, uses no lock
            warnings.simplefilter("ignore", DeprecationWarning)
            self.pid = os.fork()
        if self.pid == 0:
            _serve(requests_r, replies_w)  # never returns
        os.close(requests_r)
        os.close(replies_w)
        self._pending = b""

    def run(self, argv: list[str], timeout_s: float, stderr_path: str) -> int | None:
        """Run ``main(argv)`` in a fork, its stderr into ``stderr_path``; its exit code, or None when it did not end
        within ``timeout_s`` (it is killed)."""
        os.write(self._requests, (json.dumps([argv, stderr_path]) + "\n").encode())
        pid = self._reply(None)["pid"]
        try:
            return self._reply(timeout_s)["exit"]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self._reply(None)
            return None

    def _reply(self, timeout_s: float | None) -> dict:
        import select

        while b"\n" not in self._pending:
            if timeout_s is not None and not select.select([self._replies], [], [], timeout_s)[0]:
                raise TimeoutError
            chunk = os.read(self._replies, 4096)
            if not chunk:
                raise RuntimeError("the warm processes' fork server ended")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)


def cuda_driver_started() -> bool:
    """Whether this process has started the CUDA driver (cuInit, which torch.cuda.is_available() also calls): a
    process forked after it cannot use the GPU (cuInit fails in it; pytorch/pytorch#190708). The driver answers
    cuDeviceGetCount with CUDA_ERROR_NOT_INITIALIZED (3) until then. Loading the library starts nothing; no
    library counts as started (nothing to fork for)."""
    import ctypes

    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return True
    return driver.cuDeviceGetCount(ctypes.byref(ctypes.c_int())) != 3


def _serve(requests_r: int, replies_w: int) -> None:
    """The fork server's loop (see ForkServer): it holds only its two pipes and /dev/null, so that no pipe of the
    job's (the parent's events) stays open in it."""
    import faulthandler

    # The child's fatal-signal dump writes into the child's file; not from here. (Its watchdog thread is not
    # copied by the fork, and cancelling it would wait for that thread forever: left alone.)
    faulthandler.disable()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2 and int(name) not in (requests_r, replies_w):
            try:
                os.close(int(name))
            except OSError:  # the listing's own descriptor, closed already
                pass
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = os.read(requests_r, 65536)
            if not chunk:
                os._exit(0)
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        argv, stderr_path = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os.close(requests_r)
            os.close(replies_w)
            _run_forked(argv, stderr_path)
        os.write(replies_w, (json.dumps({"pid": pid}) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        os.write(replies_w, (json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n").encode())


def _run_forked(argv: list[str], stderr_path: str) -> None:
    """A warm process forked by the server: main(argv), its stderr into the file, then the process ends without the
    interpreter's exit (whose handlers are the child's, registered before the fork)."""
    code = 1
    try:
        fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
        os.chdir(argv[0])  # the job's folder, as a new interpreter's
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - its stderr says why; the child reports the failure
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main(argv: list[str]) -> int:
    job_dir, config_name, out_path, *timed = argv
    import torch
    import torch._inductor.config as inductor_config

    # No compile-worker pool in these processes: their caches are warm, so nothing is left for workers to compile, and
    # on an H200 node the pool's sidecar kept a core busy through the first 6 s after the compile (beside the timed
    # rounds) and the process ended 2.5-5.9 s later than without it (bench/gpu_host_cores.py --pool;
    # docs/benchmarks.md, "GPU: the host core and the compile-worker pool"). A user's compile does not wait for the
    # pool either: it compiles in-process until the pool is ready.
    inductor_config.compile_threads = 1

    from contract.vocab import CONFIGS
    from engine import logtap, usercode
    from engine.measure.caches import cache_counts, kernel_binaries
    from engine.measure.compile_metrics import compile_seconds
    from engine.readers.inductor_log import kernel_count
    from engine.stages import inductor  # noqa: F401 - declares the log reader of the output code read below
    from engine.stages.runtime import compile_times  # noqa: F401 - declares the log readers read below
    from engine.stages.runtime.workload import Workload

    with open(os.path.join(job_dir, "request.json")) as f:
        request = json.load(f)
    with open(os.path.join(job_dir, request["filename"])) as f:
        source = f.read()
    program = usercode.load(source, request["filename"], request["device"], request.get("train"))
    config = CONFIGS[config_name]
    if request["device"] == "cpu":  # as the recorded compile (inductor stage): the same kernel source, so the
        inductor_config.cpp.enable_kernel_profile = True  # binaries it left can be found in the cache
    # The structured trace only (as during the recorded compile, so both are timed with the same instrument); no
    # TORCH_LOGS artifact.
    tap = logtap.LogTap()
    tap.install(artifacts=())
    before = kernel_binaries()
    workload = Workload(program.model, program.inputs_list, program.train, program.loss_fn, request["device"])
    inst = workload.fresh()
    compiled = torch.compile(inst.model, backend=config.backend, mode=config.mode)
    # The recorded compile's step (grad mode included: an inference graph without train), so the same graphs and
    # cache keys; the first call compiles.
    workload.compared_step(compiled, inst, cudagraph_steps=config.cudagraph_steps(request["device"]))
    written = len(kernel_binaries() - before)
    metrics = logtap.read(tap, "runtime.compile_metrics")
    kernels = sum(kernel_count(o["code"]) for o in logtap.read(tap, "inductor.output_code"))
    result = {
        "status": "ok",
        "config": config_name,
        "seconds": compile_seconds(metrics["forward"], metrics["backward"], metrics["runtime"]),
        "caches": cache_counts(torch._dynamo.utils.counters, kernels, written),
    }
    if timed and timed[0]:  # a measuring process: nothing of ours stays attached while it times the configs
        from engine.stages.runtime.processes import time_here

        tap.uninstall()
        result["timing"] = time_here(workload, (inst, compiled), config_name, timed[0].split(","), request["device"])
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
