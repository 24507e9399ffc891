"""Triton's stages as a GPU worker recorded them: Triton 3.6's own output on an H100 (torch 2.11), kept in recorded
reports (tests/fixtures/reports/README.md says how each was made). No GPU and no Triton needed: what is checked is
what the reader made of the GPU's output, against what each line does (a tl.load line's PTX and SASS load from
global memory)."""

import pytest

from contract.report import DeviceCode
from tests.support import read_sample_report

GPU_REPORTS = ("transformer_block_gpu", "conv_bn_gpu")


def gpu_kernels(name: str) -> list[dict]:
    return read_sample_report(name)["inductor"]["kernels"]


@pytest.mark.parametrize("name", GPU_REPORTS)
def test_a_gpu_workers_kernels_carry_every_stage_and_the_drivers_resources(name):
    kernels = gpu_kernels(name)
    assert kernels
    for kernel in kernels:
        code = DeviceCode.model_validate(kernel["device_code"])
        assert [s.stage for s in code.stages] == ["ttir", "ttgir", "llir", "ptx", "sass"], kernel["name"]
        assert code.missing == [] and code.target == "cuda:90" and code.triton_version == "3.6.0"
        assert code.registers and code.registers > 0 and code.spills is not None  # the driver's, from the launcher
        assert code.num_warps in (1, 2, 4, 8, 16) and code.config and all(k.endswith("BLOCK") for k in code.config)
        assert all(stage.lines for stage in code.stages), [(s.stage, len(s.lines)) for s in code.stages]


@pytest.mark.parametrize("name", GPU_REPORTS)
def test_a_gpu_kernels_loads_and_stores_map_to_the_global_memory_instructions(name):
    """Each kernel's tl.load lines map to PTX ld.global and SASS LDG lines, its tl.store lines to st.global and
    STG: the mapping of the GPU's own output says what a line compiled to."""
    for kernel in gpu_kernels(name):
        source = kernel["source"].splitlines()
        stages = {s["stage"]: s for s in kernel["device_code"]["stages"]}
        for call, ptx_op, sass_op in (("tl.load(", "ld.global", "LDG"), ("tl.store(", "st.global", "STG")):
            lines = [i for i, text in enumerate(source, start=1) if call in text]
            assert lines, (kernel["name"], call)
            for stage, op in (("ptx", ptx_op), ("sass", sass_op)):
                texts = stages[stage]["text"].splitlines()
                compiled = {texts[ir - 1] for ir, src in stages[stage]["lines"] if src in lines}
                assert any(op in text for text in compiled), (kernel["name"], stage, call)
