"""The layers point one way (README.md, "Where things are"): each package imports only the ones below it.

    service -> webapp, workers -> storage -> contract;  workers -> engine (parent side) -> contract

Checked two ways: statically, every import statement of every file (function-level imports included, so a lazy
import cannot hide a dependency), and at run time, in a fresh process, what importing a tier actually loads. And
no file imports itself through others: the import graph, one node per file, has no cycle.
"""

import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = {"contract", "engine", "storage", "webapp", "workers", "service"}
WEB_AND_QUEUE = {
    "flask",
    "werkzeug",
    "jinja2",
    "celery",
    "kombu",
    "sqlalchemy",
    "alembic",
    "redis",
    "psycopg",
    "gunicorn",
}
# The engine's parent side: what workers and the CLI import. Torch and the user's code run only in the child.
ENGINE_PARENT_SIDE = ("engine", "engine.job", "engine.cli", "engine.reportfile", "engine.sandbox", "engine.sink")
# The engine's torch-free measurement (statistics, machine load, compile metrics, cache counts): shared by the child,
# the trace importer and tests, so it must load without torch.
ENGINE_MEASURE = (
    "engine.measure",
    "engine.measure.stats",
    "engine.measure.load",
    "engine.measure.cores",
    "engine.measure.compile_metrics",
    "engine.measure.caches",
    "engine.measure.process_figures",
)
# What the child of a job's deferred work runs (engine.child.post_report_pipeline): it starts the warm-compile
# processes and merges their figures; torch is imported there only for the processes' fork server, never by these
# modules (checked at run time: engine.logtap, which the stages' Context names, imports torch only inside the
# functions that need it).
ENGINE_DEFERRED_WORK = ("engine.stages.base", "engine.stages.runtime.warm_compile")
# The engine's torch-free readers of torch's records (trace events, graph code, output code, the fusion log): the
# child's stage collectors and the trace importer read with the same functions, and the importer, which reads an
# untrusted upload in a child of its own, never pays for torch's import.
ENGINE_READERS = (
    "engine.readers",
    "engine.readers.tracelog",
    "engine.readers.fxtext",
    "engine.readers.nodes",
    "engine.readers.dynamo_log",
    "engine.readers.inductor_log",
    "engine.readers.triton_ir",
)
ENGINE_TRACE_IMPORT = ("engine.importjob", "engine.traceimport")


def _module_name(path: str) -> str:
    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    return rel.removesuffix(".__init__")


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ``from . import x`` names."""
    if node.level == 0:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(package: str) -> dict[str, set[str]]:
    """{file: the full module names it imports} for every .py file of a package (``from a.b import c`` gives
    ``a.b`` and ``a.b.c``: c may be a module)."""
    out = {}
    for folder, _, files in os.walk(os.path.join(ROOT, package)):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            module = _module_name(path)
            mods = set()
            for node in ast.walk(ast.parse(open(path).read(), path)):
                if isinstance(node, ast.Import):
                    mods |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom):
                    base = _resolve(node, module, name == "__init__.py")
                    mods |= {base} | {f"{base}.{a.name}" for a in node.names}
            out[os.path.relpath(path, ROOT)] = mods
    return out


def top_level(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def engine_modules_importing_torch() -> set[str]:
    """Engine modules that import torch, directly or through another engine module (a static closure)."""
    imports = {_module_name(os.path.join(ROOT, f)): mods for f, mods in imported_modules("engine").items()}
    heavy = {m for m, mods in imports.items() if "torch" in top_level(mods)}
    while True:
        more = {m for m, mods in imports.items() if m not in heavy and mods & heavy}
        if not more:
            return heavy
        heavy |= more


# package -> (packages of ours it may import, third-party top-level modules it must not import)
RULES = {
    "contract": (set(), {"torch", *WEB_AND_QUEUE}),
    "engine": ({"contract"}, WEB_AND_QUEUE),
    "storage": ({"contract", "engine"}, {"torch", "flask", "werkzeug", "jinja2"}),
    "webapp": ({"storage", "contract"}, {"torch"}),
    "workers": ({"engine", "storage", "contract"}, {"torch", "flask", "werkzeug", "jinja2"}),
}


@pytest.mark.parametrize("package", sorted(RULES))
def test_each_package_imports_only_the_layers_below_it(package):
    allowed, forbidden = RULES[package]
    allowed = allowed | {package}
    offenders = {}
    for file, mods in imported_modules(package).items():
        bad = sorted(m for m in top_level(mods) if (m in OURS and m not in allowed) or m in forbidden)
        if bad:
            offenders[file] = bad
    assert offenders == {}


def test_contract_needs_only_the_standard_library_and_pydantic():
    third_party = {
        f: sorted(m for m in top_level(mods) - OURS if m not in sys.stdlib_module_names and m != "pydantic")
        for f, mods in imported_modules("contract").items()
    }
    assert {f: m for f, m in third_party.items() if m} == {}


@pytest.mark.parametrize("package", ["storage", "workers"])
def test_storage_and_workers_use_only_the_torch_free_side_of_the_engine(package):
    heavy = engine_modules_importing_torch()
    assert "engine.child" in heavy and "engine.job" not in heavy  # the closure sees both sides
    offenders = {f: sorted(mods & heavy) for f, mods in imported_modules(package).items() if mods & heavy}
    assert offenders == {}


def test_the_engine_parent_side_imports_no_torch_module_even_lazily():
    assert set(ENGINE_PARENT_SIDE) & engine_modules_importing_torch() == set()


def test_the_engines_measurement_folder_imports_no_torch_module_even_lazily():
    measure = {_module_name(os.path.join(ROOT, f)) for f in imported_modules(os.path.join("engine", "measure"))}
    assert measure == set(ENGINE_MEASURE)  # every module of the folder is listed (and so checked at run time too)
    assert measure & engine_modules_importing_torch() == set()


def test_the_engines_readers_and_the_trace_importer_import_no_torch_module_even_lazily():
    readers = {_module_name(os.path.join(ROOT, f)) for f in imported_modules(os.path.join("engine", "readers"))}
    assert readers == set(ENGINE_READERS)  # every module of the folder is listed (and so checked at run time too)
    assert (readers | set(ENGINE_TRACE_IMPORT)) & engine_modules_importing_torch() == set()


def test_the_rules_catch_a_violation(tmp_path, monkeypatch):
    """The checker itself: a file of a fake package importing a higher layer is reported."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    (tmp_path / "storage").mkdir()
    (tmp_path / "storage" / "bad.py").write_text(
        "def f():\n    from webapp.reportview import provenance\nfrom . import config\n"
    )
    assert imported_modules("storage") == {
        os.path.join("storage", "bad.py"): {
            "webapp.reportview",
            "webapp.reportview.provenance",
            "storage",
            "storage.config",
        }
    }


def import_graph(packages=OURS) -> dict[str, set[str]]:
    """{module: the modules of ours it imports}, one node per file: every import statement, at module level or in a
    function, gives an edge to the file it names (``from a import b`` to a/b.py when b is a module, else to a's
    file). The parent packages that importing a module also runs are not edges: they are no dependency of the
    importer's code."""
    files = {
        _module_name(os.path.join(folder, name)): os.path.join(folder, name)
        for package in packages
        for folder, _, names in os.walk(os.path.join(ROOT, package))
        for name in names
        if name.endswith(".py")
    }
    graph = {}
    for module, path in files.items():
        targets = set()
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name in files}
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node, module, path.endswith("__init__.py"))
                for alias in node.names:
                    name = f"{base}.{alias.name}"
                    targets |= {name} if name in files else {base} & files.keys()
        graph[module] = targets - {module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's algorithm): each is a cycle,
    or several sharing modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = set()
            while not component or module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                cycles.append(component)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_imports_itself_through_others():
    assert import_cycles(import_graph()) == []


def test_the_cycle_check_sees_imports_inside_functions(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    (tmp_path / "web" / "views").mkdir(parents=True)
    (tmp_path / "web" / "__init__.py").write_text("")
    (tmp_path / "web" / "views" / "__init__.py").write_text("")
    (tmp_path / "web" / "security.py").write_text("def f():\n    from web.views.traces import LIMIT\n")
    (tmp_path / "web" / "views" / "traces.py").write_text("from web import security\nfrom . import api\n")
    (tmp_path / "web" / "views" / "api.py").write_text("LIMIT = 1\n")
    graph = import_graph(["web"])
    assert graph["web.views.traces"] == {"web.security", "web.views.api"}
    assert import_cycles(graph) == [{"web.security", "web.views.traces"}]


def _loaded_after(code: str, instance: str) -> set[str]:
    """Top-level packages in sys.modules after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PT2SCOPE_INSTANCE": instance},
    )
    return set(out.stdout.split())


@pytest.mark.parametrize(
    "code, never",
    [
        ("import " + ", ".join(ENGINE_PARENT_SIDE), {"torch", "webapp", "workers", "storage", "flask", "celery"}),
        ("import " + ", ".join(ENGINE_MEASURE), {"torch", "webapp", "workers", "storage", "flask", "celery"}),
        ("import " + ", ".join(ENGINE_DEFERRED_WORK), {"torch", "webapp", "workers", "storage", "flask", "celery"}),
        (
            "import " + ", ".join(ENGINE_READERS + ENGINE_TRACE_IMPORT),
            {"torch", "webapp", "workers", "storage", "flask", "celery"},
        ),
        ("import contract.vocab, contract.graphs", {"torch", "engine", "storage", "webapp", "workers", "flask"}),
        (
            "import storage.config, storage.db, storage.models, storage.runstore, storage.queue",
            {"torch", "engine", "webapp", "workers", "flask"},
        ),
        ("from webapp import create_app; create_app()", {"torch", "engine", "workers"}),
        ("import workers.tasks", {"torch", "webapp"}),
    ],
)
def test_importing_a_tier_loads_nothing_above_it(code, never, tmp_path):
    assert _loaded_after(code, str(tmp_path)) & never == set()
