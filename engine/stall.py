"""The stall watch: a job's child stops itself when it makes no progress for its stall limit (child side).

The eager run has a limit of its own (engine.child.Job.user_code_starts), but an endless loop that only a compile
reaches (code under ``torch.compiler.is_compiling()``, which Dynamo then traces for ever), one that the twentieth
call reaches, or one in the user's own backend would hold its worker until the job's wall clock: a quarter of an
hour by default, a whole class's GPU. From the first stage after the eager run, the child marks progress at every
stage's start and end, every record of torch's compile logs (engine.logtap) and every timed round; a thread here
looks once a second, and when nothing was marked for the limit it writes the limit and every thread's stack to
STALL_STACK_FILE and ends the process. The parent then says which stage, the user's line where the stack shows one,
and how to raise the limit (engine.job).

Compiling is progress even when it logs nothing: after the recorded compile the log tap hears little (a later
config's Inductor compile, its C++ or Triton build, max-autotune's benchmarks may run for minutes). So once quiet
for a few seconds the watch reads the main thread's stack from its innermost frame outwards: the first frame that is the user's file
means the user's code is running (a stall); the first that is torch's compiler below Dynamo (AOTAutograd,
Inductor), Triton or the profiler reading its trace means torch is working, and the watch waits on. Dynamo's own frames decide nothing (it
interprets the user's code: a loop it traces for ever shows only Dynamo's frames, and is a stall).

The limit is the request's ``stall_limit_s`` plus STEPS_WITHOUT_MARK of the model's own eager steps: a model whose
step takes 20 s may warm up for several steps between marks. The warm compile's processes are bounded otherwise
(each by the time the job took to get there: engine.stages.runtime.warm_compile), so the watch pauses for them. A
loop in C code that holds the GIL starves this thread: the job's wall clock still ends it. Not a security boundary
(the user's code could stop the thread); the wall clock is.
"""

from __future__ import annotations

import faulthandler
import os
import re
import sys
import threading
import time

from contract.userfile import is_user_file

CHECK_EVERY_S = 1.0
# Past this long without a mark the watch looks at the stack once a second (never during the timed rounds, which
# mark every round): a compile found working counts as progress.
LOOK_AFTER_S = 5.0
STEPS_WITHOUT_MARK = 10
STALL_EXIT_CODE = 75  # the child's exit status at the stall limit (the parent reads the stack file, not this)
# torch's own long work that runs none of the user's code: the compiler past Dynamo's tracing (AOTAutograd in
# torch/_functorch, Inductor, Triton) and the profiler's reading of its trace.
TORCH_AT_WORK = re.compile(r"/torch/_functorch/|/torch/_inductor/|/triton/|/torch/profiler/|/torch/autograd/profiler")


class StallWatch:
    def __init__(self, limit_s: float, stack_path: str, user_file: str):
        self.limit_s = limit_s
        self.stack_path, self.user_file = stack_path, user_file
        self.main_thread = threading.get_ident()  # made on the thread that runs the stages
        self.last = time.monotonic()
        self.longest = 0.0  # the longest gap between marks since the last take_longest()
        self.watching = False
        self._thread: threading.Thread | None = None

    def allow_steps(self, step_s: float) -> None:
        """The model's eager step is known: a step that long may pass STEPS_WITHOUT_MARK times between marks."""
        self.limit_s += STEPS_WITHOUT_MARK * max(0.0, step_s)

    def mark(self) -> None:
        """Progress: called from the stages, the log tap's handler and the timed rounds (cheap: no lock)."""
        now = time.monotonic()
        self.longest = max(self.longest, now - self.last)
        self.last = now

    def take_longest(self) -> float:
        """The longest gap between marks since the last call (a stage's ``longest_quiet_s``), the current one
        included; starts the next count."""
        self.mark()
        longest, self.longest = self.longest, 0.0
        return longest

    def watch(self) -> None:
        """Watch from now on (the thread starts once; a job at its process limit cannot start it, and then only
        the job's wall clock holds until a later stage's call starts it)."""
        self.mark()
        self.watching = True
        if self._thread is None:
            thread = threading.Thread(target=self._run, name="pt2scope-stall-watch", daemon=True)
            try:
                thread.start()
            except RuntimeError:
                self.watching = False
                return
            self._thread = thread

    def pause(self) -> None:
        self.watching = False

    def _run(self) -> None:
        while True:
            time.sleep(CHECK_EVERY_S)
            quiet = time.monotonic() - self.last
            if not self.watching or quiet < LOOK_AFTER_S:
                continue
            if self.torch_at_work():
                self.mark()
            elif quiet > self.limit_s:
                self._stop(quiet)

    def torch_at_work(self) -> bool:
        """Whether the main thread is in torch's own long work (TORCH_AT_WORK) rather than the user's code or
        Dynamo's tracing of it (the module's docstring)."""
        frame = sys._current_frames().get(self.main_thread)
        while frame is not None:
            path = frame.f_code.co_filename
            if is_user_file(path, self.user_file):
                return False
            if TORCH_AT_WORK.search(path):
                return True
            frame = frame.f_back
        return False

    def _stop(self, quiet: float) -> None:
        try:
            with open(self.stack_path, "w") as f:
                f.write(f"no progress for {quiet:.0f} s, limit {self.limit_s:.0f} s\n")
                f.flush()
                faulthandler.dump_traceback(f, all_threads=True)
        finally:
            os._exit(STALL_EXIT_CODE)
