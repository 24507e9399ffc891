"""Load the user's model file (child process only: this executes untrusted code).

Convention: top-level ``model`` (nn.Module or callable), ``example_inputs`` (a tuple of arguments, a zero-argument
callable returning one, or a list of tuples called in turn), optional ``train = True`` and ``loss_fn(output)``,
optional ``backend = fn`` / ``backends = {"name": fn}``: the user's own backends (engine/userbackends.py).
The file runs with the target device as torch's default device; modules and tensors are then moved to it, so
one file serves CPU and CUDA. Every problem raises UserCodeError naming the cause and the user's line.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import traceback
import types
from dataclasses import dataclass, field

import torch
import torch.utils._pytree as pytree

from contract.userfile import is_user_file
from contract.vocab import USER_BACKEND_NAME
from engine.reportfile import empty_dir
from engine.stages.base import Stage
from engine.stages.runtime.workload import Workload


class UserCodeError(Exception):
    """``original``: the user's exception behind it, so a limit hit inside user code (MemoryError, a failed fork)
    can still be named as that limit."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        traceback_text: str = "",
        original: BaseException | None = None,
    ):
        super().__init__(message)
        self.kind, self.message, self.file, self.line, self.traceback_text = kind, message, file, line, traceback_text
        self.original = original


@dataclass
class UserProgram:
    model: object
    inputs_list: list[tuple]
    train: bool
    loss_fn: object
    is_sequence: bool  # example_inputs was a list: the user is showing several calls (recompiles)
    train_reason: str = ""  # why this is a training or an inference job, in words (report: runtime.mode.reason)
    backends: dict = field(default_factory=dict)  # name -> the user's backend fn(gm, example_inputs), in file order


def user_line(exc: BaseException, filename: str) -> int | None:
    """The innermost line of the user's file in an exception's traceback."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if is_user_file(frame.filename, filename):
            line = frame.lineno
    return line


def describe(exc: BaseException, filename: str) -> tuple[str, int | None]:
    """'ValueError: bad value (model.py:12)'."""
    line = user_line(exc, filename)
    where = f" ({filename}:{line})" if line else ""
    return f"{type(exc).__name__}: {exc}{where}", line


def user_traceback(exc: BaseException, filename: str) -> str:
    """The traceback from the first frame in the user's file on: what the user needs, not our machinery."""
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, f in enumerate(frames) if is_user_file(f.filename, filename)), 0)
    return "".join(traceback.format_list(frames[first:]) + traceback.format_exception_only(exc))[-8000:]


def load(source: str, filename: str, device: str, train_override: bool | None) -> UserProgram:
    code = _compiled(source, filename)
    module = types.ModuleType("user_model")
    module.__file__ = filename
    sys.modules["user_model"] = module  # classes defined by the user pickle and inspect like any module's
    namespace = module.__dict__
    try:
        with torch.device(device):
            exec(code, namespace)
            model, inputs_list, is_sequence = _model_and_inputs(namespace, filename)
    except UserCodeError:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt from user code too
        message, line = describe(exc, filename)
        raise UserCodeError(
            "user_exception",
            f"running {filename} raised {message}",
            file=filename,
            line=line,
            traceback_text=user_traceback(exc, filename),
            original=exc,
        ) from None

    if isinstance(model, torch.nn.Module):
        model = model.to(device)
    inputs_list = [pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), args) for args in inputs_list]
    train, reason = _train_choice(namespace, filename, train_override)
    loss_fn = namespace.get("loss_fn")
    if loss_fn is not None and not callable(loss_fn):
        raise UserCodeError("bad_value", "`loss_fn` must be a function of the model's output", file=filename)
    backends = user_backends(namespace, filename, lambda name: assignment_line(source, name))
    return UserProgram(model, inputs_list, train, loss_fn, is_sequence, reason, backends)


def _compiled(source: str, filename: str):
    try:
        return compile(source, filename, "exec")
    except SyntaxError as exc:
        raise UserCodeError(
            "syntax_error",
            f"SyntaxError: {exc.msg} ({filename}:{exc.lineno})",
            file=filename,
            line=exc.lineno,
            traceback_text="".join(traceback.format_exception_only(exc)),
        ) from None


def _model_and_inputs(namespace: dict, filename: str) -> tuple:
    """(model, the list of argument tuples, whether example_inputs was a list of them) from the file's names; runs
    user code (``example_inputs`` may be a function), so the caller reports what it raises."""
    for name, hint in (
        ("model", "an nn.Module instance or any callable, e.g. `model = MyModule()`"),
        ("example_inputs", "a tuple of arguments, e.g. `example_inputs = (torch.randn(8, 8),)`"),
    ):
        if name not in namespace:
            raise UserCodeError("missing_name", f"{filename} defines no top-level `{name}`: add {hint}", file=filename)
    model = namespace["model"]
    if not callable(model):
        raise UserCodeError(
            "bad_value", f"`model` must be an nn.Module or a callable, not {type(model).__name__}", file=filename
        )
    inputs = namespace["example_inputs"]
    is_sequence = isinstance(inputs, list)
    if callable(inputs) and not isinstance(inputs, torch.Tensor):
        inputs = inputs()
    inputs_list = [_as_args(i, filename) for i in (inputs if isinstance(inputs, list) else [inputs])]
    if not inputs_list:
        raise UserCodeError("bad_value", "`example_inputs` is an empty list: give at least one tuple", file=filename)
    return model, inputs_list, is_sequence


def _train_choice(namespace: dict, filename: str, train_override: bool | None) -> tuple[bool, str]:
    """Whether the job trains, and why in words: the request's choice, else the file's ``train``, else inference."""
    train = bool(namespace.get("train", False)) if train_override is None else train_override
    if train_override is not None:
        reason = f"the request asked for {'training' if train else 'inference'} (train={train_override})"
    elif "train" in namespace:
        reason = f"{filename} sets `train = {namespace['train']!r}`"
    else:
        reason = f"{filename} does not set `train`: inference, as under `with torch.no_grad():`"
    if not train:
        reason += "; compiled, checked and timed under torch.no_grad()"
    return train, reason


def assignment_line(source: str, name: str) -> int | None:
    """The line of the last top-level statement that assigns ``name`` (``name = ...``), or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = [
        node.lineno
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id == name
    ]
    return lines[-1] if lines else None


def entry_point(model, source: str, filename: str) -> dict:
    """The user's name and line for what pt2scope compiles (``model``), for naming a compiled frame that is torch's
    own code: torch.compile runs a module whose forward is torch's (nn.Sequential, nn.Linear) through a wrapper
    frame, ``inner`` in torch/_dynamo/external_utils.py, and Dynamo then names that frame.

    {function, file, line}: a function or a module whose forward is in the user's file is named by its code
    ("scaled", "Net.forward") at its def line; any other module or callable by the variable and its class
    ("model (torch.nn.Sequential)", "model (MySeq)") at the line that assigns ``model`` (line null if none does)."""
    try:
        function = model.forward if isinstance(model, torch.nn.Module) else model
        code = getattr(getattr(function, "__func__", function), "__code__", None)
        if code is not None and is_user_file(code.co_filename, filename):
            if isinstance(model, torch.nn.Module):
                name = f"{type(model).__qualname__}.forward"
            else:
                name = getattr(code, "co_qualname", code.co_name)  # Python 3.11+
            return {"function": name, "file": filename, "line": code.co_firstlineno}
        named = model if not isinstance(model, torch.nn.Module) and hasattr(model, "__qualname__") else type(model)
        return {"function": f"model ({_class_name(named)})", "file": filename, "line": _model_line(source)}
    except Exception:  # noqa: BLE001 - a name for the pages, never a reason to fail the job
        return {"function": "model", "file": filename, "line": _model_line(source)}


def _class_name(cls) -> str:
    """torch's classes by their public name (torch.nn.Sequential, not torch.nn.modules.container.Sequential); the
    user's by their own; a function (torch.sin) likewise."""
    module = getattr(cls, "__module__", "") or ""
    if module == "user_model" or module == "builtins":
        return cls.__qualname__
    for namespace, public in ((torch.nn, "torch.nn"), (torch, "torch")):
        if module.startswith("torch") and getattr(namespace, cls.__name__, None) is cls:
            return f"{public}.{cls.__name__}"
    return f"{module}.{cls.__qualname__}" if module else cls.__qualname__


def _model_line(source: str) -> int | None:
    """The line of the last top-level statement that assigns ``model`` (the binding pt2scope reads)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    line = None
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "model" for t in targets):
            line = node.lineno
    return line


def _as_args(value, filename: str) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, torch.Tensor):
        return (value,)  # a lone tensor is the common slip: accept it as one argument
    raise UserCodeError(
        "bad_value",
        f"`example_inputs` must be a tuple of arguments (or a list of tuples), not "
        f"{type(value).__name__}, e.g. `example_inputs = (torch.randn(8, 8),)`",
        file=filename,
    )


class LoadStage(Stage):
    """The user's file: loaded, checked, moved to the device; the context and workload every later stage uses."""

    name = "load"

    def run(self, job) -> None:
        from engine.logtap import LogTap
        from engine.reportfile import environment
        from engine.stages.base import Context

        t0 = job.begin("load")
        req = job.request
        device, filename = req["device"], req["filename"]
        job.report["environment"] = environment(torch, device)
        # Empty, or holding only the worker's trusted kernels (bound read-only: engine.sandbox.publish_kernel_cache).
        was_empty = empty_dir(os.environ.get("TORCHINDUCTOR_CACHE_DIR"))
        job.report["caches"] = {
            "state": "cold" if was_empty else "trusted kernels",
            "inductor_cache_dir_was_empty": was_empty,
            "fx_graph_cache_during_capture": False,
            "autograd_cache_during_capture": False,
            "note": (
                "each job has its own new kernel cache folder"
                + (
                    ""
                    if was_empty
                    else ", holding the worker's trusted kernels (built from the gallery at its start, bound "
                    "read-only; runtime.compile_cache.cold.caches.kernels counts the hits)"
                )
                + "; graph caches are off for the recorded compile so IR, fusion and post-grad graphs are always "
                "produced; benchmark compiles may reuse its kernels"
            ),
        }
        if device == "cuda" and not torch.cuda.is_available():
            raise UserCodeError("no_device", "this worker has no CUDA device: choose device cpu")
        with open(os.path.join(job.job_dir, filename)) as f:
            source = f.read()
        job.user_code_starts()
        program = load(source, filename, device, req.get("train"))
        job.report["request"]["train_effective"] = program.train
        state = job.state
        state.program = program
        state.ctx = Context(
            user_file=filename,
            device=device,
            train=program.train,
            tap=LogTap(on_record=job.stall.mark),
            emit=job.emit,
            progress=job.stall.mark,
        )
        state.ctx.entry = entry_point(program.model, source, filename)
        state.workload = Workload(program.model, program.inputs_list, program.train, program.loss_fn, device)
        state.watches = {}  # config -> CUDA-graph watch of its rung
        job.end("load", t0)


def user_failure(exc, filename, doing):
    message, line = describe(exc, filename)
    hint, model_line = _training_without_grad(exc, filename)
    return UserCodeError(
        "user_exception",
        f"{message} while {doing}{hint}",
        file=filename,
        line=line or model_line,
        traceback_text=user_traceback(exc, filename),
        original=exc,
    )


def _training_without_grad(exc: BaseException, filename: str) -> tuple[str, int | None]:
    """A training step whose output needs no gradient ("element 0 of tensors does not require grad"): torch names
    no line of the user's, so the hint names the model's forward (its def line) and what to change. ("", None)
    for any other failure."""
    if not isinstance(exc, RuntimeError) or "does not require grad" not in str(exc):
        return "", None
    model = getattr(sys.modules.get("user_model"), "model", None)
    function = model.forward if isinstance(model, torch.nn.Module) else model
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    line = code.co_firstlineno if code is not None and is_user_file(code.co_filename, filename) else None
    name = f"{type(model).__name__}.forward" if isinstance(model, torch.nn.Module) else getattr(model, "__name__", "")
    where = f" ({filename}:{line})" if line else ""
    return (
        f". Training calls .backward() on what {name or 'the model'}{where} returns, and that depends on nothing "
        "that requires grad: the model has no parameter and no input has requires_grad=True. Run it as "
        "inference (choose inference on the form, or set train = False in the file), or train a model that has "
        "parameters (an nn.Module with layers)",
        line,
    )


def compile_failure(exc, filename, stage):
    """torch.compile failed: name the stage (Dynamo, AOTAutograd, Inductor) and the user's line."""
    message, line = describe(exc, filename)
    kind = "compile_error"
    if isinstance(exc, getattr(torch._dynamo.exc, "BackendCompilerFailed", ())):
        kind = "backend_compile_error"
    return UserCodeError(
        kind,
        f"torch.compile failed in stage '{stage}': {message}",
        file=filename,
        line=line,
        traceback_text=user_traceback(exc, filename) + "\n" + traceback.format_exc()[-4000:],
        original=exc,
    )


def user_backends(namespace: dict, filename: str, line_of) -> dict:
    """The backends a user file defines, by name: ``backend = fn`` (named after the function) and ``backends =
    {"name": fn}``. ``line_of(name)``: the line that assigns a top-level name (for errors). Raises UserCodeError
    for a value that is not one."""
    found: dict = {}

    def bad(name: str, why: str):
        line = line_of(name)
        where = f" ({filename}:{line})" if line else ""
        return UserCodeError("bad_value", f"`{name}`{where} {why}", file=filename, line=line)

    single = namespace.get("backend")
    if single is not None:
        if not callable(single):
            raise bad(
                "backend",
                f"must be a function fn(gm, example_inputs) that returns a callable, not {type(single).__name__}"
                + (
                    " (built-in backends are chosen as configs on the form, not in the file)"
                    if isinstance(single, str)
                    else ""
                ),
            )
        name = getattr(single, "__name__", "")
        found[name if re.fullmatch(USER_BACKEND_NAME, name) else "backend"] = single
    several = namespace.get("backends")
    if several is not None:
        if not isinstance(several, dict):
            raise bad("backends", f'must be a dict {{"name": fn}}, not {type(several).__name__}')
        for name, fn in several.items():
            if not (isinstance(name, str) and re.fullmatch(USER_BACKEND_NAME, name)):
                raise bad(
                    "backends", f"has the name {name!r}: a backend's name is a Python identifier of up to 40 characters"
                )
            if not callable(fn):
                raise bad("backends", f"maps {name!r} to {type(fn).__name__}, not a function fn(gm, example_inputs)")
            if name in found and found[name] is not fn:
                raise bad("backends", f"names {name!r} twice (once as `backend`): give each backend its own name")
            found[name] = fn
    return found
