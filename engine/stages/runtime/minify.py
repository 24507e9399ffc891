"""Minify a rung that mismatched eager or failed (runtime.bisect.minified): the graphs Dynamo hands the rung's
backend are caught, the first that still breaks alone (its outputs against the graph run eagerly, compared as the
ladder compares, or an exception for a failed rung) is shrunk by torch's FX minifier (torch._functorch.fx_minifier, private API: it truncates the
graph and replaces parts of it with inputs while it still breaks), and the smallest breaking graph is kept as printed
code with annotated inputs, from which the web tier writes a repro.py (contract.repro.graph_repro).

Runs in the bisect stage, after the bisector, within the same share of the job's time."""

from __future__ import annotations

import contextlib
import copy
import io
import time

import torch

from engine.stages.runtime.accuracy import compare

MAX_CODE_CHARS = 200_000


class OutOfTime(Exception):
    """The bisect's share of the job's time is spent (engine/stages/runtime/bisect.py)."""


def minify_rung(job, config, entry: dict, ends_at: float) -> dict:
    """{status, text, code, ops, nodes_before, nodes_after, queries, seconds}: the smallest graph that still breaks
    ``config`` (a contract.vocab.Config) as the rung did."""
    state, ctx = job.state, job.state.ctx
    failed = entry["status"] == "failed"
    out = {"status": "error", "text": "", "code": None, "ops": {}, "nodes_before": None, "nodes_after": None}
    out.update(queries=0, seconds=None)
    try:
        from torch._functorch.fx_minifier import minifier
    except Exception as exc:  # noqa: BLE001 - private API: say what was missing
        why = f"torch {torch.__version__} has no FX minifier ({type(exc).__name__}: {exc})"
        ctx.mark_unavailable("functorch.fx_minifier", why)
        return {**out, "status": "unavailable", "text": why}
    compiler = backend_compiler(config)

    def breaks(gm, inputs) -> bool:
        """The graph compiled alone still breaks as the rung did: its outputs differ from the graph run eagerly (the
        ladder's comparison), or, for a failed rung, its compile or call raises."""
        if time.monotonic() > ends_at:
            raise OutOfTime
        job.stall.mark()
        out["queries"] += 1
        with state.workload.grad_mode():
            try:
                actual = outputs(compiler(copy.deepcopy(gm), clone(inputs)), clone(inputs))
            except Exception:  # noqa: BLE001 - the failure being minified, for a failed rung
                return failed
            if failed:
                return False
            return compare(actual, outputs(gm, clone(inputs)), None)["verdict"] == "mismatch"

    start = time.perf_counter()
    smallest: list = []  # the minifier's latest (graph module, inputs) that still breaks
    said = io.StringIO()  # the minifier prints every strategy it tries: kept out of the user's output
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            graphs = dynamo_graphs(state, config)
            breaking = next(((gm, inputs) for gm, inputs in graphs if breaks(gm, inputs)), None)
            if breaking is not None:
                out["nodes_before"] = node_count(breaking[0])
                smallest.append(breaking)
                keep = lambda gm, inputs: smallest.append((gm, inputs))  # noqa: E731
                minifier(*breaking, breaks, dump_state=keep, skip_sanity=True)
        out.update(status="minified") if smallest else out.update(
            status="not_reproduced", text=not_alone_text(len(graphs), failed)
        )
    except OutOfTime:
        out["status"] = "stopped"
    except Exception as exc:  # noqa: BLE001 - private API: the job's report stands without it
        ctx.error("minify", exc)
        out["text"] = f"The minifier failed: {type(exc).__name__}: {exc}"[:500]
    finally:
        torch._dynamo.reset()
        out["seconds"] = round(time.perf_counter() - start, 3)
    if smallest:
        out.update(kept(*smallest[-1]))
        out["text"] = minified_text(out, failed)
    return out


def backend_compiler(config):
    """The rung's backend as a function of (graph module, example inputs), as Dynamo calls it."""
    if config.backend == "inductor":
        from torch._inductor.compile_fx import compile_fx

        patches = dict(torch._inductor.list_mode_options(config.mode)) if config.mode else {}
        return lambda gm, inputs: compile_fx(gm, inputs, config_patches=patches)
    return torch._dynamo.lookup_backend(config.backend)


def dynamo_graphs(state, config) -> list:
    """The graphs Dynamo hands the rung's backend in one compared step, with their real example inputs (run eagerly
    here: catching them costs no compile)."""
    graphs = []

    def catch(gm, example_inputs):
        graphs.append((gm, clone(list(example_inputs))))
        return gm.forward

    torch._dynamo.reset()
    inst = state.workload.fresh()
    state.workload.compared_step(torch.compile(inst.model, backend=catch), inst)
    return graphs


def clone(inputs: list) -> list:
    """Fresh copies of a graph's inputs (tensors keep requires_grad), as each compile and call consumes its own."""
    return [t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t for t in inputs]


def outputs(fn, inputs: list) -> list:
    """The tensors a graph (or what a backend made of it) returns. Called as Dynamo calls it: compile_fx's result
    says `_boxed_call` (its inner function takes one list) but takes the arguments one by one."""
    result = fn(*inputs)
    return [t.detach() for t in torch.utils._pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]


def node_count(gm) -> int:
    return sum(1 for n in gm.graph.nodes if n.op not in ("placeholder", "output"))


def kept(gm, inputs) -> dict:
    """The graph as printed code (inputs annotated with shape, stride and device, as a repro reads them) and its ops
    counted as the report counts a graph's."""
    from engine.fxgraph import target_name
    from engine.readers.nodes import short_op

    code = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    ops: dict[str, int] = {}
    for node in gm.graph.nodes:
        if node.op == "call_function" and target_name(node) != "_operator.getitem":
            key = short_op(target_name(node))
            ops[key] = ops.get(key, 0) + 1
    return {"code": code[:MAX_CODE_CHARS], "ops": dict(sorted(ops.items())), "nodes_after": node_count(gm)}


def minified_text(out: dict, failed: bool) -> str:
    what = "fails to compile or run" if failed else "differs from the same graph run eagerly"
    ops = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in out["ops"].items()) or "no op"
    how = (
        "the smallest so far: the job's time ran out before the minifier finished"
        if out["status"] == "stopped"
        else "the minifier could shrink it no further"
    )
    return (
        f"A graph of {out['nodes_after']} node{'' if out['nodes_after'] == 1 else 's'} ({ops}), cut from one of "
        f"{out['nodes_before']}, still {what}: "
        f"{how} ({out['queries']} compiles)."
    )


def not_alone_text(graphs: int, failed: bool) -> str:
    return (
        f"None of the {graphs} graph{'s' if graphs != 1 else ''} Dynamo captured "
        f"{'fails' if failed else 'differs from the same graph run eagerly'} when compiled alone: the problem needs "
        "the whole program (state between graphs, a guard, the order of calls), or the whole step's backward."
    )
