"""contract/ is importable by every tier: it imports the standard library, pydantic and itself, nothing else."""
import ast
import os
import subprocess
import sys

from contract import docs

CONTRACT = os.path.join(docs.ROOT, "contract")


def test_contract_imports_only_the_standard_library_and_pydantic():
    allowed = set(sys.stdlib_module_names) | {"pydantic", "contract", "__future__"}
    offenders = {}
    for name in sorted(os.listdir(CONTRACT)):
        if name.endswith(".py"):
            tree = ast.parse(open(os.path.join(CONTRACT, name)).read())
            modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                       for alias in node.names}
            modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
            if modules - allowed:
                offenders[name] = sorted(modules - allowed)
    assert offenders == {}


def test_importing_the_contract_loads_no_other_tier():
    code = ("import sys, contract.report, contract.graphs, contract.vocab, contract.docs; "
            "print(sorted({'torch', 'flask', 'sqlalchemy', 'celery', 'engine', 'webapp', 'storage', 'workers'} "
            "& {name.split('.')[0] for name in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=docs.ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
