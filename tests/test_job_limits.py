"""The job limits' defaults live once (contract/limits.py); the request, the settings and the CLI all use them."""

import os
from dataclasses import asdict, fields

import pytest

from contract.limits import DEFAULT_LIMITS, JobLimits
from engine import cli
from engine.job import JobRequest
from storage.config import SECURITY_ENV, Settings


def test_the_job_request_has_every_limit_with_the_shared_default():
    request = JobRequest(code="")
    assert {f.name: getattr(request, f.name) for f in fields(JobLimits)} == asdict(DEFAULT_LIMITS)


def test_settings_without_environment_give_the_shared_defaults(monkeypatch, tmp_path):
    for variable in [*SECURITY_ENV.values(), "PT2SCOPE_JOB_TIME_LIMIT"]:
        monkeypatch.delenv(variable, raising=False)
    assert Settings.from_env(instance_path=str(tmp_path)).job_limits() == asdict(DEFAULT_LIMITS)


def test_settings_from_the_environment_reach_the_request(monkeypatch, tmp_path):
    monkeypatch.setenv("PT2SCOPE_JOB_TIME_LIMIT", "30")
    monkeypatch.setenv("PT2SCOPE_PROCESS_LIMIT", "64")
    monkeypatch.setenv("PT2SCOPE_USER_CODE_TIME_LIMIT", "20")
    monkeypatch.setenv("PT2SCOPE_JOB_CPU_CORES", "1.5")
    settings = Settings.from_env(instance_path=str(tmp_path))
    request = JobRequest(code="", **settings.job_limits())
    assert (request.time_limit_s, request.process_limit) == (30.0, 64)
    assert (request.user_code_time_limit_s, request.cpu_cores) == (20.0, 1.5)
    # A worker gets the same settings through its environment (workers.launch), the unset cores included.
    monkeypatch.delenv("PT2SCOPE_JOB_CPU_CORES")
    unset = Settings.from_env(instance_path=str(tmp_path))
    for variable, value in unset.to_env().items():
        monkeypatch.setenv(variable, value)
    assert Settings.from_env(instance_path=str(tmp_path)) == unset and unset.cpu_cores is None


class _Stop(Exception):
    pass


def test_the_cli_default_time_limit_is_the_shared_one(monkeypatch, tmp_path):
    seen = []

    def run_job(request, **_):
        seen.append(request)
        raise _Stop

    monkeypatch.setattr(cli, "run_job", run_job)
    monkeypatch.setattr(cli, "check", lambda isolation: "")
    monkeypatch.setattr(cli, "with_shared_pch", lambda isolation, request, quiet: isolation)  # builds nothing
    seed = os.path.join(os.path.dirname(__file__), "..", "examples", "seed.py")
    with pytest.raises(_Stop):
        cli.main(["explore", seed, "--quiet", "--out", str(tmp_path)])
    assert seen[0].time_limit_s == DEFAULT_LIMITS.time_limit_s
