"""No function of the product's packages is longer than 60 lines unless it is named here with the reason: a
function that long usually does several things, each of which deserves a name (issue 19)."""

import ast
import os

from tests.test_layers import OURS, ROOT

MAX_LINES = 60
# "path:function": why it stays long.
LONG_ON_PURPOSE = {
    "storage/migrations/versions/0001_initial.py:upgrade": "the first schema, one table after another",
}


def long_functions(root: str = ROOT) -> dict[str, int]:
    """{"path:function": lines} of every function over MAX_LINES lines in OURS' files under ``root``."""
    found = {}
    for package in sorted(OURS):
        for folder, _, files in os.walk(os.path.join(root, package)):
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, name)
                with open(path) as f:
                    tree = ast.parse(f.read())
                for node in ast.walk(tree):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        lines = node.end_lineno - node.lineno + 1
                        if lines > MAX_LINES:
                            found[f"{os.path.relpath(path, root)}:{node.name}"] = lines
    return found


def test_no_function_is_longer_than_60_lines_without_a_reason():
    unexplained = {where: lines for where, lines in long_functions().items() if where not in LONG_ON_PURPOSE}
    assert unexplained == {}, f"split these, or name them in LONG_ON_PURPOSE with the reason: {unexplained}"


def test_the_length_check_sees_methods_and_nested_functions(tmp_path, monkeypatch):
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "webapp").mkdir()
    (tmp_path / "webapp" / "views.py").write_text(f"class Page:\n    def draw(self):\n{body}\n        return x0\n")
    assert long_functions(str(tmp_path)) == {"webapp/views.py:draw": MAX_LINES + 2}
