"""Import a TORCH_TRACE log (one job run anywhere with ``TORCH_TRACE=DIR``) as pt2scope reports, one per rank.

Each record is read once, as it streams past (engine/readers/tracelog.py), and kept only if a report field is made of it;
the report fields are then made by the same parser functions the live engine uses on its own log tap
(engine/stages/*: graph breaks, recompiles, output code and kernels, compile metrics, the timeline), so a log and a
pasted run read the same. Graphs arrive as printed code and become nodes through engine/readers/fxtext.py.

What a log cannot hold (benchmarks, bytecode, IR before/after fusion, functionalization, ...) is listed per
section under ``not_in_log``; event kinds this importer does not know are kept (counted, with samples) under
``trace_import.unknown_events``. Runs in a child process with limits (engine/importjob.py): the log is untrusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections import Counter, defaultdict

from contract.compile_id import CompileId
from contract.counts import summarize
from engine.importjob import REPORTS_INDEX, import_request
from engine.measure.compile_metrics import compile_seconds, metrics_summary, timeline
from engine.readers.dynamo_log import parse_graph_breaks, parse_recompiles, parse_symbols
from engine.readers.fxtext import is_library_file, parse_graph_code
from engine.readers.inductor_log import estimate_kernel_bytes, group_output_code, library_calls, parse_kernels
from engine.readers.nodes import op_histogram
from engine.readers.tracelog import (
    MAX_DEPTH,
    Budget,
    FileStats,
    Limits,
    LogFile,
    TraceLogError,
    log_files,
    nested_deeper_than,
    records,
    trace_event,
)
from engine.reportfile import empty_report, write_report

NOT_IN_TRACE_LOG = "not in a TORCH_TRACE log"
# Per section: report fields a structured trace does not carry (the live engine measures or hooks them).
NOT_IN_LOG = {
    "dynamo": ["bytecode"],
    "aot": ["functionalization", "decompositions"],
    "inductor": ["ir_pre_fusion", "ir_post_fusion", "fusion_decisions", "scheduler"],
    "runtime": ["benchmarks", "kernel_profile", "cudagraphs", "timing"],
}
AOT_GRAPH_EVENTS = {
    "aot_joint_graph": "joint",
    "aot_forward_graph": "forward",
    "aot_backward_graph": "backward",
    "aot_inference_graph": "inference",
}
# Records the report is made of (kept whole), and known kinds the report only counts.
KEPT_EVENTS = {
    "dynamo_output_graph",
    *AOT_GRAPH_EVENTS,
    "artifact:inductor_post_grad_graph",
    "inductor_output_code",
    "artifact:inductor_provenance_tracking_node_mappings",
    "artifact:inductor_provenance_tracking_kernel_stack_traces",
    "artifact:dynamo_graph_break_reason",
    "dynamo_cpp_guards_str",
    "dynamo_guards",
    "artifact:recompile_reasons",
    "create_symbol",  # when a dimension became dynamic (recompiles' dynamic_dims)
    "compilation_metrics",
    "bwd_compilation_metrics",
    "chromium_event",
    "str",
    "dynamo_start",
    "artifact:torch_version",
}
COUNTED_EVENTS = {
    "describe_storage",
    "describe_tensor",
    "describe_source",
    "artifact:before_pre_grad_graph",
    "artifact:after_pre_grad_graph",
    "artifact:aot_forward_graph_fw_metadata",
    "artifact:torch._functorch.config",
    "artifact:before_joint_graph",
    "artifact:after_joint_graph",
    "artifact:fx_graph_runnable",
    "artifact:before_post_grad_graph",
    "artifact:triton_kernel_info",
    "compilation_metrics_runtime",
    "bwd_compilation_metrics_runtime",
    "create_symbol",
    "create_unbacked_symbol",
    "guard_added",
    "guard_added_fast",
    "symbolic_shape_specialization",
    "expression_created",
    "propagate_real_tensors",
    "guard_on_data_dependent_error",
    "dynamo_graph_break_reason",
    "missing_fake_kernel",
    "mismatched_fake_kernel",
    "graph_dump",
    "optimize_ddp_split_graph",
    "optimize_ddp_split_child",
    "compiled_autograd_graph",
    "artifact:inductor_pre_grad_graph",
    "artifact:min_cut_information",
    "link",
    "dump_file",
}
CACHE_PREFIXES = (
    "artifact:fx_graph_cache_",
    "artifact:aotautograd_cache_",
    "artifact:fx_graph_bundled_cache_",
    "artifact:dynamo_cache_",
    "artifact:precompile_cache_",
)
# torch >= 2.13 logs the bytecode of Dynamo's resume functions as artifacts "<function>_ORIGINAL_BYTECODE" and
# "<function>_MODIFIED_BYTECODE".
BYTECODE_SUFFIXES = ("_ORIGINAL_BYTECODE", "_MODIFIED_BYTECODE")
UNKNOWN_SAMPLES, UNKNOWN_SAMPLE_CHARS = 3, 4000


def event_of(meta: dict) -> str:
    """The record's kind: its first key (torch writes the event name first, then the ids), artifacts by name."""
    event = next(iter(meta))
    if event == "artifact" and isinstance(meta[event], dict):
        return "artifact:" + str(meta[event].get("name", ""))
    return event


def compile_id_of(meta: dict) -> str | None:
    """Torch's compile id as every reader spells it (contract.compile_id)."""
    compile_id = CompileId.from_trace(meta)
    return str(compile_id) if compile_id else None


class RankLog:
    """What one rank's log holds that a report is made of, gathered as the records stream past."""

    def __init__(self, log: LogFile):
        self.log = log
        self.stats = FileStats(log.name, log.rank)
        self.trace: list[dict] = []  # kept records, in log order: {event, compile_id, metadata, payload}
        self.counts: Counter = Counter()
        self.unknown: dict[str, dict] = {}
        self.caches: list[dict] = []
        self.strings: dict[int, str] = {}
        self.devices: Counter = Counter()

    def add(self, meta: dict, payload: str | None) -> None:
        event = event_of(meta)
        self.counts[event] += 1
        if event == "str" and isinstance(meta["str"], list) and len(meta["str"]) == 2:
            self.strings[meta["str"][1]] = str(meta["str"][0])
        elif event == "describe_tensor" and isinstance(meta[event], dict):
            self.devices[str(meta[event].get("device", ""))] += 1
        if event in KEPT_EVENTS or event.endswith(BYTECODE_SUFFIXES):
            if event != "str" and not isinstance(meta[next(iter(meta))], (dict, type(None))):
                self.note_malformed("record", event, "its fields are not a JSON object")
                return
            entry = trace_event(meta, payload, self)  # as the live tap reads it (JSON decoded)
            if isinstance(entry.get("data"), (dict, list)) and nested_deeper_than(entry["data"], MAX_DEPTH):
                self.note_malformed("payload", event, f"nested deeper than {MAX_DEPTH} levels")
                return
            self.trace.append(entry)
        elif event.startswith(CACHE_PREFIXES):
            self.caches.append(
                {"event": event.removeprefix("artifact:"), "compile_id": compile_id_of(meta), **_cache_detail(payload)}
            )
        elif event not in COUNTED_EVENTS:
            entry = self.unknown.setdefault(event, {"event": event, "count": 0, "samples": []})
            entry["count"] += 1
            if len(entry["samples"]) < UNKNOWN_SAMPLES:
                entry["samples"].append(
                    {
                        "compile_id": compile_id_of(meta),
                        "metadata": json.dumps(meta, default=str)[:UNKNOWN_SAMPLE_CHARS],
                        "payload": (payload or "")[:UNKNOWN_SAMPLE_CHARS],
                    }
                )

    def events(self, event: str) -> list[dict]:
        return [e for e in self.trace if e["event"] == event]

    def note_malformed(self, kind: str, source: str, reason: str, text="") -> None:
        """A payload that should be JSON and is not (engine.readers.tracelog.trace_event): counted with the log's lines."""
        self.stats.note_malformed(self.stats.lines, f"{kind} in {source}: {reason}", str(text or ""))


def _cache_detail(payload: str | None) -> dict:
    try:
        data = json.loads(payload or "{}")
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    keep = (
        "key",
        "cache_state",
        "cache_event_time",
        "time_saved_ns",
        "reason",
        "cache_bypass_reason",
        "cache_bypass_exception_type",
        "components",
    )
    return {k: data[k] for k in keep if k in data and not isinstance(data[k], (dict, list))}


def read_rank(log: LogFile, budget: Budget, limits: Limits) -> RankLog:
    """One rank's log, read record by record."""
    rank_log = RankLog(log)
    for meta, payload in records(log, rank_log.stats, budget, limits):
        try:
            rank_log.add(meta, payload)
        except Exception as exc:  # one odd record (a field of an unexpected type) never stops an import
            rank_log.stats.note_malformed(
                rank_log.stats.lines, f"record not understood: {exc}", json.dumps(meta, default=str)[:300]
            )
    return rank_log


# --- one rank's log -> one report ---------------------------------------------------------------------------------


def user_file_of(log: RankLog) -> str | None:
    """The file the job's compiled code lives in: the non-library file most frames of the captured graphs name."""
    files = Counter()
    for e in log.events("dynamo_start"):
        for frame in (e["metadata"] or {}).get("stack") or []:
            name = log.strings.get(frame.get("filename"), frame.get("filename"))
            if isinstance(name, str) and not is_library_file(name):
                files[name] += 1
    for e in log.events("compilation_metrics"):
        name = (e["metadata"] or {}).get("co_filename")
        if isinstance(name, str) and not is_library_file(name):
            files[name] += 3  # the compiled frame itself
    return files.most_common(1)[0][0] if files else None


def _graph(event: dict, kind: str | None = None) -> dict:
    nodes = parse_graph_code(event["payload"] or "")
    graph = {"compile_id": event["compile_id"], "nodes": nodes, "num_nodes": len(nodes), "code": event["payload"]}
    if kind:
        graph["kind"] = kind
    graph["ops"] = op_histogram(nodes)
    return graph


def _post_grad_kind(graph: dict, inference_ids: set) -> str:
    """A post-grad graph's kind: a compile id with an inference graph compiles only that; otherwise a backward
    graph is the one that reads tangents."""
    if graph["compile_id"] in inference_ids:
        return "inference"
    reads_tangents = any(n["op"] == "placeholder" and n["name"].startswith("tangents") for n in graph["nodes"])
    return "backward" if reads_tangents else "forward"


def _bytecode(log: RankLog) -> list[dict]:
    """Original and Dynamo-modified bytecode per (compile id, function), where the log has it (as dis text)."""
    entries: dict[tuple, dict] = {}
    for e in log.trace:
        if not e["event"].endswith(BYTECODE_SUFFIXES):
            continue
        name, _, side = e["event"].removeprefix("artifact:").rpartition("_")[0].rpartition("_")
        entry = entries.setdefault(
            (e["compile_id"], name),
            {
                "compile_id": e["compile_id"],
                "name": name,
                "file": None,
                "line": None,
                "original": "",
                "transformed": "",
                "decompiled": None,
            },
        )
        entry["original" if side == "ORIGINAL" else "transformed"] = e["payload"] or ""
    return list(entries.values())


def _partitions(aot_graphs: list[dict]) -> list[dict]:
    """Values saved for backward (backward inputs that are not tangents) and forward ops the backward recomputes
    (as engine/stages/aot.py finds them on live graphs), from each compile id's joint and backward graphs."""
    out = []
    by_id = defaultdict(dict)
    for graph in aot_graphs:
        by_id[graph["compile_id"]][graph["kind"]] = graph
    for compile_id, graphs in by_id.items():
        backward, forward = graphs.get("backward"), graphs.get("forward")
        if not backward:
            continue
        saved = [
            n["name"] for n in backward["nodes"] if n["op"] == "placeholder" and not n["name"].startswith("tangents")
        ]
        joint_forward = set()
        if graphs.get("joint"):
            after_tangent = set()
            for node in graphs["joint"]["nodes"]:
                if node["name"].startswith("tangents") or any(a in after_tangent for a in node["args"]):
                    after_tangent.add(node["name"])
                elif node["op"] == "call_function":
                    joint_forward.add(node["name"])
            for node in graphs["joint"]["nodes"]:
                node["marks"] = {"saved": node["name"] in saved, "backward": node["name"] in after_tangent}
        recomputed = [n["name"] for n in backward["nodes"] if n["op"] == "call_function" and n["name"] in joint_forward]
        for node in (forward or {}).get("nodes", []):
            node["marks"] = {"saved": node["name"] in saved}
        if graphs.get("joint"):
            for node in graphs["joint"]["nodes"]:
                node["marks"]["recomputed"] = node["name"] in recomputed
        out.append(
            {
                "compile_id": compile_id,
                "saved": saved,
                "recomputed": recomputed,
                "forward_nodes": len((forward or {}).get("nodes", [])),
                "backward_nodes": len(backward["nodes"]),
            }
        )
    return out


def log_versions(log: RankLog) -> dict:
    """The torch (and Triton, CUDA, Python) versions that wrote the log: the torch_version artifact where torch
    logs one (2.13), else what every compile's compilation_metrics names (torch 2.11 logs no artifact).
    {torch_version, triton_version, cuda_version, python_version}, each None where the log names none."""
    found: dict = {}
    for event in log.events("artifact:torch_version"):
        if event["payload"]:
            try:
                payload = json.loads(event["payload"])
            except ValueError:
                continue
            if isinstance(payload, dict):
                found = payload
                break
    if not found.get("pytorch_version"):
        for name in ("compilation_metrics", "compilation_metrics_runtime", "bwd_compilation_metrics"):
            metrics = next(
                (
                    e["metadata"]
                    for e in log.events(name)
                    if isinstance(e["metadata"], dict) and e["metadata"].get("pytorch_version")
                ),
                None,
            )
            if metrics:
                found = {**metrics, **{k: v for k, v in found.items() if v}}
                break

    def text(key: str):
        value = found.get(key)
        return value.split(" ", 1)[0] if isinstance(value, str) and value else None  # "3.12.3 (main, ...)"

    return {
        "torch_version": text("pytorch_version"),
        "triton_version": text("triton_version"),
        "cuda_version": text("cuda_version"),
        "python_version": text("python_version"),
    }


def build_report(log: RankLog, source_name: str) -> dict:
    user_file = user_file_of(log)
    user_base = os.path.basename(user_file) if user_file else source_name
    devices = {d.split("'")[1] if "'" in d else d for d in log.devices if d}
    device = "cuda" if any(d.startswith("cuda") for d in devices) else ("cpu" if devices else None)
    report = empty_report(import_request(user_base, device or "cpu"))
    report["status"] = "ok"
    report["source"] = {"filename": user_base, "code": "", "path": user_file, "not_in_log": True}
    report["environment"].update(log_versions(log), device=device, devices=sorted(devices), rank=log.log.rank)
    _dynamo_section(log, report["dynamo"], user_base, user_file)
    aot = report["aot"]
    aot["graphs"] = [_graph(e, kind) for e in log.trace if (kind := AOT_GRAPH_EVENTS.get(e["event"])) and e["payload"]]
    aot["partitions"] = _partitions(aot["graphs"])
    _inductor_section(log, report["inductor"], aot["graphs"], user_base)
    runtime = report["runtime"]
    forward = [e["metadata"] for e in log.events("compilation_metrics") if isinstance(e["metadata"], dict)]
    backward = [e["metadata"] for e in log.events("bwd_compilation_metrics") if isinstance(e["metadata"], dict)]
    runtime["compile_seconds"] = compile_seconds(forward, backward)
    runtime["compile_metrics"] = [metrics_summary(m) for m in forward]
    runtime["compile_timeline"] = timeline([e for e in log.events("chromium_event") if e["payload"]])

    hits = Counter(c["event"] for c in log.caches)
    report["caches"] = {
        "state": "from the log",
        "events": log.caches,
        "counts": dict(hits),
        "note": "cache hits and misses the job's own run logged (Inductor FX graph cache, "
        "AOTAutograd cache); a hit means the graphs below were not recompiled",
    }
    for section, fields in NOT_IN_LOG.items():
        report[section]["not_in_log"] = [f for f in fields if _empty(report[section].get(f))]
    report["stages"] = []
    report["trace_import"] = {
        "file": log.stats.as_dict(),
        "rank": log.log.rank,
        "user_file": user_file,
        "event_counts": dict(sorted(log.counts.items(), key=lambda kv: -kv[1])),
        "unknown_events": list(log.unknown.values()),
        "not_in_log_note": NOT_IN_TRACE_LOG,
    }
    report["summary"] = summarize(report)  # the counts every page reads, owned as in a pasted run's report
    return report


def _dynamo_section(log: RankLog, dynamo: dict, user_base: str, user_file: str | None) -> None:
    """Dynamo's graphs, graph breaks, guards, recompiles and bytecode, read as the live engine reads its own."""
    dynamo["graphs"] = [_graph(e) for e in log.events("dynamo_output_graph") if e["payload"]]
    dynamo["graph_breaks"] = parse_graph_breaks(log.events("artifact:dynamo_graph_break_reason"), user_base)
    dynamo["guards"] = [
        {"compile_id": e["compile_id"], "text": e["payload"]}
        for e in log.events("dynamo_cpp_guards_str")
        if e["payload"]
    ]
    if not dynamo["guards"]:  # older torch: the guard list as JSON
        dynamo["guards"] = [
            {"compile_id": e["compile_id"], "text": e["payload"]} for e in log.events("dynamo_guards") if e["payload"]
        ]
    dynamo["recompiles"] = parse_recompiles(
        log.events("artifact:recompile_reasons"), [], log.events("create_symbol"), user_file
    )
    dynamo["symbols"] = parse_symbols(
        log.events("create_symbol"),
        log.events("guard_added_fast"),
        log.events("symbolic_shape_specialization"),
        log.events("str"),
        user_base,
    )
    dynamo["bytecode"] = _bytecode(log)
    dynamo["summary"] = {
        "graph_count": len(dynamo["graphs"]),
        "graph_break_count": sum(b["count"] for b in dynamo["graph_breaks"]),
        "unique_graph_breaks": len(dynamo["graph_breaks"]),
        "recompile_count": len(dynamo["recompiles"]),
        "op_count": sum(sum(g["ops"].values()) for g in dynamo["graphs"]),
    }


def _inductor_section(log: RankLog, inductor: dict, aot_graphs: list[dict], user_base: str) -> None:
    """Post-grad graphs, output code and its kernels (their bytes, post-grad nodes and the user's lines), each
    post-grad node marked with its kernel, and the calls to library kernels."""
    inference_ids = {g["compile_id"] for g in aot_graphs if g["kind"] == "inference"}
    inductor["post_grad_graphs"] = [_graph(e) for e in log.events("artifact:inductor_post_grad_graph") if e["payload"]]
    for graph in inductor["post_grad_graphs"]:
        graph["kind"] = _post_grad_kind(graph, inference_ids)
    outputs = group_output_code(log.trace)
    inductor["output_code"] = [{"compile_id": o["compile_id"], "kind": o["kind"], "code": o["code"]} for o in outputs]
    inductor["kernels"] = []
    input_dtypes = {
        (g["compile_id"], g["kind"], n["name"]): n.get("dtype")
        for g in inductor["post_grad_graphs"]
        for n in g["nodes"]
        if n["op"] == "placeholder"
    }
    for output in outputs:
        # Inductor's provenance tracking (on in the recorded logs: INDUCTOR_PROVENANCE=1) names each kernel's
        # post-grad nodes; the source-node comment names the nodes before decomposition ("linear", "gelu").
        to_post = {
            key.split(":")[0]: value for key, value in (output["node_mappings"].get("cppCodeToPost") or {}).items()
        }
        kernels = parse_kernels(output, user_base)
        estimate_kernel_bytes(kernels, output, input_dtypes)  # as the live engine does where Inductor gave none
        for kernel in kernels:
            kernel["post_grad_nodes"] = to_post.get(kernel["name"], [])
            inductor["kernels"].append(kernel)
    kernel_of = {
        (k["compile_id"], k["graph_kind"], n): k["name"]
        for k in inductor["kernels"]
        for n in k["post_grad_nodes"] or k["source_nodes"]
    }
    for graph in inductor["post_grad_graphs"]:
        for node in graph["nodes"]:
            node["marks"] = {"kernel": kernel_of.get((graph["compile_id"], graph["kind"], node["name"]))}
    nodes_of = {(g["compile_id"], g["kind"]): {n["name"]: n for n in g["nodes"]} for g in inductor["post_grad_graphs"]}
    for kernel in inductor["kernels"]:
        graph_nodes = nodes_of.get((kernel["compile_id"], kernel["graph_kind"]), {})
        if not kernel["source_lines"]:  # the post-grad nodes' own "# File:" lines
            lines = {}
            for name in kernel["post_grad_nodes"] or kernel["source_nodes"]:
                node = graph_nodes.get(name)
                if node and node.get("line") and not is_library_file(node.get("file")):
                    lines.setdefault(node["line"], {"file": node["file"], "line": node["line"], "code": node["code"]})
            kernel["source_lines"] = [lines[k] for k in sorted(lines)]
    inductor["library_calls"] = [call for output in outputs for call in library_calls(output)]
    inductor["metrics"] = {"kernel_count": len(inductor["kernels"])}


def _empty(value) -> bool:
    """Nothing recorded: an empty list, or an object whose every field is null."""
    if isinstance(value, dict):
        return all(_empty(v) for v in value.values())
    return not value


def compile_signature(report: dict) -> dict:
    """What must agree between ranks of one job: graphs (their code), breaks, recompiles and kernels."""

    def digest(texts):
        return hashlib.sha256("\n\0".join(texts).encode()).hexdigest()[:16]

    return {
        "graphs": len(report["dynamo"]["graphs"]),
        "graph_code": digest(g["code"] or "" for g in report["dynamo"]["graphs"]),
        "graph_breaks": report["dynamo"]["summary"]["graph_break_count"],
        "recompiles": len(report["dynamo"]["recompiles"]),
        "kernels": sorted(k["name"] for k in report["inductor"]["kernels"]),
    }


def rank_difference(base: dict, report: dict) -> dict | None:
    """How a rank's compiles differ from the first rank's (its signature ``base``): {rank, file, fields, detail}, or
    None when they agree."""
    signature = compile_signature(report)
    fields = [key for key in base if signature[key] != base[key]]
    if not fields:
        return None
    return {
        "rank": report["trace_import"]["rank"],
        "file": report["trace_import"]["file"]["name"],
        "fields": fields,
        "detail": {key: {"base": base[key], "this": signature[key]} for key in fields},
    }


def _rank_info(report: dict, difference: dict | None) -> dict:
    info = report["trace_import"]
    return {
        "rank": info["rank"],
        "file": info["file"]["name"],
        "signature": compile_signature(report),
        "differs": difference["fields"] if difference else [],
    }


def import_ranks(path: str, display_name: str | None = None, limits: Limits | None = None, on_report=None) -> int:
    """Import every rank of a TORCH_TRACE upload, one at a time: ``on_report(index, report)`` gets each report as
    soon as it is made, the further ranks first (index 1, 2, ...) and the first rank last (index 0), since only its
    report lists every rank (a further rank's lists the first rank and itself: the list would otherwise make the
    import quadratic in ranks). At most two ranks' records and reports are held at once. Returns the number of
    ranks; raises TraceLogError on an upload that is not a log at all, or past a limit."""
    display_name = display_name or os.path.basename(path)
    limits = limits or Limits()
    budget = Budget(limits.max_bytes)
    first, ranks_info, differing, lines, any_records = None, [], [], 0, False
    for index, log in enumerate(log_files(path, display_name, limits.max_ranks)):
        rank_log = read_rank(log, budget, limits)
        lines += rank_log.stats.lines
        any_records = any_records or rank_log.stats.records > 0
        report = _built(rank_log, display_name)
        del rank_log
        report["trace_import"]["source"] = display_name
        if first is None:
            first, base = report, compile_signature(report)
            ranks_info.append(_rank_info(report, None))
            continue
        difference = rank_difference(base, report)
        ranks_info.append(_rank_info(report, difference))
        differing += [difference] if difference else []
        report["trace_import"].update(
            ranks=[ranks_info[0], ranks_info[-1]], differing_ranks=[difference] if difference else []
        )
        if on_report:  # a log with no record at all is refused below: its writer then drops these
            on_report(index, report)
    if not any_records:
        raise TraceLogError(
            f"{display_name} holds no structured-trace record in {lines} line(s): upload the file "
            "TORCH_TRACE=DIR wrote (DIR/dedicated_log_torch_trace_*.log), not TORCH_LOGS output"
        )
    first["trace_import"].update(ranks=ranks_info, differing_ranks=differing)
    if on_report:
        on_report(0, first)
    return len(ranks_info)


def import_trace(path: str, display_name: str | None = None, limits: Limits | None = None) -> list[dict]:
    """Every rank of a TORCH_TRACE upload as a report, first rank first (import_ranks, collected)."""
    reports = {}
    import_ranks(path, display_name, limits, lambda index, report: reports.__setitem__(index, report))
    return [reports[index] for index in sorted(reports)]


def _built(log: RankLog, display_name: str) -> dict:
    """One rank's report; a record whose fields have a shape no parser expects fails the import with a message
    that says so, never with a traceback."""
    try:
        return build_report(log, display_name)
    except Exception as exc:
        raise TraceLogError(
            f"{log.log.name}: a record has a shape this importer cannot read ({type(exc).__name__}: "
            f"{str(exc)[:200]}): the log is damaged, or written by a torch this version of pt2scope does not know"
        ) from None


def report_file(index: int, rank: int | None) -> str:
    """report.json for the first rank, report.rank<N>.json for a further ranked log, report.file<I>.json for a
    further log whose name carries no rank (ranks are unique in an upload: these names cannot collide)."""
    if index == 0:
        return "report.json"
    return f"report.rank{rank}.json" if rank is not None else f"report.file{index}.json"


def write_import(log_path: str, out_dir: str, display_name: str, limits: Limits | None = None) -> list[str]:
    """Import and write the reports (OUT/report.json first, then one file per further rank: report_file), and
    OUT/reports.json, their names in rank order; a log that cannot be read leaves OUT/error.json {"error": message}
    instead. Returns the report paths, first rank first."""
    os.makedirs(out_dir, exist_ok=True)
    started = time.monotonic()
    names: dict[int, str] = {}

    def write(index: int, report: dict) -> None:
        report["runtime"]["job_seconds"] = round(time.monotonic() - started, 3)
        names[index] = report_file(index, report["trace_import"]["rank"])
        write_report(report, os.path.join(out_dir, names[index]))

    try:
        import_ranks(log_path, display_name, limits, write)
    except (TraceLogError, OSError) as exc:
        message = str(exc) if isinstance(exc, TraceLogError) else f"{display_name} cannot be read: {exc.strerror}"
        with open(os.path.join(out_dir, "error.json"), "w") as f:
            json.dump({"error": message}, f)
        return []
    ordered = [names[index] for index in sorted(names)]
    with open(os.path.join(out_dir, REPORTS_INDEX), "w") as f:
        json.dump(ordered, f)
    return [os.path.join(out_dir, name) for name in ordered]


def main() -> int:
    """The child engine/importjob.py starts: one job read from stdin as JSON {log, out, name, max_mb, max_ranks}."""
    line = sys.stdin.readline()
    if not line.strip():
        return 0  # the parent went away without a job for this child
    job = json.loads(line)
    limits = Limits(max_bytes=int(job["max_mb"] * 1024**2), max_ranks=int(job["max_ranks"]))
    write_import(job["log"], job["out"], job["name"], limits)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
