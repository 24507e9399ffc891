"""The stall watch (engine/stall.py) on real frames and real processes: what counts as the compiler working, that a
quiet stretch in the user's code ends the process with its stack, and that a warm process stops at its own budget.
The jobs that end at the stall limit are in tests/security/test_job_boundary.py."""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from engine.stages.runtime.warm_compile import warm_compiles
from engine.stall import STALL_EXIT_CODE, StallWatch

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TORCH = "/venv/lib/python3.12/site-packages/torch"


def nested_stack(files: list[str], release: threading.Event) -> threading.Thread:
    """A thread whose stack holds one frame of each file in ``files`` (outermost first), waiting on ``release``."""
    inner = None
    for path in reversed(files):
        namespace = {"threading": threading, "inner": inner}
        body = "release.wait()" if inner is None else "inner(release)"
        exec(compile(f"def level(release):\n    {body}\n", path, "exec"), namespace)
        inner = namespace["level"]
    thread = threading.Thread(target=inner, args=(release,), daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    "files, at_work",
    [
        (
            [f"{TORCH}/_dynamo/eval_frame.py", f"{TORCH}/_inductor/compile_fx.py", "/usr/lib/python3.12/threading.py"],
            True,
        ),
        ([f"{TORCH}/_dynamo/convert_frame.py", f"{TORCH}/_functorch/aot_autograd.py", f"{TORCH}/fx/proxy.py"], True),
        (["model.py", f"{TORCH}/_inductor/select_algorithm.py"], True),
        ([f"{TORCH}/_dynamo/symbolic_convert.py", f"{TORCH}/_dynamo/variables/base.py"], False),
        ([f"{TORCH}/_inductor/compile_fx.py", "model.py"], False),
        (["model.py", f"{TORCH}/nn/functional.py"], False),
        (["model.py", f"{TORCH}/profiler/profiler.py"], True),
        (["/work/engine/stages/runtime/timing.py"], False),
    ],
)
def test_torch_at_work_is_told_from_the_users_code_and_dynamos_tracing(files, at_work):
    """Innermost frame outwards: the user's file first is the user's code running; AOTAutograd, Inductor, Triton or
    the profiler first is torch at work; Dynamo's frames decide nothing (a loop it traces for ever)."""
    release = threading.Event()
    thread = nested_stack(files, release)
    try:
        watch = StallWatch(1.0, os.devnull, "model.py")
        watch.main_thread = thread.ident
        time.sleep(0.05)  # the thread is inside its innermost frame
        assert watch.torch_at_work() is at_work
    finally:
        release.set()
        thread.join()


def run_watched(tmp_path, innermost_file: str, quiet_s: float) -> tuple[int, str]:
    """A process whose main thread waits ``quiet_s`` inside a frame of ``innermost_file`` under a watch of 1 s
    (looking at the stack after 0.3 s): its exit status and the stack file."""
    stack = tmp_path / "stack.txt"
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {os.path.abspath(ROOT)!r})
        from engine import stall
        stall.CHECK_EVERY_S, stall.LOOK_AFTER_S = 0.1, 0.3
        watch = stall.StallWatch(1.0, {str(stack)!r}, "model.py")
        watch.watch()
        namespace = {{"time": time}}
        exec(compile("def wait():\\n    time.sleep({quiet_s})\\n", {innermost_file!r}, "exec"), namespace)
        namespace["wait"]()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], timeout=60)
    return done.returncode, stack.read_text() if stack.exists() else ""


def test_a_quiet_stretch_in_the_users_code_ends_the_process_with_its_stack(tmp_path):
    code, stack = run_watched(tmp_path, "model.py", 30)
    assert code == STALL_EXIT_CODE
    first, _, rest = stack.partition("\n")
    assert first.startswith("no progress for 1 s, limit 1 s") and 'File "model.py", line 2 in wait' in rest


def test_a_compile_working_longer_than_the_limit_is_not_a_stall(tmp_path):
    code, stack = run_watched(tmp_path, f"{TORCH}/_inductor/codecache.py", 3)
    assert (code, stack) == (0, "")


def test_a_warm_process_stops_at_its_own_budget_not_its_share_of_the_job(tmp_path, monkeypatch):
    """A warm-compile process that loads the file again and loops ends at the budget it is given (the stall limit
    plus the job's own time so far), with the reason, however much of the job's time is left."""
    monkeypatch.setenv("PYTHONPATH", os.path.abspath(ROOT))  # a new interpreter in the job's folder, as a job's
    (tmp_path / "model.py").write_text("while True:\n    pass\n")
    (tmp_path / "request.json").write_text(json.dumps({"filename": "model.py", "device": "cpu", "train": False}))
    started = time.monotonic()
    results = warm_compiles(str(tmp_path), "inductor_default", time_left_s=600, process_limit_s=3)
    assert time.monotonic() - started < 30
    assert results["warmup"]["status"] == "failed"
    assert results["warmup"]["reason"].startswith("did not finish within 3 s: the stall limit plus the time")


def test_a_watch_whose_thread_could_not_start_starts_it_at_the_next_stage(tmp_path, monkeypatch):
    """A job at its process limit cannot start the watch's thread: that stage goes unwatched (the job's wall clock
    holds), and the next stage's watch() starts it."""
    watch = StallWatch(60.0, str(tmp_path / "stack.txt"), "model.py")
    real_start = threading.Thread.start

    def refused(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    watch.watch()
    assert not watch.watching
    monkeypatch.setattr(threading.Thread, "start", real_start)
    try:
        watch.watch()
        assert watch.watching and watch._thread is not None and watch._thread.is_alive()
    finally:
        watch.pause()  # its thread lives on in this process: it must never judge pytest's own stack
