"""Load the user's model file (child process only: this executes untrusted code).

Convention: top-level ``model`` (nn.Module or callable), ``example_inputs`` (a tuple of arguments, a zero-argument
callable returning one, or a list of tuples called in turn), optional ``train = True`` and ``loss_fn(output)``.
The file runs with the target device as torch's default device; modules and tensors are then moved to it, so
one file serves CPU and CUDA. Every problem raises UserCodeError naming the cause and the user's line.
"""
from __future__ import annotations

import sys
import traceback
import types
from dataclasses import dataclass

import torch
import torch.utils._pytree as pytree

from contract.userfile import is_user_file


class UserCodeError(Exception):
    """``original``: the user's exception behind it, so a limit hit inside user code (MemoryError, a failed fork)
    can still be named as that limit."""

    def __init__(self, kind: str, message: str, *, file: str | None = None, line: int | None = None,
                 traceback_text: str = "", original: BaseException | None = None):
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
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise UserCodeError("syntax_error", f"SyntaxError: {exc.msg} ({filename}:{exc.lineno})", file=filename,
                            line=exc.lineno, traceback_text="".join(traceback.format_exception_only(exc))) from None

    module = types.ModuleType("user_model")
    module.__file__ = filename
    sys.modules["user_model"] = module  # classes defined by the user pickle and inspect like any module's
    try:
        with torch.device(device):
            exec(code, module.__dict__)
            namespace = module.__dict__
            for name, hint in (("model", "an nn.Module instance or any callable, e.g. `model = MyModule()`"),
                               ("example_inputs", "a tuple of arguments, e.g. `example_inputs = (torch.randn(8, 8),)`")):
                if name not in namespace:
                    raise UserCodeError("missing_name", f"{filename} defines no top-level `{name}`: add {hint}",
                                        file=filename)
            model = namespace["model"]
            if not callable(model):
                raise UserCodeError("bad_value", f"`model` must be an nn.Module or a callable, not "
                                                 f"{type(model).__name__}", file=filename)
            inputs = namespace["example_inputs"]
            is_sequence = isinstance(inputs, list)
            if callable(inputs) and not isinstance(inputs, torch.Tensor):
                inputs = inputs()
            inputs_list = [_as_args(i, filename) for i in (inputs if isinstance(inputs, list) else [inputs])]
            if not inputs_list:
                raise UserCodeError("bad_value", "`example_inputs` is an empty list: give at least one tuple",
                                    file=filename)
    except UserCodeError:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt from user code too
        message, line = describe(exc, filename)
        raise UserCodeError("user_exception", f"running {filename} raised {message}", file=filename, line=line,
                            traceback_text=user_traceback(exc, filename), original=exc) from None

    if isinstance(model, torch.nn.Module):
        model = model.to(device)
    inputs_list = [pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), args) for args in inputs_list]
    train = bool(namespace.get("train", False)) if train_override is None else train_override
    loss_fn = namespace.get("loss_fn")
    if loss_fn is not None and not callable(loss_fn):
        raise UserCodeError("bad_value", "`loss_fn` must be a function of the model's output", file=filename)
    return UserProgram(model, inputs_list, train, loss_fn, is_sequence)


def _as_args(value, filename: str) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, torch.Tensor):
        return (value,)  # a lone tensor is the common slip: accept it as one argument
    raise UserCodeError("bad_value", f"`example_inputs` must be a tuple of arguments (or a list of tuples), not "
                                     f"{type(value).__name__}, e.g. `example_inputs = (torch.randn(8, 8),)`",
                        file=filename)
