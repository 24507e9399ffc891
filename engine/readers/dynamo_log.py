"""TorchDynamo's records, read without torch: graph-break reasons, recompile reasons (with the symbols of
dimensions that became dynamic), guards. The live engine reads its own log tap with these (engine/stages/dynamo.py
declares them as log readers) and the trace importer reads an uploaded log with the same functions, so a pasted
run and an imported log read the same."""

from __future__ import annotations

import json
import re

from contract.compile_id import CompileId, compile_key
from contract.userfile import is_user_file
from engine.readers.nodes import FRAME

_BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+?):(?P<line>\d+)")

# One rejected cache entry in a recompile reason: "0/1: scale == 2.0   # def h(...)  # x.py:4 in h".
_FAILED_GUARD = re.compile(r"^(?P<cid>!?[\d/_]+): (?P<guard>.*)$")
# A tensor dimension's source in a create_symbol event: "L['x'].size()[0]", "L['self'].w.stride()[1]".
_DIM_SOURCE = re.compile(r"^(?P<base>.+?)\.(?P<what>size|stride)\(\)\[(?P<dim>\d+)\]$")


def parse_graph_breaks(events: list[dict], user_file: str) -> list[dict]:
    """Graph-break artifacts -> [{reason, explanation, hints, file, line, code, count, compile_ids, user_stack}],
    deduplicated by (file, line, reason)."""
    merged: dict[tuple, dict] = {}
    for e in events:
        text = e["payload"] or ""
        where = _BREAK_AT.search(text)
        title, explanation, hints, link = _break_details(text)
        user_stack = [
            {"file": m["file"], "line": int(m["line"]), "func": m["func"], "code": m["code"].strip()}
            for m in FRAME.finditer(text.split("User code traceback:", 1)[-1].split("\nTraceback", 1)[0])
        ]
        in_user = [f for f in user_stack if is_user_file(f["file"], user_file)]
        frame = in_user[-1] if in_user else (user_stack[-1] if user_stack else {})
        file = where["file"] if where else frame.get("file")
        line = int(where["line"]) if where else frame.get("line")
        key = (file, line, title)
        if key in merged:
            merged[key]["count"] += 1
            merged[key]["compile_ids"].append(e["compile_id"])
            continue
        merged[key] = {
            "reason": title,
            "explanation": explanation,
            "hints": hints,
            "doc_url": link,
            "file": file,
            "line": line,
            "code": frame.get("code"),
            "count": 1,
            "compile_ids": [e["compile_id"]],
            "user_stack": in_user or user_stack,
            "text": text[:6000],
        }
    return list(merged.values())


def _break_details(text: str) -> tuple[str, str, list[str], str | None]:
    body = text.split("Graph Break Reason:", 1)[-1].split("User code traceback:", 1)[0]
    lines = [ln.strip() for ln in body.splitlines()]
    explanation = next((ln.removeprefix("Explanation:").strip() for ln in lines if ln.startswith("Explanation:")), "")
    hints = [ln.removeprefix("Hint:").strip() for ln in lines if ln.startswith("Hint:")]
    link = next((ln.rsplit(" ", 1)[-1] for ln in lines if "please visit:" in ln), None)
    # The headline is the first line after the generic "Encountered graph break ..." preamble.
    candidates = [
        ln
        for ln in lines
        if ln
        and not ln.startswith(
            ("Encountered graph break", "Explanation:", "Hint:", "Developer debug", "For more details")
        )
    ]
    title = candidates[0] if candidates else (lines[0] if lines else "graph break")
    return title, explanation, hints, link


def parse_recompiles(
    trace_events: list[dict],
    log_records: list[dict],
    symbol_events: list[dict] = (),
    user_file: str = "",
    entry: dict | None = None,
    frames: dict[tuple, dict] | None = None,
) -> list[dict]:
    """Recompile reasons, one entry per new compile id: [{compile_id, failed_guards, reasons, reason, call_index,
    dynamic_dims, text, function, file, line, where, torch_frame}] (docs/report-schema.md). ``trace_events`` are
    the recompile_reasons artifacts (their payload is JSON: one reason or a list of them), ``log_records`` the
    "recompiles" log (the function's name, and the reasons where the trace has none), ``symbol_events`` the
    create_symbol events. The recompiled frame is ``frames``' (compile key -> {name, file, line}, from the
    bytecode hook) or else the log's; a frame of torch's own code (torch.compile's ``inner`` wrapper of an
    nn.Sequential) is named by ``entry``, the user's model ({function, file, line}), torch's name kept apart in
    ``torch_frame``."""
    out = []
    newly_dynamic = _newly_dynamic(list(symbol_events))
    for e in trace_events:
        data = e["data"] if "data" in e else _json_or_text(e["payload"])
        blocks = data if isinstance(data, list) else [data] if data else []
        out.append(
            {
                "compile_id": e["compile_id"],
                "call_index": e.get("call_index"),
                "failed_guards": [_failed_guard(str(b), user_file) for b in blocks if str(b).strip()],
            }
        )
    logged = {}
    for r in log_records:
        match = re.search(r"Recompiling function (\S+) in (\S+)", r["text"])
        if match:
            file, _, line = match[2].rpartition(":")
            logged[compile_key(r["compile_id"])] = (
                {"name": match[1], "file": file, "line": int(line)}
                if line.isdigit()
                else {"name": match[1], "file": match[2], "line": None}
            )
    if not out:  # no recompile_reasons artifact in the trace: the reasons from the log text
        for r in log_records:
            guards = [_failed_guard(b, user_file) for b in _log_reason_blocks(r["text"])]
            if guards:
                out.append({"compile_id": r["compile_id"], "call_index": r.get("call_index"), "failed_guards": guards})
    for rec in out:
        key = compile_key(rec["compile_id"])
        rec.update(_frame_names((frames or {}).get(key) or logged.get(key), entry, user_file))
        rec["reasons"] = [
            f"{g['compile_id']}: {g['guard']}" if g["compile_id"] else g["guard"] for g in rec["failed_guards"]
        ]
        rec["reason"] = "; ".join(rec["reasons"])
        rec["dynamic_dims"] = [_dynamic_dim(s) for s in newly_dynamic.get(compile_key(rec["compile_id"]), [])]
        rec["text"] = _recompile_words(rec)
    return out


def _frame_names(frame: dict | None, entry: dict | None, user_file: str) -> dict:
    """A recompiled frame ({name, file, line}) -> the record's {function, file, line, where, torch_frame}: the
    user's code as it is; torch's own code (a file that is not the user's) by the user's entry point when known,
    torch's name in ``torch_frame``."""
    if not frame:
        return {"function": None, "file": None, "line": None, "where": None, "torch_frame": None}
    torch_frame = None
    if entry and user_file and not is_user_file(frame["file"], user_file):
        torch_frame = f"{frame['name']} at {_where(frame['file'], frame['line'])}"
        frame = {"name": entry["function"], "file": entry["file"], "line": entry["line"]}
    return {
        "function": frame["name"],
        "file": frame["file"],
        "line": frame["line"],
        "where": _where(frame["file"], frame["line"]),
        "torch_frame": torch_frame,
    }


def called_as(entry: dict | None, file: str, user_file: str) -> str | None:
    """For a compiled frame of torch's own code: the user's entry point it runs, "model (torch.nn.Sequential) at
    model.py:4"; None for the user's code."""
    if not entry or not user_file or is_user_file(file, user_file):
        return None
    return f"{entry['function']} at {_where(entry['file'], entry['line'])}"


def _where(file: str | None, line: int | None) -> str | None:
    return f"{file}:{line}" if file and line is not None else file


def _newly_dynamic(symbol_events: list[dict]) -> dict[tuple, list[dict]]:
    """compile key -> the create_symbol events of sources that were not symbolic in an earlier compile of the same
    frame (a dimension made dynamic stays so: later recompiles create its symbol again)."""
    seen: dict[tuple, set] = {}
    out: dict[tuple, list[dict]] = {}
    for event in sorted(
        (e for e in symbol_events if CompileId.parse(e["compile_id"]) and e["metadata"]),
        key=lambda e: CompileId.parse(e["compile_id"]),
    ):
        cid = CompileId.parse(event["compile_id"])
        frame = (cid.compiled_autograd_id, cid.frame_id)
        source = event["metadata"].get("source")
        if source in seen.setdefault(frame, set()):
            continue
        seen[frame].add(source)
        out.setdefault(cid.compile_key, []).append(event)
    return out


def _json_or_text(payload):
    try:
        return json.loads(payload) if payload else None
    except ValueError:
        return payload


def _log_reason_blocks(text: str) -> list[str]:
    """The "recompiles" log's bullet list ("    - 0/0: ...", "    - User stack trace:", ...) -> one block per
    rejected cache entry, its continuation lines joined."""
    blocks: list[str] = []
    for line in text.splitlines():
        item = line.strip()
        if not item.startswith("-"):
            continue
        item = item[1:].strip()
        if _FAILED_GUARD.match(item) and CompileId.parse(item.split(":", 1)[0]):
            blocks.append(item)
        elif blocks:
            blocks[-1] += "\n" + item
    return blocks


def _failed_guard(block: str, user_file: str) -> dict:
    """ "0/1: scale == 2.0   # def h(x, scale): ...  # x.py:4 in h\nUser stack trace:\n  File ..." ->
    {compile_id, guard, location, user_line}: the guard as clean text, where torch says it came from."""
    first, _, rest = block.strip().partition("\n")
    match = _FAILED_GUARD.match(first)
    cid = CompileId.parse(match["cid"]) if match else None
    guard = match["guard"] if match and cid else first
    guard, _, comment = guard.partition("  #")
    location = comment.rsplit("#", 1)[-1].strip() if "#" in comment else None
    frames = [
        {"file": m["file"], "line": int(m["line"]), "func": m["func"], "code": m["code"].strip()}
        for m in FRAME.finditer(rest)
    ]
    in_user = [f for f in frames if is_user_file(f["file"], user_file)] if user_file else frames
    return {
        "compile_id": str(cid) if cid else None,
        "guard": guard.strip(),
        "location": location,
        "user_line": (in_user or frames or [None])[-1],
    }


def _dynamic_dim(event: dict) -> dict:
    meta = event["metadata"]
    source, symbol, value = meta.get("source") or "?", meta.get("symbol"), meta.get("val")
    value = None if value is None else str(value)
    subject = source_subject(source)
    text = (
        f"{subject} became dynamic (symbol {symbol}, {value} in this call): it changed since the previous "
        "compile, so Dynamo compiled this graph for any value (automatic dynamic shapes) and later calls that "
        "differ only there reuse it"
    )
    return {"symbol": symbol, "source": source, "value": value, "text": text}


def source_subject(source: str) -> str:
    """A symbol's source in words: "L['x'].size()[0]" -> "Dimension 0 of x"."""
    dim = _DIM_SOURCE.match(source)
    if dim:
        what = "Dimension" if dim["what"] == "size" else "The stride of dimension"
        return f"{what} {dim['dim']} of {_source_name(dim['base'])}"
    return f"The value of {_source_name(source)}"


# At most this many guards are listed per symbol (a loop over a dynamic size can add one per iteration).
GUARDS_PER_SYMBOL = 50


def parse_symbols(
    create_events: list[dict],
    guard_events: list[dict],
    specialization_events: list[dict],
    string_events: list[dict],
    user_file: str,
) -> list[dict]:
    """The symbols Dynamo's shape environment created for dynamic sizes, strides and integers, one per
    (compile, symbol): [{compile_id, symbol, source, subject, value, range, created_in_call, file, line, code,
    guards: [{expr, file, line, code}], specializations: [{value, reason, file, line, code}], values_by_call: [],
    reused_by_calls: []}]. ``guards`` are the guards added in the same compile whose expression names the symbol
    (guard_added_fast), ``specializations`` the times the symbol was fixed to a constant
    (symbolic_shape_specialization), each at the user's line; ``string_events`` are the trace's interned file
    names ("str": [name, index])."""
    files = {
        e["metadata"][1]: e["metadata"][0]
        for e in string_events
        if isinstance(e["metadata"], (list, tuple)) and len(e["metadata"]) == 2  # a tuple live, a list loaded
    }

    def where(meta: dict) -> dict:
        return _user_frame(meta, files, user_file)

    by_key = _created_symbols(create_events, where)
    for e in guard_events:
        meta = _metadata(e)
        expr = str(meta.get("expr") or "")
        for symbol in _symbols_of(by_key, e["compile_id"]):
            named = re.search(rf"\b{re.escape(symbol['symbol'])}\b", expr)
            listed = any(g["expr"] == expr for g in symbol["guards"])
            if named and not listed and len(symbol["guards"]) < GUARDS_PER_SYMBOL:
                symbol["guards"].append({"expr": expr, **where(meta)})
    for e in specialization_events:
        meta = _metadata(e)
        for symbol in _symbols_of(by_key, e["compile_id"]):
            if meta.get("symbol") == symbol["symbol"] or symbol["source"] in (meta.get("sources") or []):
                value = None if meta.get("value") is None else str(meta["value"])
                symbol["specializations"].append({"value": value, "reason": meta.get("reason"), **where(meta)})
    return list(by_key.values())


def _created_symbols(create_events: list[dict], where) -> dict[tuple, dict]:
    """(compile key, symbol) -> the symbol as created, in creation order; its guards and specializations empty."""
    by_key: dict[tuple, dict] = {}
    for e in create_events:
        meta = _metadata(e)
        key = (compile_key(e["compile_id"]), meta.get("symbol"))
        if not meta.get("symbol") or key in by_key:
            continue
        source = meta.get("source") or "?"
        by_key[key] = {
            "compile_id": e["compile_id"],
            "symbol": meta["symbol"],
            "source": source,
            "subject": source_subject(source),
            "value": None if meta.get("val") is None else str(meta["val"]),
            "range": meta.get("vr"),
            "created_in_call": e.get("call_index"),
            **where(meta),
            "guards": [],
            "specializations": [],
            "values_by_call": [],  # the live engine's, from the calls' inputs (engine/stages/dynamo.py)
            "reused_by_calls": [],
        }
    return by_key


def _metadata(event: dict) -> dict:
    return event["metadata"] if isinstance(event["metadata"], dict) else {}


def _user_frame(meta: dict, files: dict, user_file: str) -> dict:
    """{file, line, code} of the innermost frame of a record's user_stack in the user's file (else the innermost);
    a file index the log did not intern is an unknown file."""
    frames = [
        {"file": files.get(f.get("filename"), f.get("filename")), "line": f.get("line"), "code": f.get("loc")}
        for f in (meta.get("user_stack") or [])
        if isinstance(f, dict)
    ]
    in_user = [f for f in frames if isinstance(f["file"], str) and is_user_file(f["file"], user_file)]
    frame = (in_user or frames or [{}])[-1]
    file = frame.get("file")
    return {"file": file if isinstance(file, str) else None, "line": frame.get("line"), "code": frame.get("code")}


def _symbols_of(by_key: dict, compile_id: str | None) -> list[dict]:
    key = compile_key(compile_id)
    return [symbol for (k, _), symbol in by_key.items() if k == key]


def _source_name(source: str) -> str:
    """Dynamo's source spelling -> the user's: "L['x']" -> "x", "L['self'].lin.weight" -> "self.lin.weight"."""
    return re.sub(r"[LG]\['([^']+)'\]", r"\1", source)


def _recompile_words(entry: dict) -> str:
    call = (
        f"the call on example_inputs[{entry['call_index']}]" if entry.get("call_index") is not None else "a later call"
    )
    function = f" {entry['function']}" if entry.get("function") else ""
    if entry.get("function") and entry.get("where"):
        function += f" at {entry['where']}"
    failed = (
        "; ".join(
            f"compile {g['compile_id']} rejected it: {g['guard']}" if g["compile_id"] else g["guard"]
            for g in entry["failed_guards"]
        )
        or "torch recorded no reason"
    )
    words = f"Recompiled{function} for {call} (compile {entry['compile_id']}): {failed}."
    for dim in entry["dynamic_dims"]:
        words += f" {dim['text']}."
    return words


def guards(log) -> list[dict]:
    """Each compile's guards as text with their count: the C++ guards of the structured trace, else (older torch)
    the TORCH_LOGS "guards" artifact. ``log`` is a log reader's view (engine.logtap)."""
    counts = {
        compile_key(e["compile_id"]): (e["metadata"] or {}).get("guard_count")
        for e in log.events("compilation_metrics")
    }
    guards = [
        {"compile_id": e["compile_id"], "text": e["payload"]}
        for e in log.events("dynamo_cpp_guards_str")
        if e["payload"]
    ]
    if not guards:  # older torch: only the TORCH_LOGS "guards" artifact
        guards = [
            {"compile_id": a["compile_id"], "text": a["text"]}
            for a in log.artifact_texts("guards")
            if "GUARDS" in a["text"] or "+-" in a["text"]
        ]
    for guard in guards:
        guard["count"] = counts.get(compile_key(guard["compile_id"]))
    return guards
