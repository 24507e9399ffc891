"""The Dynamo tab: graph breaks beside the user's lines, each compiled frame's guards as a tree with the guards a
later call failed, the symbols of dynamic shapes, and the bytecode before and after Dynamo. Reads the report's
Dynamo model."""

from __future__ import annotations

import re
from collections import defaultdict

from contract.compile_id import compile_key
from contract.report import DynamicSymbol, Dynamo, GraphBreak, Recompile
from contract.userfile import is_user_file  # noqa: F401 - the template links the user's lines

# Where compile ids first appear (the Dynamo tab, the graph titles), what one means, in a line and a tooltip.
COMPILE_ID_LEDE = (
    "Every graph, guard set and break is named by torch's compile id, frame/compile: 0/0 is the first frame "
    "Dynamo compiled, compiled for the first time; 0/1 the same frame compiled again (a recompile); 1/0 the next "
    "frame, such as the code after a graph break. A suffix, as in 0/0_1, numbers the attempt: Dynamo restarted "
    "its analysis of that frame (after a graph break it traces the frame again up to the break)."
)


def source_context(code: str, line: int | None, around: int = 2) -> list[dict]:
    """The user's lines around ``line``: [{number, text, focus}]."""
    lines = code.splitlines()
    if not isinstance(line, int) or not 1 <= line <= len(lines):
        return []
    return [
        {"number": n, "text": lines[n - 1], "focus": n == line}
        for n in range(max(1, line - around), min(len(lines), line + around) + 1)
    ]


def short_code(code, limit: int = 40) -> str:
    text = str(code or "").split("#", 1)[0].strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_reason(reason: str, limit: int = 72) -> str:
    """The first clause of torch's reason for a break: "Unsupported Tensor.item() call with
    capture_scalar_outputs=False"."""
    text = re.split(r"(?<=[^.])\.(?:\s|$)|\n|:\s", str(reason or "").strip(), maxsplit=1)[0].strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def break_labels(breaks: list[GraphBreak]) -> list[str]:
    """Each break as the page names it: "line 7 print(...)"; two different breaks on one line are told apart by
    their reasons ("line 7 print(...): Unsupported Tensor.item() call ...")."""
    per_line: defaultdict[tuple, int] = defaultdict(int)
    for b in breaks:
        per_line[(b.file, b.line)] += 1
    labels = []
    for b in breaks:
        label = f"line {b.line} {short_code(b.code)}" if b.line else short_reason(b.reason)
        if b.line and per_line[(b.file, b.line)] > 1:
            label += f" ({short_reason(b.reason)})"
        labels.append(label)
    return labels


def break_places(breaks: list[GraphBreak]) -> list[str]:
    """Where the breaks are, one entry per line: "line 8 scale = y.sum().item()"; a line with several different
    breaks names each: "line 7 print(...): Unsupported Tensor.item() call ... and Failed to trace builtin
    operator"."""
    by_line: dict = {}
    for b in breaks:
        by_line.setdefault((b.file, b.line) if b.line else id(b), []).append(b)
    places = []
    for group in by_line.values():
        first = group[0]
        if not first.line:
            places.append(short_reason(first.reason))
        elif len(group) == 1:
            places.append(f"line {first.line} {short_code(first.code)}")
        else:
            reasons = " and ".join(short_reason(b.reason) for b in group)
            places.append(f"line {first.line} {short_code(first.code)}: {len(group)} different breaks, {reasons}")
    return places


def guards_by_compile_id(dynamo: Dynamo) -> list[dict]:
    """Each compiled frame's guards, with the recompile (which guard failed) that led to it, if any, and the
    guards of this frame that a later call failed (``failed``: [{guard, recompile}], the recompile it caused).
    Joined on the compile key, so "0/1" and "0/1_1" meet."""
    recompiles: defaultdict[tuple | None, list[Recompile]] = defaultdict(list)
    rejected: defaultdict[tuple | None, list[dict]] = defaultdict(list)  # a rejected cache entry -> what failed in it
    for recompile in dynamo.recompiles:
        recompiles[compile_key(recompile.compile_id)].append(recompile)
        for entry_id, failed in failed_guards(recompile):
            rejected[compile_key(entry_id)].append({"guard": failed, "recompile": recompile.compile_id})
    rows: list[dict] = []
    for guard in dynamo.guards:
        rows.append(
            {
                "compile_id": guard.compile_id,
                "text": guard.text.strip("\n"),
                # torch's own count where the report has it, else the guards (leaves) of the tree
                "count": guard.count
                if guard.count is not None
                else sum(root["count"] if root["children"] else 1 for root in guard_tree(guard.text, [])[0]),
                "recompiles": recompiles.pop(compile_key(guard.compile_id), []),
                "failed": rejected.get(compile_key(guard.compile_id), []),
            }
        )
    for orphans in recompiles.values():  # a recompile whose guards were not recorded
        rows.append({"compile_id": orphans[0].compile_id, "text": "", "count": 0, "recompiles": orphans, "failed": []})
    return rows


def failed_guards(recompile: Recompile) -> list[tuple[str | None, str]]:
    """(compile id of the cache entry whose guard failed, the failed guard in words) for one recompile."""
    return [(g.compile_id, g.guard) for g in recompile.failed_guards]


_GUARD_LINE = re.compile(r"^((?:\| )*)\+- (.*)$")


def guard_tree(text: str, failed: list[dict]) -> tuple[list[dict], list[dict]]:
    """Dynamo's guard tree dump as nested nodes {label, text, where, kind, children, count, failed, open}, and
    the leaves that match a failed guard (a tensor's size/stride/dtype mismatch matches its TENSOR_MATCH; any
    other guard matches the line that holds its expression). Folds leading to a failed guard are open."""
    roots: list[dict] = []
    stack: list[dict] = []
    leaves: list[dict] = []
    for line in text.splitlines():
        match = _GUARD_LINE.match(line)
        if not match:
            if stack and line.strip() and not line.startswith("TREE_GUARD_MANAGER"):
                stack[-1]["text"] += " " + line.strip()
            continue
        depth = len(match.group(1)) // 2
        body, _, where = match.group(2).partition("  # ")
        label, sep, rest = body.partition(": ")
        if not sep or not re.match(r"^[A-Za-z_]+$", label):
            label, rest = body.strip(), ""
        node: dict = {
            "label": label,
            "text": rest.strip(),
            "where": where.strip().replace("  # ", " · "),
            "kind": "manager" if label.endswith("GuardManager") or label == "GuardManager" else "guard",
            "children": [],
            "failed": None,
            "open": depth == 0,
        }
        del stack[depth:]
        (stack[-1]["children"] if stack else roots).append(node)
        stack.append(node)

    def visit(node) -> bool:  # counts the guards under each fold; marks failed leaves, opens their folds
        hit = False
        for child in node["children"]:
            hit = visit(child) or hit
        node["count"] = sum(child["count"] if child["children"] else 1 for child in node["children"])
        if not node["children"]:
            for f in failed:
                if _guard_matches(node, f["guard"]):
                    node["failed"] = f["guard"]
                    leaves.append({**node, "recompile": f["recompile"]})
                    hit = True
                    break
        if hit:
            node["open"] = True
        return hit or bool(node["failed"])

    for root in roots:
        visit(root)
    return roots, leaves


def _guard_matches(node: dict, guard: str) -> bool:
    tensor = re.match(r"^tensor '([^']+)'", guard.strip())
    if tensor:
        name = tensor.group(1)
        return node["label"] == "TENSOR_MATCH" and (f"'{name}'" in node["text"] or f"[{name!r}]" in node["text"])
    expression = guard.strip()
    return bool(expression) and expression in f"{node['label']}: {node['text']}"


def compact_bytecode(text: str) -> str:
    """dis output with its padding collapsed (line, offset, opname, argument, (meaning)), so the full arguments
    fit beside each other in two columns."""
    out = []
    for line in text.splitlines():
        match = re.match(r"^\s*(\d+)?\s+(>>)?\s*(\d+) ([A-Z_]+[A-Z0-9_]*)(?:\s+(\S+))?(?:\s+(\(.*\)))?\s*$", line)
        if not match:
            out.append(line.strip())
            continue
        number, jump, offset, opname, arg, meaning = match.groups()
        out.append(
            (
                f"{number or '':>3} {'>>' if jump else '  '}{offset:>4} {opname}"
                + (f" {arg}" if arg else "")
                + (f" {meaning}" if meaning else "")
            ).rstrip()
        )
    return "\n".join(out)


def find_part(section: Dynamo, kind: str, key: str) -> dict | None:
    """One lazily drawn part of the Dynamo tab: guards/INDEX (into guards_by_compile_id), one frame's guard tree."""
    if kind == "guards":
        row = guards_by_compile_id(section)[int(key)]
        return {"row": row, "tree": guard_tree(row["text"], row["failed"])[0]}
    return None


def symbol_rows(section: Dynamo) -> list[dict]:
    """Per dynamic symbol: {symbol (the model), words (a sentence), calls: [{index, value, role}]}, where a call's
    role is "compiled" (its compile created the symbol), "reused" (it ran that compile without compiling the frame
    again) or "" (another compile ran it)."""
    rows = []
    for symbol in section.symbols:
        calls = [
            {
                "index": i,
                "value": value,
                "role": "compiled" if i == symbol.created_in_call else "reused" if i in symbol.reused_by_calls else "",
            }
            for i, value in enumerate(symbol.values_by_call)
        ]
        rows.append({"symbol": symbol, "words": symbol_words(symbol), "calls": calls})
    return rows


def symbol_words(symbol: DynamicSymbol) -> str:
    """One symbol in a sentence: where it comes from, what it was compiled for, what tests or fixes it, who reused
    the graph."""
    call = f" (call {symbol.created_in_call})" if symbol.created_in_call is not None else ""
    words = (
        f"{symbol.subject} is {symbol.symbol} in compile {symbol.compile_id}, {symbol.value}{call} when created, "
        f"compiled for the range {symbol.range or 'unknown'}"
    )
    if symbol.guards:
        shown = "; ".join(g.expr for g in symbol.guards[:3]) + ("; ..." if len(symbol.guards) > 3 else "")
        plural = "guard tests" if len(symbol.guards) == 1 else "guards test"
        words += f"; {len(symbol.guards)} {plural} it ({shown})"
    for spec in symbol.specializations:
        at = f" at line {spec.line}" if spec.line else ""
        words += f"; specialized to {spec.value}{at} ({spec.reason}): this graph holds only for that value"
    if symbol.reused_by_calls:
        reused = ", ".join(str(i) for i in symbol.reused_by_calls)
        words += (
            f". Call{'s' if len(symbol.reused_by_calls) > 1 else ''} {reused} reused this graph without a recompile"
        )
    return words + "."
