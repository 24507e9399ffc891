"""Validation of a new run, shared by the form and the API: every error is named by its field, and nothing is
queued unless all fields are valid. The code is parsed (never run) here, so a syntax error, or a file that cannot
define `model` or `example_inputs` (never_defined), is answered at once instead of after a wait in the queue;
everything else about the code is the engine's to report."""

from __future__ import annotations

import ast
import os

from contract.vocab import CONFIGS, ConfigError, parse_configs
from storage.runstore import QUEUE_FOR_DEVICE, Submission

DEVICE_LABELS = {"cpu": "CPU", "cuda": "CUDA GPU"}
TRAIN_CHOICES = {"auto": None, "inference": False, "training": True}  # form values -> JobRequest.train


def validate(data: dict, *, max_code_bytes: int, online_queues: set[str]) -> tuple[Submission | None, dict]:
    """``data``: code, filename, device, train (bool/None or a TRAIN_CHOICES key), configs (list of names), fresh
    (measure again rather than answer from an identical run)."""
    errors: dict[str, str] = {}
    code = data.get("code")
    code = code if isinstance(code, str) else ""
    filename = os.path.basename(str(data.get("filename") or "model.py"))
    if (code_error := _code_error(code, filename, max_code_bytes)) is not None:
        errors["code"] = code_error
    if not _is_unicode_text(filename) or "\0" in filename:
        errors["filename"] = "The file name is not valid text (a lone surrogate or a NUL character)."
    elif not filename.endswith(".py") or len(filename) > 100:
        errors["filename"] = "The file name must end in .py (at most 100 characters)."

    device = data.get("device") or "cpu"
    if device not in QUEUE_FOR_DEVICE:
        errors["device"] = f"Unknown device {device!r}: choose {' or '.join(QUEUE_FOR_DEVICE)}."
    elif QUEUE_FOR_DEVICE[device] not in online_queues and device != "cpu":
        # CPU runs may wait for a worker; a GPU run would wait for hardware that may never come.
        errors["device"] = "No GPU worker is online right now: choose CPU."

    train = data.get("train")
    if isinstance(train, str):
        if train not in TRAIN_CHOICES:
            errors["train"] = f"Choose one of {', '.join(TRAIN_CHOICES)}."
        train = TRAIN_CHOICES.get(train)
    elif train is not None and not isinstance(train, bool):
        errors["train"] = "train must be true, false or null."

    configs = data.get("configs") or []
    if not isinstance(configs, list) or not all(isinstance(c, str) for c in configs):
        errors["configs"] = "configs must be a list of config names."
    elif "device" not in errors:
        try:
            configs = parse_configs(configs, device)
        except ConfigError as exc:
            errors["configs"] = str(exc)
    fresh = data.get("fresh", False)
    if not isinstance(fresh, bool):
        errors["fresh"] = "fresh must be true or false."
    if errors:
        return None, errors
    return Submission(code=code, filename=filename, device=device, train=train, configs=configs, fresh=fresh), {}


def _code_error(code: str, filename: str, max_code_bytes: int) -> str | None:
    """Why the code cannot be run, in words (None if it can be queued): empty, not text, too large, not Python,
    or missing a name the engine needs."""
    if not code.strip():
        return "Paste or upload a Python file that defines `model` and `example_inputs`."
    if not _is_unicode_text(code):
        return (
            "The code is not valid Unicode text: it contains a lone surrogate (half of a UTF-16 "
            "pair, such as \\ud800), which no Python file can hold."
        )
    if len(code.encode("utf-8")) > max_code_bytes:
        return f"The code is larger than {max_code_bytes // 1024} KiB, the limit for a model."
    if "\0" in code:
        return "The code contains NUL bytes: send Python source text (checkpoints and pickles are never loaded)."
    if (syntax := syntax_error(code, filename)) is not None:
        return syntax["text"]
    if missing := never_defined(code):
        return (
            f"The file never defines {' or '.join(f'`{name}`' for name in missing)}: add "
            + "; ".join(REQUIRED_NAMES[name] for name in missing)
            + ". Nothing was run or queued."
        )
    return None


def _is_unicode_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def syntax_error(code: str, filename: str) -> dict | None:
    """The code's first syntax error as {line, column, message, code, text}, found by parsing it (ast.parse
    compiles nothing and runs nothing); None when it parses. Code too deeply nested for the parser is left to
    the engine."""
    try:
        ast.parse(code, filename=filename)
    except SyntaxError as exc:
        lines = code.splitlines()
        line = exc.lineno if isinstance(exc.lineno, int) else None
        source = lines[line - 1].strip() if line and 0 < line <= len(lines) else ""
        where = f"line {line}" + (f", column {exc.offset}" if exc.offset else "") if line else "the code"
        return {
            "line": line,
            "column": exc.offset,
            "message": exc.msg,
            "code": source,
            "text": f"Syntax error at {where} of {filename}: {exc.msg}"
            + (f": {source}" if source else "")
            + ". Nothing was run or queued.",
        }
    except (RecursionError, MemoryError, ValueError):
        return None
    return None


# What the engine needs of a user's file (engine/usercode.py), and how to give it.
REQUIRED_NAMES = {
    "model": "`model = ...`, an nn.Module instance or any callable, e.g. `model = MyModule()`",
    "example_inputs": "`example_inputs = ...`, a tuple of arguments, e.g. `example_inputs = (torch.randn(8, 8),)`",
}
# Names through which a file may bind a top-level name without a statement that names it.
_DYNAMIC_BINDERS = {"globals", "vars", "locals", "exec", "eval", "setattr", "__import__", "importlib", "sys", "compile"}


def never_defined(code: str) -> list[str]:
    """The names of REQUIRED_NAMES that the file certainly never defines, by a static reading (nothing runs).
    It over-approximates: a name counts as defined if anything anywhere in the file could bind it (an assignment
    or walrus, def, class, import, for, with, except ... as, a match capture, a ``global`` declaration, an
    attribute of that name set on any object, as on the module itself); and nothing is missing when the file
    could bind names without naming them (``from m import *``, globals(), vars(), exec, setattr, sys.modules, a
    ``__dict__``). So it refuses only a file that cannot define the name. Code that does not parse is the syntax
    check's."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return []
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return []
        if isinstance(node, ast.Name) and node.id in _DYNAMIC_BINDERS:
            return []
        if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "modules"):
            return []
        bound.update(_names_bound_by(node))
    return [name for name in REQUIRED_NAMES if name not in bound]


def _names_bound_by(node) -> set[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return {node.id}
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        return {node.attr}  # some_module.model = ...
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return set(node.names)
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    return set()


def config_choices() -> list[dict]:
    return [{"name": c.name, "label": c.label} for c in CONFIGS.values()]
