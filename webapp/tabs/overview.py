"""The Overview as a story: the four stages of torch.compile as one pipeline, each with its headline facts and its
time, and the two or three things that matter most for this model said first, in plain words.

It also owns the facts every page of a report shares, computed once per request (``page_facts``) and read by the
Overview, the tab headers, the tabs' "nothing here" notes and the offline export alike: the report's counts
(``summary.counts``, computed once by the engine) and each stage's state. States are distinct and worded as
such: a stage done, running, failed, not reached (the run failed earlier), not run (the recorded config stops
before it), given nothing (Dynamo captured no graph), read from an imported log, or not in a log.

Reads the report's section models (contract/report.py); older reports were upgraded to their shape on read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contract.report import Aot, Counts, Dynamo, Inductor, Runtime, Stage, Summary
from contract.vocab import capture_config
from storage.models import IMPORT
from storage.runstore import SECTIONS_READY_AFTER
from webapp.numbers import ms, seconds
from webapp.tabs import debug as debug_view
from webapp.tabs.dynamo import break_labels, break_places, failed_guards, short_reason
from webapp.tabs.runtime import Outcome, outcome

# The pipeline in the order torch.compile runs it: (key, title, tab, engine stages whose end means it ran).
PIPELINE = (
    ("dynamo", "TorchDynamo", "dynamo", ("dynamo",)),
    ("aot", "AOTAutograd", "aot", ("aot",)),
    ("inductor", "TorchInductor", "inductor", ("inductor",)),
    ("runtime", "Runtime", "runtime", ("benchmark",)),
)
TITLES = {key: title for key, title, _, _ in PIPELINE}
WHAT_IT_DOES = {
    "dynamo": "reads your Python bytecode and captures the torch calls as FX graphs",
    "aot": "traces each graph down to ATen ops, forward and backward, without mutation",
    "inductor": "fuses the ATen ops and generates kernels",
    "runtime": "runs the compiled code: timed against eager and checked against it",
}
# States whose stage recorded something to show (its facts on the Overview, its tab open).
SHOWN_STATES = ("done", "running", "from_log")
# What an imported log holds of each stage, by the count that says it holds any.
LOG_COUNTS = {"dynamo": ("dynamo_graphs",), "aot": ("aot_graphs",), "inductor": ("generated_kernels", "library_calls")}
LOG_WHAT = {"dynamo": "Dynamo graph", "aot": "AOTAutograd graph", "inductor": "Inductor kernel"}


@dataclass(frozen=True)
class Facts:
    """What every page of one report says the same way (see the module's docstring)."""

    counts: Counts | None
    """the report's summary.counts; None before the first partial report is stored"""
    states: dict[str, str]
    imported: bool = False
    recorded_config: str | None = None
    """the config whose compile was recorded in full (None for an imported log)"""
    ready: set[str] = field(default_factory=set)
    """the stage tabs that open"""


def page_facts(run, progress: list[dict], failure: dict | None, models: dict, stored: bool) -> Facts:
    """The facts of ``run`` (a storage Run) for every page: counts, stage states, the tabs that open. ``models``:
    the report's section models, at least its summary and stages (tabs.section_models)."""
    imported = run.kind == IMPORT
    summary: Summary | None = models.get("summary")
    counts = summary.counts if summary else None
    states = stage_states(progress, run.status, failure, models.get("stages"), imported=imported, counts=counts)
    return Facts(
        counts=counts,
        states=states,
        imported=imported,
        recorded_config=None if imported else capture_config(run.configs or []).name,
        ready=tabs_ready(progress, run.status, failure, stored, states),
    )


def stage_states(
    progress: list[dict],
    run_status: str,
    failure: dict | None,
    recorded: list | None = None,
    *,
    imported: bool = False,
    counts: Counts | None = None,
) -> dict:
    """Each pipeline stage's state: done, running, failed, not_reached (the run ended before it), pending (still
    to come), not_run (the run finished without it: the recorded config stops earlier), nothing_captured
    (Dynamo captured no graph, so none reached this stage), from_log / not_in_log (an imported log holds the
    stage or not). ``recorded``: the report's own ``stages``, for a run stored without its progress events;
    ``counts``: the report's summary counts."""
    latest = {row["stage"]: row["state"] for row in progress if row["state"] not in ("pending", "skipped")}
    finished = run_status in ("succeeded", "failed")
    for row in recorded or [] if finished else []:
        latest.setdefault(row.name, "finished")
    failed_stage = (failure or {}).get("stage")
    captured_nothing = counts is not None and counts.dynamo_graphs == 0
    states = {}
    for key, _, _, engine_stages in PIPELINE:
        state = latest.get(engine_stages[0])
        if failed_stage in engine_stages or state == "failed":
            states[key] = "failed"
        elif imported and finished:
            holds = counts is not None and key in LOG_COUNTS and any(getattr(counts, c) for c in LOG_COUNTS[key])
            states[key] = "from_log" if holds else "not_in_log"
        elif state == "finished" and not (key == "runtime" and not finished):
            states[key] = "done"
        elif state in ("started", "finished"):
            states[key] = "running"
        elif run_status == "failed":
            states[key] = "not_reached"
        elif finished and key in ("aot", "inductor") and captured_nothing and states.get("dynamo") == "done":
            states[key] = "nothing_captured"
        elif finished:
            states[key] = "not_run"
        else:
            states[key] = "pending"
    return states


def tabs_ready(
    progress: list[dict], run_status: str, failure: dict | None, stored: bool, states: dict | None = None
) -> set[str]:
    """The stage tabs whose data is stored and complete: once the run has finished, every stage it reached;
    while it runs, those whose collecting stage has ended (the worker stores the sections then)."""
    if not stored:
        return set()
    if run_status in ("succeeded", "failed"):
        states = states or stage_states(progress, run_status, failure)
        return {key for key, *_ in PIPELINE if states[key] != "not_reached"}
    ended = {row["stage"] for row in progress if row["state"] == "finished"}
    return {tab for tab, after in SECTIONS_READY_AFTER.items() if after in ended}


def why_not(key: str, facts: Facts, failure: dict | None) -> str | None:
    """Why a stage shows nothing, in words: the one wording of each state, for the Overview's card and the tab."""
    state = facts.states[key]
    if state == "failed":
        return f"failed here: {_first_line((failure or {}).get('message')) or 'see the error above'}"
    if state == "not_reached":
        return f"not reached: the run failed during {(failure or {}).get('stage') or 'an earlier stage'}"
    if state == "not_run":
        config = facts.recorded_config
        return f"not run: the recorded config{f' ({config})' if config else ''} stops before this stage"
    if state == "nothing_captured":
        return (
            "nothing to trace: Dynamo captured no graph, so none reached AOTAutograd"
            if key == "aot"
            else "nothing to compile: Dynamo captured no graph, so Inductor generated no kernel"
        )
    if state == "not_in_log":
        if key == "runtime":
            return (
                "not in a TORCH_TRACE log: a log records what torch compiled, not how fast the model runs; run "
                "the model here to time it"
            )
        return f"not in this log: the job's compiles logged no {LOG_WHAT[key]}"
    if state == "pending":
        return "still to come"
    return None


def story(models: dict, *, facts: Facts, progress: list[dict], failure: dict | None, filename: str) -> dict:
    """The Overview: {stages: [{key, title, tab, state, does, seconds, facts, why_not}], headlines (at most 3),
    note (where the times come from)}. ``models``: the report's section models (section_models)."""
    dynamo, aot, inductor, runtime = (_section(models, k) for k in ("dynamo", "aot", "inductor", "runtime"))
    counts = facts.counts
    seconds_of = stage_seconds(runtime, models.get("stages") or [], progress)
    stage_facts = {
        "dynamo": _dynamo_facts(dynamo, counts),
        "aot": _aot_facts(aot, runtime),
        "inductor": _inductor_facts(inductor, counts),
        "runtime": _runtime_facts(runtime),
    }
    stages = [
        {
            "key": key,
            "title": title,
            "tab": tab,
            "state": facts.states[key],
            "does": WHAT_IT_DOES[key],
            "seconds": seconds_of.get(key),
            "facts": stage_facts[key] if facts.states[key] in SHOWN_STATES else [],
            "why_not": why_not(key, facts, failure),
        }
        for key, title, tab, _ in PIPELINE
    ]
    return {
        "stages": stages,
        "headlines": headlines(models, facts, failure)[:3],
        "note": times_note(runtime, facts),
        "user_backends": debug_view.overview_words(models.get("debug"), runtime),
    }


def _section(models: dict, key: str):
    return models.get(key) or {"dynamo": Dynamo, "aot": Aot, "inductor": Inductor, "runtime": Runtime}[key]()


def stage_seconds(runtime: Runtime, stages: list[Stage], progress: list[dict]) -> dict:
    """Seconds each pipeline stage took: the recorded compile's per-stage compile time (torch's metrics), and
    for the runtime the benchmark and profile stages together."""
    compile_seconds = runtime.compile_seconds
    inductor = [s for s in (compile_seconds.inductor, compile_seconds.codegen) if s is not None]
    out = {
        "dynamo": compile_seconds.dynamo,
        "aot": compile_seconds.aot_autograd,
        "inductor": sum(inductor) if inductor else None,
    }
    rows: list[tuple[str, float | None]] = [(s.name, s.seconds) for s in stages] or [
        (p["stage"], p.get("seconds")) for p in progress
    ]
    ran = [s for name, s in rows if name in ("benchmark", "profile") and isinstance(s, (int, float))]
    if ran:
        out["runtime"] = sum(ran)
    return out


def times_note(runtime: Runtime, facts: Facts) -> str:
    """Where the cards' times come from, and the whole job's (a job's own; an imported log holds no job time)."""
    total = runtime.compile_seconds.total
    if facts.imported:
        return (
            "Times: the compilation metrics in the log, for the job's own compile"
            + (f" ({seconds(total)} in all)" if total else "")
            + "; a log holds no benchmark, so the runtime is not timed."
        )
    note = f"Times: torch's own compile metrics for the recorded compile ({facts.recorded_config or 'none recorded'})"
    if runtime.compile_seconds.backward:
        note += (
            "; the backward graph was compiled separately at the first .backward(), "
            f"{seconds(runtime.compile_seconds.backward)}"
        )
    note += "; the runtime's is the time spent benchmarking every config."
    warm = runtime.compile_cache.warm
    if warm and warm.status == "ok" and warm.seconds and warm.seconds.total:
        note += f" Compiled again with warm caches, it took {seconds(warm.seconds.total)}."
    if runtime.job_seconds:
        note += f" The whole job took {seconds(runtime.job_seconds)}."
    return note


def _dynamo_facts(dynamo: Dynamo, counts: Counts | None) -> list[str]:
    if counts is None:
        return []
    if counts.dynamo_graphs == 0:
        return ["captured no graph: your model runs as plain eager", _plural(counts.graph_breaks, "graph break")]
    nodes = sum(g.num_nodes for g in dynamo.graphs)
    return [
        _plural(counts.dynamo_graphs, "graph") + (f", {_plural(nodes, 'node')}" if nodes else ""),
        _plural(counts.graph_breaks, "graph break"),
        _plural(counts.recompiles, "recompile"),
    ]


def _aot_facts(aot: Aot, runtime: Runtime) -> list[str]:
    kinds = [g.kind for g in aot.graphs]
    facts = [f"{runtime.mode.kind} graphs"] if runtime.mode.kind else []
    if "forward" in kinds or "backward" in kinds:
        facts.append(
            f"{_plural(kinds.count('forward'), 'forward')} + {_plural(kinds.count('backward'), 'backward')}"
            " graph" + ("s" if kinds.count("forward") + kinds.count("backward") > 1 else "")
        )
    elif kinds:
        facts.append(_plural(kinds.count("inference") or len(kinds), "inference graph"))
    if aot.partitions:
        saved = sum(len(p.saved) for p in aot.partitions)
        recomputed = sum(len(p.recomputed) for p in aot.partitions)
        facts.append(f"{_plural(saved, 'tensor')} saved for backward, {recomputed} recomputed")
    decomposed = {op for d in aot.decompositions for op in d.map}
    facts.append(f"{_plural(len(decomposed), 'op')} decomposed" if decomposed else "no op decomposed")
    return facts


def kernel_source_nodes(inductor: Inductor) -> int:
    """Graph nodes the kernels were generated from: each kernel's source nodes, or the post-grad nodes provenance
    tracking names for it (imported logs); 0 when neither is known."""
    return sum(len(set(k.source_nodes) | set(k.post_grad_nodes)) for k in inductor.kernels)


def _inductor_facts(inductor: Inductor, counts: Counts | None) -> list[str]:
    if counts is None:
        return []
    facts = [_plural(counts.generated_kernels, "generated kernel")]
    fused = [k for k in inductor.kernels if len(k.source_nodes) > 1]
    if fused:
        nodes = sum(len(k.source_nodes) for k in fused)
        facts.append(f"{_plural(nodes, 'graph node')} fused into {_plural(len(fused), 'kernel')}")
    decisions = sum(d.count for d in inductor.fusion_decisions if d.action == "fused")
    if decisions:
        facts.append(f"{_plural(decisions, 'fusion decision')} taken")
    if counts.library_calls:
        facts.append(_plural(counts.library_calls, "library call"))
    return facts


def _runtime_facts(runtime: Runtime) -> list[str]:
    facts = []
    best = best_benchmark(runtime)
    if best:
        facts.append(f"{best.config}: {outcome(best).words}")
    elif compiled_rungs(runtime):
        facts.append("no speedup decided" + (": the machine was busy" if runtime.load.contended else ""))
    # Facts that are not about speed come from the rung spoken of, or failing one, the recorded config's.
    rung = (
        best
        or next((b for b in compiled_rungs(runtime) if b.config == runtime.recorded_config), None)
        or next(iter(compiled_rungs(runtime)), None)
    )
    verdict = runtime.correctness.text or (correctness_text(rung) if rung else None)
    if verdict:
        facts.append(verdict)
    cudagraphs = cudagraphs_text(runtime)
    if cudagraphs:
        facts.append(cudagraphs)
    host = host_text(runtime, rung)
    if host:
        facts.append(host)
    return facts


def compiled_rungs(runtime: Runtime) -> list:
    """The compiled configs that ran and were timed (eager, the baseline, excluded)."""
    return [b for b in runtime.benchmarks if b.config != "eager" and b.status == "ok" and b.speedup is not None]


def best_benchmark(runtime: Runtime):
    """The compiled config to speak of: the fastest whose speedup is decided; else the fastest known to be faster
    in every round; else one whose outcome is decided at all (same, slower); else None: no figure of this run
    ranks one config above another."""
    rungs = [(b, outcome(b)) for b in compiled_rungs(runtime)]
    for wanted in (("faster",), ("faster_every_round",), ("same", "slower", "slower_every_round")):
        chosen = [b for b, o in rungs if o.kind in wanted]
        if chosen:
            return max(chosen, key=lambda b: b.speedup.value)
    return None


def correctness_text(benchmark) -> str | None:
    verdict = benchmark.correctness.verdict if benchmark.correctness else None
    if verdict:
        return {
            "match": "outputs match eager",
            "mismatch": "outputs differ from eager",
            "nondeterministic": "outputs nondeterministic: eager differs from itself",
            "not_comparable": "not comparable: the model's random numbers could not be drawn as eager's",
        }.get(verdict, verdict)
    error = benchmark.max_abs_error
    if error == 0:
        return "outputs identical to eager"
    if error is not None:
        return f"max difference from eager {error:.1e}"
    return None


def cudagraphs_text(runtime: Runtime) -> str | None:
    entries = [b.cudagraphs for b in runtime.benchmarks]
    entry = next((e for e in entries if e.status not in (None, "not_requested")), None) or (
        runtime.cudagraphs if runtime.cudagraphs.status not in (None, "not_requested") else None
    )
    if not entry or entry.status is None:
        return None
    return f"CUDA graphs {entry.status.replace('_', ' ')}" + (f": {entry.reason}" if entry.reason else "")


def host_text(runtime: Runtime, best) -> str | None:
    share = runtime.kernel_profile_summary.host_overhead_share
    if share is not None:
        return (
            f"host-bound: {share:.0%} of the step is host overhead"
            if share >= 0.5
            else f"not host-bound: host overhead {share:.0%} of the step"
        )
    if best and best.gpu_busy_ms is not None and best.median_ms:
        busy = best.gpu_busy_ms / best.median_ms
        return (
            f"host-bound: GPU busy {busy:.0%} of the step"
            if busy < 0.5
            else f"not host-bound: GPU busy {busy:.0%} of the step"
        )
    return None


# The headlines


def headlines(models: dict, facts: Facts, failure: dict | None) -> list[dict]:
    """What matters most, in order: a failure, where the outputs diverge, what Dynamo captured (graph breaks, or
    nothing), whether compiling helped (decided facts only), recompiles, what training kept for backward, what
    Inductor fused. Each: {text, kind, tab, anchor}: where it is shown (tab None: this page)."""
    dynamo, aot, inductor, runtime = (_section(models, k) for k in ("dynamo", "aot", "inductor", "runtime"))
    states, counts = facts.states, facts.counts
    out = []
    if failure:
        where = f" at line {failure['line']}" if isinstance(failure.get("line"), int) else ""
        missed = [TITLES[key] for key, state in states.items() if state == "not_reached"]
        out.append(
            _headline(
                f"The run failed during {failure.get('stage')}{where}: {_first_line(failure.get('message'))}"
                + (f". Not reached: {', '.join(missed)}." if missed else ""),
                "bad",
                None,
                "error",
            )
        )
    divergent = runtime.correctness.first_divergent_stage
    if divergent:
        title = {"dynamo": "TorchDynamo", "aot_autograd": "AOTAutograd", "inductor": "TorchInductor"}[divergent]
        text = runtime.correctness.text
        out.append(
            _headline(
                f"The outputs stop matching eager at {title}" + (f": {text}" if text else "."),
                "bad",
                "runtime",
                "runtime-benchmarks",
            )
        )
    captured = _dynamo_headline(dynamo, states, counts)
    if captured:
        out.append(captured)
    speed = _speed_headline(runtime, counts)
    if speed:
        out.append(speed)
    out += [h for h in (_recompile_headline(dynamo), _training_headline(aot), _kernels_headline(inductor, counts)) if h]
    return out


def _recompile_headline(dynamo: Dynamo) -> dict | None:
    if not dynamo.recompiles:
        return None
    first = dynamo.recompiles[0]
    guard = next((text for _, text in failed_guards(first) if text), "").strip()
    return _headline(
        f"Dynamo compiled again {_plural(len(dynamo.recompiles), 'time')}: "
        + (f"call {first.call_index} of example_inputs " if first.call_index is not None else "")
        + "failed a guard"
        + (f" ({guard})" if guard else "")
        + ".",
        "warn",
        "dynamo",
        "dynamo-guards",
    )


def _training_headline(aot: Aot) -> dict | None:
    if not aot.partitions:
        return None
    saved = sum(len(p.saved) for p in aot.partitions)
    recomputed = sum(len(p.recomputed) for p in aot.partitions)
    return _headline(
        f"Training: AOTAutograd split each graph into forward and backward, keeping {_plural(saved, 'tensor')} "
        f"for the backward and recomputing {recomputed} op{'s' if recomputed != 1 else ''} instead of storing them.",
        "info",
        "aot",
        "aot-partitions",
    )


def _kernels_headline(inductor: Inductor, counts: Counts | None) -> dict | None:
    if not inductor.kernels or counts is None:
        return None
    nodes = kernel_source_nodes(inductor)
    first = inductor.kernels[0]
    return _headline(
        f"Inductor generated {_plural(counts.generated_kernels, 'kernel')}"
        + (f" from {_plural(nodes, 'graph node')}" if nodes else "")
        + (f"; the first fuses {', '.join(first.source_nodes[:6])}" if len(first.source_nodes) > 1 else "")
        + ".",
        "info",
        "inductor",
        "inductor-kernels",
    )


def _headline(text: str, kind: str, tab: str | None, anchor: str) -> dict:
    return {"text": text, "kind": kind, "tab": tab, "anchor": anchor}


def _dynamo_headline(dynamo: Dynamo, states: dict, counts: Counts | None) -> dict | None:
    if counts is None or states["dynamo"] not in SHOWN_STATES:
        return None
    breaks = dynamo.graph_breaks
    labels = break_labels(breaks)
    places = break_places(breaks)
    where = ", ".join(places[:3]) + (f" and {len(places) - 3} more" if len(places) > 3 else "")
    if counts.dynamo_graphs == 0:
        why = next((b.explanation or short_reason(b.reason) for b in breaks), None)
        return _headline(
            "Dynamo captured nothing"
            + (f": it broke at {labels[0]}" + (f" ({why.rstrip('.')})" if why else "") if breaks else "")
            + ", so it skipped your function and every config runs it as plain eager: no graph reached "
            "AOTAutograd or Inductor.",
            "bad",
            "dynamo",
            "dynamo-graph_breaks" if breaks else "dynamo-graphs",
        )
    if breaks:
        return _headline(
            f"{_plural(counts.graph_breaks, 'graph break')} split your function into "
            f"{_plural(counts.dynamo_graphs, 'graph')}: {where}.",
            "warn",
            "dynamo",
            "dynamo-graph_breaks",
        )
    return _headline(
        f"Dynamo captured your whole function in {_plural(counts.dynamo_graphs, 'graph')} with no graph break.",
        "good",
        "dynamo",
        "dynamo-graphs",
    )


def _speed_headline(runtime: Runtime, counts: Counts | None) -> dict | None:
    """Whether compiling helped, from decided facts only: a figure is quoted only when its interval decides it, a
    direction only when every round (or the interval) agrees; otherwise it says so and ranks no config."""
    eager = next((b for b in runtime.benchmarks if b.config == "eager" and b.median_ms), None)
    rungs = [(b, outcome(b)) for b in compiled_rungs(runtime)]
    if eager is None or not rungs:
        return None
    if counts is not None and counts.dynamo_graphs == 0:
        return _headline(
            "Compiling cannot help here: with no graph captured, every config runs your model as plain eager "
            "(the Runtime tab's figures differ by noise only).",
            "warn",
            "runtime",
            "runtime-benchmarks",
        )
    best = best_benchmark(runtime)
    undecided = [b.config for b, o in rungs if o.direction is None]
    if best is None:
        why = (
            "the machine was busy in every round, so no config's speedup is decided"
            if runtime.load.contended
            else "no config's speedup is decided"
        )
        return _headline(
            f"Whether compiling helped is not decided: {why} ({', '.join(undecided)}); each config's range is on "
            "the Runtime tab.",
            "warn",
            "runtime",
            "runtime-benchmarks",
        )
    verdict = outcome(best)
    said = {
        "faster": "Compiling helped",
        "faster_every_round": "Compiling helped",
        "slower": "Compiling made it slower",
        "slower_every_round": "Compiling made it slower",
        "same": "Compiling made no measurable difference",
    }[verdict.kind]
    if verdict.kind in ("slower", "slower_every_round", "same") and undecided:
        # Another config might have helped: its figures do not say.
        said += f" for {best.config} (not decided for {', '.join(undecided)})"
    return _headline(
        f"{said}: {_speed_words(best, verdict, eager)}" + _correct_words(best) + ".",
        _kind(verdict),
        "runtime",
        "runtime-benchmarks",
    )


def _speed_words(best, verdict: Outcome, eager) -> str:
    if verdict.decided:
        return f"{best.config} takes {ms(best.median_ms)} a step against eager's {ms(eager.median_ms)}: {verdict.words}"
    return f"{best.config} was {verdict.words}"


def _correct_words(best) -> str:
    correct = correctness_text(best)
    return f"; {correct}" if correct else ""


def _kind(verdict: Outcome) -> str:
    return {"faster": "good", "slower": "bad"}.get(verdict.direction or "", "warn")


def _first_line(text, limit: int = 200) -> str:
    """A message's first line, cut to ``limit`` characters (the whole message is in the error box)."""
    line = str(text or "").strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _plural(n, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
