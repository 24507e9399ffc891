"""The kernel caches a compile used: binaries in the job's cache folders, the trusted ones (bound read-only by the
sandbox), and hits and misses per cache from torch's counters (passed in: this module does not import torch)."""

from __future__ import annotations

import os

from engine.sandbox import BINARY_SUFFIXES


def kernel_binaries() -> set[str]:
    found = set()
    for variable in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        root = os.environ.get(variable)
        if not root or not os.path.isdir(root):
            continue
        for folder, _, files in os.walk(root):
            found.update(os.path.join(folder, f) for f in files if f.endswith(BINARY_SUFFIXES))
    return found


def trusted_binaries(binaries: set[str]) -> set[str]:
    """The binaries on a read-only mount: the worker's trusted kernel cache, bound by the sandbox
    (engine.sandbox.publish_kernel_cache). A job cannot make one (it may not mount), so it cannot pass off a binary
    of its own as trusted."""
    found = set()
    for path in binaries:
        try:
            if os.statvfs(path).f_flag & os.ST_RDONLY:
                found.add(path)
        except OSError:
            pass
    return found


def cache_counts(counters, kernels: int, binaries_written: int) -> dict:
    """Hits and misses per cache from torch's counters (dynamo.utils.counters). Kernels: torch counts no on-disk
    kernel-cache hits, so they are measured: binaries written to the cache folders during the compile are misses
    (at most one per generated kernel: a C++ compile can also write helpers), the other generated kernels hits."""
    inductor, aot = counters["inductor"], counters["aot_autograd"]
    misses = min(kernels, binaries_written)
    return {
        "fx_graph": {
            "hits": inductor["fxgraph_cache_hit"],
            "misses": inductor["fxgraph_cache_miss"],
            "bypasses": inductor["fxgraph_cache_bypass"],
        },
        "aot_autograd": {
            "hits": aot["autograd_cache_hit"],
            "misses": aot["autograd_cache_miss"],
            "bypasses": aot["autograd_cache_bypass"],
        },
        "kernels": {
            "hits": kernels - misses,
            "misses": misses,
            "generated": kernels,
            "binaries_written": binaries_written,
        },
    }
