"""What the report tabs draw, shaped from the stored report sections (docs/report-schema.md): one module per tab,
the template of each tab calls its module as ``view.*``; never imports torch.

overview (the story of the four stages), dynamo, aot, inductor, runtime; generic: what every tab shares (the other
fields, drawn generically). Graph ids, lookup and stored graph payloads are the report's vocabulary:
contract/graphs.py.
"""

from __future__ import annotations

from webapp.tabs import aot, dynamo, generic, inductor, runtime

# The module each stage tab's template calls as ``view``.
VIEWS = {"dynamo": dynamo, "aot": aot, "inductor": inductor, "runtime": runtime}
# The long parts of a tab drawn only when opened (templates/report/parts.html), by kind: the module that finds them.
PART_VIEWS = {
    "kernel": inductor,
    "fusion": inductor,
    "ir": inductor,
    "irnode": inductor,
    "guards": dynamo,
    "field": generic,
}


def find_part(section: dict, kind: str, key: str) -> dict | None:
    """What one lazily drawn part of a tab shows (pages.part), by kind and key; None if there is no such part."""
    view = PART_VIEWS.get(kind)
    try:
        return view.find_part(section, kind, key) if view else None
    except (StopIteration, ValueError, IndexError):
        return None
