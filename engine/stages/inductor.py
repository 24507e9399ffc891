"""TorchInductor: post-grad graphs, IR before/after fusion, fusion decisions, generated kernels, output code.

Sources: ``compile`` runs compile_fx with a recording inner compile (AOTAutograd's graphs, see aot.py); a
post-grad custom pass records the post-grad graph as data; pre/post-fusion passes record scheduler nodes and
fused groups; TORCH_LOGS artifacts give the IR text and fusion log; the structured trace gives the output code.
Kernel -> post-grad nodes comes from Triton's source-node comments, else from the buffers a kernel writes and the
scheduler nodes that write them; nodes -> user lines from the post-grad graph. Graph caches are off during the
recorded compile, so none of this is hidden by a cache hit (kernel binaries may still be reused).
"""

from __future__ import annotations

import re

import torch

from contract.compile_id import compile_key
from engine import logtap, tritonir
from engine.autotune import AutotuneRecorder, launched_kernels
from engine.fxgraph import op_histogram, serialize_graph, short_op, user_frames
from engine.logtap import current_compile_id
from engine.stages.base import Collector

_KERNEL_DEF = re.compile(
    r"^(?P<name>\w+) = async_compile\.(?P<kind>triton|cpp_pybinding|cpp|cuda|halide)\((?P<head>[^\n]*?)"
    r"r?'''(?P<source>.*?)'''",
    re.S | re.M,
)
_SOURCE_NODES = re.compile(
    r"# Topologically Sorted Source Nodes: \[(?P<nodes>[^\]]*)\], Original ATen: "
    r"\[(?P<aten>[^\]]*)\]"
)
_AOT_ID = re.compile(r"# AOT ID: \['\d+_(?P<kind>\w+)'\]")
_FUSING = re.compile(r"^fusing (?P<a>\S+) with (?P<b>\S+)$")
_NOT_FUSING = re.compile(r"^cannot fuse (?P<a>\S+) with (?P<b>\S+): (?P<reason>.+)$")
_NUM_GB = re.compile(r"'kernel_num_gb': (?P<gb>[0-9.e-]+)")
# Buffer sizes in the wrapper: "buf0 = empty_strided_cpu((1024, 1024), (1024, 1), torch.float32)" and the graph
# inputs' "assert_size_stride(arg0_1, (1024, 1024), (1024, 1))" (dtype from the post-grad graph's placeholders).
_BUFFER = re.compile(
    r"^\s*(?P<name>\w+) = empty_strided\w*\(\((?P<size>[^)]*)\), \([^)]*\), torch\.(?P<dtype>\w+)", re.M
)
_INPUT_SIZE = re.compile(r"assert_size_stride\((?P<name>\w+), \((?P<size>[^)]*)\)")
_ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
}
# A kernel's parameters (Triton "def k(in_ptr0, out_ptr0, ...)", C++ "kernel(const float* in_ptr0, ...)"):
# Inductor names the buffers a kernel writes out_ptrN / in_out_ptrN.
_PARAMS = re.compile(r"(?:def \w+|void\s+kernel)\((?P<params>[^)]*)\)")
_LANGUAGE = {"triton": "triton", "cpp_pybinding": "cpp", "cpp": "cpp", "cuda": "cuda", "halide": "halide"}


class InductorCollector(Collector):
    section = "inductor"

    def __init__(self, ctx, aot):
        super().__init__(ctx)
        self.aot = aot
        self.current_kind = None
        self.post_grad: list[dict] = []
        # (compile key, kind) -> {"compile_id", "nodes": {op: info}, "groups": [...]}
        self.scheduler: dict[tuple, dict] = {}
        self.node_flops: dict[tuple, int] = {}  # (compile key, kind, node) -> FLOPs (engine.flops)
        # Every rung's autotuning (the ladder names the rung: ctx.autotune.config); its ops list is the report's.
        self.autotune = ctx.autotune = AutotuneRecorder(ctx)

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
        with self.ctx.guard("inductor.post_grad_graph"):
            inductor_config.post_grad_custom_post_pass = _hook(self.record_post_grad, "post-grad")
        with self.ctx.guard("inductor.scheduler_nodes"):
            inductor_config._pre_fusion_custom_pass = _hook(self._record_pre_fusion, "pre-fusion")
            inductor_config._post_fusion_custom_pass = _hook(self._record_post_fusion, "post-fusion")
        metrics.reset()
        self.autotune.install()

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
        with self.ctx.guard("inductor.flop_counter"):
            from engine.flops import node_flops

            key = (compile_key(data["compile_id"]), data["kind"])
            for name, flops in node_flops(graph).items():
                self.node_flops[(*key, name)] = flops

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
        section["kernels"] = [k for o in outputs for k in parse_kernels(o, self.ctx.user_file)]
        input_dtypes = {
            (compile_key(g["compile_id"]), g["kind"], n["name"]): n.get("dtype")
            for g in self.post_grad
            for n in g["nodes"]
            if n["op"] == "placeholder"
        }
        for output in outputs:
            estimate_kernel_bytes(
                [
                    k
                    for k in section["kernels"]
                    if k["compile_id"] == output["compile_id"] and k["graph_kind"] == output["kind"]
                ],
                output,
                input_dtypes,
            )
        node_names = {
            (compile_key(g["compile_id"]), g["kind"]): {n["name"] for n in g["nodes"]} for g in self.post_grad
        }
        for kernel in section["kernels"]:
            key = (compile_key(kernel["compile_id"]), kernel["graph_kind"])
            sched = self.scheduler.get(key, {"nodes": {}})
            tie_to_post_grad_nodes(kernel, node_names.get(key, set()), sched["nodes"])
        targets = {
            (compile_key(g["compile_id"]), g["kind"], n["name"]): n["target"]
            for g in self.post_grad
            for n in g["nodes"]
        }
        for kernel in section["kernels"]:
            if not kernel["aten_ops"]:
                ops = (
                    targets.get((compile_key(kernel["compile_id"]), kernel["graph_kind"], n))
                    for n in kernel["source_nodes"]
                )
                kernel["aten_ops"] = list(dict.fromkeys(short_op(t) for t in ops if t))
            if not kernel["source_lines"]:
                kernel["source_lines"] = self._user_lines(kernel)
        kernel_of = {
            (compile_key(k["compile_id"]), k["graph_kind"], n): k["name"]
            for k in section["kernels"]
            for n in k["source_nodes"]
        }
        for graph in self.post_grad:
            for node in graph["nodes"]:
                kernel = kernel_of.get((compile_key(graph["compile_id"]), graph["kind"], node["name"]))
                node["marks"] = {"kernel": kernel}
        for kernel in section["kernels"]:
            key = (compile_key(kernel["compile_id"]), kernel["graph_kind"])
            kernel["flops"] = sum(self.node_flops.get((*key, n), 0) for n in kernel["source_nodes"])
        self.collect_triton_ir(section)
        section["autotune"] = self.autotune.ops  # the same list: the ladder's rungs add theirs to it
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

    def collect_triton_ir(self, section: dict) -> None:
        """Every IR stage of each Triton kernel (engine/tritonir.py), the launched variant where its launcher says."""
        if not any(k["language"] == "triton" for k in section["kernels"]):
            return
        launched = []
        with self.ctx.guard("inductor.triton_launchers"):
            launched = launched_kernels()
        with self.ctx.guard("inductor.triton_ir"):
            section["triton_ir"] = tritonir.collect(section["kernels"], tritonir.default_cache_dir(), launched)


def _user_lines_of(nodes: list[dict]) -> list[dict]:
    lines = {}
    for n in nodes:
        if n.get("line"):
            lines.setdefault(n["line"], {"file": n["file"], "line": n["line"], "code": n["code"]})
    return [lines[k] for k in sorted(lines)]


def _hook(fn, name: str):
    """A recording pass for an Inductor config slot. It must be a CustomGraphPass (post-grad passes take part in
    cache keys), and Inductor deep-copies config snapshots: every copy must call the one collector."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class RecordingPass(CustomGraphPass):
        def __call__(self, arg):
            result = fn(arg)
            return arg if result is None else result

        def uuid(self):
            return f"pt2scope-{name}"

        def __deepcopy__(self, memo):
            return self

    return RecordingPass()


def group_output_code(trace: list[dict]) -> list[dict]:
    """Each inductor_output_code event with the provenance events that follow it (same inner compile)."""
    outputs = []
    for event in trace:
        if event["event"] == "inductor_output_code" and event["payload"]:
            kind = _AOT_ID.search(event["payload"])
            outputs.append(
                {
                    "compile_id": event["compile_id"],
                    "kind": kind["kind"] if kind else "inference",
                    "code": event["payload"],
                    "node_mappings": {},
                    "stack_traces": {},
                }
            )
        elif event["event"].startswith("artifact:inductor_provenance_tracking") and outputs and event["payload"]:
            data = event.get("data")  # decoded by the log tap, which counts a payload that is not JSON
            if not isinstance(data, dict):
                continue
            key = "node_mappings" if event["event"].endswith("node_mappings") else "stack_traces"
            outputs[-1][key] = data
    return outputs


# A call to a library kernel from the output code's call(): "extern_kernels.mm(", "torch.ops.aten.sort.default(".
_LIBRARY_CALL = re.compile(
    r"^\s*(?:[\w, ]+= )?(?P<name>extern_kernels\.\w+|torch\.ops\.aten\.\w+(?:\.\w+)?|"
    r"aten\.\w+(?:\.\w+)?)\(",
    re.M,
)


def kernel_count(code: str) -> int:
    """Kernels an output code defines (generated by Inductor)."""
    return sum(1 for _ in _KERNEL_DEF.finditer(code))


def library_calls(output: dict) -> list[dict]:
    """Calls of one output code to library kernels (extern mm/addmm, ATen fallbacks) rather than generated ones:
    [{compile_id, graph_kind, name, count}]. Kernel sources (inside triple quotes) and comments are skipped."""
    code = _KERNEL_DEF.sub("", output["code"])
    counts: dict[str, int] = {}
    for match in _LIBRARY_CALL.finditer(code):
        name = match["name"].removeprefix("torch.ops.")
        counts[name] = counts.get(name, 0) + 1
    return [
        {"compile_id": output["compile_id"], "graph_kind": output["kind"], "name": name, "count": count}
        for name, count in sorted(counts.items())
    ]


def parse_kernels(output: dict, user_file: str) -> list[dict]:
    code = output["code"]
    to_post = {k.split(":")[0]: v for k, v in output["node_mappings"].get("cppCodeToPost", {}).items()}
    traces = {k.split(":")[0]: v for k, v in output["stack_traces"].items()}
    kernels = []
    for match in _KERNEL_DEF.finditer(code):
        name, source = match["name"], match["source"]
        comment = _SOURCE_NODES.search(code, max(0, match.start() - 4000), match.start())
        if comment:
            source_nodes = [n.strip() for n in comment["nodes"].split(",") if n.strip()]
            aten_ops = [a.strip() for a in comment["aten"].split(",") if a.strip()]
        else:
            source_nodes, aten_ops = to_post.get(name, []), []
        lines = {}
        for trace in traces.get(name, []):
            for frame in user_frames(trace, user_file):
                lines[frame["line"]] = frame
        gb = _NUM_GB.search(source)
        calls = re.search(rf"^\s*{name}(?:\.run)?\((?P<args>[^)]*)\)", code, re.M)
        call_args = [a.strip() for a in calls["args"].split(",")] if calls else []
        params = _PARAMS.search(source)
        param_names = [p.split()[-1].strip("*&") for p in params["params"].split(",") if p.strip()] if params else []
        kernels.append(
            {
                "name": name,
                "language": _LANGUAGE[match["kind"]],
                "compile_id": output["compile_id"],
                "graph_kind": output["kind"],
                "source": source.strip("\n"),
                "source_nodes": source_nodes,
                "aten_ops": aten_ops,
                "source_lines": [lines[k] for k in sorted(lines)],
                "bytes_accessed": int(float(gb["gb"]) * 1e9) if gb else None,
                "bytes_source": "inductor" if gb else None,
                "args": call_args,
                "provenance": "source-node comment"
                if comment
                else ("provenance tracking" if name in to_post else None),
                # Buffers the kernel writes (non-const pointer arguments at its call site), for the fallback below.
                "writes": [a for a, p in zip(call_args, param_names) if p.startswith(("out_ptr", "in_out_ptr"))],
            }
        )
    return kernels


def parse_fusion_log(records: list[dict], scheduler: dict) -> list[dict]:
    """Fusion log lines -> [{action: fused|not_fused, first, second, reason, first_ops, second_ops, count}]."""
    decisions: dict[tuple, dict] = {}
    for record in records:
        key_sched = scheduler.get(
            (compile_key(record["compile_id"]), record.get("graph_kind") or "inference"), {"nodes": {}}
        )
        for line in record["text"].splitlines():
            line = line.strip()
            fused, not_fused = _FUSING.match(line), _NOT_FUSING.match(line)
            match = fused or not_fused
            if not match:
                continue
            action = "fused" if fused else "not_fused"
            reason = None if fused else not_fused["reason"]
            key = (record["compile_id"], record.get("graph_kind"), action, match["a"], match["b"], reason)
            if key in decisions:
                decisions[key]["count"] += 1
                continue
            decisions[key] = {
                "compile_id": record["compile_id"],
                "kind": record.get("graph_kind"),
                "action": action,
                "first": match["a"],
                "second": match["b"],
                "reason": reason,
                "count": 1,
                "first_ops": _origins(match["a"], key_sched["nodes"]),
                "second_ops": _origins(match["b"], key_sched["nodes"]),
            }
    return list(decisions.values())


def _origins(fused_name: str, nodes: dict) -> list[str]:
    """ "op0_op1" -> the post-grad nodes behind op0 and op1."""
    out = []
    for part in re.findall(r"op\d+", fused_name):
        out.extend(o for o in nodes.get(part, {}).get("origins", []) if o not in out)
    return out


def tie_to_post_grad_nodes(kernel: dict, graph_node_names: set[str], scheduler_nodes: dict) -> None:
    """Set the kernel's ``source_nodes`` to post-grad nodes of its graph. Triton's source-node comment usually names
    them, but not always: on torch 2.11 (H200), after a graph break, a kernel of ``x / scale`` was commented
    ``[truediv]`` (Dynamo's name) while its post-grad node is ``div``, and one of ``relu(x) * 2`` ``[relu, y]``
    for post-grad ``relu, mul``. Where the comment names a node that is not in the graph (or there is no comment:
    CPU kernels, some reductions), the nodes that write the kernel's buffers complete it."""
    named = [name for name in kernel["source_nodes"] if name in graph_node_names]
    if kernel["source_nodes"] and len(named) == len(kernel["source_nodes"]):
        return
    from_writes = nodes_from_buffer_writes(kernel, scheduler_nodes)
    if not from_writes:
        return  # nothing better: keep the comment's names (they still say what the kernel computes)
    kernel["source_nodes"] = named + [name for name in from_writes if name not in named]
    kernel["provenance"] = "buffer writes"


def nodes_from_buffer_writes(kernel: dict, scheduler_nodes: dict) -> list[str]:
    """Post-grad nodes behind a kernel, from the buffers it writes and the scheduler nodes that write them."""
    out = []
    for info in scheduler_nodes.values():
        if set(info.get("writes", [])) & set(kernel.get("writes", [])):
            out.extend(o for o in info["origins"] if o not in out)
    return out


def estimate_kernel_bytes(kernels: list[dict], output: dict, input_dtypes: dict) -> None:
    """Where Inductor gave no kernel_num_gb (CPU kernels, Triton without the benchmark harness): the sum of the
    sizes of the buffers a kernel is passed, each counted once (``bytes_source`` says it is an estimate). Kernels
    with a symbolic size among their buffers keep None."""
    code = output["code"]
    sizes = {}
    for m in _BUFFER.finditer(code):
        sizes[m["name"]] = (m["size"], m["dtype"])
    for m in _INPUT_SIZE.finditer(code):
        dtype = input_dtypes.get((compile_key(output["compile_id"]), output["kind"], m["name"]))
        if dtype:
            sizes.setdefault(m["name"], (m["size"], dtype))
    for kernel in kernels:
        args = kernel.pop("args", [])
        if kernel["bytes_accessed"] is not None:
            continue
        total, known = 0, 0
        for arg in dict.fromkeys(args):
            if arg not in sizes:
                continue
            size, dtype = sizes[arg]
            dims = [d.strip() for d in size.split(",") if d.strip()]
            if not all(d.isdigit() for d in dims) or dtype not in _ITEMSIZE:
                kernel["bytes_accessed"] = None
                known = 0
                break
            numel = 1
            for d in dims:
                numel *= int(d)
            total += numel * _ITEMSIZE[dtype]
            known += 1
        if known:
            kernel["bytes_accessed"], kernel["bytes_source"] = total, "estimate: buffer sizes"


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
