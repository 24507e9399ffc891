"""Bisect a rung that mismatched eager or failed (runtime.bisect): torch's compiler bisector
(torch._inductor.compiler_bisector, private API) asks for the rung's compile again and again, each time with a
backend of eager -> aot_eager -> aot_eager_decomp_partition -> ... -> inductor, then with one of that backend's
subsystems off, then with only the first N applications of the guilty subsystem, and we answer each time whether
the compared step (a fresh model copy, compiled anew) matches eager as the ladder judged it.

Then the rung's smallest breaking graph (engine/stages/runtime/minify.py). The last stage of the child: each step
starts with torch._dynamo.reset(), which drops every compiled rung."""

from __future__ import annotations

import contextlib
import io
import time

import torch

from contract.graphs import report_graphs
from contract.vocab import CONFIGS
from engine.stages.base import Stage
from engine.stages.runtime.minify import OutOfTime, minify_rung

# Of the job's time limit, what the bisect leaves for the steps after it (the report, the warm compile's start).
RESERVE_SHARE = 0.25
# The graph a subsystem acts on, by the report's graph-id prefix and kind: Dynamo's graph before the pre-grad
# passes, AOT's joint graph for the joint-graph passes and decompositions, the post-grad graphs for the rest.
SUBSYSTEM_GRAPHS = {
    "pre_grad_passes": ("dynamo-", None),
    "pre_grad_graph": ("dynamo-", None),
    "decomposition": ("aot-", "joint"),
    "joint_graph_passes": ("aot-", "joint"),
    "post_grad_passes": ("postgrad-", None),
    "lowerings": ("postgrad-", None),
}


class BisectStage(Stage):
    """The first built-in rung whose compared step mismatched eager or failed, bisected within the job's time."""

    name = "bisect"

    def run(self, job) -> None:
        rt = job.report["runtime"]
        entry = culprit_rung(rt.get("benchmarks") or [])
        if entry is None:
            return
        t0 = job.begin("bisect", config=entry["config"])
        rt["bisect"] = bisect_rung(job, entry)
        rt["bisect"]["minified"] = minify_rung(job, CONFIGS[entry["config"]], entry, deadline(job))
        job.end("bisect", t0, config=entry["config"])


def culprit_rung(benchmarks: list[dict]) -> dict | None:
    """The first compiled built-in rung that failed or whose verdict is mismatch (the user's own backends are not
    torch's to bisect; eager is the reference)."""
    for entry in benchmarks:
        if entry["config"] not in CONFIGS or entry["config"] == "eager":
            continue
        if entry["status"] == "failed" or (entry.get("correctness") or {}).get("verdict") == "mismatch":
            return entry
    return None


def bisect_rung(job, entry: dict) -> dict:
    ctx = job.state.ctx
    config = CONFIGS[entry["config"]]
    result = {
        "config": config.name,
        "verdict": "failed" if entry["status"] == "failed" else "mismatch",
        "status": "error",
        "text": "",
        "steps": [],
        "error": None,
    }
    try:
        from torch._inductor.compiler_bisector import CompilerBisector
    except Exception as exc:  # noqa: BLE001 - private API: say what was missing
        why = f"torch {torch.__version__} has no compiler bisector ({type(exc).__name__}: {exc})"
        ctx.mark_unavailable("inductor.compiler_bisector", why)
        return {**result, "status": "unavailable", "text": why}
    steps = Steps(job, entry, CompilerBisector)
    result["steps"] = steps.done
    start = time.perf_counter()
    said = io.StringIO()  # the bisector prints its progress: kept out of the user's output
    try:
        with contextlib.redirect_stdout(said):
            found = CompilerBisector.do_bisect(steps)
    except OutOfTime:
        result.update(status="stopped", text=stopped_text(steps.done, steps.limit))
    except Exception as exc:  # noqa: BLE001 - private API: the job's report stands without it
        result.update(error=f"{type(exc).__name__}: {exc}"[:2000], text=f"The bisector failed: {type(exc).__name__}")
        ctx.error("bisect", exc)
    else:
        if found is None:
            result.update(status="not_reproduced", text=not_reproduced_text(config.name, entry))
        else:
            result.update(status="found", **located(found, job.report, config.name == job.state.target.name))
            result["text"] = found_text(config.name, result)
    finally:
        torch._dynamo.reset()
    result["seconds"] = round(time.perf_counter() - start, 3)
    return result


def deadline(job) -> float:
    """When the bisect and the minifier must have ended (time.monotonic()): a share of the job's time limit."""
    return job.started + (job.request.get("time_limit_s") or 900) * (1 - RESERVE_SHARE)


class Steps:
    """The bisector's test function: each call is one step, the rung compiled anew (the bisector picks the backend
    and what is off) and its compared step judged against eager; ``done`` the steps so far, as the report has them.

    A step starts only where it should end in time: one that ran past the job's limit would end the whole job. Its
    length is guessed from the steps of its backend so far, or from the rung's own first call."""

    def __init__(self, job, entry: dict, bisector):
        self.job, self.bisector, self.config = job, bisector, CONFIGS[entry["config"]]
        self.limit = job.request.get("time_limit_s") or 900
        self.ends_at = deadline(job)
        self.first_call_s = (entry.get("first_call_ms") or 0) / 1000
        self.cudagraph_steps = self.config.cudagraph_steps(job.state.ctx.device)
        self.done: list[dict] = []

    def __call__(self) -> bool:
        state, config = self.job.state, self.config
        backend, subsystem = self.bisector.get_backend(), self.bisector.get_subsystem()
        guess = max([s["seconds"] for s in self.done if s["backend"] == backend] or [self.first_call_s])
        if time.monotonic() + 2 * guess > self.ends_at:
            raise OutOfTime
        self.job.stall.mark()  # each step is a compile: the stall watch sees the bisect move on
        start = time.perf_counter()
        torch._dynamo.reset()  # a fresh compile: the bisector's settings apply only to code compiled from now on
        try:
            inst = state.workload.fresh()
            fn = torch.compile(inst.model, backend=config.backend, mode=config.mode)
            _, outs, grads = state.workload.compared_step(fn, inst, cudagraph_steps=self.cudagraph_steps)
            passed = state.reference.judge(outs, grads)["verdict"] == "match"
        except Exception:  # noqa: BLE001 - a compile or step that raises is a failing step, as the rung's was
            passed = False
        step = {
            "backend": backend or config.backend,
            "subsystem": subsystem or None,
            "passed": passed,
            "seconds": round(time.perf_counter() - start, 3),
        }
        self.done.append(step)
        self.job.emit({"event": "message", "text": step_words(len(self.done), config.name, step)})
        return passed


def step_words(number: int, config: str, step: dict) -> str:
    """One step as the progress page lists it."""
    where = step["backend"] + (f", {step['subsystem']} off or cut short" if step["subsystem"] else "")
    return (
        f"bisect {config}, step {number}: {where}: {'matches eager' if step['passed'] else 'breaks'} "
        f"({step['seconds']:.1f} s)"
    )


def located(found, report: dict, recorded: bool) -> dict:
    """The bisector's BisectionResult as the report's fields, with the recorded graph it points into (only for the
    recorded config, whose graphs the report holds)."""
    out = {
        "backend": found.backend,
        "subsystem": found.subsystem,
        "bisect_number": found.bisect_number if found.subsystem else None,
        "debug_info": str(found.debug_info)[:500] if found.debug_info is not None else None,
        "graph_id": None,
        "node": None,
    }
    where = SUBSYSTEM_GRAPHS.get(found.subsystem or "")
    if not recorded or where is None:
        return out
    prefix, kind = where
    graphs = [(gid, g) for gid, g in report_graphs(report) if gid.startswith(prefix) and kind in (None, g.get("kind"))]
    if found.subsystem == "lowerings" and out["debug_info"]:
        holding = next(
            (gid for gid, g in graphs if any(n.get("name") == out["debug_info"] for n in g.get("nodes") or [])), None
        )
        if holding:
            return {**out, "graph_id": holding, "node": out["debug_info"]}
    return {**out, "graph_id": graphs[0][0] if graphs else None}


BACKEND_WORDS = {
    "eager": "Dynamo's capture alone (backend eager)",
    "aot_eager": "AOTAutograd's tracing (backend aot_eager)",
    "aot_eager_decomp_partition": "AOTAutograd's decompositions and partitioner (backend aot_eager_decomp_partition)",
    "aot_eager_decomp_partition_crossref": "AOTAutograd checked op by op against fake tensors (crossref)",
    "inductor": "Inductor",
}


def found_text(config: str, result: dict) -> str:
    backend = BACKEND_WORDS.get(result["backend"], f"backend {result['backend']}")
    if not result["subsystem"]:
        return (
            f"{config} breaks in {backend}: every backend before it matches eager, and no subsystem of it, turned "
            "off alone, mends it."
        )
    if result["bisect_number"] is None or result["bisect_number"] == 0 and result["debug_info"] == result["subsystem"]:
        return f"{config} breaks in {backend}, {result['subsystem']}: with that setting changed it matches eager."
    what = f" ({result['debug_info']})" if result["debug_info"] else ""
    return (
        f"{config} breaks in {backend}, subsystem {result['subsystem']}: application number {result['bisect_number']}"
        f"{what} is the first that makes it differ from eager; with only the applications before it, it matches."
    )


def not_reproduced_text(config: str, entry: dict) -> str:
    return (
        f"Every backend, inductor included, matched eager when the bisector compiled {config} again: the "
        f"{'failure' if entry['status'] == 'failed' else 'mismatch'} did not repeat in a fresh compile (it may depend "
        "on state the ladder's compile had: caches, an earlier rung's compile, autotuning's choices)."
    )


def stopped_text(steps: list[dict], limit: float) -> str:
    last = steps[-1] if steps else None
    where = (
        f"; the last step tried {last['backend']}" + (f", {last['subsystem']}" if last["subsystem"] else "")
        if last
        else ""
    )
    return (
        f"Stopped after {len(steps)} steps: the bisect may use {1 - RESERVE_SHARE:.0%} of the job's {limit:g} s"
        f"{where}. A longer time limit lets it finish."
    )
