"""Triton's compiled stages of a kernel, read as the child reads them (engine/readers/triton_ir.py), on a kernel
Triton really compiles here: an sm_90 target needs no GPU, only Triton's bundled ptxas, and its bundled nvdisasm
gives the SASS. The oracle is the compiler itself: each IR line's own location, and what the line does (a TTIR
``math.sin`` must map to the source's ``tl.sin`` line, a PTX ``st.global`` and a SASS ``STG`` to ``tl.store``)."""

import json
import os
import shutil

import pytest

from contract.report import DeviceCode
from engine.readers import triton_ir

triton = pytest.importorskip("triton")
KERNEL_FILE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "triton", "kernel.py")
TOOLS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The fixture kernel compiled for sm_90 into a Triton cache of its own: (binary, source as a report keeps it)."""
    cache = tmp_path_factory.mktemp("triton-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_CACHE_DIR", str(cache))
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        from tests.fixtures.triton.kernel import triton_poi_fused_sin_cos_0 as kernel

        signature = {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
        source = ASTSource(fn=kernel, signature=signature, constexprs={"XBLOCK": 256})
        triton.compile(source, target=GPUTarget("cuda", 90, 32))
    [key] = os.listdir(cache)
    binary = triton_ir.cached_binary(str(cache), key)
    with open(KERNEL_FILE) as f:
        return binary, f.read().strip("\n")  # as the report keeps a kernel's source (engine/readers/inductor_log.py)


@pytest.fixture(scope="module")
def code(compiled):
    binary, source = compiled
    return triton_ir.device_code(binary, source, tools_dir=TOOLS)


def source_line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), start=1) if text in line)


def mapped(stage: dict, source_line: int) -> list[str]:
    lines = stage["text"].splitlines()
    return [lines[ir - 1] for ir, src in stage["lines"] if src == source_line]


def test_every_stage_is_read_with_the_launch_metadata(compiled, code):
    binary, _ = compiled
    DeviceCode.model_validate(json.loads(json.dumps(code)))  # as the parent validates what the child wrote
    assert binary.name == "triton_poi_fused_sin_cos_0"
    assert [s["stage"] for s in code["stages"]] == ["ttir", "ttgir", "llir", "ptx", "sass"]
    assert code["missing"] == []
    assert code["num_warps"] == binary.metadata["num_warps"] and code["target"] == "cuda:90"
    assert code["triton_version"] == triton.__version__
    assert code["shared_bytes"] == binary.metadata["shared"]
    usage = triton_ir.resource_usage(binary.path(".cubin"), binary.name, TOOLS)
    assert usage["registers"] > 0 and usage["spills"] == 0


def test_each_stage_maps_its_lines_to_what_they_compile(compiled, code):
    _, source = compiled
    stages = {s["stage"]: s for s in code["stages"]}
    body = range(source_line(source, "def triton_poi"), len(source.splitlines()) + 1)
    for stage in stages.values():
        assert stage["lines"], stage["stage"]
        assert {src for _, src in stage["lines"]} <= set(body), stage["stage"]
    sin, store = source_line(source, "tl.sin"), source_line(source, "tl.store")
    for name in ("ttir", "ttgir"):
        assert any("math.sin" in line for line in mapped(stages[name], sin))
        assert any("tt.store" in line for line in mapped(stages[name], store))
    assert any("st.global" in line for line in mapped(stages["ptx"], store))
    assert any("STG" in line for line in mapped(stages["sass"], store))
    assert any("__nv_sinf" in line or "sin" in line for line in mapped(stages["llir"], sin))


def test_a_helper_inlined_from_another_file_maps_to_the_line_that_called_it(compiled, code):
    """The helper's `tl.where` lives in helpers.py: its select is mapped to the kernel line calling `larger`."""
    _, source = compiled
    call = source_line(source, "larger(tmp1")
    stages = {s["stage"]: s for s in code["stages"]}
    assert any("arith.select" in line or "arith.cmpf" in line for line in mapped(stages["ttir"], call))
    for stage in stages.values():
        assert call in {src for _, src in stage["lines"]}, stage["stage"]


def test_a_stage_past_the_limit_is_cut_at_a_line_and_keeps_only_lines_it_holds(compiled, monkeypatch):
    binary, source = compiled
    monkeypatch.setattr(triton_ir, "IR_STAGE_BYTES", 2000)
    code = triton_ir.device_code(binary, source, tools_dir=TOOLS)
    for stage in code["stages"]:
        assert stage["truncated"] and len(stage["text"].encode()) <= 2000 and stage["text"].endswith("\n")
        assert all(ir <= stage["text"].count("\n") + 1 for ir, _ in stage["lines"])


def test_no_disassembler_is_said_in_words(compiled, tmp_path, monkeypatch):
    binary, source = compiled
    monkeypatch.setattr(shutil, "which", lambda name, **_: None)
    code = triton_ir.device_code(binary, source, tools_dir=str(tmp_path))
    assert [s["stage"] for s in code["stages"]] == ["ttir", "ttgir", "llir", "ptx"]
    assert code["missing"] == [
        "sass: no disassembler on this worker (nvdisasm: neither Triton's bundled one nor the CUDA toolkit's)"
    ]


def test_a_folder_that_is_not_a_kernel_is_none(tmp_path):
    assert triton_ir.cached_binary(str(tmp_path), "missing") is None
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "x.json").write_text("not json")
    assert triton_ir.cached_binary(str(tmp_path), "k") is None
