"""The trusted kernel cache: compiled once by trusted jobs of the gallery, bound read-only into every job, changed
by none; a job that used it says so, with its hits and misses."""

import hashlib
import json
import os
from dataclasses import replace

import pytest

from engine import sandbox
from engine.cli import summary
from engine.job import JobRequest, run_job, warm_up_kernel_cache
from engine.sandbox import PROJECT_ROOT, Isolation
from tests.security.test_job_boundary import attack

EXAMPLES = os.path.join(PROJECT_ROOT, "examples")
with open(os.path.join(EXAMPLES, "seed.py")) as f:
    SEED_FILE = f.read()


@pytest.fixture(scope="module")
def store(shared_pch, tmp_path_factory):
    """The seed's kernels, compiled by a trusted job (with the shared header, as a worker builds them)."""
    isolation = replace(shared_pch, kernel_cache_dir=str(tmp_path_factory.mktemp("kernels")))
    published = warm_up_kernel_cache(isolation, EXAMPLES, ["seed.py"])
    assert any(name.startswith("inductor/") and name.endswith(".so") for name in published), published
    assert warm_up_kernel_cache(isolation, EXAMPLES, ["seed.py"]) == []  # made for this toolchain and gallery
    return isolation, _digests(isolation.kernel_cache_dir)


def _digests(folder):
    found = {}
    for path, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(path, name), "rb") as f:
                found[os.path.relpath(os.path.join(path, name), folder)] = hashlib.sha256(f.read()).hexdigest()
    return found


def _seed_job(tmp_path, isolation):
    report = run_job(
        # Only the capture process's cache is read here (compile_cache.cold); no measuring processes.
        JobRequest(code=SEED_FILE, filename="seed.py", configs=["eager", "inductor_default"], warm_compile=False),
        str(tmp_path),
        isolation=isolation,
    )
    assert report["status"] == "ok", report["failure"]
    return report


def test_a_hostile_job_cannot_change_replace_or_delete_a_trusted_kernel(store, tmp_path):
    isolation, digests = store
    report = run_job(
        JobRequest(code=attack("kernel_cache_poison"), configs=["eager"]), str(tmp_path), isolation=isolation
    )
    assert report["status"] == "ok", report["failure"]
    line = next(out for out in report["user_output"]["stdout"].splitlines() if out.startswith("FOUND"))
    found = json.loads(line[len("FOUND") :])
    binaries = [name for name in digests if name.endswith(".so")]
    assert found["trusted"] == len(binaries) >= 1  # the seed's kernels, bound into the job's cache folder
    refused = {what: result for what, result in found["results"].items() if not what.endswith("move folder")}
    assert len(refused) == 7 * len(binaries)
    assert all(result != "done" for result in refused.values()), refused
    assert _digests(isolation.kernel_cache_dir) == digests


def test_the_seed_job_finds_its_kernel_in_the_trusted_cache_and_says_so(store, tmp_path):
    isolation, digests = store
    report = _seed_job(tmp_path, isolation)
    kernels = report["runtime"]["compile_cache"]["cold"]["caches"]["kernels"]
    assert (kernels["hits"], kernels["misses"], kernels["binaries_written"]) == (1, 0, 0), kernels
    assert kernels["trusted_binaries"] == len([name for name in digests if name.endswith(".so")])
    assert kernels["state"].startswith("shared: the worker's trusted kernel cache, built at its start from seed.py")
    assert report["isolation"]["shared_kernel_cache"] == sandbox.kernel_store_id(isolation) is not None
    assert "kernel binaries (recorded compile): 1 hit(s), 0 miss(es) (shared: " in summary(report)
    # The capture is complete all the same: the kernel's source and the output code are recorded.
    assert report["inductor"]["kernels"] and report["inductor"]["kernels"][0]["source"]
    assert _digests(isolation.kernel_cache_dir) == digests  # read, never written (by this or the hostile job)


def test_without_the_trusted_cache_the_same_job_compiles_its_kernel_and_says_so(shared_pch, tmp_path):
    report = _seed_job(tmp_path, shared_pch)
    kernels = report["runtime"]["compile_cache"]["cold"]["caches"]["kernels"]
    assert (kernels["hits"], kernels["misses"], kernels["trusted_binaries"]) == (0, 1, 0), kernels
    assert kernels["state"] == "the job's new, empty cache folders"
    assert report["isolation"]["shared_kernel_cache"] is None


def _fake_kernel(job_dir, name, code):
    """A stand-in for a trusted job: what its compile leaves in its cache folders."""
    for relative, content in (("inductor-cache/ab/cabc.so", code), ("inductor-cache/ab/cabc.cpp", "source")):
        os.makedirs(os.path.dirname(os.path.join(job_dir, relative)), exist_ok=True)
        with open(os.path.join(job_dir, relative), "w") as f:
            f.write(content)
    os.makedirs(os.path.join(job_dir, "triton-cache", "KEY"))
    for file in ("k.cubin", "k.json", "__grp__k.json"):
        with open(os.path.join(job_dir, "triton-cache", "KEY", file), "w") as f:
            f.write(file)


def test_a_store_made_for_another_toolchain_is_not_bound_and_is_rebuilt(tmp_path, monkeypatch):
    isolation = Isolation(kernel_cache_dir=str(tmp_path / "kernels"))
    built = []

    def trusted_job(job_dir, name, code):
        built.append(name)
        _fake_kernel(job_dir, name, code)

    monkeypatch.setattr(sandbox, "_kernel_stamp", lambda: "torch 1; g++ 1")
    published = sandbox.publish_kernel_cache(isolation, {"seed.py": "old"}, trusted_job)
    assert sorted(published) == [
        "inductor/ab/cabc.so",
        "triton/KEY/__grp__k.json",
        "triton/KEY/k.cubin",
        "triton/KEY/k.json",
    ]
    old = sandbox.kernel_store_id(isolation)
    assert old and sandbox.publish_kernel_cache(isolation, {"seed.py": "old"}, trusted_job) == [] and len(built) == 1

    monkeypatch.setattr(sandbox, "_kernel_stamp", lambda: "torch 2; g++ 1")
    assert sandbox.kernel_store_id(isolation) is None  # built for another torch: no job gets it
    args = sandbox._bwrap(isolation, str(tmp_path / "job"), {"TRITON_CACHE_DIR": "x"}, "cpu", None)
    assert not any("cabc.so" in arg for arg in args)
    assert sandbox.publish_kernel_cache(isolation, {"seed.py": "new"}, trusted_job) and len(built) == 2
    new = sandbox.kernel_store_id(isolation)
    assert new not in (None, old)
    job_dir = os.path.realpath(tmp_path / "job")
    sandbox.prepare_job_dir(job_dir, isolation)
    args = sandbox._bwrap(isolation, job_dir, {"TRITON_CACHE_DIR": f"{job_dir}/triton-cache"}, "cpu", None)
    binds = [args[i + 1 : i + 3] for i, arg in enumerate(args) if arg == "--ro-bind"]
    store = os.path.join(os.path.realpath(isolation.kernel_cache_dir), new)
    assert [f"{store}/inductor/ab/cabc.so", f"{job_dir}/inductor-cache/ab/cabc.so"] in binds
    assert [f"{store}/triton/KEY/k.cubin", f"{sandbox.SANDBOX_TRITON_CACHE}/KEY/k.cubin"] in binds
    with open(os.path.join(store, "inductor", "ab", "cabc.so")) as f:
        assert f.read() == "new"
