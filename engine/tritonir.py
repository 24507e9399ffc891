"""Every IR stage of each generated Triton kernel, read from Triton's cache, with the line map to its source.

Triton writes each compiled kernel into TRITON_CACHE_DIR/<key>/ as NAME.ttir, NAME.ttgir, NAME.llir, NAME.ptx,
NAME.cubin and NAME.json (its metadata). An autotuned kernel has one folder per config: the one shown is the one
its launcher ran (Inductor's launcher keeps the folder's key as ``cache_hash``), else the only one. SASS comes from
the cubin through nvdisasm (with line info) or cuobjdump (without), from PATH, CUDA_HOME or the copies Triton's
wheel carries; none found is said. Each IR's location info ties its lines to the kernel's source lines: TTIR and
TTGIR ``loc(...)`` (aliases, callsites and fused locations resolved), LLIR ``!DILocation`` (following
``inlinedAt``), PTX ``.loc`` (and its ``inlined_at``), SASS ``//## File "...", line N``. Locations name Inductor's
copy of the kernel file; a location in another file (Triton's own helpers) counts at the kernel line that called
it where the IR says so.

Torch-free: the caller passes the kernels, the cache folder and what the launchers said.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter

from contract.kernels import IR_STAGES, MAX_IR_CHARS

_TEXT_SUFFIX = {"ttir": ".ttir", "ttgir": ".ttgir", "llir": ".llir", "ptx": ".ptx"}
_FILE_LINE = re.compile(r'"(?P<file>[^"]+)":(?P<line>\d+):\d+')
_MLIR_ALIAS = re.compile(r"^#(?P<name>loc\d*) = loc\((?P<expr>.*)\)\s*$")
_MLIR_USE = re.compile(r"loc\((?P<expr>#loc\d*|\"[^\"]*\":\d+:\d+|[^()]*\(.*\))\)\s*$")
_LLVM_META = re.compile(r"^!(?P<id>\d+) = (?:distinct )?!(?P<kind>\w+)\((?P<fields>.*)\)\s*$")
_LLVM_DBG = re.compile(r"!dbg !(?P<id>\d+)")
_PTX_FILE = re.compile(r'^\s*\.file\s+(?P<n>\d+)\s+"(?P<path>[^"]+)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(?P<n>\d+)\s+(?P<line>\d+)\s+\d+(?P<rest>.*)$")
_PTX_INLINED = re.compile(r"inlined_at\s+(?P<n>\d+)\s+(?P<line>\d+)\s+\d+")
_SASS_LOC = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_RES_USAGE = re.compile(r"REG:(?P<reg>\d+)\s+STACK:(?P<stack>\d+)\s+SHARED:(?P<shared>\d+)\s+LOCAL:(?P<local>\d+)")


def default_cache_dir() -> str | None:
    """Where Triton writes its cache in this process: TRITON_CACHE_DIR, else Triton's default (~/.triton/cache)."""
    if os.environ.get("TRITON_CACHE_DIR"):
        return os.environ["TRITON_CACHE_DIR"]
    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    return os.path.join(home, ".triton", "cache")


def index_cache(cache_dir: str) -> dict[str, list[str]]:
    """Kernel name -> the cache folders holding a compiled variant of it (those with NAME.json metadata)."""
    found: dict[str, list[str]] = {}
    if not cache_dir or not os.path.isdir(cache_dir):
        return found
    for key in sorted(os.listdir(cache_dir)):
        folder = os.path.join(cache_dir, key)
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            if name.endswith(".json") and not name.startswith("__grp__"):
                found.setdefault(name[: -len(".json")], []).append(folder)
    return found


def find_tool(name: str) -> str | None:
    """A CUDA binary tool: on PATH, under CUDA_HOME, or the copy Triton's wheel carries."""
    on_path = shutil.which(name)
    if on_path:
        return on_path
    candidates = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", name)]
    try:
        import triton  # the wheel carries ptxas, cuobjdump and nvdisasm for its own use

        candidates.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name))
    except ImportError:
        pass
    return next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def collect(kernels: list[dict], cache_dir: str | None, launched: list[dict] | None = None) -> list[dict]:
    """TritonKernelIR (contract/kernels.py) for every Triton kernel of ``kernels``. ``launched``: what each loaded
    kernel's launcher said ({name, file, cache_hash, n_regs, n_spills, shared, config: {num_warps, num_stages,
    block}}; engine.autotune.launched_kernels). Two graphs (forward, backward) can each have a kernel of the same
    name: the kernel's own source tells their variants and launchers apart."""
    index = index_cache(cache_dir or "")
    tools = {"nvdisasm": find_tool("nvdisasm"), "cuobjdump": find_tool("cuobjdump")}
    out = []
    for kernel in kernels:
        if kernel.get("language") != "triton":
            continue
        source = kernel.get("source") or ""
        launches = [entry for entry in launched or [] if entry.get("name") == kernel["name"]]
        if len(launches) > 1:
            launches = [entry for entry in launches if _file_holds(entry.get("file"), source)] or launches[:1]
        folders = index.get(kernel["name"], [])
        if len(folders) > 1:
            folders = [f for f in folders if _file_holds(_ttir_file(f, kernel["name"]), source)] or folders
        out.append(kernel_ir(kernel, folders, launches[0] if launches else {}, tools))
    return out


def _ttir_file(folder: str, name: str) -> str | None:
    """The kernel file a variant was compiled from: the first location of its TTIR."""
    try:
        with open(os.path.join(folder, name + ".ttir"), errors="replace") as f:
            match = _FILE_LINE.search(f.readline())
    except OSError:
        return None
    return match["file"] if match else None


def _file_holds(path: str | None, source: str) -> bool:
    if not path or not source:
        return False
    try:
        with open(path, errors="replace") as f:
            return source in f.read()
    except OSError:
        return False


def kernel_ir(kernel: dict, folders: list[str], launch: dict, tools: dict) -> dict:
    name = kernel["name"]
    entry: dict = {
        "kernel": name,
        "compile_id": kernel.get("compile_id"),
        "graph_kind": kernel.get("graph_kind") or "inference",
        "variants": len(folders),
        "stages": [],
        "unavailable": [],
        "metadata": {},
    }
    if not folders:
        entry["unavailable"] = [
            {"stage": stage, "reason": "not in Triton's cache (compiled in another process, or cache elsewhere)"}
            for stage in IR_STAGES
        ]
        return entry
    folder, chosen_by = _pick_variant(folders, launch.get("cache_hash"))
    entry.update(cache_key=os.path.basename(folder), chosen_by=chosen_by)
    texts = {}
    for stage, suffix in _TEXT_SUFFIX.items():
        path = os.path.join(folder, name + suffix)
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                texts[stage] = f.read()
        else:
            entry["unavailable"].append({"stage": stage, "reason": f"Triton wrote no {suffix} for it"})
    cubin = os.path.join(folder, name + ".cubin")
    sass, why = disassemble(cubin, tools) if os.path.isfile(cubin) else (None, "no cubin in Triton's cache")
    if sass is not None:
        texts["sass"] = sass
    else:
        entry["unavailable"].append({"stage": "sass", "reason": why})
    maps = {stage: line_map(stage, text) for stage, text in texts.items()}
    source_file = _kernel_file(maps)
    offset = _source_offset(source_file, kernel.get("source") or "")
    entry.update(source_file=source_file, source_offset=offset)
    source_lines = len((kernel.get("source") or "").splitlines())
    for stage in IR_STAGES:
        if stage not in texts:
            continue
        text, truncated = texts[stage], len(texts[stage]) > MAX_IR_CHARS
        if truncated:
            text = text[:MAX_IR_CHARS]
        kept = text.count("\n") + 1
        lines = [_to_source(loc, source_file, offset or 0, source_lines) for loc in maps[stage][:kept]]
        entry["stages"].append(
            {
                "stage": stage,
                "text": text,
                "truncated": truncated,
                "line_sources": lines,
                "mapped_lines": sum(1 for line in lines if line),
            }
        )
    entry["metadata"] = metadata(folder, name, launch, cubin, tools)
    return entry


def _pick_variant(folders: list[str], cache_hash: str | None) -> tuple[str, str]:
    if cache_hash:
        for folder in folders:
            if os.path.basename(folder) == cache_hash:
                return folder, "launched"
    return folders[0], "only variant" if len(folders) == 1 else "first found"


def disassemble(cubin: str, tools: dict) -> tuple[str | None, str]:
    """(SASS text, why not): nvdisasm with line info, else cuobjdump -sass (no line info)."""
    commands = []
    if tools.get("nvdisasm"):
        commands.append([tools["nvdisasm"], "-g", "-c", cubin])
    if tools.get("cuobjdump"):
        commands.append([tools["cuobjdump"], "-sass", cubin])
    if not commands:
        return None, "no CUDA disassembler (nvdisasm, cuobjdump) on this worker"
    errors = []
    for command in commands:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(f"{os.path.basename(command[0])}: {exc}")
            continue
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout, ""
        errors.append(f"{os.path.basename(command[0])} exited {done.returncode}: {done.stderr.strip()[:200]}")
    return None, "; ".join(errors)


def metadata(folder: str, name: str, launch: dict, cubin: str, tools: dict) -> dict:
    """TritonMetadata: Triton's json, the launcher's (driver) counts, else the cubin's resource usage."""
    try:
        with open(os.path.join(folder, name + ".json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        meta = {}
    target = meta.get("target") or {}
    config = launch.get("config") or {}
    out = {
        "num_warps": config.get("num_warps", meta.get("num_warps")),
        "num_stages": config.get("num_stages", meta.get("num_stages")),
        "num_ctas": meta.get("num_ctas"),
        "shared_bytes": launch.get("shared", meta.get("shared")),
        "target": f"{target.get('backend')} sm_{target.get('arch')}" if isinstance(target, dict) and target else None,
        "triton_version": meta.get("triton_version"),
        "block": {k: v for k, v in (config.get("block") or {}).items() if isinstance(v, int)},
        "registers": launch.get("n_regs"),
        "spills": launch.get("n_spills"),
        "registers_from": "driver" if launch.get("n_regs") is not None else None,
    }
    usage = resource_usage(cubin, tools) if os.path.isfile(cubin) else None
    if usage:
        out.update(local_bytes=usage["local"], stack_bytes=usage["stack"])
        if out["registers"] is None:
            out.update(registers=usage["reg"], registers_from="cubin")
    return out


def resource_usage(cubin: str, tools: dict) -> dict | None:
    """The cubin's static resource usage (cuobjdump -res-usage): {reg, stack, shared, local}."""
    if not tools.get("cuobjdump"):
        return None
    try:
        done = subprocess.run([tools["cuobjdump"], "-res-usage", cubin], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _RES_USAGE.search(done.stdout)
    return {k: int(v) for k, v in match.groupdict().items()} if match else None


# --- line maps: for each line of an IR, the (file, line) locations it carries, innermost first -----------------


def line_map(stage: str, text: str) -> list[list[tuple[str, int]]]:
    """For each line of ``text``, the (file, line) candidates of its location, the call chain's innermost first."""
    reader = {"ttir": _mlir_map, "ttgir": _mlir_map, "llir": _llvm_map, "ptx": _ptx_map, "sass": _sass_map}[stage]
    return reader(text.splitlines())


def _mlir_map(lines: list[str]) -> list[list[tuple[str, int]]]:
    aliases = {m["name"]: m["expr"] for m in map(_MLIR_ALIAS.match, lines) if m}
    resolved: dict[str, list[tuple[str, int]]] = {}

    def resolve(expr: str, depth: int = 0) -> list[tuple[str, int]]:
        # An expression names files directly ("f":L:C) or through aliases (#locN), possibly nested in
        # callsite(callee at caller), fused[...] or a named location "name"(#loc): every file:line in it, in order.
        out = [(m["file"], int(m["line"])) for m in _FILE_LINE.finditer(expr)]
        for alias in re.findall(r"#(loc\d*)\b", expr):
            if depth > 20 or alias not in aliases:
                continue
            if alias not in resolved:
                resolved[alias] = resolve(aliases[alias], depth + 1)
            out.extend(resolved[alias])
        return out

    out = []
    for line in lines:
        if _MLIR_ALIAS.match(line):
            out.append([])
            continue
        use = _MLIR_USE.search(line)
        out.append(resolve(use["expr"]) if use else [])
    return out


def _llvm_map(lines: list[str]) -> list[list[tuple[str, int]]]:
    meta = {}
    for line in lines:
        m = _LLVM_META.match(line)
        if m:
            meta[m["id"]] = (m["kind"], m["fields"])

    def field(fields: str, key: str) -> str | None:
        m = re.search(rf"\b{key}: (!\d+|\d+|\"[^\"]*\")", fields)
        return m.group(1) if m else None

    def file_of(scope: str | None, depth: int = 0) -> str | None:
        if not scope or depth > 30 or scope.lstrip("!") not in meta:
            return None
        kind, fields = meta[scope.lstrip("!")]
        if kind == "DIFile":
            name, directory = (field(fields, "filename") or '""').strip('"'), (field(fields, "directory") or '""')
            return os.path.join(directory.strip('"'), name)
        return file_of(field(fields, "file"), depth + 1) or file_of(field(fields, "scope"), depth + 1)

    def chain(loc: str) -> list[tuple[str, int]]:
        out, seen = [], set()
        while loc and loc not in seen and loc in meta and meta[loc][0] == "DILocation":
            seen.add(loc)
            fields = meta[loc][1]
            out.append((file_of(field(fields, "scope")) or "", int(field(fields, "line") or 0)))
            loc = (field(fields, "inlinedAt") or "").lstrip("!")
        return out

    return [chain(m["id"]) if (m := _LLVM_DBG.search(line)) else [] for line in lines]


def _ptx_map(lines: list[str]) -> list[list[tuple[str, int]]]:
    files = {m["n"]: m["path"] for m in map(_PTX_FILE.match, lines) if m}
    current: list[tuple[str, int]] = []
    out = []
    for line in lines:
        m = _PTX_LOC.match(line)
        if m:
            current = [(files.get(m["n"], ""), int(m["line"]))] + [
                (files.get(i["n"], ""), int(i["line"])) for i in _PTX_INLINED.finditer(m["rest"])
            ]
            out.append(current)
            continue
        stripped = line.strip()
        # A location holds for the instructions after it, until the next one or the end of the function.
        if stripped.startswith("}"):
            current = []
        out.append(current if stripped and not stripped.startswith(("//", ".file")) else [])
    return out


def _sass_map(lines: list[str]) -> list[list[tuple[str, int]]]:
    current: list[tuple[str, int]] = []
    out = []
    for line in lines:
        if "//##" in line:
            current = [(m["file"], int(m["line"])) for m in _SASS_LOC.finditer(line)]
            out.append(current)
        elif line.lstrip().startswith("/*") and ";" in line:  # an instruction: /*0010*/ S2R R19, SR_CTAID.X ;
            out.append(current)
        else:
            if line.lstrip().startswith("."):  # a new section or label directive ends the location
                current = []
            out.append([])
    return out


def _kernel_file(maps: dict[str, list[list[tuple[str, int]]]]) -> str | None:
    """The kernel's own file: the one its locations name most (Triton's helper files are called from it)."""
    counts = Counter(file for lines in maps.values() for locs in lines for file, _ in locs if file)
    return counts.most_common(1)[0][0] if counts else None


def _same_file(a: str, b: str) -> bool:
    return a == b or (os.path.basename(a) == os.path.basename(b) and (not os.path.dirname(a) or not os.path.dirname(b)))


def _to_source(locs: list[tuple[str, int]], kernel_file: str | None, offset: int, source_lines: int) -> int:
    """The kernel source line of one IR line: its innermost location in the kernel's file, shifted by the offset."""
    for file, line in locs:
        if kernel_file and _same_file(file, kernel_file) and line > 0:
            shifted = line - offset
            return shifted if 0 < shifted <= source_lines else 0
    return 0


def _source_offset(path: str | None, source: str) -> int | None:
    """Lines in Inductor's kernel file before the kernel source as the report holds it (the output code's copy,
    leading blank lines stripped); None where the file cannot be read."""
    if not path or not source:
        return None
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    at = text.find(source)
    if at < 0:
        first = source.splitlines()[0] if source else ""
        at = text.find(first) if first else -1
    return text.count("\n", 0, at) if at >= 0 else None
