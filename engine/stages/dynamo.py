"""TorchDynamo: captured FX graphs, guards, graph breaks, recompiles and bytecode, per compile id.

Sources: the capture backend hands every Dynamo GraphModule to ``on_graph`` (structured nodes, taken while
node.meta is alive); the structured trace gives readable graph code, graph-break reasons, C++ guards and their
count, recompile reasons (JSON: one string or a list, one per rejected cache entry) and the symbols of dimensions
that became dynamic, with the guards that test them and their specializations (the Dynamo tab's "Dynamic shapes");
the "recompiles" artifact names the function; ``register_bytecode_hook`` gives original and
transformed bytecode, decompiled by depyf where it can. Each reader of the log is declared below (logtap.PARSERS).
"""

from __future__ import annotations

import dis
import inspect
import re

import torch

from contract.compile_id import CompileId, compile_key
from engine import logtap
from engine.fxgraph import serialize_graph
from engine.logtap import current_compile_id
from engine.readers.dynamo_log import called_as, guards, parse_graph_breaks, parse_recompiles, parse_symbols
from engine.readers.nodes import op_histogram
from engine.stages.base import Collector


class DynamoCollector(Collector):
    section = "dynamo"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.graphs: list[dict] = []
        self.graph_modules: list[tuple] = []  # (compile_id, gm, example_inputs) for later analyses (functionalization)
        self.bytecode: list[dict] = []
        # compile key -> the compiled frame's code, {name (its qualified name), file, line}, from the bytecode hook
        self.frames: dict[tuple, dict] = {}

    def install(self) -> None:
        with self.ctx.guard("dynamo.bytecode"):
            torch._dynamo.convert_frame.register_bytecode_hook(self._on_bytecode)

    def on_graph(self, gm: torch.fx.GraphModule, example_inputs) -> None:
        if not self.ctx.recording:
            return
        compile_id = current_compile_id()
        graph = serialize_graph(gm, self.ctx.user_file, compile_id=compile_id)
        graph["ops"] = op_histogram(graph["nodes"])
        self.graphs.append(graph)
        self.graph_modules.append((compile_id, gm, example_inputs))

    def _on_bytecode(self, code, new_code) -> None:
        if not self.ctx.recording:
            return
        entry = {
            "compile_id": current_compile_id(),
            "name": code.co_name,
            "file": code.co_filename,
            "line": code.co_firstlineno,
            "original": _dis(code),
            "transformed": _dis(new_code),
            "decompiled": None,
            "called_as": called_as(self.ctx.entry, code.co_filename, self.ctx.user_file),
        }
        self.frames[compile_key(entry["compile_id"])] = {
            "name": getattr(code, "co_qualname", code.co_name),  # Python 3.11+
            "file": code.co_filename,
            "line": code.co_firstlineno,
        }
        try:
            import depyf
        except ImportError:
            self.ctx.mark_unavailable("dynamo.decompiled_bytecode", "depyf is not installed")
        else:
            try:
                entry["decompiled"] = depyf.decompile(new_code)
            except Exception as exc:  # depyf does not know every bytecode of every Python version
                entry["decompile_error"] = f"{type(exc).__name__}: {exc}"[:300]
        self.bytecode.append(entry)

    def numbered_calls(self, fn, inputs_list, model=None):
        """``fn`` that stamps the log with the index into example_inputs of the call running (so a recompile can
        name the call that triggered it); ``model`` (what ``fn`` compiled) and the calls' inputs give each dynamic
        symbol its value in every call."""
        tags = self.ctx.tap.tags
        self.calls = (model, inputs_list)

        def call(*args, **kwargs):
            tags["call_index"] = next(
                (
                    i
                    for i, inputs in enumerate(inputs_list)
                    if len(inputs) == len(args) and all(a is b for a, b in zip(inputs, args))
                ),
                None,
            )
            try:
                return fn(*args, **kwargs)
            finally:
                tags.pop("call_index", None)

        return call

    def collect(self, report: dict) -> None:
        tap = self.ctx.tap
        section = report[self.section]
        readable = logtap.read(tap, "dynamo.graph_code")
        for graph in self.graphs:
            graph["code"] = readable.get(compile_key(graph["compile_id"]), graph["code"])
        section["graphs"] = self.graphs
        section["graph_breaks"] = logtap.read(tap, "dynamo.graph_breaks", user_file=self.ctx.user_file)
        section["guards"] = logtap.read(tap, "dynamo.guards")
        section["recompiles"] = logtap.read(
            tap, "dynamo.recompiles", user_file=self.ctx.user_file, entry=self.ctx.entry, frames=self.frames
        )
        section["symbols"] = logtap.read(tap, "dynamo.symbols", user_file=self.ctx.user_file)
        symbol_calls(section["symbols"], section["recompiles"], *getattr(self, "calls", (None, [])))
        section["bytecode"] = self.bytecode
        # Kept for schema-1 readers: the counts' one owner is the report's top-level summary (contract/counts.py).
        section["summary"] = {
            "graph_count": len(self.graphs),
            "graph_break_count": sum(b["count"] for b in section["graph_breaks"]),
            "unique_graph_breaks": len(section["graph_breaks"]),
            "recompile_count": len(section["recompiles"]),
            "op_count": sum(sum(g["ops"].values()) for g in self.graphs),
        }
        if not section["graph_breaks"] and logtap.read(tap, "dynamo.graph_breaks_log"):
            self.ctx.mark_unavailable(
                "dynamo.graph_break_reason_trace", "the structured trace had no graph-break artifact on this torch"
            )


# A dimension of one of the compiled function's own arguments: "L['x'].size()[0]", "L['x'].stride()[1]".
_ARGUMENT_DIM = re.compile(r"^L\['(?P<name>\w+)'\]\.(?P<what>size|stride)\(\)\[(?P<dim>\d+)\]$")


def symbol_calls(symbols: list[dict], recompiles: list[dict], model, inputs_list: list) -> None:
    """Each symbol's value in every call (``values_by_call``: for a dimension of an argument of the first frame,
    the function the user compiled; empty otherwise) and the later calls that ran its compile without compiling its
    frame again (``reused_by_calls``: up to the call that compiled the frame anew), in place."""
    try:
        signature = inspect.signature(model.forward if isinstance(model, torch.nn.Module) else model)
    except (TypeError, ValueError):  # a builtin or a callable object without a signature
        signature = None
    compiled_in: dict[tuple, list[int]] = {}  # frame -> the calls that compiled it again
    for r in recompiles:
        cid = CompileId.parse(r["compile_id"])
        if cid and r.get("call_index") is not None:
            compiled_in.setdefault((cid.compiled_autograd_id, cid.frame_id), []).append(r["call_index"])
    for symbol in symbols:
        cid, created = CompileId.parse(symbol["compile_id"]), symbol["created_in_call"]
        first_frame = cid is not None and cid.frame_id == 0 and cid.compiled_autograd_id is None
        symbol["values_by_call"] = _argument_values(symbol["source"], signature, inputs_list) if first_frame else []
        if cid is None or created is None:
            symbol["reused_by_calls"] = []
            continue
        later = [c for c in compiled_in.get((cid.compiled_autograd_id, cid.frame_id), []) if c > created]
        symbol["reused_by_calls"] = list(range(created + 1, min(later, default=len(inputs_list))))


def _argument_values(source: str, signature, inputs_list: list) -> list:
    match = _ARGUMENT_DIM.match(source)
    if match is None or signature is None:
        return []
    values = []
    for args in inputs_list:
        try:
            value = signature.bind(*args).arguments.get(match["name"])
        except TypeError:
            return []
        dim = int(match["dim"])
        is_tensor = isinstance(value, torch.Tensor) and value.dim() > dim
        values.append(int(getattr(value, match["what"])()[dim]) if is_tensor else None)
    return values


def _dis(code) -> str:
    try:
        return dis.Bytecode(code).dis()
    except Exception as exc:
        return f"<dis failed: {exc}>"


logtap.declare(
    "dynamo.graph_code",
    trace=("dynamo_output_graph",),
    read=lambda log: {
        compile_key(e["compile_id"]): e["payload"] for e in log.events("dynamo_output_graph") if e["payload"]
    },
)
logtap.declare(
    "dynamo.graph_breaks",
    trace=("artifact:dynamo_graph_break_reason",),
    read=lambda log, user_file: parse_graph_breaks(log.events("artifact:dynamo_graph_break_reason"), user_file),
)
# Only to tell "this torch's trace has no graph-break artifact" from "no graph break".
logtap.declare("dynamo.graph_breaks_log", logs=("graph_breaks",), read=lambda log: log.artifact_texts("graph_breaks"))
logtap.declare("dynamo.guards", trace=("dynamo_cpp_guards_str", "compilation_metrics"), logs=("guards",), read=guards)
logtap.declare(
    "dynamo.symbols",
    trace=("create_symbol", "guard_added_fast", "symbolic_shape_specialization", "str"),
    read=lambda log, user_file="": parse_symbols(
        log.events("create_symbol"),
        log.events("guard_added_fast"),
        log.events("symbolic_shape_specialization"),
        log.events("str"),
        user_file,
    ),
)
logtap.declare(
    "dynamo.recompiles",
    trace=("artifact:recompile_reasons", "create_symbol"),
    logs=("recompiles",),
    read=lambda log, user_file="", entry=None, frames=None: parse_recompiles(
        log.events("artifact:recompile_reasons"),
        log.artifact_texts("recompiles"),
        log.events("create_symbol"),
        user_file,
        entry,
        frames,
    ),
)
