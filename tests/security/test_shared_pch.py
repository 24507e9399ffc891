"""The shared precompiled header: built once by a trusted warm-up, used by every CPU job, changed by none."""

import hashlib
import json
import os
import shutil

import pytest

from engine.cli import with_shared_pch
from engine.job import JobRequest, run_job
from engine.sandbox import PCH_SUBDIR, Isolation, check
from tests.support import SEED


@pytest.fixture
def warm(shared_pch):  # tests/security/conftest.py: built once, and checked there
    return shared_pch


def _digests(folder):
    return {
        name: hashlib.sha256(open(os.path.join(folder, name), "rb").read()).hexdigest() for name in os.listdir(folder)
    }


def test_an_inductor_job_compiles_with_the_shared_header_instead_of_its_own(warm, tmp_path):
    report = run_job(JobRequest(code=SEED, configs=["eager", "inductor_default"]), str(tmp_path), isolation=warm)
    assert report["status"] == "ok", report["failure"]
    assert report["isolation"]["shared_pch"] is True
    own = os.path.join(tmp_path, "tmp", PCH_SUBDIR)
    built_here = [n for n in os.listdir(own) if n.endswith(".gch") and os.path.getsize(os.path.join(own, n))]
    assert built_here == []  # only the (empty) mount points of the shared files remain in the job's folder


def test_a_job_cannot_change_replace_or_delete_the_shared_header(warm, tmp_path):
    before = _digests(warm.shared_pch_dir)
    code = (
        """
import json, os, tempfile
folder = os.path.join(tempfile.gettempdir(), %r)
results = {}
for name in sorted(os.listdir(folder)):
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        continue
    for what, action in (("write", lambda: open(path, "r+b").write(b"poison")),
                         ("delete", lambda: os.remove(path)),
                         ("replace", lambda: (open(path + ".new", "wb").write(b"poison"), os.replace(path + ".new", path))),
                         ("chmod", lambda: os.chmod(path, 0o666))):
        try:
            action()
            results[f"{name} {what}"] = "done"
        except OSError as exc:
            results[f"{name} {what}"] = exc.strerror
open(os.path.join(folder, "own.h"), "w").write("// a job may add headers for other flags")
print("RESULTS" + json.dumps(results))
import torch
model = lambda x: x
example_inputs = (torch.ones(1),)
"""
        % PCH_SUBDIR
    )
    report = run_job(JobRequest(code=code, configs=["eager"]), str(tmp_path), isolation=warm)
    assert report["status"] == "ok", report["failure"]
    line = next(out for out in report["user_output"]["stdout"].splitlines() if out.startswith("RESULTS"))
    results = json.loads(line[len("RESULTS") :])
    assert len(results) == 4 * len([name for name in before if not name.startswith(".")])
    assert all(outcome != "done" for outcome in results.values()), results
    assert _digests(warm.shared_pch_dir) == before


def test_the_cli_keeps_its_shared_header_in_the_users_cache_folder(warm, tmp_path, monkeypatch):
    # As a first run leaves it: the header of this torch and compiler in the user's cache folder.
    store = tmp_path / "cache" / "pt2scope" / "pch"
    shutil.copytree(warm.shared_pch_dir, store)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("PT2SCOPE_PCH_DIR", raising=False)
    inductor = JobRequest(code=SEED, configs=["eager", "inductor_default"])
    isolation = with_shared_pch(Isolation(), inductor, quiet=True)
    assert isolation.shared_pch_dir == str(store)
    assert "shared precompiled header on" in check(isolation)
    # A folder the operator named wins; no sandbox, the GPU, or no Inductor config: nothing to share or build.
    named = Isolation(shared_pch_dir=warm.shared_pch_dir)
    assert with_shared_pch(named, inductor, quiet=True) is named
    assert with_shared_pch(Isolation(mode="none"), inductor, quiet=True).shared_pch_dir is None
    on_gpu = JobRequest(code=SEED, configs=["eager", "inductor_default"], device="cuda")
    assert with_shared_pch(Isolation(), on_gpu, quiet=True).shared_pch_dir is None
    dynamo_only = JobRequest(code=SEED, configs=["eager", "aot_eager"])
    assert with_shared_pch(Isolation(), dynamo_only, quiet=True).shared_pch_dir is None
    assert with_shared_pch(Isolation(), JobRequest(code=SEED), quiet=True).shared_pch_dir == str(store)  # default
