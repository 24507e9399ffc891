"""What every tab shares: the fields a tab has no purpose-built view for, drawn by the generic renderer
(webapp/render.py), small ones inline and big ones when opened."""

from __future__ import annotations

import json

# A field the generic renderer draws is put in the page up to this size (its JSON); a bigger one is fetched
# when its fold is opened.
INLINE_FIELD_BYTES = 4000


def json_size(value) -> int:
    return len(json.dumps(value, default=str))


def size_words(size: int) -> str:
    return f"{size / 1024:.0f} KiB" if size >= 1024 else f"{size} bytes"


def find_part(section: dict, kind: str, key: str) -> dict | None:
    """field/KEY: one of a tab's other fields, drawn when its fold is opened."""
    if kind == "field":
        return {"key": key, "value": section[key]} if key in section else None
    return None
