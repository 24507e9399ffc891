"""The report as types: one pydantic model per section, the single definition of docs/report-schema.md.

The engine builds its empty and failed reports from these models, the parent validates what the child wrote
(engine/job.py), storage validates what it stores and upgrades old reports on read (storage's run store), and
``python -m contract.docs`` generates docs/report-schema.json and docs/report-schema.md from them.

Unknown keys are rejected (``extra="forbid"``) and types are strict: a field that is written but not declared
here, or declared with another type, fails validation with its path, so the documented contract and what the
engine writes cannot drift apart. Every field has a default where the value can be unknown (a job that failed
early), so a validated report always carries every key, null where nothing was recorded.
"""

import re
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contract.counts import summarize
from contract.processes import Processes, ProcessFigure
from contract.vocab import (
    MEASURING_PROCESSES,
    ConfigName,
    CorrectnessVerdict,
    Device,
    FailureKind,
    GraphKind,
    IsolationMode,
    RungName,
    StageName,
    TimelinePhaseName,
    TimelineSide,
    UserRungName,
)

# v2: every key of every object is always present (null where nothing was recorded) and unknown keys are
# rejected; v1 left keys out (e.g. grad_max_abs_error when not training). Readers of v1 reports get them upgraded
# on read (upgrade()).
SchemaVersion = Literal[4]  # the one place a new version is spelled (contract/README.md, "Adding a field")
SCHEMA_VERSION: SchemaVersion = get_args(SchemaVersion)[0]
READABLE_VERSIONS = (1, 2, 3, 4)
VERSION_HISTORY = {
    1: "the first version: keys could be absent (an empty section was `{}`; `grad_*` errors only when training; "
    "early engines wrote no sandbox limits into `request`).",
    2: "the same fields, typed by contract/report.py: every key of every object is present (null where nothing "
    "was recorded) and unknown keys are rejected; the job's report is validated where it enters the parent "
    "and where it is stored. A v1 report is upgraded on read: its absent keys get the v2 defaults, absent "
    "request limits become null, and what v1 recorded in an older form gets the v2 form (the summary's counts, "
    "counted from the sections; a speedup from its one median, never decided; each recompile's failed guards, "
    "read from torch's reasons).",
    3: "benchmarks[].speedup is decided across fresh measuring processes (`speedup.source`, `runtime.processes`, "
    "`benchmarks[].processes`), the capture process's own kept as `benchmarks[].capture_speedup`. A v2 report is "
    "upgraded on read: its speedups get `source: capture_process` (they were the job's own process's).",
    4: "what a prestarted child did before its job is marked `prestart` (v3 called it `ahead`): a timeline "
    "phase's `prestart`, `runtime.memory_bandwidth.measured_in_prestart`; one name for the idea everywhere. A v3 "
    "report is upgraded on read: those two fields are renamed.",
}

Shape = list[int | str] | list[list[int | str]] | None
DType = str | list[str] | None
OpHistogram = dict[str, int]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


# --- graphs, shared by every stage -----------------------------------------------------------------------------


class ModuleFrame(Model):
    """One entry of a node's `nn_module_stack`."""

    path: str
    """attribute path of the module, e.g. `layers.0.attn`"""
    type: str
    """the module's class (qualified name)"""


class JointMarks(Model):
    """Joint graph nodes (AOT): how the partitioner treated the node."""

    saved: bool
    """saved for backward"""
    recomputed: bool
    """recomputed in the backward instead of saved"""
    backward: bool
    """part of the backward (depends on a tangent)"""


class SavedMarks(Model):
    """Forward graph nodes (AOT)."""

    saved: bool
    """saved for backward"""


class RecomputedMarks(Model):
    """Backward graph nodes (AOT, training)."""

    recomputed: bool
    """an op the partitioner runs again in the backward instead of saving its result (`partitions[].recomputed`)"""


class KernelMarks(Model):
    """Post-grad graph nodes (Inductor)."""

    kernel: str | None
    """the kernel the node was fused into; null: a library call or no code"""


class RewrittenMarks(Model):
    """Nodes of the graph before functionalization (AOT) that functionalization rewrites."""

    rewritten: Literal["in-place", "view"]
    """a mutating op or a view"""


class InputMutationMarks(Model):
    """In-place nodes of the functionalized graph (AOT)."""

    input_mutation: bool
    """the node writes a result back into a mutated input"""


class Node(Model):
    """One FX node."""

    name: str
    """FX node name, unique in its graph"""
    op: Literal["placeholder", "call_function", "call_method", "call_module", "get_attr", "output"]
    target: str
    """`"torch.sin"`, `"_operator.mul"`, `"aten.addmm.default"`, a method or module name"""
    args: list[str]
    """names of the nodes this node reads: the graph's edges"""
    shape: Shape = None
    """of its value (a list per output for multi-output nodes; symbolic sizes as strings, e.g. `"s0"`)"""
    dtype: DType = None
    """of its value (a list for multi-output nodes; `int`, `SymInt`, ... for scalars)"""
    file: str | None = None
    """the innermost frame of the user's file behind the node"""
    line: int | None = None
    code: str | None = None
    module_stack: list[ModuleFrame] = []
    """`nn_module_stack`, outermost first"""
    original_aten: str | None = None
    """(AOT/post-grad) the ATen op this node was decomposed from"""
    marks: JointMarks | SavedMarks | RecomputedMarks | KernelMarks | RewrittenMarks | InputMutationMarks | None = None
    """stage-specific flags, one shape per kind of graph (below); null where the stage marks nothing"""


class Graph(Model):
    """A captured FX graph (Dynamo, AOTAutograd, post-grad, functionalization)."""

    compile_id: str | None
    """torch's compile id (`"0/0"`, `"1/0"`, `"0/1"`: frame / recompile; `"0/0_1"` a restarted attempt)"""
    kind: GraphKind | None = None
    """null for Dynamo graphs"""
    nodes: list[Node]
    num_nodes: int
    code: str
    """readable Python (with shapes)"""
    ops: OpHistogram
    """histogram of call_function targets, `{"aten.mul": 3, ...}`"""


class Frame(Model):
    """A frame of the user's code."""

    file: str
    line: int
    func: str
    code: str


class SourceLine(Model):
    """A line of the user's file."""

    file: str | None
    line: int
    code: str | None
    func: str | None = None


# --- dynamo ----------------------------------------------------------------------------------------------------


class GraphBreak(Model):
    """A graph break, deduplicated by (file, line, reason)."""

    reason: str
    explanation: str
    hints: list[str]
    doc_url: str | None
    file: str | None
    line: int | None
    code: str | None
    count: int
    """occurrences"""
    compile_ids: list[str | None]
    user_stack: list[Frame]
    text: str
    """torch's full message (at most 6000 characters)"""


class Guards(Model):
    compile_id: str | None
    text: str
    """the guard tree of the compiled frame"""
    count: int | None = None
    """torch's own guard count for the frame (CompilationMetrics `guard_count`; null if torch did not report it):
    the number every page shows, summed in `summary.counts.guards`"""


class FailedGuard(Model):
    """One cache entry Dynamo rejected before it recompiled, and why, as clean text."""

    compile_id: str | None
    """the compile whose guards failed"""
    guard: str
    """e.g. `"tensor 'x' size mismatch at index 0. expected 4, actual 6"` or `"scale == 2.0"`"""
    location: str | None = None
    """torch's `file:line in func` comment on the guard (torch may shorten the file name)"""
    user_line: Frame | None = None
    """the user's line behind the guard, where torch gave a stack"""


class DynamicDim(Model):
    """A dimension (or scalar) that became dynamic in this compile (automatic dynamic shapes)."""

    symbol: str | None
    """torch's symbol, e.g. `"s77"`"""
    source: str
    """Dynamo's spelling of where it comes from, e.g. `"L['x'].size()[0]"`"""
    value: str | None
    """the value seen by the call that compiled"""
    text: str
    """in words, e.g. "Dimension 0 of x became dynamic (symbol s77, 6 in this call): ..." """


class SymbolGuard(Model):
    """A guard the shape environment added while tracing, whose expression names the symbol."""

    expr: str
    """as torch prints it, e.g. `"s77 > 2"`"""
    file: str | None = None
    line: int | None = None
    """the user's line that made Dynamo add it (null when torch gave no user stack)"""
    code: str | None = None


class ShapeSpecialization(Model):
    """The symbol fixed to a constant (symbolic_shape_specialization): the graph holds only for that value."""

    value: str | None
    reason: str | None = None
    """torch's words, e.g. `"Eq(s77, 8)"`"""
    file: str | None = None
    line: int | None = None
    code: str | None = None


class DynamicSymbol(Model):
    """One symbol Dynamo's shape environment created for a dynamic size, stride or integer in one compile
    (create_symbol): where it comes from, the range it was compiled for, the guards that test it and any
    specialization, and its value in each call of the example inputs."""

    compile_id: str | None
    symbol: str
    """torch's symbol, e.g. `"s77"`"""
    source: str
    """Dynamo's spelling of where it comes from, e.g. `"L['x'].size()[0]"`"""
    subject: str
    """`source` in words, e.g. `"Dimension 0 of x"`"""
    value: str | None
    """its value in the call that created it"""
    range: str | None
    """the value range it was created with, e.g. `"[2, int_oo]"` (the guards may narrow it)"""
    created_in_call: int | None = None
    """the index into `example_inputs` of the call whose compile created it (null in a loaded log)"""
    file: str | None = None
    line: int | None = None
    """the user's line being traced when it was created (where the size was first used)"""
    code: str | None = None
    guards: list[SymbolGuard] = []
    """at most 50, in the order added"""
    specializations: list[ShapeSpecialization] = []
    values_by_call: list[int | None] = []
    """its value in each call of `example_inputs` (a dimension of an argument of the function the user compiled;
    empty for other sources and in a loaded log)"""
    reused_by_calls: list[int] = []
    """later calls that ran this compile without compiling its frame again (up to the call that compiled it anew)"""


class Recompile(Model):
    """One recompile, by the compile id it created."""

    compile_id: str | None
    reason: str
    """the reasons joined, e.g. `"0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6"`"""
    reasons: list[str]
    """one per rejected cache entry: `"<compile id>: <failed guard>"`"""
    failed_guards: list[FailedGuard] = []
    call_index: int | None = None
    """the index into `example_inputs` of the call that triggered it (null when unknown, e.g. a loaded log)"""
    dynamic_dims: list[DynamicDim] = []
    """dimensions that became dynamic in this compile (not those dynamic since an earlier one)"""
    text: str | None = None
    """the whole recompile in words: which call, which guards failed, what became dynamic"""
    function: str | None = None
    """the user's module or function that was recompiled: `"scaled"`, `"Net.forward"`; a module whose forward is
    torch's (`nn.Sequential`, `nn.Linear`) by the user's variable and its class, `"model (torch.nn.Sequential)"`
    (torch.compile runs it through its own wrapper frame, named in `torch_frame`)"""
    where: str | None = None
    """`"<file>:<line>"` of `function`: the def line, or the line that assigns `model` for a module whose forward
    is torch's"""
    file: str | None = None
    """the file of `function` (the user's file, e.g. `"model.py"`)"""
    line: int | None = None
    """the line of `function` in `file` (null when unknown)"""
    torch_frame: str | None = None
    """the frame Dynamo compiled, as torch names it, when it is torch's own code rather than the user's:
    `"inner at .../torch/_dynamo/external_utils.py:67"` (torch.compile's wrapper around a torch.nn module); null
    when the frame is the user's. In a report imported from a TORCH_TRACE log `function` stays torch's name"""


class Bytecode(Model):
    compile_id: str | None
    name: str
    file: str | None
    """null in a report imported from a TORCH_TRACE log (the log names the function only)"""
    line: int | None
    original: str
    """dis text"""
    transformed: str
    """dis text of Dynamo's bytecode"""
    decompiled: str | None
    """Dynamo's bytecode as Python (depyf); null without depyf"""
    decompile_error: str | None = None
    called_as: str | None = None
    """when this frame is torch's own code (torch.compile's `inner` wrapper around an `nn.Sequential`): the user's
    module or function it runs, `"model (torch.nn.Sequential) at model.py:4"` (Recompile.function's naming);
    null for the user's code"""


class DynamoSummary(Model):
    graph_count: int = 0
    graph_break_count: int = 0
    """occurrences"""
    unique_graph_breaks: int = 0
    recompile_count: int = 0
    op_count: int = 0


class Dynamo(Model):
    """TorchDynamo: what it captured, where it broke the graph, its guards and recompiles."""

    graphs: list[Graph] = []
    """every captured FX graph (no kind)"""
    graph_breaks: list[GraphBreak] = []
    guards: list[Guards] = []
    recompiles: list[Recompile] = []
    symbols: list[DynamicSymbol] = []
    """the symbols of dynamic sizes, strides and integers, per compile (the Dynamo tab's "Dynamic shapes")"""
    bytecode: list[Bytecode] = []
    summary: DynamoSummary = Field(default_factory=DynamoSummary)
    not_in_log: list[str] = []
    """in a report imported from a TORCH_TRACE log: this section's fields a log cannot hold (the pages say "not in
    a TORCH_TRACE log" there); a field is listed only while empty"""


# --- aot -------------------------------------------------------------------------------------------------------


class Partition(Model):
    compile_id: str | None
    saved: list[str]
    """values saved for backward (backward placeholders other than tangents)"""
    recomputed: list[str]
    """forward ops the backward recomputes"""
    forward_nodes: int
    backward_nodes: int


class Rewrite(Model):
    op: str
    kind: Literal["in-place", "view"]
    count: int
    lines: list[int]
    """the user's lines of the rewritten nodes (the ATen graphs are traced node by node from the Dynamo graph,
    keeping each node's stack trace)"""


class InputMutation(Model):
    node: str
    """the `copy_` write-back node in the functionalized graph"""
    input: str
    """the mutated input it writes into"""


class Functionalization(Model):
    """Per Dynamo graph: the ATen graph before and after functionalization."""

    compile_id: str | None
    before: Graph
    """kind `aten`; mutating/view nodes have `marks.rewritten`"""
    after: Graph
    """kind `functional`"""
    rewritten: list[Rewrite]
    input_mutations: list[InputMutation]
    remaining_inplace: list[str]
    """should be empty"""


class Decomposition(Model):
    compile_id: str | None
    map: dict[str, OpHistogram]
    """what each ATen op became, `{"aten.gelu": {"aten.erf": 2, "aten.mul": 4}}`; empty under aot_eager (no
    decomposition table)"""
    histogram_before: OpHistogram = {}
    """ATen ops before decomposition (the functionalized graph)"""
    histogram_after: OpHistogram
    """forward/inference"""
    histogram_after_backward: OpHistogram


class Aot(Model):
    """AOTAutograd: joint, forward, backward and inference graphs, the partition, functionalization, decompositions.

    Graph kinds: `joint`, `forward`, `backward`, `inference`. Joint nodes have `marks: {saved, recomputed,
    backward}`; forward nodes `marks: {saved}`; backward nodes `marks: {recomputed}`."""

    graphs: list[Graph] = []
    partitions: list[Partition] = []
    functionalization: list[Functionalization] = []
    decompositions: list[Decomposition] = []
    not_in_log: list[str] = []
    """in a report imported from a TORCH_TRACE log: this section's fields a log cannot hold (the pages say "not in
    a TORCH_TRACE log" there); a field is listed only while empty"""


# --- inductor --------------------------------------------------------------------------------------------------


class IrText(Model):
    compile_id: str | None
    kind: GraphKind | None
    text: str


class SchedulerNode(Model):
    type: str
    writes: list[str]
    origins: list[str]


class FusedGroup(Model):
    name: str
    members: list[str]


class Scheduler(Model):
    compile_id: str | None
    kind: GraphKind
    nodes: dict[str, SchedulerNode]
    """by scheduler node name (`op0`, ...)"""
    groups: list[FusedGroup]


class FusionDecision(Model):
    compile_id: str | None
    kind: GraphKind | None
    action: Literal["fused", "not_fused"]
    first: str
    """scheduler node, like `op0_op1`"""
    second: str
    reason: str | None
    count: int
    first_ops: list[str]
    """the post-grad nodes behind `first`"""
    second_ops: list[str]


class IrStage(Model):
    """One stage of Triton's compile of a kernel, as its cache keeps it (SASS disassembled from the cubin)."""

    stage: Literal["ttir", "ttgir", "llir", "ptx", "sass"]
    text: str
    truncated: bool = False
    """the text was longer than the report keeps of one stage (`IR_STAGE_BYTES` in engine/readers/triton_ir.py)
    and is cut at a line"""
    lines: list[list[int]] = []
    """[line in `text`, line in the kernel's `source`] pairs, 1-based: every line of this stage that carries a
    location in the kernel's own file (Triton's `loc`, LLVM's `!DILocation`, PTX's `.loc`, nvdisasm's line info);
    a line inlined from a helper is mapped to the kernel line that called it"""


class DeviceCode(Model):
    """A Triton kernel as Triton compiled it for the GPU: its IR stages and the launch it was compiled for (the
    config autotuning chose when there were several)."""

    stages: list[IrStage] = []
    """in compile order: TTIR, TTGIR, LLIR, PTX, SASS"""
    missing: list[str] = []
    """a stage or figure not shown and why, in words (`sass: no disassembler ...`)"""
    config: dict[str, int] = {}
    """the compile-time block sizes of the launch chosen (`XBLOCK`, `R0_BLOCK`, ...)"""
    num_warps: int | None = None
    num_stages: int | None = None
    shared_bytes: int | None = None
    """static shared memory per block"""
    registers: int | None = None
    """registers per thread, as the driver reports for the loaded binary"""
    spills: int | None = None
    """bytes spilled to local memory per thread (the driver's `n_spills`)"""
    target: str | None = None
    """`cuda:90` (the architecture it was compiled for)"""
    triton_version: str | None = None
    compiled_variants: int = 1
    """binaries Triton built for this kernel (one per autotuning config); `stages` are the chosen one's"""


class Kernel(Model):
    name: str
    language: Literal["triton", "cpp", "cuda", "halide"]
    compile_id: str | None
    graph_kind: GraphKind
    source: str
    source_nodes: list[str]
    """the post-grad nodes fused into it"""
    aten_ops: list[str]
    source_lines: list[SourceLine]
    bytes_accessed: int | None
    """bytes one call reads and writes; see `bytes_source`"""
    bytes_source: Literal["inductor", "estimate: buffer sizes"] | None = None
    """`inductor`: the kernel's own `kernel_num_gb` in the output code; `estimate: buffer sizes`: the sum of the
    sizes of the buffers it is passed, each counted once (null when a size is symbolic)"""
    writes: list[str]
    """buffers it writes"""
    provenance: Literal["source-node comment", "provenance tracking", "buffer writes"] | None
    """where `source_nodes` came from"""
    post_grad_nodes: list[str] = []
    """(imported logs) the post-grad nodes Inductor's provenance tracking names for it (`cppCodeToPost`); the
    source-node comment names nodes before decomposition"""
    flops: int | None = None
    """floating-point operations one call performs, summed over `source_nodes`: torch's formula where it has one
    (`torch.utils.flop_counter`: matmuls, convolutions, attention) and the kernel computes the op (a template kernel),
    else one per output element (one per input element for a reduction); a matmul or convolution node of any other
    kernel counts none (the kernel holds only its epilogue or a layout copy; the op runs in a library call); null
    when a size is symbolic or no node was recorded. See `flops_source`"""
    flops_source: Literal["formula", "estimate: one per element", "formula and estimate"] | None = None
    compute_dtype: str | None = None
    """the widest floating-point dtype its fused nodes compute (`float32`, `bfloat16`): which compute peak it is
    placed under on the roofline"""
    device_code: DeviceCode | None = None
    """(Triton kernels on a GPU) what Triton compiled it to: each IR stage with its lines mapped to `source`"""


class OutputCode(Model):
    compile_id: str | None
    kind: GraphKind
    code: str
    """the full generated Python wrapper with kernels"""


class LibraryCall(Model):
    """Calls from one output code to a library kernel rather than a generated one."""

    compile_id: str | None
    graph_kind: GraphKind
    name: str
    """`extern_kernels.mm`, `extern_kernels.addmm`, `aten.<op>.<overload>` (ATen fallbacks)"""
    count: int


class InductorMetrics(Model):
    kernel_count: int = 0
    """the generated kernels (= `summary.counts.generated_kernels`)"""
    generated_kernel_count: int | None = None
    """torch's process-wide counter (`torch._inductor.metrics`; it also counts kernels of compiles not recorded
    in this report): not a count to show"""
    num_bytes_accessed: int | None = None


class Inductor(Model):
    """TorchInductor (only filled when an Inductor config was requested): post-grad graphs, scheduler IR, fusion,
    generated kernels and output code.

    Post-grad graphs have kind `forward`/`backward`/`inference`; each node has `marks.kernel`."""

    post_grad_graphs: list[Graph] = []
    ir_pre_fusion: list[IrText] = []
    """Inductor's scheduler IR before fusion"""
    ir_post_fusion: list[IrText] = []
    scheduler: list[Scheduler] = []
    fusion_decisions: list[FusionDecision] = []
    kernels: list[Kernel] = []
    library_calls: list[LibraryCall] = []
    output_code: list[OutputCode] = []
    metrics: InductorMetrics = Field(default_factory=InductorMetrics)
    perf_hints: list[str] = []
    """Inductor's performance hints"""
    not_in_log: list[str] = []
    """in a report imported from a TORCH_TRACE log: this section's fields a log cannot hold (the pages say "not in
    a TORCH_TRACE log" there); a field is listed only while empty"""


# --- runtime ---------------------------------------------------------------------------------------------------


class CompileSeconds(Model):
    """Seconds per stage of a compile, summed over compile ids. Exclusive: the six stages add up to `total` (to
    rounding). From torch's compilation metrics, which nest (entire frame > backend > inductor > code generation):
    each stage is its own time minus the one inside it. Reports stored before this had no `other` and counted the
    backward's Inductor time twice (in `inductor`/`codegen` and in `backward`): the pages show their forward Inductor
    and code generation as one stage."""

    dynamo: float | None = None
    """entire frame - backend: tracing, guards, bytecode"""
    aot_autograd: float | None = None
    """backend - inductor: AOTAutograd, with Inductor's pre-grad and joint-graph passes"""
    inductor: float | None = None
    """inductor - code generation (forward/inference): lowering, scheduling"""
    codegen: float | None = None
    """code generation and kernel compilation (forward/inference)"""
    backward: float | None = None
    """the whole lazy backward compile, at the first `.backward()` (its own metrics entry)"""
    other: float | None = None
    """compile work outside those: Triton autotuning at the first run (`compilation_metrics_runtime`)"""
    total: float | None = None
    """the sum of the six"""


class CacheCount(Model):
    """Lookups of one graph cache during a compile, from torch's counters."""

    hits: int
    misses: int
    bypasses: int | None = None
    state: str | None = None
    """why there were none, e.g. the cache was off during the recorded compile"""


class KernelCacheCount(Model):
    """Kernel binaries, measured (torch counts no on-disk kernel-cache hits): binaries written to the job's cache
    folders (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR: `.so`, `.cubin`, `.hsaco`) during the compile are misses,
    at most one per generated kernel; the other generated kernels are hits."""

    hits: int
    misses: int
    generated: int
    """kernels the compile's output code defines"""
    binaries_written: int
    trusted_binaries: int | None = None
    """the recorded compile only: binaries of the worker's trusted kernel cache (built at its start from the
    gallery) the sandbox bound read-only into the job's cache folders before it; 0 when none was bound (every
    kernel then came from the job's new, empty folders)"""
    state: str | None = None
    """in words: where the kernels came from (`shared: ...` when the worker's trusted cache was bound)"""


class CompileCaches(Model):
    fx_graph: CacheCount
    """Inductor's FX graph cache (`fxgraph_cache_*` counters)"""
    aot_autograd: CacheCount
    """AOTAutograd's cache (`autograd_cache_*` counters)"""
    kernels: KernelCacheCount


class ColdCompile(Model):
    """The recorded compile: graph caches off (to see IR and fusion), the job's new cache folders, holding the
    worker's trusted kernel binaries where it has them (caches.kernels.trusted_binaries)."""

    seconds: CompileSeconds
    caches: CompileCaches


class WarmCompile(Model):
    """The same model and config compiled again in a fresh process (engine/warm.py: forked by the child from its
    copy made before anything ran, or `python -m engine.warm JOB_DIR CONFIG OUT`; in the job's folder and sandbox,
    every cache at torch's defaults; on CPU with the recorded compile's kernel-profile names, so its kernel binaries
    can be found)."""

    status: Literal["ok", "failed", "skipped", "pending", "deferred"]
    """pending: still running when the report was first stored (the worker stores the report before the warm
    compiles and replaces this section when they end); deferred: other jobs were waiting when the report was
    readable, so the worker runs it when it is idle and then replaces this section (`reason` says so)"""
    reason: str | None = None
    """why it failed or was skipped"""
    config: ConfigName | None = None
    seconds: CompileSeconds | None = None
    caches: CompileCaches | None = None
    wall_seconds: float | None = None
    """the process's whole life as the child timed it, its start and exit included (and torch's import where
    `started` is spawned)"""
    started: Literal["forked", "spawned"] | None = None
    """forked: from a copy of the job's child made once torch was imported and before anything ran
    (engine.warm.ForkServer), so it compiled nothing before, without an import of its own; spawned: a new
    interpreter (where the fork server could not start); null: a report from before this was recorded"""


class CompileCache(Model):
    """Cold vs warm, when an Inductor config was recorded (all null otherwise)."""

    cold: ColdCompile | None = None
    warmup: WarmCompile | None = None
    """first fresh process: finds the kernel binaries the recorded compile left but empty graph caches, and fills
    them"""
    warm: WarmCompile | None = None
    """second fresh process: every cache filled, what the user's next run of the script costs"""


class CompileMetrics(Model):
    """A summary of torch's CompilationMetrics for one compile id (null where this torch did not record it)."""

    compile_id: str | None = None
    frame_key: str | None = None
    co_name: str | None = None
    co_filename: str | None = None
    co_firstlineno: int | None = None
    cache_size: int | None = None
    graph_op_count: int | None = None
    graph_node_count: int | None = None
    entire_frame_compile_time_s: float | None = None
    backend_compile_time_s: float | None = None
    inductor_compile_time_s: float | None = None
    code_gen_time_s: float | None = None
    fail_type: str | None = None
    fail_reason: str | None = None
    cudagraph_skip_reason: str | None = None
    guard_count: int | None = None
    restart_reasons: list[str] | None = None
    dynamo_time_before_restart_s: float | None = None
    has_guarded_code: bool | None = None


class TimelineSpan(Model):
    """A span of the compile, from the trace's chromium events."""

    name: str | None
    compile_id: str | None
    start_ms: float
    """since the first event"""
    dur_ms: float
    depth: int


class Timing(Model):
    method: Literal["perf_counter", "cuda_events"] | None = None
    statistic: str | None = None
    step: str | None = None
    order: Literal["interleaved"] | None = None
    """the rounds ran A B C A B C ...: a change in the machine's load hits every config alike"""
    rounds: int | None = None
    steps_per_round: dict[str, int] = {}
    """config -> the back-to-back steps of one of its rounds (about 50 ms on CPU, 20 ms on GPU)"""
    latency: str | None = None
    """how the second figure (`latency_*`) was taken"""
    allocator: str | None = None
    """the host allocator's settings while timing: glibc malloc with fixed thresholds in a job's child (freed
    memory is reused, not returned to the OS and faulted in again each step), or as found"""
    host_cores: str | None = None
    """GPU steps only: which host cores the rounds ran on. The thread stays where the scheduler puts it, as in a
    user's loop (engine/measure/cores.py: moving it each round cost host-bound steps 11-38%); the cores seen tell a
    slow process's figure apart by core. Null for a CPU step, whose threads use every core"""


class RuntimeMode(Model):
    """Inference or training. Without `train` every rung is compiled, checked and timed under `torch.no_grad()`
    (AOTAutograd then makes an inference graph: no joint graph, no saved activations, no backward kernels); with
    `train` each step is forward + backward."""

    kind: Literal["inference", "training"] | None = None
    grad_enabled: bool | None = None
    reason: str | None = None
    """where the choice came from: the file's `train`, the request's `--train`, or neither"""


class EagerRepeat(Model):
    """Plain eager against itself, from the same state and seed."""

    verdict: Literal["match", "mismatch"] | None = None
    """mismatch: the model is nondeterministic and every rung reads `nondeterministic`"""
    max_abs_error: float | None = None
    uses_rng: bool | None = None
    """a run with another seed differs: the model draws random numbers (matching it needs the reseed)"""


class Reference(Model):
    """The state every rung starts from."""

    seed: int | None = None
    """`torch.manual_seed` (CPU and CUDA) and `random.seed` before every compared step"""
    model_state: str | None = None
    """`deepcopy per rung` (each rung runs its own `copy.deepcopy` of the model and inputs as loaded), or
    `shared: <why>` when the model cannot be copied"""
    eager_repeat: EagerRepeat = Field(default_factory=EagerRepeat)


class Comparison(Model):
    """A rung's outputs (or gradients) against plain eager, like `torch._dynamo.utils.same`: `allclose(atol=rtol=
    tol)` with a dtype-aware tol (float64 1e-7, float32 1e-4, bfloat16 1e-2, float16 1e-3; gradients 10x; integers
    and bools exact), or failing that the rung's RMSE against a float64 run at most 2x (3x for half types and
    tensors under 1000 elements) plain eager's plus tol/10 (`fp64_checked`)."""

    verdict: CorrectnessVerdict | None = None
    """([Vocabulary](#vocabulary)); `match` only when every error is within its tolerance"""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    atol: float | None = None
    rtol: float | None = None
    fp64_checked: bool = False
    reason: str | None = None
    """why it is not a match (the first tensors beyond tolerance), or what it was compared with"""


class Correctness(Comparison):
    """`verdict` is the worse of outputs and gradients. `nondeterministic`: eager disagreed with itself. A model
    that draws random numbers (eager differs under another seed) is checked with both sides on one seeded stream:
    an Inductor rung is compiled a second time with `torch._inductor.config.fallback_random = True` (torch's own
    RNG ops instead of Inductor's Philox) for the check only, and its timed compile keeps Inductor's RNG;
    `not_comparable` where that could not be done."""

    gradients: Comparison | None = None
    """training: the same over parameter gradients"""
    random_stream: str | None = None
    """how the two sides' random numbers were made the same, or why they could not be; null when the model
    draws none"""


class Speedup(Model):
    """Eager's round over this config's, per round (rounds are paired: they ran side by side)."""

    value: float | None = None
    """median over rounds"""
    low: float | None = None
    """a distribution-free 90% confidence interval of the median (order statistics: with 7 rounds their whole
    range, with 14 the 4th to 11th, with 21 the 7th to 15th)"""
    high: float | None = None
    decided: bool = False
    """high / low <= 1.2: the figure is good to about +-10%; read it before quoting `value`. While a config is
    undecided the ladder adds rounds, 7 at a time, up to 21, within 8 s on CPU (3 s on GPU)"""
    verdict: Literal["faster", "slower", "same"] | None = None
    """only when decided: faster (low > 1.02), slower (high < 0.98), same otherwise"""
    text: str | None = None
    """`1.93x faster (1.88-1.99)` or `not decided: measurements too noisy (0.80-2.10x over 7 rounds)`"""
    source: Literal["processes", "capture_process"] | None = None
    """v3: processes: across the fresh measuring processes (`runtime.processes`: the median of their medians, an
    interval holding each one's, decided only when they agree within 10%); capture_process: the job's own process
    only (until the measuring processes have run, or where they could not)"""
    processes: list[float] = []
    """each measuring process's median speedup"""


class LadderVerdict(Model):
    config: RungName
    stage: Literal["dynamo", "aot_autograd", "inductor"]
    verdict: CorrectnessVerdict


class LadderCorrectness(Model):
    """Where the ladder eager -> backend_eager (`dynamo`) -> aot_eager (`aot_autograd`) -> inductor_* (`inductor`)
    first diverges from plain eager."""

    first_divergent_stage: Literal["dynamo", "aot_autograd", "inductor"] | None = None
    """null: no rung mismatches (or eager is nondeterministic); stages not run are skipped and `text` says so"""
    deterministic: bool | None = None
    """false: eager disagreed with itself from the same state and seed"""
    uses_rng: bool | None = None
    ladder: list[LadderVerdict] = []
    text: str | None = None
    """the verdict in words, e.g. `eager, backend_eager agree; aot_eager differs (...): the divergence starts in
    AOTAutograd.`"""


class BisectStep(Model):
    """One compile and compared step the bisector asked for."""

    backend: str
    """the backend torch.compile used in this step (the bisector overrides the rung's)"""
    subsystem: str | None = None
    """the subsystem being disabled or counted (`post_grad_passes`, `lowerings`, ...), null while backends are tried"""
    passed: bool
    """the step matched eager (and raised nothing)"""
    seconds: float


class Minified(Model):
    """The smallest graph that still breaks the bisected rung: the graphs Dynamo handed its backend, the first that
    breaks alone (torch's accuracy check against a float64 run, `backend_accuracy_fails`; for a failed rung, an
    exception) shrunk by torch's FX minifier (`torch._functorch.fx_minifier.minifier`). Its repro.py:
    `/r/<slug>/minified-repro.py`."""

    status: Literal["minified", "not_reproduced", "stopped", "unavailable", "error"]
    """`stopped`: out of the job's time, `code` the smallest graph so far"""
    text: str
    code: str | None = None
    """the graph as printed code, inputs annotated with shape, stride and device"""
    ops: dict[str, int] = {}
    nodes_before: int | None = None
    """nodes of the graph that broke, before minifying (placeholders and output not counted)"""
    nodes_after: int | None = None
    queries: int = 0
    """compiles the search made"""
    seconds: float | None = None


class Bisect(Model):
    """torch's compiler bisector (`torch._inductor.compiler_bisector.CompilerBisector.do_bisect`) run on the first
    rung whose compared step mismatched eager or failed: it compiles that rung again with each backend of eager ->
    aot_eager -> aot_eager_decomp_partition -> ... -> inductor, then, in the first that breaks it, with each of its
    subsystems turned off, then bisects the number of applications of the subsystem that mends it. Each step is a
    fresh compile (caches bypassed) judged against eager as the ladder judges rungs."""

    config: RungName
    verdict: Literal["mismatch", "failed"]
    """why the rung was bisected"""
    status: Literal["found", "not_reproduced", "stopped", "unavailable", "error"]
    """`found`: a backend (and a subsystem where one was found); `not_reproduced`: every backend passed this time;
    `stopped`: out of the job's time (`text` says how far it got)"""
    backend: str | None = None
    """the first backend that breaks it: `aot_eager_decomp_partition` (decompositions, partitioner), `inductor`..."""
    subsystem: str | None = None
    """`pre_grad_passes`, `joint_graph_passes`, `post_grad_passes`, `lowerings`, `decomposition`, `cudagraphs`, or a
    config change (`inductor_emulate_precision_casts`, ...)"""
    bisect_number: int | None = None
    """which application of the subsystem first breaks it (0-based, counted over the compile)"""
    debug_info: str | None = None
    """torch's description of that application: a pass's name, the FX node lowered"""
    graph_id: str | None = None
    """the recorded graph that application acted on, where the report holds one (post-grad passes and lowerings:
    the post-grad graph; joint-graph passes: AOT's joint graph)"""
    node: str | None = None
    """the node of `graph_id` named by `debug_info` (lowerings)"""
    text: str
    """the result in words"""
    steps: list[BisectStep] = []
    seconds: float | None = None
    error: str | None = None
    minified: Minified | None = None
    """the rung's smallest breaking graph (runs after the bisector, in the same share of the job's time)"""


class MachineLoad(Model):
    """The machine's load while the rounds were timed: `/proc/loadavg` (1, 5, 15 minutes) just before and after,
    and what other processes took of the cores, batch by batch of rounds (`/proc/stat` less the job's own CPU
    time)."""

    loadavg_before: list[float] | None = None
    loadavg_after: list[float] | None = None
    cpu_count: int | None = None
    busy: bool | None = None
    """the 1-minute load exceeded the number of cores at either end"""
    other_cpu_cores: float | None = None
    """cores other processes used on average during the rounds kept, of the time this machine's cores ran (the
    host's steal left out; null where `/proc/stat` cannot be read)"""
    stolen_share: float | None = None
    """the part of the time this machine's cores wanted to run that the host gave to other machines (steal, from
    `/proc/stat`), on average during the rounds kept; null where it cannot be read or the report is older"""
    step_threads: int | None = None
    """the cores one step wants: torch's intra-op threads on the CPU, 1 on a GPU"""
    dropped_rounds: int = 0
    """rounds dropped and timed again because other processes took more than 0.1 of the cores the step wants
    while they ran"""
    contended: bool = False
    """every batch of rounds was contended, so the figures are the contended ones and no speedup is decided"""
    text: str | None = None


class MemoryBandwidth(Model):
    """This worker's copy bandwidth, measured once per job: the denominator of each kernel's `roofline_share`."""

    bytes_per_s: float | None = None
    method: str | None = None
    device: Device | None = None
    measured_in_prestart: bool = False
    """measured by this job's own child, in its sandbox, before the job was handed over to it (a prestarted child,
    while the worker finished the job before; no user code had run in it): not on the job's critical path. CPU only:
    a GPU job's next child starts beside it and leaves the GPU to it, so a GPU job measures at hand-over"""


class ComputePeaks(Model):
    """This worker's measured matrix-multiply throughput (FLOP/s), once per job beside `memory_bandwidth`: the
    roofs of the roofline. A peak is null where it was not measured (TF32 and BF16 on the CPU)."""

    fp32: float | None = None
    """float32 with TF32 off (on a GPU: its CUDA cores)"""
    tf32: float | None = None
    bf16: float | None = None
    method: str | None = None
    device: Device | None = None
    measured_in_prestart: bool = False
    """measured by the prestarted child before its job (as `memory_bandwidth`)"""


class AutotuneChoice(Model):
    name: str
    """an Inductor template kernel (`triton_mm_4`), a library call (`extern_mm`) or a Triton config
    (`XBLOCK: 1024, num_warps: 4, num_stages: 1`)"""
    kind: Literal["template", "library", "config"]
    ms: float | None
    """its measured time per call; null where it failed to compile or run"""
    chosen: bool
    description: str | None = None
    """its parameters as Inductor describes them (block sizes, warps, stages)"""


class Autotune(Model):
    """One autotuning decision: Inductor's algorithm selection for an op (max-autotune's templates against the
    library kernel) or a Triton kernel's configs benchmarked at its first call."""

    config: RungName
    """the rung whose compile or first call made it"""
    kind: Literal["algorithm", "configs"]
    op: str
    """the op (`mm`, `addmm`, `convolution`) or the Triton kernel whose configs were compared"""
    inputs: list[str] = []
    """the op's input sizes"""
    choices: list[AutotuneChoice] = []
    """fastest first"""


class CudaGraphs(Model):
    """As seen while the rung compiled and warmed up (cudagraph_trees' debug log, Inductor's skip reasons)."""

    status: Literal["used", "skipped", "not_applicable", "not_requested"] | None = None
    """null only before the ladder ran"""
    reason: str | None = None
    recordings: int | None = None
    """CUDA graphs recorded: one per graph and input shape (forward and backward count apart)"""
    rerecords: int | None = None
    """graphs recorded again (input addresses changed, ...)"""
    rerecord_reasons: list[str] = []


class Benchmark(Model):
    """One config of the ladder. The timing fields are null when the config failed."""

    config: RungName
    """a built-in config, or `user:<name>` for a backend the user's file defines (`debug.user_backends`)"""
    label: str
    backend: str | None
    mode: str | None
    status: Literal["ok", "failed"]
    error: str | None
    first_call_ms: float | None = None
    """the first call, compile included"""
    median_ms: float | None = None
    p10_ms: float | None = None
    p90_ms: float | None = None
    min_ms: float | None = None
    reps: int | None = None
    """per-step repetitions in reports from before the timed rounds; now null (see `rounds`, `latency_reps`)"""
    rounds: int | None = None
    steps_per_round: int | None = None
    latency_ms: float | None = None
    """the second figure: each step timed alone (synchronize, step, synchronize), median"""
    latency_p10_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_reps: int | None = None
    page_faults_per_step: float | None = None
    """minor page faults of the whole process per step, over the latency steps: memory the allocator took back
    from the OS and faulted in again, which a step pays for in time"""
    warmup_reps: int | None = None
    method: Literal["perf_counter", "cuda_events"] | None = None
    speedup_vs_eager: float | None = None
    """`speedup.value`; read `speedup.decided` before quoting it"""
    speedup: Speedup | None = None
    capture_speedup: Speedup | None = None
    """the capture process's own speedup, kept beside the one across processes (`speedup`)"""
    processes: ProcessFigure | None = None
    """the time per step across the measuring processes; `median_ms` and its spread above are the capture process's"""
    correctness: Correctness | None = None
    max_abs_error: float | None = None
    """max |out - ref| over all output tensors, against plain eager on the same inputs"""
    max_rel_error: float | None = None
    """max_abs_error / max |ref| (norm-wise)"""
    grad_max_abs_error: float | None = None
    """the same over parameter gradients; null when not training"""
    grad_max_rel_error: float | None = None
    gpu_busy_ms: float | None = None
    """GPU kernel time per step (profiler); null on CPU. `median_ms - gpu_busy_ms` is the host's share: launches,
    guards, Python (the Runtime tab's launch-overhead chart)"""
    cudagraphs: CudaGraphs


class KernelProfileRow(Model):
    """Per step, from the profiler (on CPU generated kernels appear as `graph_N_<kernel>`)."""

    name: str
    kernel: str | None
    """the generated kernel this row is, if it is one"""
    generated: bool
    calls: int
    total_ms: float
    """per step, the profiler's dilation removed (see `kernel_profile_summary.scaled_by`)"""
    share: float
    bytes_per_call: int | None = None
    bytes_source: Literal["inductor", "estimate: buffer sizes"] | None = None
    bandwidth_bytes_per_s: float | None = None
    roofline_share: float | None = None
    """bandwidth / `memory_bandwidth.bytes_per_s`"""
    flops_per_call: int | None = None
    """the kernel's `flops`"""
    flops_per_s: float | None = None
    """achieved: flops_per_call x calls / time"""
    arithmetic_intensity: float | None = None
    """flops_per_call / bytes_per_call (FLOP per byte)"""
    peak: Literal["fp32", "tf32", "bf16"] | None = None
    """the compute peak it is placed under (`compute_peaks`): bf16 for kernels of 16-bit floats, else fp32"""
    bound: Literal["memory", "compute"] | None = None
    """which roof is lower at its arithmetic intensity: the copy bandwidth or the compute peak"""
    attainable_share: float | None = None
    """achieved FLOP/s over the roof at its intensity (min(peak, intensity x bandwidth)); for a kernel without
    flops, its `roofline_share`"""


class KernelProfileSummary(Model):
    """Kernel time against the measured step: `kernel_ms` <= `step_ms`."""

    profiled_steps: int | None = None
    step_ms: float | None = None
    """the rung's headline `median_ms`"""
    profiled_step_ms: float | None = None
    """a step under the profiler"""
    kernel_ms: float | None = None
    generated_ms: float | None = None
    host_overhead_ms: float | None = None
    """step_ms - kernel_ms: Python, guards, launches, allocations"""
    host_overhead_share: float | None = None
    scaled_by: float | None = None
    """step_ms / profiled_step_ms when the kernels' raw sum would exceed the step, else 1"""
    text: str | None = None


class Runtime(Model):
    """Compile time per stage, the compile timeline, the benchmark ladder, per-kernel times, CUDA graphs.

    The ladder: every rung runs its own copy of the model as loaded, seeded alike (`reference`), under
    `torch.no_grad()` unless training (`mode`). Its compared step (the first call, compile included) is judged
    against plain eager (`benchmarks[].correctness`; `max_abs_error = max|out - ref|` over all output tensors,
    `max_rel_error = max_abs_error / max|ref|`, norm-wise; the `grad_*` fields the same over parameter gradients),
    and `correctness` names the first stage that diverges.

    Timing: each rung is compiled and warmed up (at least 3 steps, 10 when a step is under 20 ms, and 0.2 s), then
    the rungs are timed in rounds interleaved across configs (A B C A B C ...). One round = `steps_per_round`
    back-to-back steps between one pair of timestamps (perf_counter; on GPU a pair of CUDA events), about 50 ms on
    CPU and 20 ms on GPU, cut short past 5x that; 7 rounds, more while a speedup is undecided (`Speedup`). **`median_ms` is
    the headline**: the median over rounds of the time per step; `p10_ms`/`p90_ms` its spread over rounds, `min_ms`
    the fastest round. Gradients are set to None inside the step (as `optimizer.zero_grad()` does); under
    reduce-overhead `cudagraph_mark_step_begin()` precedes each call of each step and outputs are not kept (the
    next replay overwrites them; the compared step clones them at once). A step is one call per example input set
    (plus backward when training). Our garbage is frozen (`gc.freeze`) and the structured trace detached before
    timing. Rungs are not separated by `torch._dynamo.reset()` (it would discard the code being compared): each
    compiles its own model copy, automatic-dynamic memory is reset before each compile, and `recompile_limit` is
    multiplied by the number of rungs so that they do not share one budget."""

    compile_seconds: CompileSeconds = Field(default_factory=CompileSeconds)
    """the recorded compile's"""
    compile_cache: CompileCache = Field(default_factory=CompileCache)
    processes: Processes = Field(default_factory=Processes)
    compile_metrics: list[CompileMetrics] = []
    compile_timeline: list[TimelineSpan] = []
    recorded_config: ConfigName | None = None
    """which config was recorded in full"""
    mode: RuntimeMode = Field(default_factory=RuntimeMode)
    reference: Reference = Field(default_factory=Reference)
    correctness: LadderCorrectness = Field(default_factory=LadderCorrectness)
    load: MachineLoad = Field(default_factory=MachineLoad)
    memory_bandwidth: MemoryBandwidth = Field(default_factory=MemoryBandwidth)
    compute_peaks: ComputePeaks = Field(default_factory=ComputePeaks)
    first_call_ms: float | None = None
    """the recorded config's first call (compile included)"""
    timing: Timing = Field(default_factory=Timing)
    benchmarks: list[Benchmark] = []
    """per config, in ladder order"""
    cudagraphs: CudaGraphs = Field(default_factory=CudaGraphs)
    """for the reduce-overhead config"""
    bisect: Bisect | None = None
    """where a rung mismatched or failed: what the compiler bisector found"""
    autotune: list[Autotune] = []
    """every autotuning decision of every rung (max-autotune's algorithm choices, Triton configs compared)"""
    kernel_profile: list[KernelProfileRow] = []
    kernel_profile_summary: KernelProfileSummary = Field(default_factory=KernelProfileSummary)
    job_seconds: float | None = None
    """wall time of the whole job, as the parent saw it"""
    not_in_log: list[str] = []
    """in a report imported from a TORCH_TRACE log: this section's fields a log cannot hold (the pages say "not in
    a TORCH_TRACE log" there); a field is listed only while empty"""


# --- top level -------------------------------------------------------------------------------------------------


class Counts(Model):
    """The report's counts: one name each, the same in the CLI, the API's run summary and the pages (labels:
    contract/counts.py)."""

    dynamo_graphs: int
    """FX graphs Dynamo captured"""
    graph_breaks: int
    """graph breaks as they occurred"""
    unique_graph_breaks: int
    """distinct graph breaks (file, line, reason)"""
    recompiles: int
    """compiles of a frame after its first"""
    guards: int | None
    """guards over all compiled frames (torch's count per frame, summed); null if torch did not report one"""
    aot_graphs: int
    """graphs AOTAutograd produced (joint, forward, backward, inference)"""
    generated_kernels: int
    """kernels Inductor generated (definitions in the output code)"""
    library_calls: int
    """calls to library kernels (extern mm/addmm, ATen fallbacks)"""


class Summary(Model):
    """The one owner of every count: computed once at the end of the job (contract.counts.summarize, called by
    engine/child.py); the CLI, the API and the pages read it and never recount."""

    counts: Counts | None = None
    """null in a report stored before the engine wrote counts (storage then computes them with the same function)"""
    kernel_names: list[str] = []
    """generated kernels, the first 20"""
    library_call_names: dict[str, int] = {}
    """`{"extern_kernels.mm": 2, ...}`"""


class LogParser(Model):
    """A reader of torch's logs and what it declared it reads (engine/logtap.py registry)."""

    name: str
    trace_events: list[str]
    artifacts: list[str]


class MalformedSample(Model):
    kind: str
    source: str
    """the event, artifact, reader or file it came from"""
    reason: str
    text: str
    """the start of the record"""


class Malformed(Model):
    """Log records that could not be read, counted instead of dropped. Kinds: `trace_json` (a payload that must
    be JSON, or starts as JSON, and does not decode: torch writes plain-string payloads as they are even under
    `encoding: "json"`, and those are read as text), `handler_error` (a record that broke the tap's handler),
    `log_format` (a TORCH_LOGS message whose formatting failed), `set_logs` (the artifacts could not be narrowed
    after the recorded compile); read back from files also `trace_line` and `log_line` (lines that are no
    record)."""

    count: int = 0
    by_kind: dict[str, int] = {}
    samples: list[MalformedSample] = []
    """the first 20"""


class Logs(Model):
    """What the log tap switched on and read. Each parser declares the trace events and TORCH_LOGS artifacts it
    reads; only declared artifacts are enabled, and after the recorded compile only those the benchmark ladder
    reads (CUDA-graph reasons)."""

    artifacts_enabled: list[str] = []
    artifacts_unknown: list[str] = []
    """declared but unknown to this torch"""
    parsers: list[LogParser] = []
    records: dict[str, int] = {}
    """records seen per trace event and per artifact"""
    malformed: Malformed = Field(default_factory=Malformed)


class Failure(Model):
    stage: StageName
    kind: FailureKind
    message: str
    file: str | None = None
    line: int | None = None
    """the user's line where there is one"""
    traceback: str = ""


class Request(Model):
    """The request and the limits this job ran under (docs/security.md)."""

    code: str
    filename: str
    device: Device
    train: bool | None
    """null: the user's file decides"""
    configs: list[ConfigName]
    time_limit_s: float
    memory_limit_mb: int | None
    """null for CUDA jobs"""
    user_code_time_limit_s: float | None = None
    """wall clock of each stage that runs only the user's code (load, eager); null in reports of engines before it"""
    stall_limit_s: float | None = None
    """after the eager run, the longest the job may go without progress (no stage begun or ended, no record of
    torch's compile logs, no timed round), plus ten eager steps; null in reports of engines before it"""
    cpu_cores: float | None = None
    """the most cores the job's processes may use together; null: the cores the worker is given"""
    cpu_time_limit_s: float | None
    """this and the limits below are null only in reports upgraded from v1 engines that had no such limit"""
    process_limit: int | None
    open_files_limit: int | None
    file_size_limit_mb: int | None
    output_limit_mb: int | None
    train_effective: bool | None = None
    """whether the job trained (null until the file was loaded)"""
    warm_compile: bool = True
    """false: the fresh warm-compile processes were not requested (`--no-warm-compile`): runtime.compile_cache's
    warmup and warm say so, and there is no runtime.processes"""
    measuring_processes: int = MEASURING_PROCESSES[0]
    """how many fresh processes the Runtime figures were asked to be taken across (`--processes`; runtime.processes
    lists those that ran)"""


class Source(Model):
    """The user's file as run."""

    filename: str = "model.py"
    code: str = ""
    path: str | None = None
    """(imported logs) the job's file as the log names it"""
    not_in_log: bool = False
    """(imported logs) true: the code is not in a TORCH_TRACE log, `code` is empty"""


class Environment(Model):
    """Where the job ran (null until the child has loaded torch; the CUDA fields are null on CPU)."""

    torch_version: str | None = None
    triton_version: str | None = None
    python_version: str | None = None
    platform: str | None = None
    device: Device | None = None
    device_name: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    num_threads: int | None = None
    cuda_version: str | None = None
    gpu_memory_gb: float | None = None
    compute_capability: str | None = None
    devices: list[str] = []
    """(imported logs) the devices of the tensors the job's compiles traced"""
    rank: int | None = None
    """(imported logs) the rank whose log this report was made of"""


class CacheEvent(Model):
    """(imported logs) one cache hit, miss or bypass the job logged."""

    event: str
    """the artifact, e.g. `fx_graph_cache_hit`, `aotautograd_cache_miss`, `fx_graph_cache_bypass`"""
    compile_id: str | None
    key: str | None = None
    cache_state: str | None = None
    cache_event_time: int | float | None = None
    time_saved_ns: int | None = None
    reason: str | None = None
    cache_bypass_reason: str | None = None
    cache_bypass_exception_type: str | None = None


class Caches(Model):
    """The compile caches during the recorded compile."""

    state: Literal["cold", "trusted kernels", "from the log"] | None = None
    """cold: each job has a new kernel cache folder; trusted kernels: a new folder holding the worker's trusted
    kernels, bound read-only (`runtime.compile_cache.cold.caches.kernels` counts the hits); from the log: an
    imported log, with the job's own caches"""
    events: list[CacheEvent] = []
    """(imported logs) the cache hits, misses and bypasses the log holds"""
    counts: dict[str, int] = {}
    """(imported logs) events per kind"""
    inductor_cache_dir_was_empty: bool | None = None
    fx_graph_cache_during_capture: bool | None = None
    """false: graph caches would hide IR, fusion and post-grad graphs"""
    autograd_cache_during_capture: bool | None = None
    note: str | None = None


class Stage(Model):
    """A finished pipeline stage."""

    name: StageName
    seconds: float
    config: RungName | None = None
    """dynamo, aot, inductor, benchmark: the config"""
    median_ms: float | None = None
    """benchmark"""
    status: Literal["ok", "failed"] | None = None
    """benchmark"""
    longest_quiet_s: float | None = None
    """the longest stretch in this stage without progress (a compile found working counts as progress), which the
    stall limit bounds (`request.stall_limit_s`); null in load and eager (the user-code limit bounds them), in
    warm_compile (its processes have limits of their own) and in reports of engines before it"""


class UserOutput(Model):
    """The tail (64 KiB) of what the user's code printed."""

    stdout: str = ""
    stderr: str = ""
    truncated: bool = False


class IsolationLimits(Model):
    time_limit_s: float | None = None
    user_code_time_limit_s: float | None = None
    stall_limit_s: float | None = None
    cpu_cores: float | None = None
    cpu_time_limit_s: float | None = None
    memory_limit_mb: int | None = None
    process_limit: int | None = None
    open_files_limit: int | None = None
    file_size_limit_mb: int | None = None
    output_limit_mb: int | None = None


class IsolationEnforcement(Model):
    """What enforced each limit in this job: `"RLIMIT_CPU"`, `"parent (wall clock)"`, `"cgroup v1 pids.max (the
    whole job)"`, `"tmpfs size of the job folder (kernel)"`, `"parent watchdog ..."`, `"not enforced ..."`."""

    time_limit_s: str | None = None
    user_code_time_limit_s: str | None = None
    stall_limit_s: str | None = None
    cpu_cores: str | None = None
    cpu_time_limit_s: str | None = None
    memory_limit_mb: str | None = None
    process_limit: str | None = None
    open_files_limit: str | None = None
    file_size_limit_mb: str | None = None
    output_limit_mb: str | None = None


class Isolation(Model):
    """Written by the parent, never the child (docs/security.md)."""

    mode: IsolationMode | None = None
    network: str | None = None
    filesystem: str | None = None
    user: str | None = None
    seccomp: str | None = None
    """what the seccomp filter denies (namespaces, mounts, keyrings, ...), or `none`"""
    shared_pch: bool | None = None
    """the trusted precompiled header was bound read-only"""
    shared_kernel_cache: str | None = None
    """the worker's trusted kernel cache bound read-only (its folder: a hash of the toolchain and the gallery files
    it was built from), or null"""
    limits: IsolationLimits = Field(default_factory=IsolationLimits)
    enforced_by: IsolationEnforcement = Field(default_factory=IsolationEnforcement)


class TimelinePhase(Model):
    """One measured phase of the job ([Vocabulary](#vocabulary) lists the phases)."""

    phase: TimelinePhaseName
    side: TimelineSide
    """who measured it: web, worker, parent (engine/job.py) or child (engine/child.py)"""
    start_s: float
    """seconds since the timeline's origin"""
    end_s: float
    depth: int = 0
    """0: a top-level phase (these follow each other and cover the job); 1: a part of the phase around it, or work
    of another side done meanwhile (the report stored while the child runs its warm compile)"""
    config: RungName | None = None
    """benchmark: the config"""
    prestart: bool = False
    """a phase of the prestart: before the job was handed to its prestarted child (sandbox, imports, memory
    bandwidth), off the job's critical path, and outside the top-level phases that cover the job's wall time"""


class Timeline(Model):
    """Where the job's wall time went: every second from the origin to the stored report is in one top-level phase,
    a gap nobody measured is an `untracked` phase. Summed per phase by `contract.timeline.phase_seconds`."""

    origin: Literal["request", "job_start"] | None = None
    """request: the run row's creation (the request leaving the web app); job_start: the engine's start (CLI)"""
    origin_unix_s: float | None = None
    wall_s: float | None = None
    """from the origin to the end of the last phase (the report stored, through the service)"""
    untracked_s: float | None = None
    """the seconds in `untracked` gaps"""
    report_stored_s: float | None = None
    """from the origin until the report was first stored and readable, when it was stored before the warm compile
    (every figure but the warm compile's): what a user waits for"""
    prestarted: bool = False
    """the job's sandboxed child was prestarted (torch imported before the job was handed to it): a new one per
    job, which served this job only (its phases before the hand-over are marked `prestart`)"""
    phases: list[TimelinePhase] = []


class Unavailable(Model):
    """A capture this torch could not make (e.g. `dynamo.decompiled_bytecode` without depyf)."""

    name: str
    reason: str


class ErrorEntry(Model):
    """A non-fatal error (e.g. one benchmark config failed)."""

    stage: str
    """a stage name, or `benchmark:<config>`"""
    message: str
    traceback: str | None = None


class MalformedLine(Model):
    line: int
    reason: str
    text: str
    """the line's first 300 characters"""


class TraceFile(Model):
    """What reading one rank's log file met."""

    name: str
    rank: int | None
    bytes: int
    """characters read (decompressed)"""
    lines: int
    records: int
    malformed: int
    """lines that are no record: counted and skipped, never fatal"""
    malformed_samples: list[MalformedLine]
    """the first 20"""
    truncated_payloads: int
    """record payloads longer than the limit (64 MiB), cut"""


class EventSample(Model):
    compile_id: str | None
    metadata: str
    """the record's JSON (at most 4000 characters)"""
    payload: str
    """its payload (at most 4000 characters)"""


class UnknownEvent(Model):
    """An event kind this importer does not draw: kept, counted, with samples."""

    event: str
    """`artifact:<name>` for artifacts"""
    count: int
    samples: list[EventSample]
    """up to 3"""


class RankSignature(Model):
    """What must agree between the ranks of one job."""

    graphs: int
    graph_code: str
    """a hash of every Dynamo graph's code"""
    graph_breaks: int
    recompiles: int
    kernels: list[str]


class RankInfo(Model):
    rank: int | None
    file: str
    id: str | None = None
    """the id of this rank's run, once stored (null from `python -m engine import`)"""
    signature: RankSignature
    differs: list[str]
    """the signature fields in which it differs from the first rank"""


class FieldDifference(Model):
    base: int | str | list[str]
    """the first rank's value"""
    this: int | str | list[str]


class RankDifference(Model):
    rank: int | None
    file: str | None = None
    """the rank's log file in the upload (null in reports imported before it was recorded)"""
    fields: list[str]
    detail: dict[str, FieldDifference]


class TraceImport(Model):
    """Only in a report imported from a TORCH_TRACE log (`python -m engine import`, `POST /api/traces`;
    engine/traceimport.py): one report per rank, every section filled from the log by the live engine's own
    parsers. Graphs are read back from their printed code (engine/readers/fxtext.py; `module_stack` is empty,
    `original_aten` absent); post-grad graphs are `inference` when the compile id has an inference graph, else
    `backward` when they read tangents; `aot.partitions` come from the joint and backward graphs; the request holds
    the import's limits. What a log cannot hold is listed per section in `not_in_log`."""

    source: str
    """the upload's name"""
    rank: int | None
    """this report's rank (from the file name `..._rank_N_...`); null for one unranked log"""
    file: TraceFile
    user_file: str | None
    """the job's own file, as the log names it"""
    event_counts: dict[str, int]
    """records per event kind"""
    unknown_events: list[UnknownEvent]
    ranks: list[RankInfo]
    """every rank of the upload, in the first rank's report; a further rank's lists the first rank and itself (a
    list of every rank in every report made an import quadratic in ranks: the pages read the whole list from the
    first rank's run)"""
    differing_ranks: list[RankDifference]
    """the ranks whose compiles differ from the first rank's (a further rank's report: itself, if it differs)"""
    not_in_log_note: str
    """the words the pages use: 'not in a TORCH_TRACE log'"""


# --- the debug section: what a compiler engineer debugging a user's report reaches for. The user's own backends
# (every call: the graph it received, its example inputs, what it returned, what it raised or printed) and the
# memory of each rung (peak, bytes saved for backward, the compression ratio against eager). Here, not in a module
# of its own: they build on Model and Graph above, and the report holds them (no import cycle).
class InputSpec(Model):
    """One example input a backend received: a tensor's metadata, or a non-tensor's type and value."""

    kind: Literal["tensor", "symint", "int", "float", "bool", "other"]
    shape: list[int | str] | None = None
    """sizes; a symbolic size is its symbol (`s0`)"""
    stride: list[int | str] | None = None
    dtype: str | None = None
    device: str | None = None
    requires_grad: bool | None = None
    value: str | None = None
    """non-tensors: the value as Python writes it (at most 200 characters)"""


class BackendCall(Model):
    """One call of a user backend: Dynamo handed it one graph (one per compiled frame, graph break and recompile)."""

    index: int
    """the n-th call of this backend, from 0"""
    compile_id: str | None
    graph: str | None
    """the graph it received: a graph id (`backend-I`, `debug.backend_graphs[I]`), drawn on the Runtime tab"""
    inputs: list[InputSpec]
    """the example inputs, in the graph's placeholder order"""
    ops: OpHistogram
    status: Literal["ok", "failed"]
    returned: str | None = None
    """what it returned, in words: `gm.forward (the graph unchanged)`, `a function make_fn.<locals>.run
    (model.py:9)`, or the type of a value that is not callable"""
    error: str | None = None
    """what it raised (or why what it returned cannot run), with the user's line"""
    line: int | None = None
    """the user's line the error was raised at"""
    traceback: str | None = None
    """from the first frame in the user's file on"""
    printed: str = ""
    """what it printed to stdout during this call (the last 4000 characters)"""
    seconds: float
    """wall time of the call (the backend's own compile)"""


class UserBackend(Model):
    """A backend the user's file defines: `backend = fn` or `backends = {"name": fn}`, a function
    `fn(gm, example_inputs)` returning a callable. Each is a rung of the ladder (`runtime.benchmarks[]` with
    `config = rung`), timed and checked like the built-in configs."""

    name: str
    rung: UserRungName
    """its rung's config name, `user:<name>`"""
    function: str
    """the function's qualified name"""
    line: int | None
    """the line of its `def` in the user's file (null for a callable defined elsewhere)"""
    calls: list[BackendCall] = []
    calls_dropped: int = 0
    """calls after the first 16, counted and not recorded"""


class SavedForBackward(Model):
    """The tensors autograd saved for backward in one training step (torch.autograd.graph.saved_tensors_hooks):
    what the forward keeps alive for the backward. Storage shared by several saved tensors counts once."""

    tensors: int
    bytes: int


class RungMemory(Model):
    """Memory of one rung's step."""

    config: RungName
    peak_bytes: int | None = None
    """the peak during one step, above what was allocated before it (see `method`)"""
    method: str | None = None
    """which figure `peak_bytes` is: `torch.cuda.max_memory_allocated` (reset before the step, CUDA caching
    allocator) or `profiler: peak of CPU allocations` (torch.profiler with profile_memory, the CPU allocator's
    allocations and frees in order)"""
    saved_for_backward: SavedForBackward | None = None
    """training only"""
    compression_ratio: float | None = None
    """eager's peak / this rung's (above 1: the compiled step needs less memory), as PyTorch's benchmark suite
    reports it beside each speedup"""
    saved_ratio: float | None = None
    """eager's bytes saved for backward / this rung's (training)"""
    error: str | None = None
    """why the rung's memory was not measured, or not all of it (a rung that failed; what the step raised; a
    CUDA-graph rung's peak on the GPU, which a replay in the graph's recorded memory pool does not show)"""


class Debug(Model):
    """Debugging aids: the user's own backends with every graph they received, and memory per rung."""

    user_backends: list[UserBackend] = []
    backend_graphs: list[Graph] = []
    """the graphs the user's backends received, in call order (graph ids `backend-I`)"""
    memory: list[RungMemory] = []
    """per rung, in ladder order"""


class Report(Model):
    """One JSON document per job, written by the engine (`engine/child.py`, via `engine/reportfile.py`) and read by
    the workers, the database and the pages. It is the one contract between them. Rules:

    - Adding a field keeps the version; removing or renaming one, or changing its meaning, bumps
      `contract.report.SCHEMA_VERSION` and adds an upgrade from the old version (contract/README.md).
    - Every key of every object is present in a validated report, even on failure, null where nothing was
      recorded; lists may be empty. Unknown keys are rejected.
    - Private torch hooks are guarded: a capture that this torch version cannot make leaves an entry in
      `unavailable` instead of failing the job.
    - Compile ids are torch's own (`"0/0"`, `"1/0"`, `"0/1"`: frame / recompile), `"0/0_1"` for a restarted
      attempt (Dynamo restarted its analysis of the frame, e.g. after a graph break). One type reads and writes
      them, `contract.compile_id.CompileId` (frame_id, frame_compile_id, attempt; it parses `0/0`, `0/0_1` and
      the log prefixes `[0/0]`, `[0/0_1]`): every `compile_id` is written in its canonical spelling, with the
      attempt where the source knew it, and joins between sections (graphs, guards, breaks, AOT graphs, kernels)
      match on `CompileId.compile_key` = (frame, frame compile id), so the pieces of a restarted compile meet
      whatever attempt each was recorded under (a graph break is seen in attempt 0, its graph in attempt 1)."""

    schema_version: SchemaVersion = SCHEMA_VERSION
    """the version of this contract the report follows (see Versions)"""
    status: Literal["running", "ok", "failed"]
    """`running` only in the partial report the child saves between stages"""
    failure: Failure | None = None
    """why the job stopped; null when it finished"""
    request: Request
    source: Source = Field(default_factory=Source)
    environment: Environment = Field(default_factory=Environment)
    caches: Caches = Field(default_factory=Caches)
    summary: Summary = Field(default_factory=Summary)
    logs: Logs = Field(default_factory=Logs)
    stages: list[Stage] = []
    """finished pipeline stages, in order"""
    dynamo: Dynamo = Field(default_factory=Dynamo)
    aot: Aot = Field(default_factory=Aot)
    inductor: Inductor = Field(default_factory=Inductor)
    runtime: Runtime = Field(default_factory=Runtime)
    debug: Debug = Field(default_factory=Debug)
    """the user's own backends and memory per rung"""
    user_output: UserOutput = Field(default_factory=UserOutput)
    isolation: Isolation = Field(default_factory=Isolation)
    """written by the parent, never the child"""
    timeline: Timeline = Field(default_factory=Timeline)
    """every second of the job, by phase and side"""
    unavailable: list[Unavailable] = []
    """captures this torch could not make"""
    errors: list[ErrorEntry] = []
    """non-fatal errors (e.g. one benchmark config failed)"""
    trace_import: TraceImport | None = None
    """only in a report imported from a TORCH_TRACE log"""


SECTIONS = tuple(Report.model_fields)


# --- reading: version check, upgrade, validation ---------------------------------------------------------------


class ReportError(ValueError):
    """A report this pt2scope cannot read; the message says why (and where)."""


class ReportVersionError(ReportError):
    pass


class InvalidReport(ReportError):
    def __init__(self, path: str, why: str, more: int = 0):
        self.path, self.why = path, why
        super().__init__(f"{path}: {why}" + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""))


_LIMITS_ADDED_IN_V1 = ("cpu_time_limit_s", "process_limit", "open_files_limit", "file_size_limit_mb", "output_limit_mb")


def _upgrade_v1(report: dict) -> dict:
    """v1 -> v2: no field was renamed or removed. v1 left keys out where v2 has them null (validation fills those
    in from the v2 defaults), and early v1 engines wrote no sandbox limits into the request: they become null.
    What v1 engines recorded in an older form gets the v2 form here, so readers know one shape: the summary's
    counts (counted from the sections, as the engine counts them), a speedup from its one median (never decided)
    and each recompile's failed guards (parsed from torch's reasons)."""
    upgraded = {**report, "schema_version": 2}
    if isinstance(report.get("request"), dict):
        upgraded["request"] = {**{name: None for name in _LIMITS_ADDED_IN_V1}, **report["request"]}
    if not (report.get("summary") or {}).get("counts"):
        upgraded["summary"] = summarize(report)
    runtime = report.get("runtime")
    if isinstance(runtime, dict) and isinstance(runtime.get("benchmarks"), list):
        upgraded["runtime"] = {**runtime, "benchmarks": [_v1_speedup(b) for b in runtime["benchmarks"]]}
    dynamo = report.get("dynamo")
    if isinstance(dynamo, dict) and isinstance(dynamo.get("recompiles"), list):
        upgraded["dynamo"] = {**dynamo, "recompiles": [_v1_failed_guards(r) for r in dynamo["recompiles"]]}
    return upgraded


def _v1_speedup(benchmark):
    """A v1 rung's one median ratio as a speedup that decides nothing (v1 timed no paired rounds)."""
    if not isinstance(benchmark, dict) or benchmark.get("speedup"):
        return benchmark
    value = benchmark.get("speedup_vs_eager")
    if benchmark.get("config") == "eager":
        speedup = {"value": 1.0, "low": 1.0, "high": 1.0, "decided": True, "verdict": "same", "text": "the baseline"}
    elif type(value) in (int, float):
        speedup = {"value": value, "text": f"not decided: no spread recorded ({value:.2f}x from one median)"}
    else:
        return benchmark
    return {**benchmark, "speedup": speedup}


_V1_REASON = re.compile(r"^(\d+/\d+(?:_\d+)?): (.*)$", re.S)


def _v1_failed_guards(recompile):
    """A v1 recompile's failed guards, read from its reasons (``"0/0: tensor 'x' size mismatch ..."``)."""
    if not isinstance(recompile, dict) or recompile.get("failed_guards"):
        return recompile
    reasons = recompile.get("reasons") or ([recompile["reason"]] if recompile.get("reason") else [])
    guards = []
    for reason in reasons:
        match = _V1_REASON.match(str(reason))
        compile_id, guard = (match.group(1), match.group(2)) if match else (None, str(reason))
        guards.append({"compile_id": compile_id, "guard": guard})
    return {**recompile, "failed_guards": guards}


def _upgrade_v2(report: dict) -> dict:
    """v2 -> v3: a v2 speedup was the capture process's own (no measuring processes)."""
    upgraded = {**report, "schema_version": 3}
    runtime = report.get("runtime")
    if isinstance(runtime, dict) and isinstance(runtime.get("benchmarks"), list):
        upgraded["runtime"] = {
            **runtime,
            "benchmarks": [
                {**b, "speedup": {**b["speedup"], "source": "capture_process"}}
                if isinstance(b, dict) and isinstance(b.get("speedup"), dict)
                else b
                for b in runtime["benchmarks"]
            ],
        }
    return upgraded


def _upgrade_v3(report: dict) -> dict:
    """v3 -> v4: a timeline phase's ``ahead`` is called ``prestart``, the memory bandwidth's ``measured_ahead``
    ``measured_in_prestart``."""
    upgraded = {**report, "schema_version": 4}
    runtime = report.get("runtime")
    bandwidth = runtime.get("memory_bandwidth") if isinstance(runtime, dict) else None
    if isinstance(runtime, dict) and isinstance(bandwidth, dict) and "measured_ahead" in bandwidth:
        renamed = {k: v for k, v in bandwidth.items() if k != "measured_ahead"}
        upgraded["runtime"] = {
            **runtime,
            "memory_bandwidth": {**renamed, "measured_in_prestart": bandwidth["measured_ahead"]},
        }
    timeline = report.get("timeline")
    if isinstance(timeline, dict) and isinstance(timeline.get("phases"), list):
        upgraded["timeline"] = {
            **timeline,
            "phases": [
                {**{k: v for k, v in p.items() if k != "ahead"}, "prestart": p["ahead"]}
                if isinstance(p, dict) and "ahead" in p
                else p
                for p in timeline["phases"]
            ],
        }
    return upgraded


UPGRADES = {1: _upgrade_v1, 2: _upgrade_v2, 3: _upgrade_v3}  # from version N to N + 1


def check_version(report) -> int:
    """The report's schema_version, if this pt2scope reads it; else ReportVersionError saying why."""
    if not isinstance(report, dict):
        raise ReportError(f"a report is a JSON object, not {type(report).__name__}")
    version = report.get("schema_version")
    if version is None:
        raise ReportVersionError("the report has no schema_version: not a pt2scope report")
    if type(version) is not int or version not in READABLE_VERSIONS:
        newer = type(version) is int and version > SCHEMA_VERSION
        raise ReportVersionError(
            f"report schema_version {version!r} is not one this pt2scope reads "
            f"({', '.join(map(str, READABLE_VERSIONS))})"
            + (": it was written by a newer pt2scope; upgrade this one to read it" if newer else "")
        )
    return version


def upgrade(report: dict) -> dict:
    """An old report (any readable version) as the current version's dict, not yet validated."""
    version = check_version(report)
    while version < SCHEMA_VERSION:
        report = UPGRADES[version](report)
        version += 1
    return report


def validate_report(report) -> Report:
    """Check the version, upgrade, and validate; raises ReportError (InvalidReport names the field's path)."""
    try:
        return Report.model_validate(upgrade(report))
    except ValidationError as exc:
        raise _invalid(exc) from None


def checked_report(report) -> dict:
    """``report`` validated and upgraded to the current version, as plain JSON data with every key present."""
    return validate_report(report).model_dump()


def _invalid(exc: ValidationError) -> InvalidReport:
    errors = exc.errors(include_url=False)
    first = errors[0]
    return InvalidReport(field_path(first["loc"]), first["msg"], len(errors) - 1)


_UNION_TAGS = {name for name, value in globals().items() if isinstance(value, type) and issubclass(value, BaseModel)}


def field_path(loc: tuple) -> str:
    """A pydantic error location as a path into the report: ``runtime.benchmarks[0].median_ms``. Union member
    tags that pydantic puts in the location (``JointMarks``, ``list[int]``) are not keys and are left out."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in _UNION_TAGS or any(c in part for c in "[]|, "):
            continue
        else:
            path += f".{part}" if path else part
    return path or "(the report)"
