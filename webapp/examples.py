"""The gallery: the example files in examples/, read from disk when asked (never copied)."""

from __future__ import annotations

import ast
import os
import re

# The gallery's order: the seed first, one example per compiler topic, then the library models (torchvision,
# transformers); any other file follows by name.
ORDER = (
    "seed",
    "graph_break",
    "inplace_views",
    "mlp_train",
    "attention",
    "conv_bn",
    "recompile",
    "custom_backend",
    "resnet18",
    "hf_bert",
)
NAME = re.compile(r"^[a-z0-9_]+$")


def list_examples(directory: str) -> list[dict]:
    try:
        names = [f[:-3] for f in os.listdir(directory) if f.endswith(".py") and NAME.match(f[:-3])]
    except FileNotFoundError:
        return []
    names.sort(key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    return [{"name": name, "title": _title(read_example(directory, name)) or name} for name in names]


def read_example(directory: str, name: str) -> str | None:
    if not NAME.match(name):
        return None
    try:
        with open(os.path.join(directory, f"{name}.py"), encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _title(code: str | None) -> str:
    """The first line of the module docstring (the file is parsed, never run); "" for a file gone meanwhile."""
    if code is None:
        return ""
    try:
        docstring = ast.get_docstring(ast.parse(code)) or ""
    except SyntaxError:
        return ""
    return docstring.strip().splitlines()[0] if docstring.strip() else ""
