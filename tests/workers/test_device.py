"""What a worker reports about its device, read without importing torch."""

import json
import os
import subprocess
import sys
from importlib import metadata

from workers import device
from workers.launch import gpu_present, worker_queues

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What `nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader` prints on a two-GPU host.
TWO_GPUS = (
    "0, GPU-1111aaaa-0000-0000-0000-000000000000, NVIDIA H200\n"
    "1, GPU-2222bbbb-0000-0000-0000-000000000000, NVIDIA A100-SXM4-80GB\n"
)


def fake_nvidia_smi(tmp_path, output: str, exit_code: int = 0) -> str:
    path = tmp_path / "nvidia-smi"
    path.write_text(f"#!/bin/sh\n/bin/cat <<'EOF'\n{output}EOF\nexit {exit_code}\n")
    path.chmod(0o755)
    return str(path)


def test_describe_reads_versions_without_importing_torch():
    code = (
        "import json, sys; from workers import device; print(json.dumps([device.describe(), 'torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    described, torch_imported = json.loads(out.stdout)
    assert torch_imported is False
    assert described["torch"] == metadata.version("torch")  # "2.13.0+cpu" here: the build is visible
    assert described["cpus"] == len(os.sched_getaffinity(0))
    with open("/proc/cpuinfo") as f:
        assert described["cpu"] in f.read()


def test_cpu_model_from_x86_and_arm_cpuinfo(tmp_path):
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n\nModel\t\t: Raspberry Pi 5 Model B Rev 1.0\n")
    assert device.cpu_model(str(x86)) == "AMD EPYC 9654 96-Core Processor"
    assert device.cpu_model(str(arm)) == "Raspberry Pi 5 Model B Rev 1.0"


def test_gpus_are_narrowed_by_cuda_visible_devices(tmp_path, monkeypatch):
    smi = fake_nvidia_smi(tmp_path, TWO_GPUS)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert [g["name"] for g in device.visible_gpus(smi)] == ["NVIDIA H200", "NVIDIA A100-SXM4-80GB"]
    for visible, names in (
        ("1", ["NVIDIA A100-SXM4-80GB"]),
        ("GPU-1111", ["NVIDIA H200"]),
        ("1,0", ["NVIDIA A100-SXM4-80GB", "NVIDIA H200"]),
        ("", []),
        ("-1", []),
        ("GPU-", []),
        ("0,7,1", ["NVIDIA H200"]),
    ):  # CUDA stops reading at the first entry that matches none
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        assert [g["name"] for g in device.visible_gpus(smi)] == names, visible


def test_no_gpu_when_nvidia_smi_is_missing_or_fails(tmp_path):
    assert device.visible_gpus(str(tmp_path / "absent")) == []
    assert device.visible_gpus(fake_nvidia_smi(tmp_path, "NVIDIA-SMI has failed\n", exit_code=9)) == []


def test_the_embedded_worker_takes_the_gpu_queue_only_with_a_visible_gpu(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, TWO_GPUS)
    monkeypatch.setenv("PATH", str(tmp_path))  # the fake is the only nvidia-smi
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpu_present() and worker_queues() == ["cpu", "gpu"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not gpu_present() and worker_queues() == ["cpu"]
