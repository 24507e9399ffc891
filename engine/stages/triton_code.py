"""The recorded compile's Triton kernels as Triton compiled them for the GPU: every IR stage, SASS, and the launch
autotuning chose (the kernel fold's "Device code" on the Inductor tab).

Source: Inductor runs each Triton kernel through a CachingAutotuner (private: guarded). While the recorded compile
makes its first call, every autotuner that launches is noted; by then each holds only its chosen launcher, whose
``cache_hash`` names the Triton cache folder of that binary (engine/readers/triton_ir.py reads it) and whose
``config``, ``n_regs`` and ``n_spills`` are the launch's. Autotuners come back from Inductor's compile workers
pickled (their ``__init__`` never runs in this process), so the first launch is where all of them are seen.
"""

from __future__ import annotations

import os

from engine.readers import triton_ir

# What one report keeps of the IR texts of all its kernels: past it, a kernel keeps its metadata and says why its
# texts are missing (a model of hundreds of kernels would otherwise store hundreds of megabytes).
DEVICE_CODE_BYTES = 24 * 1024 * 1024


class TritonBinaries:
    def __init__(self, ctx):
        self.ctx = ctx
        self.launched: dict[int, object] = {}  # id -> CachingAutotuner launched during the recorded compile
        self._restore = None

    def install(self) -> None:
        """Note each autotuner that launches while the recorded compile runs (uninstalled by ``attach``: a launch
        of a timed step never passes through our code)."""
        if self.ctx.device != "cuda":
            return
        with self.ctx.guard("triton.compiled_kernels"):
            from torch._inductor.runtime.triton_heuristics import CachingAutotuner

            original, launched, ctx = CachingAutotuner.run, self.launched, self.ctx

            def run(autotuner, *args, **kwargs):
                if ctx.recording:
                    launched.setdefault(id(autotuner), autotuner)
                return original(autotuner, *args, **kwargs)

            CachingAutotuner.run = run
            self._restore = lambda: setattr(CachingAutotuner, "run", original)

    def attach(self, kernels: list[dict]) -> None:
        """Each Triton kernel's ``device_code`` (and nothing for a kernel no launch was seen of)."""
        if self._restore:
            self._restore()
            self._restore = None
        if not self.launched:
            return
        import triton

        cache_dir = os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")
        tools = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
        budget = DEVICE_CODE_BYTES
        for kernel in kernels:
            autotuner = self._autotuner_of(kernel)
            if kernel["language"] != "triton" or autotuner is None:
                continue
            with self.ctx.guard("triton.device_code"):
                code = self._device_code(kernel, autotuner, cache_dir, tools)
                size = sum(len(s["text"]) for s in code["stages"])
                if size > budget:
                    code["missing"].append(
                        f"ir texts: the report keeps {DEVICE_CODE_BYTES >> 20} MB of device code, spent on the "
                        "kernels listed before this one"
                    )
                    code["stages"] = []
                budget -= size if code["stages"] else 0
                kernel["device_code"] = code
        self.launched.clear()

    def _autotuner_of(self, kernel: dict):
        """The launched autotuner of this kernel: its name, and its Triton function's source inside the kernel's
        (forward and backward graphs may each have a kernel of the same name)."""
        for autotuner in self.launched.values():
            fn = getattr(autotuner, "fn", None)
            if getattr(fn, "__name__", None) != kernel["name"]:
                continue
            src = getattr(fn, "src", None)
            if not src or src.strip() in kernel["source"]:
                return autotuner
        return None

    @staticmethod
    def _device_code(kernel: dict, autotuner, cache_dir: str, tools: str) -> dict:
        launcher = autotuner.launchers[0]
        binary = triton_ir.cached_binary(cache_dir, launcher.cache_hash)
        if binary is None:
            code = {"stages": [], "missing": [f"ir texts: no folder {launcher.cache_hash} in Triton's cache"]}
        else:
            code = triton_ir.device_code(binary, kernel["source"], tools_dir=tools)
        config = launcher.config
        code["config"] = {k: int(v) for k, v in config.kwargs.items() if isinstance(v, int)}
        code["num_warps"] = getattr(config, "num_warps", None) or code.get("num_warps")
        code["num_stages"] = getattr(config, "num_stages", None) or code.get("num_stages")
        registers, spills = getattr(launcher, "n_regs", None), getattr(launcher, "n_spills", None)
        if (registers is None or spills is None) and binary is not None:
            usage = triton_ir.resource_usage(binary.path(".cubin"), binary.name, tools)
            registers, spills = usage.get("registers"), usage.get("spills")
        code["registers"], code["spills"] = registers, spills
        code["compiled_variants"] = max(1, len(getattr(autotuner, "configs", None) or [config]))
        return code
