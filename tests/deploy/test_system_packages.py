"""scripts/need-system-packages, which `make install` and `make test` call: a missing system package is installed
as root, or named with the exact command to run, and make stops."""

import os
import subprocess

from storage.config import PROJECT_ROOT

SCRIPT = os.path.join(PROJECT_ROOT, "scripts", "need-system-packages")


def _run(tmp_path, uid: int, *pairs):
    """The script with a PATH of only sh, a fake `id` (the uid) and a fake apt-get that records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/apt.log\n')
    for tool in ("id", "apt-get"):
        (bin_dir / tool).chmod(0o755)
    os.symlink("/bin/sh", bin_dir / "sh")
    return subprocess.run(["/bin/sh", SCRIPT, *pairs], capture_output=True, text=True, env={"PATH": str(bin_dir)})


def test_as_a_user_it_prints_the_exact_command_and_fails(tmp_path):
    result = _run(tmp_path, 1000, "sh:dash", "bwrap:bubblewrap", "chromium:chromium")
    assert result.returncode == 1
    assert "sudo apt-get install -y bubblewrap chromium" in result.stderr  # present commands are not named
    assert not (tmp_path / "apt.log").exists()


def test_as_root_it_installs_only_what_is_missing(tmp_path):
    result = _run(tmp_path, 0, "sh:dash", "bwrap:bubblewrap")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -q",
        "install -y -q --no-install-recommends bubblewrap",
    ]


def test_nothing_missing_is_silent(tmp_path):
    result = _run(tmp_path, 1000, "sh:dash")
    assert (result.returncode, result.stderr) == (0, "")
