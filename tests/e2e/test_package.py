"""The wheel in a new project: build it, install it, follow the README's steps literally.

The new project lives in a fresh virtual environment (`python -m venv`, no system
site-packages) in which pip installs only the built wheel (`--no-deps`). Its
dependencies come from this suite's environment, already downloaded and pinned,
through a .pth file naming a folder that holds only the distributions the
wheel declares (and theirs, transitively): no network, a few seconds, and an
import the wheel does not declare still fails. The same test checks that the
versions there satisfy the wheel's declared ranges.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import time
import zipfile
from dataclasses import dataclass
from email import message_from_string
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import child_environment

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PROJECT = "hostsite"
PREFIX = "ops/scheduler/"

# The new project runs on its own SQLite database: once, in the SQLite pass.
pytestmark = [pytest.mark.slow, pytest.mark.sqlite]


def readme_section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


STEPS = readme_section("Add to an existing project")


def readme_block(first_line: str) -> str:
    """The README's code block that starts with `first_line`, dedented, as the README has it."""
    for block in re.findall(r"```python\n(.*?)```", STEPS, flags=re.S):
        code = textwrap.dedent(block)
        if code.startswith(first_line):
            return code
    raise AssertionError(f"the README's steps have no code block starting {first_line!r}")


def wheel_requirements(wheel: Path, extras: frozenset[str] = frozenset()) -> list[Requirement]:
    """The wheel's Requires-Dist that apply with `extras`."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(name).decode()
    found = []
    for requirement in map(Requirement, message_from_string(text).get_all("Requires-Dist") or []):
        wanted = requirement.marker is None or any(
            requirement.marker.evaluate({"extra": extra}) for extra in {"", *extras}
        )
        if wanted:
            found.append(requirement)
    return found


def dependency_closure(requirements: list[Requirement]) -> list[metadata.Distribution]:
    """The installed distributions of these requirements (already chosen by their
    markers), and of theirs, transitively (without their extras)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [(requirement, True) for requirement in requirements]  # (requirement, wanted)
    while todo:
        requirement, wanted = todo.pop()
        if not wanted and requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        key = requirement.name.lower().replace("_", "-")
        if key in seen:
            continue
        dist = metadata.distribution(requirement.name)
        seen[key] = dist
        todo.extend((Requirement(r), False) for r in dist.requires or [])
    return list(seen.values())


def link_distributions(dists: list[metadata.Distribution], folder: Path) -> None:
    """A folder with only these distributions: links to their top-level files and folders."""
    folder.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for dist in dists:
        for top in {Path(str(f)).parts[0] for f in dist.files or []}:
            source = site / top
            if top != ".." and source.exists() and not (folder / top).exists():
                (folder / top).symlink_to(source)


@dataclass
class Host:
    folder: Path  # the project made by startproject
    python: Path  # the fresh virtual environment's interpreter
    env: dict[str, str]

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [str(self.python), "manage.py", *args],
            cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if check:
            assert result.returncode == 0, f"manage.py {' '.join(args)}:\n{result.stderr}"
        return result

    def append(self, relative: str, code: str) -> None:
        with open(self.folder / relative, "a") as handle:
            handle.write("\n" + code)

    def query(self, sql: str) -> list[tuple]:
        with sqlite3.connect(self.folder / "db.sqlite3", timeout=20) as db:
            return db.execute(sql).fetchall()


def run(*args: str | Path, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """`python -m build`: an sdist, and a wheel built from it (hatchling, no network)."""
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, ROOT)
    (built,) = dist.glob("sillo_dash-*.whl")
    (sdist,) = dist.glob("sillo_dash-*.tar.gz")
    with zipfile.ZipFile(built) as archive:
        wheel_files = set(archive.namelist())
    with tarfile.open(sdist) as archive:
        sdist_files = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for files in (wheel_files, sdist_files):
        assert "schedules/templates/schedules/list.html" in files
        assert "schedules/static/schedules/js/sillo.js" in files
        assert "schedules/migrations/0001_initial.py" in files
        assert not any(f.startswith(("sillo_dash/", "tests/")) for f in files)
    assert "sillo_dash-0.1.0.dist-info/licenses/LICENSE" in wheel_files
    assert "LICENSE" in sdist_files
    return built


@pytest.fixture(scope="module")
def host(wheel: Path, tmp_path_factory) -> Host:
    """A new project (startproject) in a fresh venv with the wheel, set up by the README."""
    base = tmp_path_factory.mktemp("host")
    venv = base / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(
        run(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        ).stdout.strip()
    )
    # The redis extra too: the production pass's live pages use channels_redis.
    requirements = wheel_requirements(wheel, extras=frozenset({"redis"}))
    link_distributions(dependency_closure(requirements), base / "deps")
    (site / "sillo_dependencies.pth").write_text(f"{base / 'deps'}\n")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
        "--quiet", "--disable-pip-version-check", wheel)  # fmt: skip

    env = child_environment()
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "PYTHONPATH"):
        env.pop(name, None)
    run(python, "-m", "django", "startproject", PROJECT, base / "project", env=env)
    host = Host(folder=base / "project", python=python, env=env)
    host.manage("startapp", "reports")
    return host


@dataclass
class Steps:
    """What the README's steps gave: `check` before and after the middleware step."""

    missing_middleware: subprocess.CompletedProcess
    checked: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def configured(host: Host) -> Steps:
    """The README's steps 2 to 5 on the new project, plus a task in its own app."""
    settings_step = readme_block("INSTALLED_APPS += ").splitlines()
    host.append(f"{PROJECT}/settings.py", settings_step[0] + "\n")
    missing = host.manage("check", check=False)  # the apps without the middleware
    host.append(f"{PROJECT}/settings.py", settings_step[1] + "\n")

    urls_step = readme_block("from django.urls import include")
    assert f'path("{PREFIX}", include("schedules.urls"))' in urls_step
    host.append(f"{PROJECT}/urls.py", urls_step)

    # A task of the host's own app, with a code default due every second.
    host.append(f"{PROJECT}/settings.py", 'INSTALLED_APPS += ["reports"]\n')
    (host.folder / "reports" / "tasks.py").write_text(
        "import pathlib\n\nimport schedules\n\n\n"
        '@schedules.task("reports.hello", every=1)\n'
        "def hello() -> str:\n"
        '    pathlib.Path("hello.txt").write_text("hello from the host")\n'
        '    return "hello"\n'
    )
    checked = host.manage("check")
    host.manage("migrate", "--noinput")
    return Steps(missing_middleware=missing, checked=checked)


def test_the_wheel_declares_what_it_needs_in_ranges_the_pinned_versions_meet(
    wheel: Path, host: Host
) -> None:
    requirements = wheel_requirements(wheel)
    assert {r.name.lower() for r in requirements} >= {"django", "channels", "daphne", "django-htmx"}
    for requirement in requirements:
        assert metadata.version(requirement.name) in requirement.specifier, requirement
    where = run(host.python, "-c", "import schedules; print(schedules.__file__)",
                cwd=host.folder, env=host.env).stdout  # fmt: skip
    assert "/venv/lib/" in where and str(ROOT) not in where


def test_check_names_the_missing_middleware_before_the_first_request(configured: Steps) -> None:
    assert configured.missing_middleware.returncode != 0
    assert (
        "django_htmx.middleware.HtmxMiddleware is not in MIDDLEWARE"
        in configured.missing_middleware.stderr
    )
    # Once set up, no channel layer is a warning (live updates off), not an error.
    assert "schedules.W010" in configured.checked.stderr
    assert "schedules.E" not in configured.checked.stderr
    # startproject's plain SQLite: named, with the options that let writers wait.
    assert "schedules.W015" in configured.checked.stderr


def test_runscheduler_once_runs_the_hosts_task_by_its_code_default(
    host: Host, configured: Steps
) -> None:
    # The first pass creates the code default's record; a later one runs its first slot.
    for _ in range(10):
        if "1 run(s) started" in host.manage("runscheduler", "--once").stdout:
            break
        time.sleep(0.5)
    assert (host.folder / "hello.txt").read_text() == "hello from the host"
    runs = host.query("SELECT schedule_code, status, result FROM schedules_run")
    assert runs[0] == ("reports.hello", "succeeded", '"hello"')
    assert host.query("SELECT source FROM schedules_schedule") == [("code",)]


def test_the_host_gets_no_demo(host: Host, configured: Steps) -> None:
    commands = host.manage("help", "--commands").stdout.split()
    assert "runscheduler" in commands and "schedules" in commands
    assert "demo" not in commands and "ensureadmin" not in commands
    code = "from schedules.registry import registry; print(sorted(registry.declarations))"
    declared = host.manage("shell", "-c", code).stdout
    assert "reports.hello" in declared and "demo." not in declared
