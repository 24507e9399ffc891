"""``python -m engine explore FILE``: run one job and print progress stage by stage, then a summary."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import sys
import time

from contract.counts import COUNT_LABELS
from contract.limits import DEFAULT_LIMITS
from contract.vocab import CONFIGS, MEASURING_PROCESSES, ConfigError
from engine.job import JobRequest, run_job, warm_up_shared_pch
from engine.reportfile import write_report
from engine.sandbox import Isolation, IsolationError, check
from engine.sink import ReportSink


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    return import_command(args) if args.command == "import" else explore_command(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine", description="See inside torch.compile.")
    sub = parser.add_subparsers(dest="command", required=True)
    explore = sub.add_parser("explore", help="compile FILE with every stage recorded; write DIR/report.json")
    explore.add_argument("file", help="Python file defining `model` and `example_inputs`")
    explore.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    explore.add_argument(
        "--train", action="store_true", default=None, help="also run backward (default: the file's `train`)"
    )
    explore.add_argument("--configs", default="", help=f"comma-separated subset of: {', '.join(CONFIGS)}")
    explore.add_argument("--out", help="output folder (default: a new folder named after FILE and the time)")
    explore.add_argument(
        "--time-limit", type=float, default=DEFAULT_LIMITS.time_limit_s, help="seconds before the job is killed"
    )
    explore.add_argument(
        "--user-code-time-limit",
        type=float,
        default=DEFAULT_LIMITS.user_code_time_limit_s,
        help="seconds each stage that runs only your code (loading the file, the eager run) may take",
    )
    explore.add_argument(
        "--stall-limit",
        type=float,
        default=DEFAULT_LIMITS.stall_limit_s,
        help="seconds the job may go without progress once your code has run eagerly (plus ten eager steps)",
    )
    explore.add_argument("--quiet", action="store_true", help="no progress lines")
    explore.add_argument(
        "--no-warm-compile",
        dest="warm_compile",
        action="store_false",
        help="skip the two fresh processes that compile again from warm caches and time every config (about half "
        "an Inductor job): no cold-vs-warm figures, and the figures are this job's process's own",
    )
    explore.add_argument(
        "--processes",
        dest="measuring_processes",
        type=int,
        default=MEASURING_PROCESSES[0],
        metavar="N",
        help=f"fresh processes every Runtime figure is taken across, {MEASURING_PROCESSES[0]} to "
        f"{MEASURING_PROCESSES[1]} (default %(default)s; each one more costs a fresh import and warm compile): where "
        "a step's speed moves from process to process, more of them make its median hold in the next run",
    )
    imported = sub.add_parser(
        "import",
        help="read a TORCH_TRACE log (.log, .gz, or a zip/tar of one folder with "
        "one log per rank) into DIR/report.json",
    )
    imported.add_argument("log", help="the log TORCH_TRACE=DIR wrote, or an archive of DIR")
    imported.add_argument("--out", help="output folder (default: a new folder named after LOG and the time)")
    imported.add_argument("--name", help="the upload's own name, when LOG is a stored copy")
    imported.add_argument("--max-mb", type=float, help="the most (decompressed) MiB to read")
    return parser


def explore_command(args) -> int:
    """One job, its progress on stderr, then DIR/report.json and a summary (exit status 1 if the job failed, 2 if
    it could not start)."""
    try:
        with open(args.file) as f:
            code = f.read()
    except OSError as exc:
        print(f"error: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    request = JobRequest(
        code=code,
        filename=os.path.basename(args.file),
        device=args.device,
        train=args.train,
        configs=[c for c in args.configs.split(",") if c],
        time_limit_s=args.time_limit,
        user_code_time_limit_s=args.user_code_time_limit,
        stall_limit_s=args.stall_limit,
        warm_compile=args.warm_compile,
        measuring_processes=args.measuring_processes,
    )
    try:
        request.validated()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        configured = Isolation.from_env()
        isolation_line = check(configured)  # the sandbox works here, before a job of ours runs in it (with_shared_pch)
        isolation = with_shared_pch(configured, request, args.quiet)
        if isolation != configured:
            isolation_line = check(isolation)  # what the job gets: the shared header bound too
    except IsolationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(isolation_line, file=sys.stderr)
    out = args.out or f"pt2scope-{os.path.splitext(request.filename)[0]}-{time.strftime('%Y%m%d-%H%M%S')}"
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "report.json")
    report = run_job(request, job_dir=os.path.join(out, "job"), sink=_Terminal(path, args.quiet), isolation=isolation)
    if report["status"] != "ok":
        f = report["failure"]
        print(f"failed ({f['kind']}, stage {f['stage']}): {f['message']}", file=sys.stderr)
        print(f"report: {path}", file=sys.stderr)
        return 1
    print(summary(report))
    print(f"report: {path}")
    return 0


def with_shared_pch(isolation: Isolation, request: JobRequest, quiet: bool) -> Isolation:
    """A sandboxed CPU job's isolation with a precompiled header shared between runs, as a worker shares one: kept
    in the user's cache folder and built once per torch and compiler by a job of our own code
    (engine.job.warm_up_shared_pch). Without it every run's g++ builds the header again, about 10 s of a CPU compile
    that a plain script pays once per machine (Inductor keeps its header in /tmp). Unchanged where the operator
    named a folder (PT2SCOPE_PCH_DIR), without the sandbox (the job then uses the machine's /tmp as a script does),
    on the GPU, or where no config asks for Inductor (a backend of the user's own might)."""
    inductor = not request.configs or any(c not in CONFIGS or CONFIGS[c].backend == "inductor" for c in request.configs)
    if request.device != "cpu" or not inductor or isolation.mode != "bubblewrap" or isolation.shared_pch_dir:
        return isolation
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    shared = dataclasses.replace(isolation, shared_pch_dir=os.path.join(cache, "pt2scope", "pch"))
    started = time.monotonic()
    try:
        built = warm_up_shared_pch(shared)
    except (OSError, RuntimeError) as exc:
        print(f"note: no shared precompiled header, this run builds its own ({exc})", file=sys.stderr)
        return isolation
    if built and not quiet:
        print(
            f"built the shared precompiled header in {time.monotonic() - started:.0f} s, once for this torch and "
            f"compiler ({shared.shared_pch_dir})",
            file=sys.stderr,
        )
    return shared


def import_command(args) -> int:
    """Import in a limited child (engine/importjob.py, as a worker does): DIR/report.json for the first rank, a
    file for every further one (engine.traceimport.report_file)."""
    from engine.importjob import ImportFailed, ImportLimits, run_import

    name = args.name or os.path.basename(args.log)
    out = args.out or f"pt2scope-{name.split('.')[0]}-{time.strftime('%Y%m%d-%H%M%S')}"
    limits = ImportLimits() if args.max_mb is None else ImportLimits(max_log_mb=int(args.max_mb))
    try:
        reports = run_import(args.log, out, name, limits)
    except ImportFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, report in zip(reports.names, itertools.chain([reports.first], reports.further())):
        info = report["trace_import"]
        rank = info["rank"]
        path = os.path.join(out, name)
        print(
            f"rank {rank if rank is not None else '-'}: {info['file']['records']} records, "
            f"{info['file']['malformed']} malformed line(s)"
        )
        print(summary(report))
        print(f"report: {path}")
    return 0


class _Terminal(ReportSink):
    """The CLI's sink: progress on stderr (unless quiet), the report written to ``path``."""

    def __init__(self, path: str, quiet: bool):
        self.path, self.quiet = path, quiet

    def event(self, event: dict) -> None:
        if not self.quiet:
            _progress(event)

    def final(self, report: dict) -> None:
        write_report(report, self.path)


def _progress(event: dict) -> None:
    if event.get("event") != "stage":
        return
    config = f" [{event['config']}]" if event.get("config") else ""
    if event["state"] == "started":
        print(f"{event['elapsed_s']:7.1f}s  {event['stage']}{config} ...", file=sys.stderr, flush=True)
    elif event["state"] == "finished":
        extra = f"  median {event['median_ms']:.3f} ms" if event.get("median_ms") is not None else ""
        print(
            f"{event['elapsed_s']:7.1f}s  {event['stage']}{config} done in {event['seconds']:.2f}s{extra}",
            file=sys.stderr,
            flush=True,
        )


def roofline_lines(rt: dict) -> list[str]:
    """A line for each of the five slowest kernels placed on the roofline (profiling.roofline_place), then how
    many more the report places."""
    placed = [r for r in rt.get("kernel_profile") or [] if r.get("bound") and r.get("attainable_share") is not None]
    lines = []
    for row in placed[:5]:  # the profile is slowest first
        lines.append(
            f"roofline: {row['kernel']}: {row['arithmetic_intensity']:.3g} FLOP/B, "
            f"{row['flops_per_s'] / 1e9:.3g} GFLOP/s, {row['bound']}-bound, "
            f"{row['attainable_share']:.0%} of its roof"
        )
    if len(placed) > 5:
        lines.append(f"roofline: {len(placed) - 5} more kernels placed (the report's Inductor tab)")
    return lines


def summary(report: dict) -> str:
    """The closing text: what each stage captured and its compile times, then, for a job (an imported log has no
    timings), the ladder's table and what the runtime found."""
    lines = _stage_lines(report)
    if report.get("trace_import"):
        unknown = report["trace_import"]["unknown_events"]
        if unknown:
            lines.append("unknown events (kept): " + ", ".join(f"{u['event']} x{u['count']}" for u in unknown))
        return "\n".join(lines)
    return "\n".join(lines + _runtime_lines(report))


def _stage_lines(report: dict) -> list[str]:
    ind, rt = report["inductor"], report["runtime"]
    env = report["environment"]
    counts = (report.get("summary") or {}).get("counts") or {}

    def count(*keys):  # the report's own counts (report["summary"]), named as everywhere (contract/counts.py)
        return ", ".join(f"{counts.get(k) if counts.get(k) is not None else '?'} {COUNT_LABELS[k]}" for k in keys)

    lines = [
        f"torch {env.get('torch_version')} on {env.get('device')} ({env.get('device_name')})",
        "dynamo: " + count("dynamo_graphs", "graph_breaks", "unique_graph_breaks", "recompiles", "guards"),
        f"aot: {', '.join(sorted({g['kind'] for g in report['aot']['graphs']})) or 'not run'}",
        "inductor: "
        + count("generated_kernels", "library_calls")
        + "".join(f"\n  {k['name']} ({k['language']}): {', '.join(k['source_nodes'])}" for k in ind["kernels"][:8]),
    ]
    cs = {k: v for k, v in (rt.get("compile_seconds") or {}).items() if isinstance(v, (int, float))}
    if cs:
        lines.append("compile (exclusive stages): " + ", ".join(f"{k} {v:.2f}s" for k, v in cs.items()))
    cold_kernels = (((rt.get("compile_cache") or {}).get("cold") or {}).get("caches") or {}).get("kernels")
    if cold_kernels:  # where the recorded compile's kernels came from, in words (a shared cache says so)
        lines.append(
            f"kernel binaries (recorded compile): {cold_kernels['hits']} hit(s), {cold_kernels['misses']} miss(es)"
            f" ({cold_kernels.get('state')})"
        )
    warm = (rt.get("compile_cache") or {}).get("warm") or {}
    if warm.get("status") == "ok":
        lines.append(f"warm compile (fresh process, caches filled): {warm['seconds']['total']:.2f}s")
    return lines


def _runtime_lines(report: dict) -> list[str]:
    rt, lines = report["runtime"], []
    mode = rt.get("mode") or {}
    if mode:
        lines.append(f"mode: {mode.get('kind')} ({mode.get('reason')})")
    lines.append(
        f"{'config':<26}{'ms/step':>10}{'p10-p90':>19}{'latency':>10}{'verdict':>10}{'max abs err':>13}  speedup"
    )
    for b in rt["benchmarks"]:
        if b["status"] != "ok":
            lines.append(f"{b['config']:<26}  failed: {(b['error'] or '')[:80]}")
            continue
        # The speedup in words: the figure with its spread, or "not decided" (never a bare number).
        speedup = (b.get("speedup") or {}).get("text") or "not measured"
        verdict = (b.get("correctness") or {}).get("verdict") or "?"
        lines.append(
            f"{b['config']:<26}{b['median_ms']:>10.4f}{b['p10_ms']:>9.4f}-{b['p90_ms']:<9.4f}"
            f"{b.get('latency_ms') or 0:>10.4f}{verdict:>10}{b['max_abs_error'] or 0:>13.2e}  {speedup}"
        )
    correctness = rt.get("correctness") or {}
    if correctness.get("text"):
        lines.append(f"correctness: {correctness['text']}")
    if rt.get("bisect"):
        bisect = rt["bisect"]
        lines.append(f"bisect: {bisect['text']} ({len(bisect['steps'])} compiles, {bisect.get('seconds') or 0:.1f}s)")
        if bisect.get("minified"):
            lines.append(f"minified: {bisect['minified']['text']}")
    if (rt.get("load") or {}).get("text"):
        lines.append(f"machine: {rt['load']['text']}")
    if (rt.get("kernel_profile_summary") or {}).get("text"):
        lines.append(f"kernels: {rt['kernel_profile_summary']['text']}")
    lines += roofline_lines(rt)
    for decision in rt.get("autotune") or []:
        chosen = next((c for c in decision["choices"] if c["chosen"]), None)
        lines.append(
            f"autotune [{decision['config']}] {decision['op']}: {len(decision['choices'])} "
            f"{'algorithms' if decision['kind'] == 'algorithm' else 'configs'}, chose "
            + (f"{chosen['name']} ({chosen['ms']:.4g} ms)" if chosen else "none (every choice failed)")
        )
    memory = memory_line((report.get("debug") or {}).get("memory") or [])
    if memory:
        lines.append(memory)
    for b in rt["benchmarks"]:
        cg = b.get("cudagraphs") or {}
        if cg.get("reason"):
            lines.append(f"cuda graphs [{b['config']}]: {cg['status']}: {cg['reason']}")
    malformed = (report.get("logs") or {}).get("malformed") or {}
    if malformed.get("count"):
        lines.append(
            f"logs: {malformed['count']} record(s) torch wrote could not be read "
            f"({', '.join(f'{k} {v}' for k, v in malformed['by_kind'].items())}): see the report's logs"
        )
    if report["unavailable"]:
        lines.append("unavailable: " + ", ".join(u["name"] for u in report["unavailable"]))
    return lines


def memory_line(memory: list[dict]) -> str | None:
    """debug.memory in one line: "memory (peak per step; saved for backward): eager 33.0 MB; 28.8 MB, ..."."""
    parts = []
    for m in memory:
        if m["peak_bytes"] is None and not m["saved_for_backward"]:
            continue
        part = f"{m['config']} {_mb(m['peak_bytes'])}"
        ratio = m["compression_ratio"]
        if m["config"] != "eager" and ratio:
            part += f" ({ratio:.3g}x less than eager)" if ratio >= 1 else f" ({1 / ratio:.3g}x more than eager)"
        if m["saved_for_backward"]:
            part += f", saved {_mb(m['saved_for_backward']['bytes'])}"
        parts.append(part)
    if not parts:
        return None
    training = any(m["saved_for_backward"] for m in memory)
    return f"memory (peak per step{'; bytes saved for backward' if training else ''}): " + "; ".join(parts)


def _mb(size: int | None) -> str:
    return f"{size / 1e6:.3g} MB" if size is not None else "not measured"
