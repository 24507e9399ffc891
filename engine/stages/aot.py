"""AOTAutograd: joint, forward, backward and inference graphs; saved vs recomputed values; functionalization;
decompositions.

Sources: ``recording_compiler`` wraps the forward/backward/inference compilers (Inductor's inner compile or
aot_eager's no-op), ``recording_partition`` wraps the min-cut partitioner to see the joint graph and its split.
Functionalization and the pre-decomposition op histogram come from re-tracing each Dynamo graph with make_fx
(with and without functionalize) under Dynamo's fake mode, after the compile, so compile timings stay clean.
"""

from __future__ import annotations

import contextlib
import functools

import torch

from contract.compile_id import compile_key
from engine.fxgraph import serialize_graph
from engine.logtap import current_compile_id
from engine.readers.nodes import op_histogram, short_op
from engine.stages.base import Collector


class AotCollector(Collector):
    section = "aot"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.graphs: list[dict] = []
        self.partitions: list[dict] = []

    def recording_compiler(self, compiler, kind: str | None = None):
        """Wrap a fw/bw/inference compiler: record the graph it is given, then compile it unchanged."""

        @functools.wraps(compiler)
        def wrapper(gm, example_inputs, *args, **kwargs):
            if self.ctx.recording:
                graph_kind = kind or (
                    "backward"
                    if kwargs.get("is_backward")
                    else "inference"
                    if kwargs.get("is_inference")
                    else "forward"
                )
                self.record(gm, graph_kind)
            return compiler(gm, example_inputs, *args, **kwargs)

        return wrapper

    def record(self, gm, kind: str) -> None:
        graph = serialize_graph(gm, self.ctx.user_file, compile_id=current_compile_id(), kind=kind)
        graph["ops"] = op_histogram(graph["nodes"])
        self.graphs.append(graph)

    def recording_partition(self, partition):
        @functools.wraps(partition)
        def wrapper(joint_module, joint_inputs, *args, **kwargs):
            fw_module, bw_module = partition(joint_module, joint_inputs, *args, **kwargs)
            if self.ctx.recording:
                with self.ctx.guard("aot.partition"):
                    self._record_partition(joint_module, fw_module, bw_module)
            return fw_module, bw_module

        return wrapper

    def _record_partition(self, joint, fw, bw) -> None:
        compile_id = current_compile_id()
        depends_on_tangent: set[str] = set()
        for node in joint.graph.nodes:
            if (node.op == "placeholder" and node.name.startswith("tangents")) or any(
                a.name in depends_on_tangent for a in node.all_input_nodes
            ):
                depends_on_tangent.add(node.name)
        joint_forward = {
            n.name for n in joint.graph.nodes if n.op == "call_function" and n.name not in depends_on_tangent
        }
        saved = [n.name for n in bw.graph.nodes if n.op == "placeholder" and not n.name.startswith("tangents")]
        recomputed = [n.name for n in bw.graph.nodes if n.op == "call_function" and n.name in joint_forward]
        graph = serialize_graph(joint, self.ctx.user_file, compile_id=compile_id, kind="joint")
        graph["ops"] = op_histogram(graph["nodes"])
        saved_set, recomputed_set = set(saved), set(recomputed)
        for node in graph["nodes"]:
            node["marks"] = {
                "saved": node["name"] in saved_set,
                "recomputed": node["name"] in recomputed_set,
                "backward": node["name"] in depends_on_tangent,
            }
        self.graphs.append(graph)
        self.partitions.append(
            {
                "compile_id": compile_id,
                "saved": saved,
                "recomputed": recomputed,
                "forward_nodes": len(fw.graph.nodes),
                "backward_nodes": len(bw.graph.nodes),
            }
        )

    def recording_aot_eager(self, gm, example_inputs):
        """backend="aot_eager", rebuilt with recording compilers (same partitioner and no-op compilers)."""
        from functorch.compile import min_cut_rematerialization_partition
        from torch._dynamo.backends.common import aot_autograd
        from torch._dynamo.backends.debugging import boxed_nop

        backend = aot_autograd(
            fw_compiler=self.recording_compiler(boxed_nop, "forward"),
            bw_compiler=self.recording_compiler(boxed_nop, "backward"),
            inference_compiler=self.recording_compiler(boxed_nop, "inference"),
            partition_fn=self.recording_partition(min_cut_rematerialization_partition),
            keep_inference_input_mutations=True,
        )
        return backend(gm, example_inputs)

    def collect(self, report: dict, dynamo_graph_modules=()) -> None:
        section = report[self.section]
        # Mark saved values on the forward graphs, and recomputed ones on the backward graphs (the ops the
        # partitioner chose to run again there rather than save), so a page needs no join.
        for part in self.partitions:
            saved, recomputed = set(part["saved"]), set(part["recomputed"])
            for graph in self.graphs:
                if compile_key(graph["compile_id"]) == compile_key(part["compile_id"]) and graph["kind"] == "forward":
                    saved = set(part["saved"])
                    for node in graph["nodes"]:
                        node.setdefault("marks", {})["saved"] = node["name"] in saved
                elif graph["compile_id"] == part["compile_id"] and graph["kind"] == "backward":
                    for node in graph["nodes"]:
                        node.setdefault("marks", {})["recomputed"] = (
                            node["op"] == "call_function" and node["name"] in recomputed
                        )
        section["graphs"] = self.graphs
        section["partitions"] = self.partitions
        section["decompositions"] = self._decompositions()
        before = {}
        for compile_id, gm, example_inputs in dynamo_graph_modules:
            with self.ctx.guard("aot.functionalization"):
                entry = functionalize_graph(gm, example_inputs, self.ctx.user_file, compile_id)
                section["functionalization"].append(entry)
                before[compile_key(compile_id)] = entry["after"]["ops"]
        for entry in section["decompositions"]:
            entry["histogram_before"] = before.get(compile_key(entry["compile_id"]), {})

    def _decompositions(self) -> list[dict]:
        """Per compile id: each ATen op that was decomposed -> the ops it became, and op counts after."""
        out = {}
        for graph in self.graphs:
            if graph["kind"] == "joint":
                continue
            entry = out.setdefault(
                compile_key(graph["compile_id"]),
                {"compile_id": graph["compile_id"], "map": {}, "histogram_after": {}, "histogram_after_backward": {}},
            )
            hist = entry["histogram_after_backward" if graph["kind"] == "backward" else "histogram_after"]
            for op, count in graph["ops"].items():
                hist[op] = hist.get(op, 0) + count
            for node in graph["nodes"]:
                original = node.get("original_aten")
                if node["op"] != "call_function" or not original or node["target"] == "_operator.getitem":
                    continue
                if short_op(original) != short_op(node["target"]):
                    became = entry["map"].setdefault(short_op(original), {})
                    became[short_op(node["target"])] = became.get(short_op(node["target"]), 0) + 1
        return list(out.values())


def functionalize_graph(gm, example_inputs, user_file: str, compile_id: str) -> dict:
    """ATen graph of a Dynamo graph before and after functionalization (no decompositions), under its fake mode."""
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.proxy_tensor import make_fx

    fake_mode = detect_fake_mode(example_inputs)
    args = [a for a in example_inputs]

    def run(*inputs):  # node by node, so each ATen node inherits its Dynamo node's stack trace (the user's line)
        return torch.fx.Interpreter(gm).run(*inputs)

    with fake_mode or contextlib.nullcontext(), torch.fx.traceback.preserve_node_meta():
        before_gm = make_fx(run)(*args)
        after_gm = make_fx(torch.func.functionalize(run, remove="mutations_and_views"))(*args)
    before = serialize_graph(before_gm, user_file, compile_id=compile_id, kind="aten")
    after = serialize_graph(after_gm, user_file, compile_id=compile_id, kind="functional")
    before["ops"], after["ops"] = op_histogram(before["nodes"]), op_histogram(after["nodes"])
    placeholders = {n["name"] for n in after["nodes"] if n["op"] == "placeholder"}
    rewritten = {}
    for node in before["nodes"]:
        kind = _mutation_kind(node["target"])
        if node["op"] == "call_function" and kind:
            node["marks"] = {"rewritten": kind}
            key = short_op(node["target"])
            rewritten.setdefault(key, {"op": key, "kind": kind, "count": 0, "lines": []})
            rewritten[key]["count"] += 1
            if node["line"] and node["line"] not in rewritten[key]["lines"]:
                rewritten[key]["lines"].append(node["line"])
    input_mutations = []
    for node in after["nodes"]:
        if node["op"] == "call_function" and _mutation_kind(node["target"]) == "in-place":
            is_writeback = bool(node["args"]) and node["args"][0] in placeholders
            node["marks"] = {"input_mutation": is_writeback}
            if is_writeback:
                input_mutations.append({"node": node["name"], "input": node["args"][0]})
    remaining = [
        n["target"]
        for n in after["nodes"]
        if n["op"] == "call_function" and _mutation_kind(n["target"]) == "in-place" and not n["marks"]["input_mutation"]
    ]
    return {
        "compile_id": compile_id,
        "before": before,
        "after": after,
        "rewritten": list(rewritten.values()),
        "input_mutations": input_mutations,
        "remaining_inplace": remaining,
    }


def _mutation_kind(target: str) -> str | None:
    """ "in-place" for mutating ATen ops (add_, copy_), "view" for view ops, else None."""
    if not target.startswith("aten."):
        return None
    try:
        op = torch.ops
        for part in target.split("."):  # target is an OpOverload's own str(), e.g. "aten.add_.Tensor"
            op = getattr(op, part)
        schema = op._schema
    except Exception:
        return None
    if schema.is_mutable:
        return "in-place"
    if any(a.alias_info is not None and not a.alias_info.is_write for a in schema.returns):
        return "view"
    return None
