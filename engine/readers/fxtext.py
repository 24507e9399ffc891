"""FX graphs from their printed code (as a TORCH_TRACE log holds them) into the nodes engine/fxgraph.py makes.

A structured trace stores every graph (Dynamo's output graph, AOT joint/forward/backward/inference graphs,
post-grad graphs) as the text of ``GraphModule.print_readable``: no node objects. This reads that text back:

    def forward(self, L_x_: "f32[8, 4][4, 1]cpu"):            -> placeholder L_x_, shape [8, 4], dtype float32
        # File: /job/model.py:5 in forward, code: y = x.sin()  -> the user line of the nodes that follow
        sin: "f32[8, 4][4, 1]cpu" = torch.sin(l_x_);  l_x_ = None -> call_function torch.sin reading l_x_
        return (sin,)                                          -> output reading sin

Targets are spelled as the live serializer spells them (``str(OpOverload)``: "aten.sin.default"; Python operators
as "_operator.add"; methods and modules by name), so graphs imported from a log and graphs recorded live compare.
Pure Python, no torch: the text is untrusted data and is only matched with regular expressions, never evaluated.
"""

from __future__ import annotations

import re

# "f32[8, 4][4, 1]cpu", "bf16[s0, 1024][1024, 1]cuda:0", "Sym(s0)", "i64[]"
_ANNOTATION = re.compile(r"^(?P<dtype>[a-z]+\d*(?:e\dm\d\w*)?)\[(?P<shape>[^\]]*)\]")
_DTYPES = {
    "f64": "float64",
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "b8": "bool",
    "c32": "complex32",
    "c64": "complex64",
    "c128": "complex128",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz",
}
_DEF = re.compile(r"^(?P<indent>\s*)def forward\((?P<params>.*)$")
_PARAM = re.compile(r'(?P<name>[A-Za-z_]\w*)\s*(?::\s*"(?P<annotation>[^"]*)")?')
_FILE = re.compile(r"^# File: (?P<file>.+?):(?P<line>\d+) in (?P<func>[^,]+), code: (?P<code>.*)$")
_NO_STACK = re.compile(r"^# No stacktrace found")
# name: "annotation" = rhs   |   name = rhs   (the ";  a = b = None" that frees values is cut off first)
_ASSIGN = re.compile(r'^(?P<name>[A-Za-z_]\w*)\s*(?::\s*"(?P<annotation>[^"]*)")?\s*=\s*(?P<rhs>.+)$')
_DECLARE = re.compile(r'^(?P<name>[A-Za-z_]\w*)\s*:\s*"(?P<annotation>[^"]*)"\s*(?:#.*)?$')  # joint graph inputs
_CALL = re.compile(r"^(?P<callee>[A-Za-z_][\w.]*)\((?P<args>.*)\)$", re.S)
_ITEM = re.compile(r"^(?P<base>[A-Za-z_]\w*)\[(?P<index>[^\]]*)\]$")
_BINARY = re.compile(r"^(?P<a>\S+) (?P<op>\+|-|\*|/|//|%|\*\*|@|&|\||\^|<<|>>|==|!=|<|<=|>|>=) (?P<b>\S+)$")
_UNARY = re.compile(r"^(?P<op>-|~|not )(?P<a>[A-Za-z_]\w*)$")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_OPERATORS = {
    "+": "add",
    "-": "sub",
    "*": "mul",
    "/": "truediv",
    "//": "floordiv",
    "%": "mod",
    "**": "pow",
    "@": "matmul",
    "&": "and_",
    "|": "or_",
    "^": "xor",
    "<<": "lshift",
    ">>": "rshift",
    "==": "eq",
    "!=": "ne",
    "<": "lt",
    "<=": "le",
    ">": "gt",
    ">=": "ge",
}
_UNARY_OPERATORS = {"-": "neg", "~": "invert", "not ": "not_"}
_LIBRARY = ("/site-packages/", "/dist-packages/", "/lib/python3", "<frozen ", "<string>")


def value_meta(annotation: str | None) -> tuple:
    """(shape, dtype) from a printed annotation: "f32[8, s0][s0, 1]cpu" -> ([8, "s0"], "float32")."""
    if not annotation:
        return None, None
    if annotation.startswith("Sym("):
        return None, "SymInt" if not annotation.startswith("Sym(Float") else "SymFloat"
    match = _ANNOTATION.match(annotation)
    if not match:
        return None, None
    dims = [d.strip() for d in match["shape"].split(",") if d.strip()]
    return [int(d) if d.lstrip("-").isdigit() else d for d in dims], _DTYPES.get(match["dtype"], match["dtype"])


def is_library_file(path: str | None) -> bool:
    """A frame in torch or another installed package rather than the user's own code."""
    return not path or any(marker in path for marker in _LIBRARY) or "/torch/" in path


def _target(callee: str) -> tuple[str, str]:
    """(op, target) of a call as print_readable prints it."""
    if callee.startswith("torch.ops."):
        return "call_function", callee.removeprefix("torch.ops.")  # aten.sin.default, prims.convert_element_type...
    if callee.startswith("self."):
        return "call_module", callee.removeprefix("self.")
    if callee.startswith("operator."):
        return "call_function", "_operator." + callee.removeprefix("operator.")
    return "call_function", callee


def _strip_release(line: str) -> str:
    """Cut the "; a = b = None" tail print_readable adds where values are freed (outside of string literals)."""
    if ";" not in line:
        return line
    depth, quote = 0, None
    for i, char in enumerate(line):
        if quote:
            if char == quote and line[i - 1] != "\\":
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == ";" and depth == 0:
            return line[:i].rstrip()
    return line


def parse_graph_code(code: str) -> list[dict]:
    """Nodes of the first ``forward`` in printed FX graph code (submodules of higher-order ops are not entered),
    each {name, op, target, args, shape, dtype, file, line, code, module_stack}. Lines it cannot read are skipped,
    never guessed: a node without a known target keeps what could be read."""
    lines = code.splitlines()
    start = next((i for i, line in enumerate(lines) if _DEF.match(line)), None)
    if start is None:
        return []
    def_indent = len(_DEF.match(lines[start])["indent"])
    graph = _PrintedGraph()
    signature, i = _signature(lines, start)
    for part in _split_top(signature):
        match = _PARAM.match(part.strip())
        if match and match["name"] != "self":
            graph.add(match["name"], "placeholder", match["name"], [], match["annotation"])
    for raw in lines[i:]:
        if raw.strip() and len(raw) - len(raw.lstrip()) <= def_indent:
            break  # the end of forward: a nested class or method follows
        if raw.strip():
            graph.read(raw.strip())
    return graph.nodes


def _signature(lines: list[str], start: int) -> tuple[str, int]:
    """forward's parameters, on one line ("def forward(self, a: "f32[2]cpu", b)") or one per line up to "):", and
    the index of the body's first line."""
    params, i = lines[start].split("forward(", 1)[1], start + 1
    while not params.rstrip().endswith(":") and i < len(lines):
        params += " " + lines[i].split("  #", 1)[0].strip()  # "primals_1: "f32[4]",  # PlainAOTInput(idx=0)"
        i += 1
    return params.rsplit(")", 1)[0], i


class _PrintedGraph:
    """The nodes read so far from forward's body, line by line, and the source frame its comments last named."""

    def __init__(self):
        self.nodes: list[dict] = []
        self.known: set[str] = set()
        self.index: dict[str, int] = {}  # name -> position in nodes
        self.where: dict = {}

    def add(self, name, op, target, args, annotation):
        shape, dtype = value_meta(annotation)
        self.nodes.append(
            {
                "name": name,
                "op": op,
                "target": target,
                "args": args,
                "shape": shape,
                "dtype": dtype,
                "file": self.where.get("file"),
                "line": self.where.get("line"),
                "code": self.where.get("code"),
                "module_stack": [],
            }
        )
        self.known.add(name)
        self.index[name] = len(self.nodes) - 1

    def read(self, line: str) -> None:
        """One stripped, non-empty line of the body: a frame comment, the return, an input's declaration or an
        assignment."""
        if line.startswith("#"):
            frame = _FILE.match(line)
            if frame:
                self.where = {"file": frame["file"], "line": int(frame["line"]), "code": frame["code"].strip()}
            elif _NO_STACK.match(line):
                self.where = {}
            return
        if line.startswith("return "):
            self.where = {}
            self.add("output", "output", "output", _reads(line[len("return ") :], self.known), None)
            return
        line = _strip_release(line)
        declared = _DECLARE.match(line)
        if declared:  # "primals_1: "f32[4]cpu"  # PlainAOTInput(idx=0)": an input of a joint graph
            if declared["name"] not in self.known:
                self.add(declared["name"], "placeholder", declared["name"], [], declared["annotation"])
            return
        assign = _ASSIGN.match(line)
        if not assign or "," in assign["name"]:
            return  # "a, b, = fx_pytree.tree_flatten_spec(...)": unpacking the joint graph's inputs
        name, rhs = assign["name"], assign["rhs"].strip()
        if name in self.known and rhs in self.known:
            return
        if rhs in self.known and self.nodes[self.index[rhs]]["op"] == "placeholder":
            # "l_x_ = L_x_": the printed signature spells Dynamo's inputs by their source; the graph's placeholder
            # is named l_x_ (its target stays L_x_), as the live graph has it.
            position = self.index.pop(rhs)
            self.known.discard(rhs)
            self.nodes[position]["name"] = name
            self.index[name] = position
            self.known.add(name)
            return
        self.add(name, *self._call(rhs), assign["annotation"])

    def _call(self, rhs: str) -> tuple[str, str, list[str]]:
        """(op, target, args) of an assignment's right-hand side."""
        known = self.known
        call, item, binary, unary = _CALL.match(rhs), _ITEM.match(rhs), _BINARY.match(rhs), _UNARY.match(rhs)
        if call and "." in call["callee"] and call["callee"].split(".", 1)[0] in known:
            return "call_method", call["callee"].split(".", 1)[1], _reads(rhs, known)  # x.sin(): "sin" on x
        if call:
            return (*_target(call["callee"]), _reads(call["args"], known))
        if item and item["base"] in known:
            return "call_function", "_operator.getitem", [item["base"]]
        if binary:
            return "call_function", "_operator." + _OPERATORS[binary["op"]], _reads(rhs, known)
        if unary:
            return "call_function", "_operator." + _UNARY_OPERATORS[unary["op"]], [unary["a"]]
        if rhs in known:
            return "call_function", "alias", [rhs]
        if rhs.startswith("self."):
            return "get_attr", rhs.removeprefix("self."), []
        return "call_function", rhs[:80], _reads(rhs, known)


def _reads(text: str, known: set[str]) -> list[str]:
    """The node names a piece of code reads, in order, once each (string literals skipped)."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "", text)
    return list(dict.fromkeys(name for name in _IDENT.findall(text) if name in known))


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets and quotes."""
    parts, depth, quote, current = [], 0, None, []
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts
