"""The Dynamo tab: graph breaks beside the user's lines, each compiled frame's guards as a tree with the guards a
later call failed, and the bytecode before and after Dynamo."""

from __future__ import annotations

import re
from collections import defaultdict

from contract.compile_id import compile_key
from contract.counts import COUNT_LABELS  # noqa: F401 - the tab's names for the report's counts
from contract.graphs import graphs_of_tab  # noqa: F401 - the template lists the tab's graphs
from contract.userfile import is_user_file  # noqa: F401 - the template links the user's lines


def source_context(code: str, line: int | None, around: int = 2) -> list[dict]:
    """The user's lines around ``line``: [{number, text, focus}]."""
    lines = code.splitlines()
    if not isinstance(line, int) or not 1 <= line <= len(lines):
        return []
    return [
        {"number": n, "text": lines[n - 1], "focus": n == line}
        for n in range(max(1, line - around), min(len(lines), line + around) + 1)
    ]


def guards_by_compile_id(dynamo: dict) -> list[dict]:
    """Each compiled frame's guards, with the recompile (which guard failed) that led to it, if any, and the
    guards of this frame that a later call failed (``failed``: [{guard, recompile}], the recompile it caused).
    Joined on the compile key, so "0/1" and "0/1_1" meet."""
    recompiles = defaultdict(list)
    rejected = defaultdict(list)  # compile id of a rejected cache entry -> what failed in it
    for recompile in dynamo.get("recompiles") or []:
        recompiles[compile_key(recompile.get("compile_id"))].append(recompile)
        for entry_id, guard in failed_guards(recompile):
            rejected[compile_key(entry_id)].append({"guard": guard, "recompile": recompile.get("compile_id")})
    rows = []
    for guard in dynamo.get("guards") or []:
        text = guard.get("text") or ""
        count = guard.get("count")
        rows.append(
            {
                "compile_id": guard.get("compile_id"),
                "text": text.strip("\n"),
                # torch's own count where the report has it, else the guards (leaves) of the tree
                "count": count
                if isinstance(count, int)
                else sum(root["count"] if root["children"] else 1 for root in guard_tree(text, [])[0]),
                "recompiles": recompiles.pop(compile_key(guard.get("compile_id")), []),
                "failed": rejected.get(compile_key(guard.get("compile_id")), []),
            }
        )
    for orphans in recompiles.values():  # a recompile whose guards were not recorded
        rows.append(
            {"compile_id": orphans[0].get("compile_id"), "text": "", "count": 0, "recompiles": orphans, "failed": []}
        )
    return rows


def failed_guards(recompile: dict) -> list[tuple[str | None, str]]:
    """(compile id of the cache entry whose guard failed, the failed guard in words) for one recompile: from
    ``failed_guards`` where the report has it, else parsed from torch's reasons (``"0/0: tensor 'x' size
    mismatch ..."``)."""
    recorded = recompile.get("failed_guards")
    if isinstance(recorded, list) and recorded:
        return [(g.get("compile_id"), g.get("guard") or "") for g in recorded if isinstance(g, dict)]
    out = []
    for reason in recompile.get("reasons") or ([recompile["reason"]] if recompile.get("reason") else []):
        match = re.match(r"^(\d+/\d+(?:_\d+)?): (.*)$", str(reason), re.S)
        out.append((match.group(1), match.group(2)) if match else (None, str(reason)))
    return out


_GUARD_LINE = re.compile(r"^((?:\| )*)\+- (.*)$")


def guard_tree(text: str, failed: list[dict]) -> tuple[list[dict], list[dict]]:
    """Dynamo's guard tree dump as nested nodes {label, text, where, kind, children, count, failed, open}, and
    the leaves that match a failed guard (a tensor's size/stride/dtype mismatch matches its TENSOR_MATCH; any
    other guard matches the line that holds its expression). Folds leading to a failed guard are open."""
    roots, stack, leaves = [], [], []
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
        node = {
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


def find_part(section: dict, kind: str, key: str) -> dict | None:
    """One lazily drawn part of the Dynamo tab: guards/INDEX (into guards_by_compile_id), one frame's guard tree."""
    if kind == "guards":
        row = guards_by_compile_id(section)[int(key)]
        return {"row": row, "tree": guard_tree(row["text"], row["failed"])[0]}
    return None
