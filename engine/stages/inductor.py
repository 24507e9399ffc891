"""TorchInductor: post-grad graphs, IR before/after fusion, fusion decisions, generated kernels, output code.

Sources: ``compile`` runs compile_fx with a recording inner compile (AOTAutograd's graphs, see aot.py); a
post-grad custom pass records the post-grad graph as data; pre/post-fusion passes record scheduler nodes and
fused groups; TORCH_LOGS artifacts give the IR text and fusion log; the structured trace gives the output code.
Kernel -> post-grad nodes comes from Triton's source-node comments, else from the buffers a kernel writes and the
scheduler nodes that write them; nodes -> user lines from the post-grad graph. Graph caches are off during the
recorded compile, so none of this is hidden by a cache hit (kernel binaries may still be reused).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from contract.compile_id import compile_key
from engine import logtap
from engine.fxgraph import serialize_graph
from engine.logtap import current_compile_id
from engine.readers.inductor_log import (
    estimate_kernel_bytes,
    group_output_code,
    library_calls,
    parse_fusion_log,
    parse_kernels,
    tie_to_post_grad_nodes,
)
from engine.readers.nodes import op_histogram, short_op
from engine.stages.base import Collector
from engine.stages.triton_code import TritonBinaries


class InductorCollector(Collector):
    section = "inductor"

    def __init__(self, ctx, aot):
        super().__init__(ctx)
        self.aot = aot
        self.current_kind = None
        self.post_grad: list[dict] = []
        # (compile key, kind) -> {"compile_id", "nodes": {op: info}, "groups": [...]}
        self.scheduler: dict[tuple, dict] = {}
        self.binaries = TritonBinaries(ctx)
        self.flops: dict[tuple, NodeFlops] = {}  # (compile key, kind, node) -> its count
        self.dtypes: dict[tuple, str] = {}  # (compile key, kind, node) -> its output's dtype

    def install(self) -> None:
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config
        from torch._inductor import metrics

        # On an FX-graph or AOTAutograd cache hit torch logs no IR, fusion or post-grad graphs: caches off while recording.
        inductor_config.fx_graph_cache = False
        functorch_config.enable_autograd_cache = False
        # Not inductor's provenance tracking: measured on torch 2.13 (CPU), it doubles a cold compile (9.8 s -> 21.7 s
        # for the seed). Kernels are tied to their nodes through the scheduler's buffer writes instead (below).
        if self.ctx.device == "cpu":
            with self.ctx.guard("inductor.cpp_kernel_profile"):
                inductor_config.cpp.enable_kernel_profile = True  # cpp kernels appear by name in the profiler
        # The slots may hold the user's own passes (their file ran already): those run first, inside the hooks.
        with self.ctx.guard("inductor.post_grad_graph"):
            inductor_config.post_grad_custom_post_pass = _hook(
                self.record_post_grad, "post-grad", inductor_config.post_grad_custom_post_pass
            )
        with self.ctx.guard("inductor.scheduler_nodes"):
            inductor_config._pre_fusion_custom_pass = _hook(
                self._record_pre_fusion, "pre-fusion", inductor_config._pre_fusion_custom_pass
            )
            inductor_config._post_fusion_custom_pass = _hook(
                self._record_post_fusion, "post-fusion", inductor_config._post_fusion_custom_pass
            )
        metrics.reset()
        self.binaries.install()

    def compile(self, gm, example_inputs, mode: str | None, on_inductor=None):
        """backend="inductor" with ``mode``, its inner compile and partitioner recording (see aot.py).
        ``on_inductor()`` is called as each inner compile starts (progress)."""
        import torch._inductor.compile_fx as compile_fx

        patches = dict(torch._inductor.list_mode_options(mode)) if mode else {}
        inner = self.aot.recording_compiler(self._tagged(compile_fx.compile_fx_inner, on_inductor))
        with self.ctx.guard("aot.partition"):
            original = compile_fx.min_cut_rematerialization_partition
            if not getattr(original, "_pt2scope", False):
                wrapped = self.aot.recording_partition(original)
                wrapped._pt2scope = True
                compile_fx.min_cut_rematerialization_partition = wrapped
        return compile_fx.compile_fx(gm, example_inputs, inner_compile=inner, config_patches=patches)

    def _tagged(self, inner_compile, on_inductor):
        def wrapper(gm, example_inputs, *args, **kwargs):
            if on_inductor:
                on_inductor()
            kind = "backward" if kwargs.get("is_backward") else "inference" if kwargs.get("is_inference") else "forward"
            previous = self.current_kind
            self.current_kind = kind
            self.ctx.tap.tags["graph_kind"] = kind
            try:
                return inner_compile(gm, example_inputs, *args, **kwargs)
            finally:
                self.current_kind = previous
                self.ctx.tap.tags.pop("graph_kind", None)

        return wrapper

    def _user_lines(self, kernel: dict) -> list[dict]:
        """The user's lines behind a kernel: those of the post-grad nodes it was fused from."""
        wanted = set(kernel["source_nodes"])
        for graph in self.post_grad:
            if (
                compile_key(graph["compile_id"]) == compile_key(kernel["compile_id"])
                and graph["kind"] == kernel["graph_kind"]
            ):
                return _user_lines_of([n for n in graph["nodes"] if n["name"] in wanted])
        return []

    def record_post_grad(self, graph: torch.fx.Graph) -> None:
        if not self.ctx.recording:
            return
        data = serialize_graph(
            graph, self.ctx.user_file, compile_id=current_compile_id(), kind=self.current_kind or "inference"
        )
        data["ops"] = op_histogram(data["nodes"])
        self.post_grad.append(data)
        with self.ctx.guard("inductor.kernel_flops"):
            flops = node_flops(graph)
            key = (compile_key(data["compile_id"]), data["kind"])
            self.flops.update({(*key, name): counted for name, counted in flops.items()})
            self.dtypes.update(
                {(*key, n["name"]): n.get("dtype") for n in data["nodes"] if isinstance(n.get("dtype"), str)}
            )

    def _scheduler_entry(self):
        compile_id = current_compile_id()
        key = (compile_key(compile_id), self.current_kind or "inference")
        return self.scheduler.setdefault(key, {"compile_id": compile_id, "nodes": {}, "groups": []})

    def _record_pre_fusion(self, nodes):
        if self.ctx.recording:
            entry = self._scheduler_entry()
            for node in nodes:
                origins = getattr(getattr(node, "node", None), "origins", None) or []
                writes = [o.get_name() for o in node.get_outputs()] if hasattr(node, "get_outputs") else []
                entry["nodes"][node.get_name()] = {
                    "type": type(node).__name__,
                    "writes": writes,
                    "origins": sorted(o.name for o in origins),
                }
        return nodes

    def _record_post_fusion(self, nodes):
        if self.ctx.recording:
            entry = self._scheduler_entry()
            entry["groups"] = [{"name": n.get_name(), "members": [m.get_name() for m in n.get_nodes()]} for n in nodes]
        return nodes

    def collect(self, report: dict) -> None:
        from torch._inductor import metrics

        tap = self.ctx.tap
        section = report[self.section]
        outputs = logtap.read(tap, "inductor.output_code")
        section["output_code"] = [
            {"compile_id": o["compile_id"], "kind": o["kind"], "code": o["code"]} for o in outputs
        ]
        section["kernels"] = self._kernels(outputs)
        self._mark_kernels_on_post_grad_nodes(section["kernels"])
        self.binaries.attach(section["kernels"])
        section["post_grad_graphs"] = self.post_grad
        section.update(logtap.read(tap, "inductor.ir"))
        section["fusion_decisions"] = logtap.read(tap, "inductor.fusion", scheduler=self.scheduler)
        section["scheduler"] = [{"kind": kind, **entry} for (_, kind), entry in self.scheduler.items()]
        section["metrics"] = {
            "kernel_count": len(section["kernels"]),
            "generated_kernel_count": getattr(metrics, "generated_kernel_count", None),
            "num_bytes_accessed": getattr(metrics, "num_bytes_accessed", None),
        }
        section["library_calls"] = [call for o in outputs for call in library_calls(o)]
        section["perf_hints"] = logtap.read(tap, "inductor.perf_hints")
        if not outputs:
            self.ctx.mark_unavailable("inductor.output_code", "no inductor_output_code event in the trace")

    def _kernels(self, outputs: list[dict]) -> list[dict]:
        """The output codes' kernels, each with its bytes (Inductor's count, else an estimate from buffer sizes),
        the post-grad nodes it was fused from, their ATen ops and the user's lines behind them."""
        kernels = [k for o in outputs for k in parse_kernels(o, self.ctx.user_file)]
        input_dtypes = {
            (compile_key(g["compile_id"]), g["kind"], n["name"]): n.get("dtype")
            for g in self.post_grad
            for n in g["nodes"]
            if n["op"] == "placeholder"
        }
        for output in outputs:
            estimate_kernel_bytes(
                [k for k in kernels if k["compile_id"] == output["compile_id"] and k["graph_kind"] == output["kind"]],
                output,
                input_dtypes,
            )
        node_names = {
            (compile_key(g["compile_id"]), g["kind"]): {n["name"] for n in g["nodes"]} for g in self.post_grad
        }
        for kernel in kernels:
            key = (compile_key(kernel["compile_id"]), kernel["graph_kind"])
            sched = self.scheduler.get(key, {"nodes": {}})
            tie_to_post_grad_nodes(kernel, node_names.get(key, set()), sched["nodes"])
        targets = {
            (compile_key(g["compile_id"]), g["kind"], n["name"]): n["target"]
            for g in self.post_grad
            for n in g["nodes"]
        }
        for kernel in kernels:
            if not kernel["aten_ops"]:
                ops = (
                    targets.get((compile_key(kernel["compile_id"]), kernel["graph_kind"], n))
                    for n in kernel["source_nodes"]
                )
                kernel["aten_ops"] = list(dict.fromkeys(short_op(t) for t in ops if t))
            if not kernel["source_lines"]:
                kernel["source_lines"] = self._user_lines(kernel)
            self._count_flops(kernel)
        return kernels

    def _count_flops(self, kernel: dict) -> None:
        """The kernel's ``flops`` and ``flops_source`` from its post-grad nodes' counts (``node_flops``)."""
        key = (compile_key(kernel["compile_id"]), kernel["graph_kind"])
        floats = [self.dtypes.get((*key, n)) for n in kernel["source_nodes"]]
        floats = [d for d in floats if d and d.startswith(("float", "bfloat"))]
        kernel["compute_dtype"] = max(floats, key=lambda d: _FLOAT_BITS.get(d, 8), default=None)
        counted = [self.flops[(*key, n)] for n in kernel["source_nodes"] if (*key, n) in self.flops]
        if not computes_library_ops(kernel):
            counted = [c._replace(flops=0) if c.how == "formula" else c for c in counted]
        if not counted or any(c.flops is None for c in counted):
            return
        kernel["flops"] = sum(c.flops for c in counted)
        ways = {c.how for c in counted if c.flops}
        kernel["flops_source"] = (
            "formula and estimate" if len(ways) == 2 else next(iter(ways), "estimate: one per element")
        )

    def _mark_kernels_on_post_grad_nodes(self, kernels: list[dict]) -> None:
        """Each post-grad node's ``marks.kernel``: the kernel it was fused into (None if none)."""
        kernel_of = {
            (compile_key(k["compile_id"]), k["graph_kind"], n): k["name"] for k in kernels for n in k["source_nodes"]
        }
        for graph in self.post_grad:
            for node in graph["nodes"]:
                kernel = kernel_of.get((compile_key(graph["compile_id"]), graph["kind"], node["name"]))
                node["marks"] = {"kernel": kernel}


# Reductions count one operation per element they read; other ops with the pointwise tag one per element they
# write; ops without either (views, copies, indexing) none.
_REDUCTIONS = frozenset(
    "sum mean prod amax amin max min var var_mean std std_mean argmax argmin logsumexp _softmax _log_softmax "
    "cumsum cumprod norm linalg_vector_norm".split()
)


_FLOAT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


class NodeFlops(NamedTuple):
    flops: int | None
    how: str  # "formula" or "estimate: one per element"


def node_flops(graph: torch.fx.Graph) -> dict[str, NodeFlops]:
    """For each call of a post-grad graph, its floating-point operations: torch's formula
    (torch.utils.flop_counter's registry: matmuls, convolutions, attention) where it has one, else one per element
    (see _REDUCTIONS); None where a size is symbolic."""
    from torch.utils.flop_counter import flop_registry

    counts = {}
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        packet = getattr(node.target, "overloadpacket", None)
        out = node.meta.get("val")
        try:
            if packet in flop_registry:
                args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get("val"))
                counts[node.name] = NodeFlops(_plain(flop_registry[packet](*args, **kwargs, out_val=out)), "formula")
                continue
        except (TypeError, ValueError, RuntimeError, AttributeError):  # a formula that does not take this call
            pass
        if getattr(packet, "__name__", "") in _REDUCTIONS:
            read = [n.meta.get("val") for n in node.all_input_nodes]
            sizes = [_plain(v.numel()) for v in read if isinstance(v, torch.Tensor)]
            elements = None if None in sizes else max(sizes, default=0)
        elif torch.Tag.pointwise in getattr(node.target, "tags", ()) and isinstance(out, torch.Tensor):
            elements = _plain(out.numel())
        else:
            continue
        counts[node.name] = NodeFlops(elements, "estimate: one per element")
    return counts


def computes_library_ops(kernel: dict) -> bool:
    """Whether the kernel itself computes the matmuls and convolutions among its nodes: a template (a Triton
    template, `@triton_heuristics.template`, or the C++ GEMM template with its micro-kernel). Any other kernel
    whose nodes name one holds only its epilogue (a convolution's bias and activation, counted by their own nodes)
    or a layout copy of its operands, while the op itself runs in a library call (cuDNN, cuBLAS, MKL): such a node
    counts no FLOPs there. Its formula put a conv net's pointwise kernels at 12,000-72,000 FLOP/byte, and one per
    element of the conv's output put its weight's layout copy at 19 (H100, 7 December); both read compute-bound.
    A bias that Inductor adds in the epilogue has no node of its own: one FLOP per element left uncounted."""
    source = kernel.get("source") or ""
    return "@triton_heuristics.template" in source or "micro_gemm" in source


def _plain(value) -> int | None:
    """``value`` if it is a plain int; None for a symbolic size (turning it into an int would add a guard)."""
    return value if type(value) is int else None


def _user_lines_of(nodes: list[dict]) -> list[dict]:
    lines = {}
    for n in nodes:
        if n.get("line"):
            lines.setdefault(n["line"], {"file": n["file"], "line": n["line"], "code": n["code"]})
    return [lines[k] for k in sorted(lines)]


def _hook(fn, name: str, user_pass=None):
    """A recording pass for an Inductor config slot. It must be a CustomGraphPass (post-grad passes take part in
    cache keys), and Inductor deep-copies config snapshots: every copy must call the one collector. ``user_pass``:
    what the user's file put in the slot; it runs first (it is part of the compile being recorded)."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class RecordingPass(CustomGraphPass):
        def __call__(self, arg):
            if user_pass is not None:
                changed = user_pass(arg)
                arg = arg if changed is None else changed
            result = fn(arg)
            return arg if result is None else result

        def uuid(self):
            if user_pass is None:
                return f"pt2scope-{name}"
            uuid = getattr(user_pass, "uuid", None)
            return f"pt2scope-{name}-{uuid() if callable(uuid) else id(user_pass)}"

        def __deepcopy__(self, memo):
            return self

    return RecordingPass()


logtap.declare(
    "inductor.output_code",
    trace=(
        "inductor_output_code",
        "artifact:inductor_provenance_tracking_node_mappings",
        "artifact:inductor_provenance_tracking_kernel_stack_traces",
    ),
    read=lambda log: group_output_code(log.trace),
)
logtap.declare(
    "inductor.ir",
    logs=("ir_pre_fusion", "ir_post_fusion"),
    read=lambda log: {
        name: [
            {"compile_id": a["compile_id"], "kind": a.get("graph_kind"), "text": a["text"]}
            for a in log.artifact_texts(name)
        ]
        for name in ("ir_pre_fusion", "ir_post_fusion")
    },
)
logtap.declare(
    "inductor.fusion",
    logs=("fusion",),
    read=lambda log, scheduler: parse_fusion_log(log.artifact_texts("fusion"), scheduler),
)
logtap.declare(
    "inductor.perf_hints", logs=("perf_hints",), read=lambda log: [a["text"] for a in log.artifact_texts("perf_hints")]
)
