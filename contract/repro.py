"""A standalone repro.py for one recorded graph (a Dynamo graph, an AOT joint/forward/backward graph, a post-grad
graph): the graph's own printed code as a module, random inputs of the recorded shapes, dtypes, strides and device,
then the graph run in eager and compiled with the run's recorded config, both outputs compared, and the graph's ops
counted the way the report counts them (so a reader can check the repro is the graph they saw). No torch here: the
web tier writes the script from the stored graph (contract.graphs.graph_payload) and the report's facts.

    graph_repro(payload, device=..., config=..., torch_version=..., symbols=..., source=...) -> (script, None)
                                                                                          or (None, why not)
"""

from __future__ import annotations

import re

# The graphs a repro is written for (by graph id): Dynamo's, AOT's, post-grad and those the user's backends
# received; functionalization's before/after views are drawings of an AOT graph, not graphs of their own.
REPRO_GRAPHS = ("dynamo-", "aot-", "postgrad-", "backend-")

# A placeholder's annotation in printed graph code: "f32[512, 256][256, 1]cpu" (Dynamo: shape, stride, device),
# "f32[512, 256]cpu" (AOT: shape, device), "Sym(s77)" (a symbolic integer).
_ANNOTATION = re.compile(
    r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\](?:\[(?P<stride>[^\]]*)\])?(?P<device>[a-z]+(?::\d+)?)?$"
)
_SYM = re.compile(r"^Sym\((?P<expr>[^)]+)\)$")
# forward's signature, on one line or (torch 2.11's AOT graphs) one parameter per line with a comment each.
_SIGNATURE = re.compile(r"def forward\(\s*self,?\s*(?P<params>.*?)\)(?:\s*->[^:]*)?:[ \t]*\n", re.S)
_PARAMETER = re.compile(r'(?P<name>\w+)\s*(?::\s*"(?P<annotation>[^"]*)")?\s*(?:,|$)')
_SHORT_DTYPES = {
    "f64": "float64",
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "u8": "uint8",
    "b8": "bool",
    "c64": "complex64",
}
# What printed graph code may hold that a module with no attributes cannot run: subgraphs and constants it reads
# from its module, higher-order ops that call them.
_NEEDS_ATTRIBUTES = re.compile(r"\bself\.\w+|torch\.ops\.higher_order\.")


def graph_repro(
    payload: dict,
    *,
    device: str,
    config: dict | None,
    torch_version: str | None,
    symbols: dict[str, int] | None = None,
    source: str = "",
) -> tuple[str | None, str | None]:
    """(repro.py text, None), or (None, why this graph cannot be reproduced standalone). ``payload``: the viewer's
    graph (code and node columns); ``config``: {name, backend, mode} of the run's recorded config; ``symbols``:
    symbol -> value for graphs compiled with dynamic shapes (the value in the call that created each symbol)."""
    code = (payload.get("code") or "").strip("\n")
    if not code:
        return None, "the report holds no code for this graph"
    module_code, class_name = _module_code(code)
    if module_code is None:
        return None, "the graph's code is neither a module nor a forward function"
    signature = _SIGNATURE.search(module_code)
    if signature is None:
        return None, "the graph's code has no forward(self, ...)"
    if _NEEDS_ATTRIBUTES.search(re.sub(r"#.*", "", module_code[signature.end() :])):  # code, not its comments
        return None, (
            "this graph reads constants or subgraphs from its module (self.<name>, higher-order ops), which the "
            "report does not hold"
        )
    inputs, why = _inputs(code, payload, device, symbols or {})
    if inputs is None:
        return None, why
    return _SCRIPT.format(
        title=payload.get("title") or payload.get("id") or "graph",
        source=source,
        torch_version=torch_version or "unknown",
        module_code=module_code,
        class_name=class_name,
        inputs="\n".join(f"        {line}" for line in inputs),
        backend=(config or {}).get("backend") or "inductor",
        mode=repr((config or {}).get("mode")),
        config=(config or {}).get("name") or "inductor_default",
        ops=repr(_recorded_ops(payload)),
    ), None


def _module_code(code: str) -> tuple[str | None, str]:
    """The graph's code as a module class named Repro: a printed module ("class GraphModule(torch.nn.Module):",
    "class inner_f(...)", "class <lambda>(...)") renamed, a bare ``def forward(self, ...)`` (GraphModule.code)
    wrapped in one."""
    match = re.match(r"class (\S+)\(torch\.nn\.Module\):", code)
    if match:  # torch names some "<lambda>": the repro's class is Repro
        return "class Repro(torch.nn.Module):" + code[match.end() :], "Repro"
    if re.match(r"def forward\(\s*self", code):
        indented = "\n".join(("    " + line) if line.strip() else "" for line in code.splitlines())
        return "class Repro(torch.nn.Module):\n" + indented, "Repro"
    return None, ""


def _placeholders(code: str) -> list[tuple[str, str | None]]:
    """(name, annotation) of forward's parameters after self, in order."""
    match = _SIGNATURE.search(code)
    if not match:
        return []
    params = re.sub(r"#[^\n]*", "", match["params"]).strip()  # "# PlainAOTInput(idx=0)" after a parameter
    return [(m["name"], m["annotation"]) for m in _PARAMETER.finditer(params) if m["name"]]


def _inputs(code: str, payload: dict, device: str, symbols: dict[str, int]) -> tuple[list[str] | None, str | None]:
    """One expression per forward parameter that makes a random input like the recorded one."""
    columns = payload.get("columns") or {}

    def column(key: str) -> list:
        values = (columns.get(key) or {}).get("values") or []
        return [values[i] for i in (columns.get(key) or {}).get("index") or []]

    ops, names, shapes, dtypes = column("op"), payload.get("names") or [], column("shape"), column("dtype")
    recorded = {n: (s, d) for n, o, s, d in zip(names, ops, shapes, dtypes) if o == "placeholder"}
    lines = []
    for name, annotation in _placeholders(code):
        line, why = _input(name, annotation, recorded.get(name), device, symbols)
        if line is None:
            return None, why
        lines.append(line)
    if not lines and recorded:
        return None, "the graph's code names no inputs to match its placeholders"
    return lines, None


def _input(name: str, annotation: str | None, recorded, device: str, symbols: dict[str, int]):
    sym = _SYM.match(annotation or "")
    if sym:
        value = _concrete(sym["expr"], symbols)
        return (f"{value},  # {name}: {annotation}", None) if value is not None else (None, _unknown(sym["expr"]))
    match = _ANNOTATION.match(annotation or "")
    if match:
        dtype = _SHORT_DTYPES.get(match["dtype"])
        dims = [d.strip() for d in match["shape"].split(",") if d.strip()]
        strides = [d.strip() for d in (match["stride"] or "").split(",") if d.strip()]
        where = match["device"] or device
    elif recorded and isinstance(recorded[0], list) and isinstance(recorded[1], str):
        dtype, dims, strides, where = recorded[1], [str(d) for d in recorded[0]], [], device
    else:
        return None, f"the input {name} is not a tensor of a recorded shape (annotation {annotation!r})"
    if dtype is None:
        return None, f"the input {name} has a dtype this repro cannot make ({match['dtype'] if match else '?'})"
    shape = [_concrete(d, symbols) for d in dims]
    stride = [_concrete(d, symbols) for d in strides]
    unknown = next((d for d, v in zip(dims + strides, shape + stride) if v is None), None)
    if unknown is not None:
        return None, _unknown(unknown)
    return f"tensor({shape}, {stride or None}, torch.{dtype}, {where!r}),  # {name}", None


def _concrete(expr: str, symbols: dict[str, int]) -> int | None:
    if re.fullmatch(r"\d+", expr):
        return int(expr)
    if expr in symbols:
        return int(symbols[expr])
    return None


def _unknown(expr: str) -> str:
    return f"the size {expr} is symbolic and the report records no value for it"


def _recorded_ops(payload: dict) -> dict:
    columns = payload.get("columns") or {}
    ops = [(columns.get("op") or {}).get("values", [])[i] for i in (columns.get("op") or {}).get("index", [])]
    targets = [
        (columns.get("target") or {}).get("values", [])[i] for i in (columns.get("target") or {}).get("index", [])
    ]
    counts: dict[str, int] = {}
    for op, target in zip(ops, targets):
        if op == "call_function" and target != "_operator.getitem":
            key = _short_op(str(target))
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _short_op(target: str) -> str:
    """As engine/readers/nodes.py's short_op: "aten.sin.default" -> "aten.sin" (the repro carries its own copy)."""
    parts = target.split(".")
    return ".".join(parts[:2]) if parts[0] in ("aten", "prims", "quantized", "inductor") and len(parts) >= 3 else target


_SCRIPT = '''"""Repro of {title}, from pt2scope ({source}; torch {torch_version}).

    python repro.py                      # eager, then compiled as the run was ({config}); ops and outputs compared
    python repro.py --backend aot_eager  # another backend (eager, aot_eager, inductor) or --mode

The graph is its printed code; inputs are random, of the recorded shapes, dtypes, strides and device. With another
torch than {torch_version}, the ops may differ."""

import argparse
import ast
import inspect
import json
from math import inf, nan  # noqa: F401 - printed graph code names them

import torch
from torch import device  # noqa: F401 - printed graph code names devices

RECORDED_OPS = {ops}


{module_code}


def tensor(shape, stride, dtype, where):
    """A random tensor of the recorded shape, dtype, strides and device."""
    if dtype.is_floating_point or dtype.is_complex:
        values = torch.randn(shape, dtype=dtype, device=where)
    elif dtype == torch.bool:
        values = torch.rand(shape, device=where) > 0.5
    else:
        values = torch.randint(0, 2, shape, dtype=dtype, device=where)
    if stride is None:
        return values
    out = torch.empty_strided(shape, stride, dtype=dtype, device=where)
    return out.copy_(values)


def inputs():
    torch.manual_seed(0)
    return [
{inputs}
    ]


# Python operators as FX prints its call_function nodes of _operator (h = a * b, n = -x, c = a < b).
OPERATORS = {{
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv", ast.Mod: "mod",
    ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and_", ast.BitOr: "or_", ast.BitXor: "xor",
    ast.LShift: "lshift", ast.RShift: "rshift", ast.USub: "neg", ast.Invert: "invert", ast.Not: "not_",
    ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne",
}}
MODULES = ("torch", "operator", "_operator", "math", "builtins")


def op_counts(source):
    """The graph's ops as pt2scope counts them (each statement of forward that calls a function, not a tensor's
    method; getitem left out), read from its code: every node of a printed graph is one statement."""
    forward = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == "forward")
    counts = {{}}
    for statement in forward.body:
        value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
        name = None
        if isinstance(value, ast.Call):
            name = ast.unparse(value.func)
            root = name.split(".")[0]
            if isinstance(value.func, ast.Name):
                name = "builtins." + name
            elif root not in MODULES:
                continue  # a method of a tensor (call_method), which pt2scope does not count as an op
            name = name.removeprefix("torch.ops.").replace("operator.", "_operator.", 1) if not name.startswith(
                "_operator.") else name
        elif isinstance(value, (ast.BinOp, ast.UnaryOp)):
            name = "_operator." + OPERATORS.get(type(value.op), "?")
        elif isinstance(value, ast.Compare) and len(value.ops) == 1:
            name = "_operator." + OPERATORS.get(type(value.ops[0]), "?")
        if name is None or name in ("_operator.getitem", "builtins.getitem"):
            continue
        parts = name.split(".")
        if parts[0] in ("aten", "prims", "quantized", "inductor") and len(parts) >= 3:
            name = ".".join(parts[:2])
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default={backend!r})
    parser.add_argument("--mode", default={mode})
    args = parser.parse_args()
    module = {class_name}()
    ops = op_counts(inspect.getsource({class_name}))
    print("ops " + json.dumps(ops))
    print("ops match the report" if ops == RECORDED_OPS else "ops differ from the report: " + json.dumps(RECORDED_OPS))
    with torch.no_grad():
        expected = module(*inputs())
        compiled = torch.compile(module, backend=args.backend, mode=args.mode)
        actual = compiled(*inputs())
    pairs = [
        (e, a)
        for e, a in zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(actual))
        if isinstance(e, torch.Tensor) and e.is_floating_point()
    ]
    # Random inputs can make NaN (a batch norm's variance, a log): where both sides are NaN they agree. The
    # relative figure is against each output's largest magnitude (bf16 outputs of size 1e3 differ by 8 when right).
    worst = relative = 0.0
    for e, a in pairs:
        if e.numel():
            difference = torch.where(e.isnan() & a.isnan(), 0.0, (e.double() - a.double()).abs()).max().item()
            scale = e.double().abs().nan_to_num(0.0).max().item()
            worst, relative = max(worst, difference), max(relative, difference / scale if scale else 0.0)
    print(
        f"compiled with backend={{args.backend}} mode={{args.mode}}: max abs difference from eager {{worst:.3g}} "
        f"({{relative:.3g}} of the largest output)"
    )


if __name__ == "__main__":
    main()
'''


def minified_payload(minified: dict, config: str) -> dict:
    """runtime.bisect.minified as graph_repro reads a graph: its printed code, and its ops as node columns."""
    targets = [op for op, count in (minified.get("ops") or {}).items() for _ in range(count)]
    return {
        "id": "minified",
        "title": f"the smallest graph that breaks {config}",
        "code": minified.get("code") or "",
        "names": [],
        "columns": {
            "op": {"values": ["call_function"], "index": [0] * len(targets)},
            "target": {"values": targets, "index": list(range(len(targets)))},
        },
    }


# --- one kernel alone ----------------------------------------------------------------------------------------------


def kernel_repro(
    inductor: dict, index: int, *, device: str, torch_version: str | None, source: str = ""
) -> tuple[str | None, str | None]:
    """(a script that runs kernel ``index`` of the Inductor section alone and times it, None), (None, why it cannot),
    or (None, None) when there is no such kernel. The script carries the output code the kernel was generated in:
    it runs that code's own ``call(get_args())`` once to catch the kernel's arguments as the compiled graph passes
    them (buffers of the recorded sizes and strides), then launches the kernel alone on copies of them, checks it
    writes what it wrote inside the graph, and times it."""
    kernels = inductor.get("kernels") or []
    if not 0 <= index < len(kernels):
        return None, None
    kernel = kernels[index]
    name = kernel.get("name") or ""
    code = _output_code_of(inductor.get("output_code") or [], kernel)
    if code is None:
        return None, f"the report holds no output code that defines {name}"
    for needed in ("def call(", "def get_args("):
        if needed not in code:
            return None, f"its output code has no {needed.removeprefix('def ').rstrip('(')}(), which the script runs"
    return _KERNEL_SCRIPT.format(
        name=name,
        language=kernel.get("language") or "?",
        where=f"{kernel.get('graph_kind') or '?'} graph {kernel.get('compile_id') or '?'}",
        source=source,
        device=device,
        torch_version=torch_version or "unknown",
        # Inductor counts bytes per compile; with one kernel they are its bytes (as the Inductor tab reads them).
        bytes=repr(kernel.get("bytes_accessed") or (_compile_bytes(inductor) if len(kernels) == 1 else None)),
        simdlen=repr(_cpp_vector_bits(code)),
        output_code=_string_literal(code),
    ), None


def _compile_bytes(inductor: dict) -> int | None:
    return (inductor.get("metrics") or {}).get("num_bytes_accessed")


def _output_code_of(output_codes: list[dict], kernel: dict) -> str | None:
    """The output code that defines the kernel: the one of its compile and graph kind first (kernel names repeat
    across graphs: each graph's first is ..._0)."""
    defines = re.compile(rf"^{re.escape(kernel.get('name') or '')} = ", re.M)
    ranked = sorted(
        output_codes,
        key=lambda oc: (oc.get("compile_id"), oc.get("kind")) != (kernel.get("compile_id"), kernel.get("graph_kind")),
    )
    return next((oc["code"] for oc in ranked if defines.search(oc.get("code") or "")), None)


# A C++ kernel's full-width vector loads: "at::vec::Vectorized<float>::loadu(in_ptr0 + ..., static_cast<int64_t>(16))"
# (VectorizedN<float,2> loads two vectors and is left out).
_VECTOR_LOAD = re.compile(r"Vectorized<(?P<type>[\w:]+)>::loadu\([^;]*?,\s*static_cast<int64_t>\((?P<count>\d+)L?\)\)")
_ELEMENT_BITS = {
    "float": 32,
    "double": 64,
    "int32_t": 32,
    "int64_t": 64,
    "int16_t": 16,
    "int8_t": 8,
    "uint8_t": 8,
    "bool": 8,
    "c10::BFloat16": 16,
    "bfloat16": 16,
    "c10::Half": 16,
    "half": 16,
}


def _cpp_vector_bits(code: str) -> int | None:
    """The vector width (bits) Inductor wrote the output code's C++ kernels for, read from their widest full loads;
    None where no kernel is vectorized. Inductor writes C++ for the vector ISA of the machine that compiled it
    (AVX2: 8 floats a vector, AVX-512: 16) but compiles it for the machine that loads it: AVX2 code built for
    AVX-512 stores 16 floats where it loaded 8, past its buffers (seen: heap corruption)."""
    widths = [
        int(m["count"]) * _ELEMENT_BITS[m["type"]] for m in _VECTOR_LOAD.finditer(code) if m["type"] in _ELEMENT_BITS
    ]
    return max(widths, default=None)


def _string_literal(text: str) -> str:
    """``text`` as a readable Python literal: a raw triple-quoted string where it can be one, else repr."""
    if '"""' not in text and not text.endswith(("\\", '"')) and "\r" not in text:
        return 'r"""' + text + '"""'
    return repr(text)


_KERNEL_SCRIPT = '''"""Inductor's kernel {name} ({language}, {where}) alone, from pt2scope ({source}; torch {torch_version},
recorded on {device}).

    python kernel_repro.py              # check it, then time 200 launches
    python kernel_repro.py --calls 1000 --save args.pt   # and keep its arguments before and after

The output code below is what Inductor wrote for that graph (all of its kernels, and call(), which launches them in
order). The script runs call() once on the output code's own random inputs of the recorded shapes, keeping the
arguments the graph passes this kernel; then it launches the kernel alone on copies of them, checks it writes what it
wrote inside the graph, and times it. With another torch than {torch_version}, the output code may not load."""

import argparse
import statistics
import time
import types

import torch

KERNEL = "{name}"
BYTES_ACCESSED = {bytes}  # what one launch reads and writes, as the report has it (None: not recorded)
# The vector width (bits) the output code's C++ was written for (None: no vectorized C++ kernel). Inductor compiles
# it for this machine's widest ISA unless told: code for 8-float vectors built for 16 writes past its buffers.
VECTOR_BITS = {simdlen}

OUTPUT_CODE = {output_code}


def clone(value):
    """Tensors copied with their whole storage (a kernel reads through pointers: a view's offset and strides, even
    overlapping ones, keep their meaning), containers walked, anything else as it is."""
    if isinstance(value, torch.Tensor):
        copy = torch.empty(0, dtype=value.dtype, device=value.device)
        return copy.set_(value.untyped_storage().clone(), value.storage_offset(), value.size(), value.stride())
    if isinstance(value, (list, tuple)):
        return type(value)(clone(v) for v in value)
    if isinstance(value, dict):
        return {{k: clone(v) for k, v in value.items()}}
    return value


def synchronize():
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def launch(kernel, arguments):
    """A Triton kernel (CachingAutotuner) launches with .run(...); a C++ kernel is called."""
    args, kwargs = arguments
    return kernel.run(*args, **kwargs) if hasattr(kernel, "run") else kernel(*args, **kwargs)


class Recorder:
    """Stands in for the kernel during one call() of the output code: keeps the arguments of its first launch and
    what they held after it."""

    def __init__(self, kernel):
        self.kernel, self.before, self.after = kernel, None, None

    def record(self, args, kwargs):
        first = self.before is None
        if first:
            self.before = clone((args, kwargs))
        result = launch(self.kernel, (args, kwargs))
        if first:
            synchronize()
            self.after = clone((args, kwargs))
        return result

    def __call__(self, *args, **kwargs):
        return self.record(args, kwargs)

    def run(self, *args, **kwargs):
        return self.record(args, kwargs)

    def __getattr__(self, name):
        return getattr(self.kernel, name)


def tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors(v)]
    return []


def describe(t):
    return f"{{str(t.dtype).removeprefix('torch.')}}{{list(t.shape)}} {{t.device}}"


def gpu_time(kernel, arguments, launches=100):
    """On a GPU, the kernel's own time per launch from the profiler, as the run's kernel table counts it (a small
    kernel's wall time per launch is the host's launch cost, several times its time on the GPU); None on a CPU."""
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return None
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(launches):
            launch(kernel, arguments)
        synchronize()
    durations = [e.time_range.elapsed_us() for e in prof.events() if e.name.startswith(KERNEL)]
    if not durations:
        return None
    return (f"GPU time per launch (profiler): median {{statistics.median(durations):.4g}} us (range "
            f"{{min(durations):.4g}}-{{max(durations):.4g}} us, {{len(durations)}} launches)\\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200, help="launches timed")
    parser.add_argument("--save", metavar="FILE", help="torch.save the arguments before and after its lone launch")
    options = parser.parse_args()
    if VECTOR_BITS:
        from torch._inductor import config, cpu_vec_isa  # private API: the script is for the torch it names

        config.cpp.simdlen = VECTOR_BITS
        if cpu_vec_isa.pick_vec_isa().bit_width() != VECTOR_BITS:
            raise SystemExit(
                f"{{KERNEL}}: its C++ was written for {{VECTOR_BITS}}-bit vectors, which this machine's CPU does not "
                f"have ({{[str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()] or 'no vector ISA'}}): run it on a "
                "machine like the one that compiled it")
    module = types.ModuleType("pt2scope_output_code")
    exec(compile(OUTPUT_CODE, "<output code>", "exec"), module.__dict__)
    kernel = getattr(module, KERNEL)
    recorder = Recorder(kernel)
    setattr(module, KERNEL, recorder)
    torch.manual_seed(0)
    module.call(module.get_args())
    setattr(module, KERNEL, kernel)
    if recorder.before is None:
        raise SystemExit(f"{{KERNEL}}: call() of its output code did not launch it on these inputs")
    print(f"kernel {{KERNEL}} (torch {{torch.__version__}}), launched with: "
          + ", ".join(describe(t) for t in tensors(recorder.before)))

    arguments = clone(recorder.before)
    launch(kernel, arguments)
    synchronize()
    if options.save:
        torch.save({{"before": recorder.before, "after": arguments}}, options.save)
    differences = [
        (a.double() - b.double()).abs().nan_to_num(0.0).max().item() if a.is_floating_point() else float(
            not torch.equal(a, b))
        for a, b in zip(tensors(arguments), tensors(recorder.after)) if a.numel()
    ]
    worst = max(differences, default=0.0)
    print("alone, it writes what it wrote inside the graph" if worst == 0 else
          f"alone, it writes values that differ from those inside the graph by up to {{worst:.3g}}")

    # Launches are timed in batches long enough for the clock (>= 1 ms; at least 10 batches), each batch's time per
    # launch kept.
    def timed(batch):
        start = time.perf_counter()
        for _ in range(batch):
            launch(kernel, arguments)
        synchronize()
        return time.perf_counter() - start

    timed(3)
    batch = 1
    while timed(batch) < 1e-3:
        batch *= 2
    per_launch = [timed(batch) / batch for _ in range(max(10, -(-options.calls // batch)))]
    print(gpu_time(kernel, arguments) or "", end="")
    median = statistics.median(per_launch)
    rate = f"; {{BYTES_ACCESSED / median / 1e9:.3g}} GB/s of the {{BYTES_ACCESSED / 1e6:.3g}} MB it reads and writes" if (
        BYTES_ACCESSED) else ""
    print(f"wall time per launch: median {{median * 1e6:.4g}} us (range {{min(per_launch) * 1e6:.4g}}-"
          f"{{max(per_launch) * 1e6:.4g}} us, {{len(per_launch)}} batches of {{batch}}){{rate}}")


if __name__ == "__main__":
    main()
'''
