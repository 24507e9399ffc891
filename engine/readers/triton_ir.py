"""Triton's compiled stages of one kernel, read from its cache folder: TTIR, TTGIR, LLIR and PTX as Triton wrote
them, SASS disassembled from the cubin, the launch metadata; each stage's lines mapped to the kernel's Python file.

Torch-free: the child calls it for the kernels of the recorded compile (engine/stages/triton_code.py), tests call
it on kernels Triton compiles for an sm_90 target on a machine without a GPU (Triton only needs its bundled ptxas).

A Triton cache folder (TRITON_CACHE_DIR/<key>/) holds <name>.ttir, .ttgir, .llir, .ptx, .cubin and <name>.json
(the metadata: num_warps, num_stages, shared, target, ...). Every stage names the Python file the kernel was
compiled from (Inductor's kernel file): MLIR as ``loc("file":line:col)``, LLVM as ``!DIFile`` and ``!DILocation``,
PTX as ``.file`` and ``.loc``, nvdisasm's ``-gi`` output as ``//## File "file", line N``. A line inlined from a
helper (``triton_helpers.maximum``) names the helper's file first and the kernel line that called it after
(MLIR ``callsite``, LLVM ``inlinedAt``, PTX ``inlined_at``, nvdisasm ``inlined at``): the kernel's own line wins.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

IR_STAGE_BYTES = 512 * 1024  # one stage's text kept in the report; longer is cut at a line
TEXT_STAGES = ("ttir", "ttgir", "llir", "ptx")  # in compile order; SASS comes from the cubin
DISASSEMBLE_SECONDS = 30


@dataclass
class CachedBinary:
    """One compiled kernel in Triton's cache: its folder, name and metadata."""

    folder: str
    name: str
    metadata: dict

    def path(self, suffix: str) -> str:
        return os.path.join(self.folder, self.name + suffix)


def cached_binary(triton_cache_dir: str, key: str) -> CachedBinary | None:
    """The binary Triton keeps under ``key`` (Inductor's ``launcher.cache_hash``), or None."""
    folder = os.path.join(triton_cache_dir, key)
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in names:
        if name.endswith(".json") and not name.startswith("__grp__"):
            try:
                with open(os.path.join(folder, name)) as f:
                    metadata = json.load(f)
            except (OSError, ValueError):
                continue
            return CachedBinary(folder, name[: -len(".json")], metadata)
    return None


def device_code(binary: CachedBinary, source: str, *, tools_dir: str | None = None) -> dict:
    """The report's ``DeviceCode`` of ``binary`` (without ``config``/``registers``/``spills``, which the launch
    knows): each stage's text and its lines mapped to ``source`` (the kernel's source as the report keeps it)."""
    stages, missing = [], []
    kernel_file, offset = None, 0
    for stage in TEXT_STAGES:
        text = _read(binary.path("." + stage))
        if text is None:
            missing.append(f"{stage}: not in Triton's cache folder")
            continue
        if kernel_file is None and stage == "ttir":
            kernel_file, def_line = kernel_location(text)
            offset = _source_offset(source, binary.name, def_line)
        stages.append(_stage(stage, text, MAPPERS[stage](text), kernel_file, offset))
    sass, why = disassemble(binary.path(".cubin"), tools_dir)
    if sass is None:
        missing.append(f"sass: {why}")
    else:
        stages.append(_stage("sass", sass, sass_lines(sass), kernel_file, offset))
    meta = binary.metadata
    target = meta.get("target")
    return {
        "stages": stages,
        "missing": missing,
        "num_warps": meta.get("num_warps"),
        "num_stages": meta.get("num_stages"),
        "shared_bytes": meta.get("shared"),
        "target": f"{target[0]}:{target[1]}"
        if isinstance(target, list) and len(target) >= 2
        else (f"{target.get('backend')}:{target.get('arch')}" if isinstance(target, dict) else None),
        "triton_version": meta.get("triton_version"),
    }


def _read(path: str) -> str | None:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _stage(stage: str, text: str, located: dict[int, tuple[str, int]], kernel_file: str | None, offset: int) -> dict:
    """One IrStage: the text (cut at IR_STAGE_BYTES) and its lines located in the kernel's file, as source lines."""
    truncated = len(text.encode()) > IR_STAGE_BYTES
    if truncated:
        text = text.encode()[:IR_STAGE_BYTES].decode(errors="ignore")
        text = text[: text.rfind("\n") + 1]
    last = text.count("\n") + 1
    lines = [
        [ir_line, file_line - offset]
        for ir_line, (file, file_line) in sorted(located.items())
        if ir_line <= last and file_line - offset >= 1 and (kernel_file is None or file == kernel_file)
    ]
    return {"stage": stage, "text": text, "truncated": truncated, "lines": lines}


def _source_offset(source: str, name: str, def_line: int | None) -> int:
    """How many lines the kernel's file has before ``source``'s first (the report strips the file's leading blank
    line): the file's ``def`` line (from Triton's location of the function) minus the source's."""
    if def_line is None:
        return 0
    for index, line in enumerate(source.splitlines(), start=1):
        if re.match(rf"\s*def\s+{re.escape(name)}\s*\(", line):
            return def_line - index
    return 0


# --- MLIR (TTIR, TTGIR) -----------------------------------------------------------------------------------------

_MLIR_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_MLIR_USE = re.compile(r"loc\((#loc\d*|\"[^\"]*\":\d+:\d+)\)\s*$")
_MLIR_FILE = re.compile(r"^\"([^\"]*)\":(\d+):\d+$")


def kernel_location(ttir: str) -> tuple[str | None, int | None]:
    """The kernel's file and the line of its ``def`` (the function's own location, ``#loc``)."""
    for line in ttir.splitlines():
        match = _MLIR_ALIAS.match(line)
        if match and match[1] == "#loc":
            file = _MLIR_FILE.match(match[2].strip())
            if file:
                return file[1], int(file[2])
    return None, None


def mlir_lines(text: str) -> dict[int, tuple[str, int]]:
    """{line: (file, line in file)} for each op line of an MLIR module that ends in a location."""
    aliases = {}
    for line in text.splitlines():
        match = _MLIR_ALIAS.match(line)
        if match:
            aliases[match[1]] = match[2].strip()
    kernel_file, _ = kernel_location(text)
    located = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#loc"):
            continue
        match = _MLIR_USE.search(line)
        if match:
            frames = _mlir_frames(match[1], aliases, set())
            frame = next((f for f in frames if f[0] == kernel_file), frames[0] if frames else None)
            if frame:
                located[number] = frame
    return located


def _mlir_frames(expr: str, aliases: dict, seen: set) -> list[tuple[str, int]]:
    """A location expression as frames, innermost first: ``"f":L:C``, ``#locN``, ``callsite(A at B)``,
    ``"name"(X)``, ``fused[A, B]`` (its first), ``unknown``."""
    expr = expr.strip()
    if expr.startswith("#loc"):
        if expr in seen or expr not in aliases:
            return []
        return _mlir_frames(aliases[expr], aliases, seen | {expr})
    file = _MLIR_FILE.match(expr)
    if file:
        return [(file[1], int(file[2]))]
    if expr.startswith("callsite(") and expr.endswith(")"):
        inner = expr[len("callsite(") : -1]
        callee, _, caller = inner.partition(" at ")
        return _mlir_frames(callee, aliases, seen) + _mlir_frames(caller, aliases, seen)
    named = re.match(r"^\"[^\"]*\"\((.*)\)$", expr)
    if named:
        return _mlir_frames(named[1], aliases, seen)
    fused = re.match(r"^fused(?:<[^>]*>)?\[([^,\]]+)", expr)
    if fused:
        return _mlir_frames(fused[1], aliases, seen)
    return []


# --- LLVM IR ------------------------------------------------------------------------------------------------------

_LLVM_META = re.compile(r"^!(\d+)\s*=\s*(?:distinct\s+)?!(\w+)\((.*)\)\s*$")
_LLVM_DBG = re.compile(r"!dbg !(\d+)")


def llvm_lines(text: str) -> dict[int, tuple[str, int]]:
    """{line: (file, line)} for each instruction carrying ``!dbg``: its DILocation, followed through
    ``inlinedAt`` to the frame in the kernel's file (the file of the kernel's DISubprogram)."""
    meta = {}
    for line in text.splitlines():
        match = _LLVM_META.match(line)
        if match:
            meta[match[1]] = (match[2], dict(re.findall(r"(\w+):\s*(!\d+|\"[^\"]*\"|\d+)", match[3])))

    def file_of(ref: str | None, depth: int = 0) -> str | None:
        node = meta.get((ref or "").lstrip("!"))
        if node is None or depth > 20:
            return None
        kind, fields = node
        if kind == "DIFile":
            directory, name = fields.get("directory", '""').strip('"'), fields.get("filename", '""').strip('"')
            return name if os.path.isabs(name) or not directory else os.path.join(directory, name)
        return file_of(fields.get("file") or fields.get("scope"), depth + 1)

    def frames(ref: str, depth: int = 0) -> list[tuple[str, int]]:
        node = meta.get(ref.lstrip("!"))
        if node is None or node[0] != "DILocation" or depth > 20:
            return []
        fields = node[1]
        here = [(file_of(fields.get("scope")), int(fields.get("line", 0)))]
        inlined = fields.get("inlinedAt")
        return here + (frames(inlined, depth + 1) if inlined else [])

    kernel_file = next((file_of(f.get("file")) for k, f in meta.values() if k == "DISubprogram"), None)
    located = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = _LLVM_DBG.search(line)
        if match and not line.startswith("!"):
            chain = [f for f in frames(match[1]) if f[1] > 0]
            frame = next((f for f in chain if f[0] == kernel_file), chain[-1] if chain else None)
            if frame and frame[0]:
                located[number] = frame
    return located


# --- PTX ----------------------------------------------------------------------------------------------------------

_PTX_FILE = re.compile(r"^\s*\.file\s+(\d+)\s+\"([^\"]*)\"(?:\s*,.*)?$")
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(.*)$")
_PTX_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+\d+")


def ptx_lines(text: str) -> dict[int, tuple[str, int]]:
    """{line: (file, line)}: each ``.loc`` and the instructions after it, up to the next ``.loc``; an inlined
    ``.loc`` counts as its outermost ``inlined_at`` frame in the kernel's file."""
    files = {m[1]: m[2] for m in map(_PTX_FILE.match, text.splitlines()) if m}
    kernel_file = files.get("1")
    located, current = {}, None
    for number, line in enumerate(text.splitlines(), start=1):
        loc = _PTX_LOC.match(line)
        if loc:
            chain = [(files.get(loc[1]), int(loc[2]))] + [
                (files.get(f), int(n)) for f, n in _PTX_INLINED.findall(loc[3])
            ]
            current = next((f for f in chain if f[0] == kernel_file), chain[-1])
            current = current if current[0] and current[1] > 0 else None
        stripped = line.strip()
        if current and stripped and not stripped.startswith(("//", ".file", "$L__")) and stripped != "}":
            located[number] = current
        if stripped.startswith(("}", ".section")):
            current = None
    return located


# --- SASS ---------------------------------------------------------------------------------------------------------

_SASS_FILE = re.compile(r"//## File \"([^\"]*)\", line (\d+)(.*)$")
_SASS_INLINED = re.compile(r"inlined at \"([^\"]*)\", line (\d+)")
_SASS_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/")


def disassembler(tools_dir: str | None = None) -> str | None:
    """nvdisasm: Triton's bundled copy (triton/backends/nvidia/bin) where ``tools_dir`` names it, else the CUDA
    toolkit's on PATH."""
    bundled = os.path.join(tools_dir, "nvdisasm") if tools_dir else None
    if bundled and os.access(bundled, os.X_OK):
        return bundled
    return shutil.which("nvdisasm")


def disassemble(cubin: str, tools_dir: str | None = None) -> tuple[str | None, str | None]:
    """(SASS with line info, None) or (None, why not)."""
    if not os.path.exists(cubin):
        return None, "no cubin in Triton's cache folder"
    tool = disassembler(tools_dir)
    if tool is None:
        return None, "no disassembler on this worker (nvdisasm: neither Triton's bundled one nor the CUDA toolkit's)"
    try:
        done = subprocess.run(
            [tool, "-c", "-gi", cubin], capture_output=True, text=True, timeout=DISASSEMBLE_SECONDS, errors="replace"
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvdisasm failed: {type(exc).__name__}: {exc}"
    if done.returncode != 0 or not done.stdout.strip():
        return None, f"nvdisasm failed (exit {done.returncode}): {done.stderr.strip()[:300]}"
    return done.stdout, None


def sass_lines(text: str) -> dict[int, tuple[str, int]]:
    """{line: (file, line)}: each instruction under nvdisasm's last ``//## File`` comment (its ``inlined at``
    frames followed to the outermost one)."""
    located, current, kernel_file = {}, None, None
    for number, line in enumerate(text.splitlines(), start=1):
        comment = _SASS_FILE.search(line)
        if comment:
            chain = [(comment[1], int(comment[2]))] + [(f, int(n)) for f, n in _SASS_INLINED.findall(comment[3])]
            current = chain[-1]  # the outermost frame: the kernel's own line that called any helper
            kernel_file = kernel_file or current[0]
        elif current and _SASS_INSTRUCTION.match(line):
            located[number] = current
    return located


def resource_usage(cubin: str, name: str, tools_dir: str | None = None) -> dict:
    """{registers, spills} of ``name`` in ``cubin`` as cuobjdump reports them (REG, LOCAL bytes), or {}."""
    bundled = os.path.join(tools_dir, "cuobjdump") if tools_dir else None
    tool = bundled if bundled and os.access(bundled, os.X_OK) else shutil.which("cuobjdump")
    if tool is None or not os.path.exists(cubin):
        return {}
    try:
        done = subprocess.run([tool, "-res-usage", cubin], capture_output=True, text=True, timeout=DISASSEMBLE_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    block = done.stdout.split(f"Function {name}:", 1)
    usage = re.search(r"REG:(\d+).*?LOCAL:(\d+)", block[1]) if len(block) == 2 else None
    return {"registers": int(usage[1]), "spills": int(usage[2])} if usage else {}


MAPPERS = {"ttir": mlir_lines, "ttgir": mlir_lines, "llir": llvm_lines, "ptx": ptx_lines}
