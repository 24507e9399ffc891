"""The report's debug section as the Runtime tab draws it (templates/report/_debug.html): the user's own backends,
each call with the graph it received (a graph viewer), its example inputs, what it returned, printed or raised;
and memory per rung beside the speedups. Reads the debug section's models (contract/report.py); never imports torch."""

from __future__ import annotations

from contract.graphs import graph_title
from contract.report import Benchmark, Debug, InputSpec, RungMemory, Runtime, UserBackend
from webapp.numbers import data_size, seconds, times

# Short dtype names, as torch prints them in graph code (f32[4, 8]).
_DTYPE_ABBREVIATIONS = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float64": "f64",
    "int64": "i64",
    "int32": "i32",
    "bool": "b8",
}


def input_words(spec: InputSpec) -> str:
    """One example input: "f32[4, 8] (stride 8, 1) on cpu, requires grad" or "int 3"."""
    if spec.kind != "tensor":
        return f"{spec.kind} {spec.value}"
    dtype = _DTYPE_ABBREVIATIONS.get(spec.dtype or "", spec.dtype or "?")
    shape = ", ".join(str(d) for d in spec.shape or [])
    stride = ", ".join(str(d) for d in spec.stride or [])
    return f"{dtype}[{shape}] (stride {stride}) on {spec.device}" + (", requires grad" if spec.requires_grad else "")


def backend_cards(debug: Debug | None, runtime: Runtime | None) -> list[dict]:
    """Per user backend: {backend, benchmark (its rung's, or None), calls: [{call, graph (a viewer entry or
    None), inputs (words), ops (words)}]}."""
    if debug is None:
        return []
    rungs = {b.config: b for b in runtime.benchmarks} if runtime is not None else {}
    cards = []
    for backend in debug.user_backends:
        calls = []
        for call in backend.calls:
            index = int(call.graph.rsplit("-", 1)[1]) if call.graph else None
            graph = debug.backend_graphs[index] if index is not None and index < len(debug.backend_graphs) else None
            calls.append(
                {
                    "call": call,
                    "graph": {"id": call.graph, "graph": graph, "title": graph_title(call.graph, graph.model_dump())}
                    if graph is not None and call.graph
                    else None,
                    "inputs": [input_words(spec) for spec in call.inputs],
                    "ops": ", ".join(f"{op} ×{n}" for op, n in call.ops.items()) or "no call_function node",
                    "seconds": seconds(call.seconds),
                }
            )
        cards.append({"backend": backend, "benchmark": rungs.get(backend.rung), "calls": calls})
    return cards


def rung_links(debug: Debug | None) -> dict[str, dict]:
    """Per user rung (`user:<name>`): {anchor (its backend's card), graphs: [{id, words}]}: the benchmark table
    links each user rung to the graphs its backend received."""
    if debug is None:
        return {}
    links = {}
    for backend in debug.user_backends:
        graphs = [c.graph for c in backend.calls if c.graph]
        links[backend.rung] = {
            "anchor": f"backend-{backend.name}",
            "graphs": [
                {"id": gid, "words": "the graph it received" if len(graphs) == 1 else f"graph {n}"}
                for n, gid in enumerate(graphs, 1)
            ],
        }
    return links


def overview_words(debug: Debug | None, runtime: Runtime | None) -> str | None:
    """The Overview's sentence on the user's own backends, or None where the file defines none."""
    if debug is None or not debug.user_backends:
        return None
    rungs = {b.config: b for b in runtime.benchmarks} if runtime is not None else {}
    parts = []
    for backend in debug.user_backends:
        calls = len(backend.calls) + backend.calls_dropped
        failed = sum(c.status == "failed" for c in backend.calls)
        benchmark = rungs.get(backend.rung)
        state = ""
        if benchmark is not None and benchmark.status == "failed":
            state = ", its rung failed"
        elif benchmark is not None and benchmark.correctness is not None:
            state = f", its outputs {'match' if benchmark.correctness.verdict == 'match' else 'do not match'} eager"
        parts.append(
            f"{backend.name} (rung {backend.rung}) received {calls} graph{'' if calls == 1 else 's'}"
            + (f", raised in {failed}" if failed else "")
            + state
        )
    n = len(debug.user_backends)
    return f"Your file defines {n} backend{'' if n == 1 else 's'} of its own: " + "; ".join(parts) + "."


def backend_summary(backend: UserBackend, benchmark: Benchmark | None) -> str:
    """One backend in a sentence: its calls and how its rung came out."""
    failed = [c for c in backend.calls if c.status == "failed"]
    calls = len(backend.calls) + backend.calls_dropped
    words = f"Called {calls} time{'' if calls == 1 else 's'} (one per graph Dynamo handed it)"
    if failed:
        words += f"; it raised in {len(failed)} of them: {failed[0].error}"
    if benchmark is not None and benchmark.status == "ok" and benchmark.correctness is not None:
        words += f"; its rung's outputs {'match' if benchmark.correctness.verdict == 'match' else 'do not match'} plain eager"
    elif benchmark is not None and benchmark.status == "failed":
        words += "; its rung failed, so it was not timed"
    return words + "."


def memory_rows(debug: Debug | None) -> list[dict]:
    """Memory per rung, formatted: {memory, peak, saved, compression, saved_ratio}."""
    if debug is None:
        return []
    return [
        {
            "memory": m,
            "peak": data_size(m.peak_bytes) if m.peak_bytes is not None else None,
            "saved": f"{data_size(m.saved_for_backward.bytes)} in {m.saved_for_backward.tensors} tensors"
            if m.saved_for_backward is not None
            else None,
            "compression": times(m.compression_ratio) if m.compression_ratio is not None else None,
            "saved_ratio": times(m.saved_ratio) if m.saved_ratio is not None else None,
        }
        for m in debug.memory
    ]


def memory_method(memory: list[RungMemory]) -> str | None:
    """Which figure the peaks are (the first rung's method: one job measures every rung the same way)."""
    return next((m.method for m in memory if m.method), None)


def memory_chart(debug: Debug | None) -> dict | None:
    """Peak per step and bytes saved for backward per rung, in MB, side by side (the saved bars in training only):
    where a compiled rung needs less memory than eager, its bars are shorter."""
    rows = [m for m in debug.memory if m.peak_bytes is not None] if debug is not None else []
    if not rows:
        return None
    configs = [m.config for m in rows]
    data = [
        {
            "type": "bar",
            "name": "peak per step",
            "x": configs,
            "y": [(m.peak_bytes or 0) / 1e6 for m in rows],  # rows have a peak
            # eager's peak over the rung's, on each compiled rung's bar
            "text": [times(m.compression_ratio) if m.compression_ratio and m.config != "eager" else "" for m in rows],
            "marker": {"color": "#b8460b"},
            "hovertemplate": "%{x}: peak %{y:.3f} MB per step<extra></extra>",
        }
    ]
    if any(m.saved_for_backward is not None for m in rows):
        data.append(
            {
                "type": "bar",
                "name": "saved for backward",
                "x": configs,
                "y": [m.saved_for_backward.bytes / 1e6 if m.saved_for_backward else None for m in rows],
                "marker": {"color": "#1f5f8b"},
                "hovertemplate": "%{x}: %{y:.3f} MB saved for backward<extra></extra>",
            }
        )
    return {"data": data, "layout": {"barmode": "group", "yaxis": {"title": {"text": "MB"}}}}
