"""A kernel all the way down (issue 24): every Triton IR stage of each generated Triton kernel with its line map,
the autotuning Inductor did (candidates, measured times, the one chosen), the worker's measured peaks and each
kernel's place on the roofline.

Report fields: `inductor.triton_ir` (TritonKernelIR per Triton kernel), `inductor.autotune` (AutotuneOp per
autotuned op or kernel), `inductor.kernels[].flops` and `runtime.roofline` (Roofline: the peaks and one point per
timed kernel). Written by engine/tritonir.py, engine/autotune.py and engine/measure/roofline.py.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contract.vocab import ConfigName, Device, GraphKind

IrStageName = Literal["ttir", "ttgir", "llir", "ptx", "sass"]
IR_STAGES: tuple[IrStageName, ...] = ("ttir", "ttgir", "llir", "ptx", "sass")
MAX_IR_CHARS = 300_000  # one stage's text kept in a report; a longer one is cut (`truncated`)


class _Model(BaseModel):
    # The settings of contract.report.Model, which imports this module (so it cannot be imported from here).
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


# --- Triton IRs ---------------------------------------------------------------------------------------------


class IrStage(_Model):
    """One stage of a Triton kernel's compile, as Triton wrote it into its cache (SASS: disassembled from the
    cubin)."""

    stage: IrStageName
    text: str
    """the stage's text, at most 300,000 characters"""
    truncated: bool = False
    line_sources: list[int] = []
    """for each line of `text` (in order), the line of the kernel's Triton source (`inductor.kernels[].source`,
    1-based) it was generated from, 0 where the IR says none: read from the IR's own location info (TTIR/TTGIR
    `loc(...)`, LLIR `!DILocation`, PTX `.loc`, SASS `//## File ..., line N`); inlined helpers count at the line of
    the kernel that called them"""
    mapped_lines: int = 0
    """lines of `text` tied to a source line"""


class IrUnavailable(_Model):
    stage: IrStageName
    reason: str


class TritonMetadata(_Model):
    """What Triton and the driver say about the launched binary."""

    num_warps: int | None = None
    num_stages: int | None = None
    num_ctas: int | None = None
    shared_bytes: int | None = None
    """static shared memory per block (Triton's metadata `shared`)"""
    registers: int | None = None
    """registers per thread: the driver's count where the kernel was loaded, else the cubin's (`cuobjdump
    -res-usage`)"""
    spills: int | None = None
    """registers spilled (the driver's `n_spills`); null where the kernel was never loaded"""
    local_bytes: int | None = None
    """local memory per thread (cubin's LOCAL: where spills go)"""
    stack_bytes: int | None = None
    target: str | None = None
    """e.g. `cuda sm_90`"""
    triton_version: str | None = None
    block: dict[str, int] = {}
    """the launched config's block sizes (XBLOCK, RBLOCK, BLOCK_M, ...)"""
    registers_from: Literal["driver", "cubin"] | None = None


class TritonKernelIR(_Model):
    """Every IR stage of one generated Triton kernel (`inductor.kernels[]` by name), for the config it launched
    with."""

    kernel: str
    compile_id: str | None
    graph_kind: GraphKind
    cache_key: str | None = None
    """the folder of Triton's cache the stages were read from"""
    variants: int = 0
    """compiled variants of this kernel found in the cache (one per autotuning config)"""
    chosen_by: Literal["launched", "only variant", "first found"] | None = None
    """how the variant shown was picked: the one the autotuner launched, the only one, or (neither known) the first"""
    source_file: str | None = None
    """the file the locations name (Inductor's copy of the kernel source)"""
    source_offset: int | None = None
    """location line - kernel source line; null where the file could not be read (then 0 is assumed)"""
    stages: list[IrStage] = []
    unavailable: list[IrUnavailable] = []
    """stages that could not be had, and why (e.g. no disassembler on the worker)"""
    metadata: TritonMetadata = Field(default_factory=TritonMetadata)


# --- autotuning ---------------------------------------------------------------------------------------------


class AutotuneCandidate(_Model):
    name: str
    kind: Literal["triton template", "aten", "cpp template", "cutlass", "triton config", "other"]
    description: str | None = None
    """the template's settings (block sizes, warps, stages) or the config's"""
    time_ms: float | None = None
    """as Inductor benchmarked it; null: it failed or was not benchmarked"""
    chosen: bool = False


class AutotuneOp(_Model):
    """One choice Inductor measured: an op lowered through its algorithm selector (max-autotune: templates
    against ATen), or an autotuned Triton kernel's configs."""

    config: ConfigName | None
    """the ladder rung whose compile (or first run) measured it"""
    source: Literal["select_algorithm", "triton configs"]
    op: str
    """the op (`mm`, `addmm`, `convolution`) or the Triton kernel's name"""
    inputs: list[str] = []
    """the input shapes and dtypes, e.g. `f32[64, 128]`"""
    candidates: list[AutotuneCandidate] = []
    """fastest first"""
    chosen: str | None = None
    text: str | None = None


# --- roofline -----------------------------------------------------------------------------------------------


class DevicePeaks(_Model):
    """The worker's ceilings, measured once per job before it (by the prestarted child where there is one)."""

    device: Device | None = None
    device_name: str | None = None
    bytes_per_s: float | None = None
    """copy bandwidth (`runtime.memory_bandwidth`)"""
    flops_per_s: dict[str, float] = {}
    """matmul throughput per dtype (`float32`, `tf32`, `bfloat16`)"""
    method: str | None = None
    measured_ahead: bool = False


class RooflinePoint(_Model):
    kernel: str
    dtype: str | None = None
    """the dtype of the kernel's nodes (which FLOP/s peak it is held to)"""
    time_ms: float
    """per step, as profiled"""
    calls: int
    bytes: int | None = None
    """per call (`inductor.kernels[].bytes_accessed`)"""
    flops: int | None = None
    """per call (`inductor.kernels[].flops`)"""
    bytes_per_s: float | None = None
    flops_per_s: float | None = None
    intensity: float | None = None
    """FLOPs per byte; null without FLOPs"""
    bound: Literal["memory", "compute"] | None = None
    """below the ridge point (peak FLOP/s / bandwidth) or with no FLOPs counted: memory"""
    fraction_of_limit: float | None = None
    """achieved / the roof at this intensity (bandwidth for memory-bound, FLOP/s for compute-bound)"""


class Roofline(_Model):
    """Each timed generated kernel against the worker's peaks. FLOPs are torch.utils.flop_counter's on the
    post-grad nodes fused into the kernel (it counts matmuls, convolutions and attention; a pointwise or reduction
    kernel counts 0 and is placed by its bandwidth alone)."""

    peaks: DevicePeaks = Field(default_factory=DevicePeaks)
    points: list[RooflinePoint] = []
    text: str | None = None
    """in words: which kernels are memory-bound and how far from the limit"""
