"""torch's compile metrics, read: exclusive seconds per stage (compilation_metrics and its backward and runtime
kinds), the fields of each compile the report keeps, and the compile timeline from chromium events. Torch-free: the
live engine reads them from its log tap, the trace importer from a TORCH_TRACE log."""

from __future__ import annotations

import json

from contract.compile_id import canonical


def compile_seconds(forward: list[dict], backward: list[dict], runtime: list[dict] = ()) -> dict:
    """Exclusive seconds per stage, summed over compile ids: the stages add up to ``total``.

    torch's metrics nest (entire frame > backend > inductor > code generation; docs/report-schema.md), so each stage
    is its own time minus the next one's. The backward compiles lazily at the first .backward(), under its own
    metrics entry (backward > inductor > codegen): one stage. ``other`` is compile work outside both: Triton
    autotuning at the first run (compilation_metrics_runtime)."""

    def total(entries, key):
        return sum(float(m.get(key) or 0.0) for m in entries)

    frame, backend = total(forward, "entire_frame_compile_time_s"), total(forward, "backend_compile_time_s")
    inductor, codegen = total(forward, "inductor_compile_time_s"), total(forward, "code_gen_time_s")
    backward_s = sum(
        float(m.get("backward_cumulative_compile_time_us") or 0) / 1e6 or float(m.get("inductor_compile_time_s") or 0.0)
        for m in backward
    )
    other = total(runtime, "runtime_triton_autotune_time_us") / 1e6
    # Each stage's own time; a stage torch timed longer than the one containing it (clock or nesting drift) is
    # clamped at 0 and the overlap counted once, so the stages still add up.
    stages = {
        "codegen": codegen,
        "inductor": max(0.0, inductor - codegen),
        "aot_autograd": max(0.0, backend - max(inductor, codegen)),
        "dynamo": max(0.0, frame - max(backend, inductor, codegen)),
        "backward": backward_s,
        "other": other,
    }
    rounded = {key: round(float(value), 4) for key, value in stages.items()}
    ordered = {key: rounded[key] for key in ("dynamo", "aot_autograd", "inductor", "codegen", "backward", "other")}
    ordered["total"] = round(sum(ordered.values()), 4)
    return ordered


def metrics_summary(m: dict) -> dict:
    """The fields of one compilation_metrics event the report keeps (runtime.compile_metrics)."""
    keep = (
        "compile_id",
        "frame_key",
        "co_name",
        "co_filename",
        "co_firstlineno",
        "cache_size",
        "graph_op_count",
        "graph_node_count",
        "entire_frame_compile_time_s",
        "backend_compile_time_s",
        "inductor_compile_time_s",
        "code_gen_time_s",
        "fail_type",
        "fail_reason",
        "cudagraph_skip_reason",
        "guard_count",
        "restart_reasons",
        "dynamo_time_before_restart_s",
        "has_guarded_code",
    )
    return {k: m.get(k) for k in keep if k in m}


def timeline(events: list[dict], log=None) -> list[dict]:
    """Chromium B/E events -> spans [{name, compile_id, start_ms, dur_ms, depth}], start relative to the first. An
    event whose payload is not JSON is counted as malformed in ``log`` (the tap already did, for its own)."""
    spans, open_spans = [], {}
    parsed = []
    for e in events:
        data = e.get("data")
        if data is None and e.get("payload"):
            try:
                data = json.loads(e["payload"])
            except ValueError as exc:
                if log is not None:
                    log.malformed("chromium_event", f"payload is not JSON: {exc}", e["payload"])
                continue
        if isinstance(data, dict):
            parsed.append(data)
    if not parsed:
        return []
    origin = min(p.get("ts", 0) for p in parsed)
    depth: dict[int, int] = {}
    for p in sorted(parsed, key=lambda p: p.get("ts", 0)):
        tid = p.get("tid", 0)
        key = (tid, p.get("name"))
        if p.get("ph") == "B":
            open_spans.setdefault(key, []).append((p, depth.get(tid, 0)))
            depth[tid] = depth.get(tid, 0) + 1
        elif p.get("ph") == "E" and open_spans.get(key):
            begin, level = open_spans[key].pop()
            depth[tid] = max(0, depth.get(tid, 1) - 1)
            spans.append(
                {
                    "name": p["name"],
                    "compile_id": canonical((begin.get("args") or {}).get("compile_id")),
                    "start_ms": round((begin["ts"] - origin) / 1000, 3),
                    "dur_ms": round((p["ts"] - begin["ts"]) / 1000, 3),
                    "depth": level,
                }
            )
        elif p.get("ph") == "X":
            spans.append(
                {
                    "name": p.get("name"),
                    "compile_id": canonical((p.get("args") or {}).get("compile_id")),
                    "start_ms": round((p["ts"] - origin) / 1000, 3),
                    "dur_ms": round(p.get("dur", 0) / 1000, 3),
                    "depth": depth.get(tid, 0),
                }
            )
    return sorted(spans, key=lambda s: (s["start_ms"], s["depth"]))
