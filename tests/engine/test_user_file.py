"""One rule for "is this frame the user's file" (contract/userfile.py), used by every engine and page helper."""

import json
import os

import pytest

from contract.userfile import is_user_file
from engine.readers.nodes import user_frames
from engine.usercode import user_line, user_traceback

# The same table the pages' copy of the rule is tested with (tests/js/user-file.test.js).
with open(os.path.join(os.path.dirname(__file__), "..", "fixtures", "user_file_cases.json")) as f:
    CASES = json.load(f)


@pytest.mark.parametrize("path, filename, expected", CASES)
def test_is_user_file(path, filename, expected):
    assert is_user_file(path, filename) is expected


def _raise_through(first_file: str, first_code: str, user_file: str, user_code: str) -> BaseException:
    namespace = {}
    exec(compile(first_code, first_file, "exec"), namespace)
    exec(compile(user_code, user_file, "exec"), namespace)
    try:
        namespace["outer"](namespace["inner"])
    except Exception as exc:  # noqa: BLE001 - whatever was raised is what the helpers read
        return exc
    raise AssertionError("nothing raised")


def test_the_user_traceback_starts_at_the_user_file_not_at_a_name_that_ends_like_it():
    exc = _raise_through(
        "/opt/lib/my_model.py",
        "def outer(f):\n    return f()\n",
        "model.py",
        "def inner():\n    raise ValueError('bad')\n",
    )
    text = user_traceback(exc, "model.py")
    assert "my_model.py" not in text and 'File "model.py", line 2' in text and "ValueError: bad" in text


def test_a_user_file_named_like_a_library_module_gets_its_own_line():
    exc = _raise_through(
        "utils.py",
        "def outer(f):\n    return f()\n",
        "/venv/lib/python3.11/site-packages/torch/_dynamo/utils.py",
        "\n\ndef inner():\n    raise RuntimeError('deep in torch')\n",
    )
    assert user_line(exc, "utils.py") == 2


def test_node_provenance_keeps_only_the_user_frames():
    trace = (
        '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/utils.py", line 9, in forward\n'
        "    return self.f(x)\n"
        '  File "utils.py", line 4, in forward\n    return x.sin()\n'
    )
    assert user_frames(trace, "utils.py") == [
        {"file": "utils.py", "line": 4, "func": "forward", "code": "return x.sin()"}
    ]


def test_a_training_step_that_needs_no_grad_names_the_models_forward_and_says_what_to_do(monkeypatch, tmp_path):
    """torch names no line of the user's for "element 0 of tensors does not require grad": the error names the
    model's forward (its def line in the user's file) and the two ways out. torch raises the real error here."""
    import sys
    import types

    import torch

    from engine.usercode import user_failure

    code = "import torch\n\n\nclass Sines(torch.nn.Module):\n    def forward(self, x):\n        return x.sin()\n"
    module = types.ModuleType("user_model")
    exec(compile(code, str(tmp_path / "model.py"), "exec"), module.__dict__)
    module.model = module.Sines()
    monkeypatch.setitem(sys.modules, "user_model", module)
    try:
        module.model(torch.randn(3)).sum().backward()
    except RuntimeError as exc:
        error = user_failure(exc, "model.py", "running a training step")
    else:
        raise AssertionError("torch raised nothing")
    assert (error.kind, error.line) == ("user_exception", 5)  # def forward
    assert (
        "does not require grad and does not have a grad_fn while running a training step. Training calls .backward() on what "
        "Sines.forward (model.py:5) returns" in error.message
    )
    assert "Run it as inference (choose inference on the form, or set train = False in the file)" in error.message
