"""Each timed generated kernel on the roofline of the worker's measured peaks (torch-free arithmetic).

A kernel's bytes are Inductor's count (or the buffer-size estimate), its FLOPs torch.utils.flop_counter's over the
nodes fused into it (engine/flops.py), its time the profiler's per step (runtime.kernel_profile). The roof at
arithmetic intensity I (FLOP/byte) is min(peak FLOP/s, I x bandwidth); a kernel below the ridge point (peak FLOP/s
/ bandwidth), or with no FLOPs counted, is memory-bound and held to the bandwidth.
"""

from __future__ import annotations

_PEAK_OF_DTYPE = {"float32": "float32", "bfloat16": "bfloat16", "float16": "bfloat16"}


def roofline(kernels: list[dict], profile: list[dict], peaks: dict, dtypes: dict[str, str]) -> dict:
    """Roofline (contract/kernels.py): {peaks, points, text}. ``dtypes``: kernel name -> the dtype of its nodes."""
    by_name = {k["name"]: k for k in kernels}
    bandwidth = peaks.get("bytes_per_s")
    points = []
    for row in profile:
        kernel = by_name.get(row.get("kernel") or "")
        if not kernel or not row.get("total_ms"):
            continue
        calls = max(int(row.get("calls") or 0), 1)
        seconds = row["total_ms"] / 1e3
        nbytes, flops = kernel.get("bytes_accessed"), kernel.get("flops")
        dtype = dtypes.get(kernel["name"])
        peak = (peaks.get("flops_per_s") or {}).get(_PEAK_OF_DTYPE.get(dtype or "", "float32"))
        point = {
            "kernel": kernel["name"],
            "dtype": dtype,
            "time_ms": row["total_ms"],
            "calls": calls,
            "bytes": nbytes,
            "flops": flops,
            "bytes_per_s": nbytes * calls / seconds if nbytes else None,
            "flops_per_s": flops * calls / seconds if flops else None,
            "intensity": flops / nbytes if flops and nbytes else None,
            "bound": None,
            "fraction_of_limit": None,
        }
        ridge = peak / bandwidth if peak and bandwidth else None
        if point["intensity"] is not None and ridge is not None and point["intensity"] >= ridge:
            point["bound"] = "compute"
            point["fraction_of_limit"] = point["flops_per_s"] / peak
        elif point["bytes_per_s"] and bandwidth:
            # Below the ridge the roof is intensity x bandwidth: achieved FLOP/s over it is bytes/s over bandwidth.
            point["bound"] = "memory"
            point["fraction_of_limit"] = point["bytes_per_s"] / bandwidth
        points.append(point)
    points.sort(key=lambda p: -p["time_ms"])
    return {"peaks": peaks, "points": points, "text": words(points, peaks)}


def kernel_dtypes(inductor: dict) -> dict[str, str]:
    """Kernel name -> the dtype of the first of its post-grad nodes that has one (the FLOP/s peak it is held to)."""
    dtype_of = {}
    for graph in inductor.get("post_grad_graphs") or []:
        for node in graph.get("nodes") or []:
            if isinstance(node.get("dtype"), str):
                dtype_of[(graph.get("compile_id"), graph.get("kind"), node["name"])] = node["dtype"].replace(
                    "torch.", ""
                )
    out = {}
    for kernel in inductor.get("kernels") or []:
        for name in kernel.get("source_nodes") or []:
            dtype = dtype_of.get((kernel.get("compile_id"), kernel.get("graph_kind"), name))
            if dtype:
                out[kernel["name"]] = dtype
                break
    return out


def words(points: list[dict], peaks: dict) -> str | None:
    """Which kernels are memory-bound and how far from the limit, the slowest first."""
    if not points:
        return None
    placed = [p for p in points if p["bound"]]
    if not placed:
        return "No kernel could be placed: the worker's peaks or the kernels' bytes are unknown."
    memory = [p for p in placed if p["bound"] == "memory"]
    compute = [p for p in placed if p["bound"] == "compute"]
    total = sum(p["time_ms"] for p in placed) or 1.0
    parts = [
        f"{len(memory)} of {len(placed)} timed kernels are memory-bound "
        f"({100 * sum(p['time_ms'] for p in memory) / total:.0f}% of their time)"
        + (f", {len(compute)} compute-bound" if compute else "")
        + "."
    ]
    for p in placed[:3]:
        limit = "bandwidth" if p["bound"] == "memory" else f"{p['dtype'] or 'float32'} matmul peak"
        frac = p["fraction_of_limit"]
        gap = (
            f"{100 * frac:.0f}% of the {limit}"
            + (": above it, its data came from a cache" if frac > 1 else f", {1 / frac:.1f}x from the roof")
            if frac
            else "its distance from the roof is unknown"
        )
        parts.append(f"{p['kernel']} ({p['time_ms']:.3g} ms/step) is {p['bound']}-bound at {gap}.")
    return " ".join(parts)
