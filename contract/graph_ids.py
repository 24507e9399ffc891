"""The graph-id grammar: the short id of every graph a report holds, also its URL fragment (``#graph-aot-1``, a
node ``#graph-aot-1/addmm``) and the key graphs are stored under.

    dynamo-I          dynamo.graphs[I]
    aot-I             aot.graphs[I] (joint, forward, backward, inference)
    func-I-before     aot.functionalization[I].before (mutations marked); func-I-after the functionalized graph
    postgrad-I        inductor.post_grad_graphs[I] (nodes marked with their kernel)

The pages get the same grammar from static/js/contract.js (generated from here by ``python -m contract.docs``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# prefix -> (report section, key of the graph list in it, report tab that shows it)
PREFIXES = {
    "dynamo": ("dynamo", "graphs", "dynamo"),
    "aot": ("aot", "graphs", "aot"),
    "func": ("aot", "functionalization", "aot"),
    "postgrad": ("inductor", "post_grad_graphs", "inductor"),
}
FUNCTIONALIZATION_SIDES = ("before", "after")
# One pattern for Python and (with its named groups rewritten) JavaScript.
PATTERN = r"^(?:(?P<prefix>dynamo|aot|postgrad)-(?P<index>\d+)|(?P<func>func)-(?P<func_index>\d+)-(?P<side>before|after))$"
_GRAPH_ID = re.compile(PATTERN)


@dataclass(frozen=True)
class GraphId:
    prefix: str  # a key of PREFIXES
    index: int
    side: str | None = None  # "before"/"after" for func, else None

    def __post_init__(self):
        if self.prefix not in PREFIXES or self.index < 0 or (self.side is None) == (self.prefix == "func") \
                or self.side not in (None, *FUNCTIONALIZATION_SIDES):
            raise ValueError(f"not a graph id: {self.prefix!r}, {self.index!r}, {self.side!r}")

    def __str__(self) -> str:
        return f"{self.prefix}-{self.index}" + (f"-{self.side}" if self.side else "")

    @classmethod
    def parse(cls, text: str) -> "GraphId | None":
        match = _GRAPH_ID.match(text) if isinstance(text, str) else None
        if not match:
            return None
        if match["func"]:
            return cls("func", int(match["func_index"]), match["side"])
        return cls(match["prefix"], int(match["index"]))

    @property
    def section(self) -> str:
        """The report section that holds this graph."""
        return PREFIXES[self.prefix][0]

    @property
    def tab(self) -> str:
        """The report tab that draws this graph."""
        return PREFIXES[self.prefix][2]

    def find(self, section: dict) -> dict | None:
        """This graph in its section (report[self.section]), or None if the section has no such graph."""
        try:
            entry = section[PREFIXES[self.prefix][1]][self.index]
            return entry[self.side] if self.side else entry
        except (IndexError, KeyError, TypeError):
            return None


def dynamo_graph(index: int) -> str:
    return str(GraphId("dynamo", index))


def aot_graph(index: int) -> str:
    return str(GraphId("aot", index))


def post_grad_graph(index: int) -> str:
    return str(GraphId("postgrad", index))


def functionalization_graph(index: int, side: str) -> str:
    return str(GraphId("func", index, side))


def javascript_pattern() -> str:
    """PATTERN for a JavaScript RegExp (named groups are ``(?<name>...)`` there)."""
    return PATTERN.replace("(?P<", "(?<")
