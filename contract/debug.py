"""The report's `debug` section: what a compiler engineer debugging a user's report reaches for. The user's own
backends (every call: the graph it received, its example inputs, what it returned, what it raised or printed)
and the memory of each rung (peak, bytes saved for backward, the compression ratio against eager).

Imported by contract/report.py after its shared models (Model, Graph) are defined, which these build on.
"""

from typing import Literal

from contract.report import Graph, Model, OpHistogram
from contract.vocab import RungName, UserRungName


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
    """why the rung's memory was not measured"""


class Debug(Model):
    """Debugging aids: the user's own backends with every graph they received, and memory per rung."""

    user_backends: list[UserBackend] = []
    backend_graphs: list[Graph] = []
    """the graphs the user's backends received, in call order (graph ids `backend-I`)"""
    memory: list[RungMemory] = []
    """per rung, in ladder order"""
