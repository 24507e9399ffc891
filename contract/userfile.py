"""Which frame of a stack is the user's file: one rule for the engine (graph breaks, node provenance, kernels,
error lines) and the pages (line links, provenance).

The child compiles the user's code under its bare file name (``model.py``), so its frames carry exactly that name;
traces recorded by running a file from a path carry the full path (``/tmp/tr/model.py``). A frame is the user's
when its file's last component is the file name and it does not lie in an installed package or the standard
library: a user file named ``utils.py`` must not claim ``torch/_dynamo/utils.py``.
"""
from __future__ import annotations

import re

# Folders that hold installed code, never an uploaded file: site-/dist-packages and the standard library.
_INSTALLED = re.compile(r"/(site-packages|dist-packages)/|/lib/python3(\.\d+)?/")


def is_user_file(path, filename: str) -> bool:
    """True when ``path`` (a frame's file, any type: reports are untrusted data) is the user's ``filename``."""
    if not isinstance(path, str) or not filename:
        return False
    if path == filename:
        return True
    return path.endswith("/" + filename) and not _INSTALLED.search(path)
