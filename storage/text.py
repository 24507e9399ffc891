"""Text bound for the database, made storable by every backend without losing what a reader needs.

A job (or an exception message it provokes) can produce text PostgreSQL refuses: a NUL character, or a lone
surrogate (half of a UTF-16 pair, which is no valid UTF-8). Both are kept visible as escapes (``\\x00``,
``\\ud800``) rather than dropped, and text for a bounded column is cut to fit, marked with an ellipsis.
"""

from __future__ import annotations

ELLIPSIS = "\u2026"


def storable(value, max_chars: int | None = None) -> str | None:
    """``value`` as text any database stores (None stays None; anything else is str()-ed first)."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if max_chars is not None and len(text) > max_chars:
        text = text[: max_chars - 1] + ELLIPSIS
    return text


def storable_json(value):
    """A JSON-like value with every string (keys included) made storable; other leaves kept as they are."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable_json(v) for v in value]
    return value
