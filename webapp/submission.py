"""Validation of a new run, shared by the form and the API: every error is named by its field, and nothing is
queued unless all fields are valid. The code itself is not checked here: a syntax error is the engine's to
report, with its line, like any other failure."""
from __future__ import annotations

import os

from contract.vocab import CONFIGS, ConfigError, parse_configs
from storage.runstore import QUEUE_FOR_DEVICE, Submission

DEVICE_LABELS = {"cpu": "CPU", "cuda": "CUDA GPU"}
TRAIN_CHOICES = {"auto": None, "inference": False, "training": True}  # form values -> JobRequest.train


def validate(data: dict, *, max_code_bytes: int, online_queues: set[str]) -> tuple[Submission | None, dict]:
    """``data``: code, filename, device, train (bool/None or a TRAIN_CHOICES key), configs (list of names)."""
    errors = {}
    code = data.get("code")
    if not isinstance(code, str) or not code.strip():
        errors["code"] = "Paste or upload a Python file that defines `model` and `example_inputs`."
    elif not _is_unicode_text(code):
        errors["code"] = ("The code is not valid Unicode text: it contains a lone surrogate (half of a UTF-16 "
                          "pair, such as \\ud800), which no Python file can hold.")
    elif len(code.encode("utf-8")) > max_code_bytes:
        errors["code"] = f"The code is larger than {max_code_bytes // 1024} KiB, the limit for a model."
    elif "\0" in code:
        errors["code"] = "The code contains NUL bytes: send Python source text (checkpoints and pickles are never loaded)."

    filename = os.path.basename(str(data.get("filename") or "model.py"))
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
    if errors:
        return None, errors
    return Submission(code=code, filename=filename, device=device, train=train, configs=configs), {}


def _is_unicode_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def config_choices() -> list[dict]:
    return [{"name": c.name, "label": c.label} for c in CONFIGS.values()]
