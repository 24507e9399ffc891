"""Reading an uploaded TORCH_TRACE log as untrusted data: the files in it (one per rank), streamed record by record.

No torch here: the worker's parent side checks an upload with it, and the importer (engine/traceimport.py) reads
it in a resource-limited child. What a file may be, found from its first bytes rather than its name:

- a structured-trace log (``TORCH_TRACE=DIR`` writes ``DIR/dedicated_log_torch_trace_[rank_N_]*.log``): a glog
  header with one JSON object per record, its payload on the following tab-indented lines (the format tlparse reads);
- that log gzip-compressed;
- a zip or tar (optionally gzip/bz2/xz-compressed) of one folder with one log per rank.

Limits: the bytes read across all files (decompressed: a small archive must not expand without bound), and one
record's payload; a file past the limit stops the import with a message that names the limit. Lines that are not
records are counted and sampled, never fatal.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import re
import tarfile
import zipfile
from dataclasses import dataclass, field
from zlib import error as zlib_error

from contract.compile_id import CompileId

DEFAULT_MAX_BYTES = 2 * 1024**3  # decompressed bytes read in one import
DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024**2  # one record's payload; longer ones are cut (and counted)
# Logs in one upload: each becomes a run with a report of its own (about 0.1 s each to import and store here), and
# one upload counts as one submission.
DEFAULT_MAX_RANKS = 1024
MALFORMED_SAMPLES = 20
# A record nested deeper is not torch's (its deepest, compilation metrics' stacks, nest under 10): every reader
# after this one may recurse on what it keeps.
MAX_DEPTH = 64
_RANK = re.compile(r"rank_(\d+)")
_GZIP, _ZIP, _BZ2, _XZ = b"\x1f\x8b", b"PK\x03\x04", b"BZh", b"\xfd7zXZ"


class TraceLogError(ValueError):
    """The upload cannot be read as a TORCH_TRACE log; the message says why, in the user's terms."""


@dataclass
class Limits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    max_ranks: int = DEFAULT_MAX_RANKS


@dataclass
class FileStats:
    """What reading one log file met: bytes, lines and records read, and what could not be read."""

    name: str
    rank: int | None
    bytes: int = 0
    lines: int = 0
    records: int = 0
    malformed: int = 0
    malformed_samples: list = field(default_factory=list)  # [{line, reason, text}]
    truncated_payloads: int = 0

    def note_malformed(self, line_number: int, reason: str, text: str) -> None:
        self.malformed += 1
        if len(self.malformed_samples) < MALFORMED_SAMPLES:
            self.malformed_samples.append({"line": line_number, "reason": reason, "text": text[:300]})

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "rank": self.rank,
            "bytes": self.bytes,
            "lines": self.lines,
            "records": self.records,
            "malformed": self.malformed,
            "malformed_samples": self.malformed_samples,
            "truncated_payloads": self.truncated_payloads,
        }


@dataclass
class LogFile:
    """One log inside an upload: its name, rank (from the file name, else its place) and how to open it."""

    name: str
    rank: int | None
    open: object  # () -> binary stream, decompressed


class Budget:
    """Bytes read across every file of one upload, checked as they are read."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def spend(self, count: int, name: str) -> None:
        self.used += count
        if self.used > self.limit:
            raise TraceLogError(
                f"the log is larger than the import limit of {self.limit / 1024**2:.0f} MiB "
                f"(decompressed; reached in {name}): upload one rank's log, or fewer ranks"
            )


def _kind(path: str) -> str:
    with open(path, "rb") as f:
        head = f.read(512)
    if head.startswith(_ZIP):
        return "zip"
    if head.startswith(_GZIP):
        try:
            with gzip.open(path) as g:
                inner = g.read(512)
        except (OSError, EOFError) as exc:
            raise TraceLogError(f"the .gz file is damaged: {exc}") from None
        return "tar" if len(inner) >= 262 and inner[257:262] == b"ustar" else "gzip"
    if head.startswith((_BZ2, _XZ)) or (len(head) >= 262 and head[257:262] == b"ustar"):
        return "tar"
    return "log"


def _rank_of(name: str) -> int | None:
    match = _RANK.search(os.path.basename(name))
    return int(match[1]) if match else None


def log_files(path: str, display_name: str | None = None, max_ranks: int = DEFAULT_MAX_RANKS) -> list[LogFile]:
    """The logs in an upload, by rank (files without a rank in their name keep their order, after the ranked); at
    most ``max_ranks`` of them."""
    display_name = display_name or os.path.basename(path)
    kind = _kind(path)
    if kind == "log":
        return [LogFile(display_name, _rank_of(display_name), lambda: open(path, "rb"))]
    if kind == "gzip":
        name = display_name.removesuffix(".gz")
        return [LogFile(name, _rank_of(name), lambda: gzip.open(path, "rb"))]
    files = []
    if kind == "zip":
        try:
            archive = zipfile.ZipFile(path)
        except zipfile.BadZipFile as exc:
            raise TraceLogError(f"the zip file is damaged: {exc}") from None
        for info in archive.infolist():
            if info.is_dir() or _skipped(info.filename):
                continue
            files.append(LogFile(info.filename, _rank_of(info.filename), lambda info=info: archive.open(info)))
    else:
        try:
            archive = tarfile.open(path, "r:*")
            members = [m for m in archive.getmembers() if m.isfile() and not _skipped(m.name)]
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise TraceLogError(f"the tar file is damaged: {exc}") from None
        for member in members:  # regular files only: links in an archive point nowhere we read
            files.append(LogFile(member.name, _rank_of(member.name), lambda member=member: archive.extractfile(member)))
    if not files:
        raise TraceLogError("the archive holds no file: zip or tar one folder with one log per rank")
    if len(files) > max_ranks:
        raise TraceLogError(
            f"the archive holds {len(files)} logs, more than the import limit of {max_ranks} ranks: upload the "
            "ranks you want to compare (a few usually show whether ranks compile alike)"
        )
    folders = {os.path.dirname(f.name) for f in files}
    if len(folders) > 1:
        raise TraceLogError(
            f"the archive holds logs in {len(folders)} folders ({', '.join(sorted(folders)[:4])}): "
            "zip or tar one folder with one log per rank"
        )
    ranks = [f.rank for f in files if f.rank is not None]
    if len(ranks) != len(set(ranks)):
        raise TraceLogError("the archive holds two logs for the same rank: keep one log per rank")
    return sorted(files, key=lambda f: (f.rank is None, f.rank if f.rank is not None else 0))


def _skipped(name: str) -> bool:
    base = os.path.basename(name)
    return name.startswith("__MACOSX/") or base.startswith(".") or not base


# Logs are read in blocks, never by Python's line iterator: a record's payload lines are taken as one run (a
# million payload lines cost a hundred thousand steps, not a million), a run of blank lines (a newline bomb: 3 GiB of
# them fit in a 3 MB tar.gz) is skipped in one step, and a line is never held whole past the payload limit.
READ_BLOCK = 1024**2
# One item of a block: a run of payload lines (tab-indented), one other line, or a run of blank lines.
_ITEM = re.compile(rb"(?P<payload>(?:\t[^\n]*\n)+)|(?P<line>[^\t\n][^\n]*)\n|(?P<blank>\n+)")
LINE, PAYLOAD, BLANK, LONG = "line", "payload", "blank", "long"


def _items(stream, budget: Budget, stats: FileStats, name: str, max_line: int):
    """Yield (line number, kind, value) for the lines of a binary stream, in order: LINE (value: the line's text,
    decoded as UTF-8 with bad bytes replaced), PAYLOAD (value: consecutive tab-indented lines as bytes, each ending
    in its newline), BLANK (one or more blank lines) or LONG (a line longer than ``max_line`` bytes, never held
    whole; value None). Every byte read is spent from ``budget`` and counted in ``stats``."""
    number = 0  # newlines read so far: the next line is number + 1
    tail, tail_bytes = [], 0  # the unfinished line, in pieces (joined once its newline arrives)
    skipping = False  # inside an over-long line, already yielded: read on to its newline
    while True:
        block = stream.read(READ_BLOCK)
        if not block:
            break
        budget.spend(len(block), name)
        stats.bytes += len(block)
        if skipping:
            newline = block.find(b"\n")
            if newline < 0:
                continue
            block, skipping = block[newline + 1 :], False
            number += 1
        end = block.rfind(b"\n") + 1  # what follows the last newline is an unfinished line
        if end == 0:
            tail.append(block)
            tail_bytes += len(block)
        else:
            data = b"".join([*tail, block]) if tail else block
            end += tail_bytes
            tail, tail_bytes = [], 0
            for match in _ITEM.finditer(data, 0, end):
                kind = match.lastgroup
                start, stop = match.span()
                if kind == LINE:
                    if stop - start - 1 > max_line:
                        yield number + 1, LONG, None
                    else:
                        yield number + 1, LINE, data[start : stop - 1].decode("utf-8", "replace")
                    number += 1
                else:
                    yield number + 1, kind, data[start:stop] if kind == PAYLOAD else None
                    number += data.count(b"\n", start, stop)
            if end < len(data):
                tail, tail_bytes = [data[end:]], len(data) - end
        if tail_bytes > max_line:
            yield number + 1, LONG, None
            tail, tail_bytes, skipping = [], 0, True
    if tail:
        last = b"".join(tail)
        if last.startswith(b"\t"):
            yield number + 1, PAYLOAD, last + b"\n"
        else:
            yield number + 1, LINE, last.decode("utf-8", "replace")
    stats.lines = number + (1 if tail or skipping else 0)


def _payload_text(runs: list[bytes]) -> str | None:
    """A record's payload lines (runs of tab-indented lines) as one text without the tabs."""
    if not runs:
        return None
    joined = b"".join(runs)
    return joined[1:].replace(b"\n\t", b"\n").decode("utf-8", "replace")


def _record(line: str, number: int, stats: FileStats) -> dict | None:
    """The JSON object of a record's line (after its glog prefix), or None with the reason counted in ``stats``."""
    start = line.find("] {")
    if start < 0:
        if line.strip():
            stats.note_malformed(number, "not a structured-trace record (no '] {' after the log prefix)", line)
        return None
    text = line[start + 2 :]
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        stats.note_malformed(number, f"the record's JSON does not parse: {reason}", line)
        return None
    if not isinstance(parsed, dict) or not parsed:
        stats.note_malformed(number, "the record is not a JSON object with an event", line)
        return None
    # Fewer opening brackets than the limit cannot nest past it: most records are not walked.
    if text.count("[") + text.count("{") > MAX_DEPTH and nested_deeper_than(parsed, MAX_DEPTH):
        stats.note_malformed(number, f"the record is nested deeper than {MAX_DEPTH} levels", line)
        return None
    return parsed


def nested_deeper_than(value, limit: int) -> bool:
    """Whether lists and objects nest more than ``limit`` deep (walked level by level: the value is untrusted)."""
    level = [value]
    for _ in range(limit):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return True


def records(log: LogFile, stats: FileStats, budget: Budget, limits: Limits):
    """Yield each record of one log as (metadata, payload or None): metadata is the record's JSON object, payload
    its tab-indented lines joined without their tabs (each keeps its newline); a blank line ends a record. Lines
    that fit no record are counted in ``stats``."""
    meta, payload, payload_bytes, cut = None, None, 0, False
    stream = log.open()
    number = 0
    try:
        for number, kind, value in _items(stream, budget, stats, log.name, limits.max_payload_bytes):
            stats.lines = number  # where a record's reader (engine.traceimport) notes what it could not read
            if kind == PAYLOAD:
                if meta is None:
                    stats.note_malformed(
                        number, "payload line without a record before it", value[:300].decode("utf-8", "replace")
                    )
                elif not cut:
                    room = limits.max_payload_bytes - payload_bytes
                    if len(value) > room:  # cut at the last whole line that fits
                        value, cut = value[: value.rfind(b"\n", 0, room) + 1], True
                        stats.truncated_payloads += 1
                    payload_bytes += len(value)
                    payload.append(value)
                continue
            if kind == LONG and meta is not None:  # an over-long payload line: the payload is cut here
                if not cut:
                    cut = True
                    stats.truncated_payloads += 1
                continue
            if meta is not None:
                yield meta, _payload_text(payload)
                meta = None
            if kind == LONG:
                stats.note_malformed(number, f"a line longer than {limits.max_payload_bytes} bytes", "")
            if kind != LINE:
                continue
            parsed = _record(value, number, stats)
            if parsed is not None:
                stats.records += 1
                meta, payload, payload_bytes, cut = parsed, [], 0, False
        if meta is not None:
            yield meta, _payload_text(payload)
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, zlib_error, lzma.LZMAError) as exc:
        raise TraceLogError(f"{log.name} could not be read to its end (line {number + 1}): {exc}") from None
    finally:
        stream.close()


# Trace events whose payload is JSON without saying so in the metadata (artifacts say it: encoding "json").
_JSON_EVENTS = ("chromium_event",)


_ID_KEYS = (
    "frame_id",
    "frame_compile_id",
    "attempt",
    "has_payload",
    "compiled_autograd_id",
    "rank",
    "subgraph_name",
    "stack",
)


def trace_event(meta: dict, payload, log) -> dict:
    """One structured-trace record as the stages read it: {event, compile_id, metadata, payload[, data]}; ``data``
    is the decoded payload where it is JSON (a payload that does not decode is counted as malformed)."""
    keys = [k for k in meta if k not in _ID_KEYS]
    event = keys[0] if keys else "unknown"
    detail = meta.get(keys[0]) if keys else None
    encoding = None
    if event == "artifact" and isinstance(detail, dict):
        event = "artifact:" + str(detail.get("name", ""))
        encoding = detail.get("encoding")
    compile_id = CompileId.from_trace(meta)
    entry = {
        "event": event,
        "compile_id": str(compile_id) if compile_id else None,
        "metadata": detail,
        "payload": payload,
    }
    if payload and (encoding == "json" or event in _JSON_EVENTS):
        try:
            entry["data"] = json.loads(payload)
        except ValueError as exc:
            # torch writes a str payload as it is even under encoding "json" (one recompile reason, say): only a
            # payload that starts as JSON, or one that must be JSON, and does not decode is malformed.
            if event in _JSON_EVENTS or payload.lstrip()[:1] in ("[", "{", '"'):
                log.note_malformed("trace_json", event, f"payload is not JSON: {exc}", payload)
            else:
                entry["data"] = payload
    return entry
