"""The Overview as a story: the four stages of torch.compile as one pipeline, each with its headline facts and its
time, and the two or three things that matter most for this model said first, in plain words.

Reads the report's sections as stored (docs/report-schema.md). Fields added later (the one ``summary.counts``,
``benchmarks[].speedup`` with ``decided``, per-rung ``correctness`` verdicts, ``kernel_profile_summary``, exclusive
``compile_seconds``) are used when present; older stored reports fall back to what they recorded.
"""

from __future__ import annotations

from storage.runstore import SECTIONS_READY_AFTER
from webapp.tabs.dynamo import failed_guards
from webapp.tabs.runtime import speedup_text

# The pipeline in the order torch.compile runs it: (key, title, tab, engine stages whose end means it ran).
PIPELINE = (
    ("dynamo", "TorchDynamo", "dynamo", ("dynamo",)),
    ("aot", "AOTAutograd", "aot", ("aot",)),
    ("inductor", "TorchInductor", "inductor", ("inductor",)),
    ("runtime", "Runtime", "runtime", ("benchmark",)),
)
WHAT_IT_DOES = {
    "dynamo": "reads your Python bytecode and captures the torch calls as FX graphs",
    "aot": "traces each graph down to ATen ops, forward and backward, without mutation",
    "inductor": "fuses the ATen ops and generates kernels",
    "runtime": "runs the compiled code: timed against eager and checked against it",
}


def counts(sections: dict) -> dict:
    """The report's one summary of counts (``summary.counts``) where the report has it, else counted here from
    the sections as older reports stored them."""
    recorded = (sections.get("summary") or {}).get("counts")
    if isinstance(recorded, dict) and recorded:
        return recorded
    dynamo, aot, inductor = (sections.get(k) or {} for k in ("dynamo", "aot", "inductor"))
    breaks = dynamo.get("graph_breaks") or []
    return {
        "dynamo_graphs": len(dynamo.get("graphs") or []),
        "graph_breaks": sum(b.get("count") or 1 for b in breaks),
        "unique_graph_breaks": len(breaks),
        "recompiles": len(dynamo.get("recompiles") or []),
        "aot_graphs": len(aot.get("graphs") or []),
        "generated_kernels": len(inductor.get("kernels") or []),
        "library_calls": sum(c.get("count") or 1 for c in inductor.get("library_calls") or []),
    }


def stage_states(progress: list[dict], run_status: str, failure: dict | None, recorded: list | None = None) -> dict:
    """Each pipeline stage's state: done, running, failed, not_reached (the run ended before it), pending (still
    to come) or not_run (the run finished without it: the recorded config stops earlier). ``recorded``: the
    report's own ``stages`` list, for a run stored without its progress events."""
    latest = {row["stage"]: row["state"] for row in progress if row["state"] not in ("pending", "skipped")}
    for row in recorded or [] if run_status in ("succeeded", "failed") else []:
        if isinstance(row, dict):
            latest.setdefault(row.get("name"), "finished")
    failed_stage = (failure or {}).get("stage")
    finished = run_status in ("succeeded", "failed")
    states = {}
    for key, _, _, engine_stages in PIPELINE:
        state = latest.get(engine_stages[0])
        if failed_stage in engine_stages or state == "failed":
            states[key] = "failed"
        elif state == "finished" and not (key == "runtime" and not finished):
            states[key] = "done"
        elif state in ("started", "finished"):
            states[key] = "running"
        elif run_status == "failed":
            states[key] = "not_reached"
        elif finished:
            states[key] = "not_run"
        else:
            states[key] = "pending"
    return states


def tabs_ready(progress: list[dict], run_status: str, failure: dict | None, stored: bool) -> set[str]:
    """The stage tabs whose data is stored and complete: once the run has finished, every stage it reached;
    while it runs, those whose collecting stage has ended (the worker stores the sections then)."""
    if not stored:
        return set()
    if run_status in ("succeeded", "failed"):
        states = stage_states(progress, run_status, failure)
        return {key for key, *_ in PIPELINE if states[key] != "not_reached"}
    ended = {row["stage"] for row in progress if row["state"] == "finished"}
    return {tab for tab, after in SECTIONS_READY_AFTER.items() if after in ended}


def story(sections: dict, *, progress: list[dict], run_status: str, failure: dict | None, filename: str) -> dict:
    states = stage_states(progress, run_status, failure, sections.get("stages"))
    dynamo, aot, inductor, runtime = (sections.get(k) or {} for k in ("dynamo", "aot", "inductor", "runtime"))
    numbers = counts(sections)
    seconds = stage_seconds(runtime, sections.get("stages") or [], progress)
    facts = {
        "dynamo": _dynamo_facts(dynamo, numbers),
        "aot": _aot_facts(aot, runtime),
        "inductor": _inductor_facts(inductor, numbers),
        "runtime": _runtime_facts(runtime),
    }
    stages = [
        {
            "key": key,
            "title": title,
            "tab": tab,
            "state": states[key],
            "does": WHAT_IT_DOES[key],
            "seconds": seconds.get(key),
            "facts": facts[key] if states[key] in ("done", "running") else [],
            "why_not": _why_not(key, states[key], failure, runtime),
        }
        for key, title, tab, _ in PIPELINE
    ]
    return {"stages": stages, "headlines": headlines(sections, states, numbers, failure, filename)[:3]}


def stage_seconds(runtime: dict, stages: list[dict], progress: list[dict]) -> dict:
    """Seconds each pipeline stage took: the recorded compile's per-stage compile time (torch's metrics), and
    for the runtime the benchmark and profile stages together."""
    compile_seconds = runtime.get("compile_seconds") or {}
    out = {}
    if compile_seconds:
        out["dynamo"] = compile_seconds.get("dynamo")
        out["aot"] = compile_seconds.get("aot_autograd")
        inductor = [
            compile_seconds.get(k) for k in ("inductor", "codegen") if isinstance(compile_seconds.get(k), (int, float))
        ]
        out["inductor"] = sum(inductor) if inductor else None
        if compile_seconds.get("backward"):
            out["backward"] = compile_seconds["backward"]
    rows = stages or [{"name": p["stage"], "seconds": p.get("seconds")} for p in progress]
    ran = [
        row.get("seconds")
        for row in rows
        if row.get("name") in ("benchmark", "profile") and isinstance(row.get("seconds"), (int, float))
    ]
    if ran:
        out["runtime"] = sum(ran)
    return out


def _dynamo_facts(dynamo: dict, numbers: dict) -> list[str]:
    graphs, breaks, recompiles = (
        numbers.get("dynamo_graphs", 0),
        numbers.get("graph_breaks", 0),
        numbers.get("recompiles", 0),
    )
    nodes = sum(g.get("num_nodes") or len(g.get("nodes") or []) for g in dynamo.get("graphs") or [])
    return [
        f"{_plural(graphs, 'graph')}" + (f", {_plural(nodes, 'node')}" if nodes else ""),
        _plural(breaks, "graph break"),
        _plural(recompiles, "recompile"),
    ]


def _aot_facts(aot: dict, runtime: dict) -> list[str]:
    kinds = [g.get("kind") for g in aot.get("graphs") or []]
    mode = (runtime.get("mode") or {}).get("kind")  # inference or training, where the report says
    facts = [f"{mode} graphs"] if mode else []
    if "forward" in kinds or "backward" in kinds:
        facts.append(
            f"{_plural(kinds.count('forward'), 'forward')} + {_plural(kinds.count('backward'), 'backward')}"
            " graph" + ("s" if kinds.count("forward") + kinds.count("backward") > 1 else "")
        )
    elif kinds:
        facts.append(_plural(kinds.count("inference") or len(kinds), "inference graph"))
    partitions = aot.get("partitions") or []
    if partitions:
        saved = sum(len(p.get("saved") or []) for p in partitions)
        recomputed = sum(len(p.get("recomputed") or []) for p in partitions)
        facts.append(f"{_plural(saved, 'tensor')} saved for backward, {recomputed} recomputed")
    decomposed = {op for d in aot.get("decompositions") or [] for op in (d.get("map") or {})}
    facts.append(f"{_plural(len(decomposed), 'op')} decomposed" if decomposed else "no op decomposed")
    return facts


def _inductor_facts(inductor: dict, numbers: dict) -> list[str]:
    kernels = inductor.get("kernels") or []
    facts = [_plural(numbers.get("generated_kernels", len(kernels)), "generated kernel")]
    fused_nodes = sum(len(k.get("source_nodes") or []) for k in kernels if len(k.get("source_nodes") or []) > 1)
    if fused_nodes:
        facts.append(
            f"{_plural(fused_nodes, 'graph node')} fused into {_plural(sum(1 for k in kernels if len(k.get('source_nodes') or []) > 1), 'kernel')}"
        )
    fused = sum(d.get("count") or 1 for d in inductor.get("fusion_decisions") or [] if d.get("action") == "fused")
    if fused:
        facts.append(f"{_plural(fused, 'fusion decision')} taken")
    if numbers.get("library_calls"):
        facts.append(_plural(numbers["library_calls"], "library call"))
    return facts


def _runtime_facts(runtime: dict) -> list[str]:
    facts = []
    best = best_benchmark(runtime.get("benchmarks") or [])
    if best:
        facts.append(f"{best['config']}: {speedup_text(best)}")
        # The ladder's verdict in words where the report has one, else the best rung's own.
        verdict = (runtime.get("correctness") or {}).get("text") or correctness_text(best, runtime)
        if verdict:
            facts.append(verdict)
    cudagraphs = cudagraphs_text(runtime)
    if cudagraphs:
        facts.append(cudagraphs)
    host = host_text(runtime, best)
    if host:
        facts.append(host)
    return facts


def best_benchmark(benchmarks: list[dict]) -> dict | None:
    """The compiled config with the best measured speedup (eager itself excluded)."""
    measured = [
        b
        for b in benchmarks
        if b.get("config") != "eager" and b.get("status") == "ok" and isinstance(_speedup_value(b), (int, float))
    ]
    return max(measured, key=_speedup_value, default=None)


def _speedup_value(benchmark: dict):
    speedup = benchmark.get("speedup")
    if isinstance(speedup, dict) and isinstance(speedup.get("value"), (int, float)):
        return speedup["value"]
    return benchmark.get("speedup_vs_eager")


def speedup_verdict(benchmark: dict) -> str:
    """faster, slower, same or undecided: the report's own verdict where its confidence interval decides it
    (``speedup.decided``); a report from before issue 9 carries one median per config, never decided."""
    speedup = benchmark.get("speedup") or {}
    return (speedup.get("verdict") or "same") if speedup.get("decided") else "undecided"


def correctness_text(benchmark: dict, runtime: dict) -> str | None:
    verdict = (benchmark.get("correctness") or {}).get("verdict")
    if verdict:
        return {
            "match": "outputs match eager",
            "mismatch": "outputs differ from eager",
            "nondeterministic": "outputs nondeterministic: eager differs from itself",
        }.get(verdict, verdict)
    error = benchmark.get("max_abs_error")
    if error == 0:
        return "outputs identical to eager"
    if isinstance(error, (int, float)):
        return f"max difference from eager {error:.1e}"
    return None


def cudagraphs_text(runtime: dict) -> str | None:
    entries = [b.get("cudagraphs") for b in runtime.get("benchmarks") or [] if isinstance(b.get("cudagraphs"), dict)]
    entry = next((e for e in entries if e.get("status") not in (None, "not_requested")), None) or (
        runtime.get("cudagraphs")
        if (runtime.get("cudagraphs") or {}).get("status") not in (None, "not_requested")
        else None
    )
    if not entry:
        return None
    return f"CUDA graphs {entry['status'].replace('_', ' ')}" + (f": {entry['reason']}" if entry.get("reason") else "")


def host_text(runtime: dict, best: dict | None) -> str | None:
    summary = runtime.get("kernel_profile_summary") or {}
    share = summary.get("host_overhead_share")
    if isinstance(share, (int, float)):
        return (
            f"host-bound: {share:.0%} of the step is host overhead"
            if share >= 0.5
            else (f"not host-bound: host overhead {share:.0%} of the step")
        )
    if best and isinstance(best.get("gpu_busy_ms"), (int, float)) and best.get("median_ms"):
        busy = best["gpu_busy_ms"] / best["median_ms"]
        return (
            f"host-bound: GPU busy {busy:.0%} of the step"
            if busy < 0.5
            else f"not host-bound: GPU busy {busy:.0%} of the step"
        )
    return None


def _why_not(key: str, state: str, failure: dict | None, runtime: dict) -> str | None:
    if state == "failed":
        return f"failed here: {_first_line((failure or {}).get('message')) or 'see the error above'}"
    if state == "not_reached":
        return f"not reached: the run failed during {(failure or {}).get('stage') or 'an earlier stage'}"
    if state == "not_run":
        config = runtime.get("recorded_config")
        return f"not run: the recorded config{f' ({config})' if config else ''} stops before this stage"
    if state == "pending":
        return "still to come"
    return None


# The headlines


def headlines(sections: dict, states: dict, numbers: dict, failure: dict | None, filename: str) -> list[dict]:
    """What matters most, in order: a failure, graph breaks, whether compiling helped (and was correct),
    recompiles, what training kept for backward, what Inductor fused. Each: {text, kind, tab, anchor}: where it is shown (tab None: this page)."""
    dynamo, aot, inductor, runtime = (sections.get(k) or {} for k in ("dynamo", "aot", "inductor", "runtime"))
    out = []
    if failure:
        where = f" at line {failure['line']}" if isinstance(failure.get("line"), int) else ""
        missed = [title for key, title, _, _ in PIPELINE if states[key] == "not_reached"]
        out.append(
            {
                "text": f"The run failed during {failure.get('stage')}{where}: {_first_line(failure.get('message'))}"
                + (f". Not reached: {', '.join(missed)}." if missed else ""),
                "tab": None,
                "anchor": "error",
                "kind": "bad",
            }
        )
    breaks = dynamo.get("graph_breaks") or []
    if breaks:
        where = ", ".join(
            f"line {b['line']} {_short_code(b.get('code'))}" if b.get("line") else _short_code(b.get("reason"))
            for b in breaks[:3]
        ) + (f" and {len(breaks) - 3} more" if len(breaks) > 3 else "")
        total = numbers.get("graph_breaks") or len(breaks)
        out.append(
            {
                "text": f"{_plural(total, 'graph break')} split your function into "
                f"{_plural(numbers.get('dynamo_graphs') or total + 1, 'graph')}: {where}.",
                "tab": "dynamo",
                "anchor": "dynamo-graph_breaks",
                "kind": "warn",
            }
        )
    elif states["dynamo"] == "done":
        out.append(
            {
                "text": f"Dynamo captured your whole function in {_plural(numbers.get('dynamo_graphs', 1), 'graph')}"
                " with no graph break.",
                "tab": "dynamo",
                "anchor": "dynamo-graphs",
                "kind": "good",
            }
        )
    best = best_benchmark(runtime.get("benchmarks") or [])
    eager = next((b for b in runtime.get("benchmarks") or [] if b.get("config") == "eager"), {})
    if best and eager.get("median_ms"):
        verdict = speedup_verdict(best)
        said = {
            "faster": "Compiling helped",
            "slower": "Compiling made it slower",
            "same": "Compiling made no measurable difference",
        }.get(verdict, "Whether compiling helped is not decided")
        text = (
            f"{said}: {best['config']} takes {best['median_ms']:.3g} ms a step against eager's "
            f"{eager['median_ms']:.3g} ms: {speedup_text(best)}"
        )
        correct = correctness_text(best, runtime)
        out.append(
            {
                "text": text + (f"; {correct}." if correct else "."),
                "tab": "runtime",
                "anchor": "runtime-benchmarks",
                "kind": {"faster": "good", "slower": "bad"}.get(verdict, "warn"),
            }
        )
    divergent = (runtime.get("correctness") or {}).get("first_divergent_stage")
    if divergent:
        title = {"dynamo": "TorchDynamo", "aot_autograd": "AOTAutograd", "inductor": "TorchInductor"}.get(
            divergent, divergent
        )
        text = (runtime.get("correctness") or {}).get("text") or ""
        out.insert(
            1 if failure else 0,
            {
                "text": f"The outputs stop matching eager at {title}" + (f": {text}" if text else "."),
                "tab": "runtime",
                "anchor": "runtime-benchmarks",
                "kind": "bad",
            },
        )
    recompiles = dynamo.get("recompiles") or []
    if recompiles:
        first = recompiles[0]
        guard = next((text for _, text in failed_guards(first) if text), "").strip()
        call = first.get("call_index")
        out.append(
            {
                "text": f"Dynamo compiled again {_plural(len(recompiles), 'time')}: "
                + (f"call {call} of example_inputs " if isinstance(call, int) else "")
                + "failed a guard"
                + (f" ({guard})" if guard else "")
                + ".",
                "tab": "dynamo",
                "anchor": "dynamo-guards",
                "kind": "warn",
            }
        )
    partitions = aot.get("partitions") or []
    if partitions:
        saved = sum(len(p.get("saved") or []) for p in partitions)
        recomputed = sum(len(p.get("recomputed") or []) for p in partitions)
        out.append(
            {
                "text": f"Training: AOTAutograd split each graph into forward and backward, keeping "
                f"{_plural(saved, 'tensor')} for the backward and recomputing {recomputed} op"
                f"{'s' if recomputed != 1 else ''} instead of storing them.",
                "tab": "aot",
                "anchor": "aot-partitions",
                "kind": "info",
            }
        )
    kernels = inductor.get("kernels") or []
    if kernels:
        ops = sum(len(k.get("source_nodes") or []) for k in kernels)
        out.append(
            {
                "text": f"Inductor generated {_plural(len(kernels), 'kernel')} from {_plural(ops, 'graph node')}"
                + (
                    f"; the first fuses {', '.join(kernels[0]['source_nodes'][:6])}"
                    if len(kernels[0].get("source_nodes") or []) > 1
                    else ""
                )
                + ".",
                "tab": "inductor",
                "anchor": "inductor-kernels",
                "kind": "info",
            }
        )
    return out


def _first_line(text, limit: int = 200) -> str:
    """A message's first line, cut to ``limit`` characters (the whole message is in the error box)."""
    line = str(text or "").strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _short_code(code) -> str:
    text = str(code or "").split("#", 1)[0].strip()
    return text if len(text) <= 40 else text[:37] + "..."


def _plural(n, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
