"""Linters and ansible-test sanity over the whole tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What get-pip.py does (pip installs itself from a pip on sys.path), with the
# pip wheel from PyPI in place of the copy get-pip.py embeds.
GET_PIP_STAND_IN = """\
import argparse
import sys

sys.path.insert(0, {wheel!r})
from pip._internal.cli.main import main

parser = argparse.ArgumentParser()
parser.add_argument("--no-setuptools", action="store_true")
parser.add_argument("--no-wheel", action="store_true")
options, args = parser.parse_known_args()
args.append("pip")
args += [] if options.no_setuptools else ["setuptools"]
args += [] if options.no_wheel else ["wheel"]
sys.exit(main(["install", "--upgrade", "--force-reinstall", *args]))
"""


def run(cmd: list[str], cwd: Path = ROOT, env: dict | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed (rc={proc.returncode}):\n{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}")


def test_ruff() -> None:
    run(["ruff", "check", "."])


def test_ruff_format() -> None:
    run(["ruff", "format", "--check", "."])


def test_yamllint() -> None:
    run(["yamllint", "--strict", "."])


def test_ansible_lint_production_profile(tmp_path: Path) -> None:
    # ansible.cfg names no inventory and refuses to run without one: ansible-lint's syntax checks get a file naming
    # localhost. Not ANSIBLE_INVENTORY=localhost, (a host list only on the command line): the variable is a path list,
    # and its empty second entry is the working directory, so each of the 60-odd syntax checks parsed every file of
    # the checkout as an inventory (5 s each instead of 1).
    inventory = tmp_path / "localhost.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n")
    run(["ansible-lint", "--profile", "production"], env={**os.environ, "ANSIBLE_INVENTORY": str(inventory)})


def collection_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [f for f in out.splitlines() if (ROOT / f).is_file() and not (ROOT / f).is_symlink()]


def seed_pip_bootstrap(python: str) -> None:
    """Give ansible-test the pip bootstrap script it would download, made from PyPI's pip wheel.

    Every virtual environment ansible-test creates for a sanity test gets pip
    from get-pip.py, fetched from ci-files.testing.ansible.com, which CI and
    air-gapped sites cannot reach (ansible/ansible#77304); ansible-test uses a
    script already in its cache instead. Which pip it wants comes from
    ansible-test's own table (internal, but pinned with ansible-core).
    """
    from ansible_test._internal.python_requirements import get_venv_packages

    version = get_venv_packages(SimpleNamespace(version=python))["pip"]
    cache = Path.home() / ".ansible" / "test" / "cache"
    script = cache / f"get_pip_{version.replace('.', '_')}.py"
    if script.exists():
        return
    cache.mkdir(parents=True, exist_ok=True)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(cache),
            f"pip=={version}",
        ]
    )
    wheel = next(cache.glob(f"pip-{version}-*.whl"))
    partial = script.with_suffix(".partial")
    partial.write_text(GET_PIP_STAND_IN.format(wheel=str(wheel)))
    partial.replace(script)


def test_ansible_test_sanity(tmp_path: Path) -> None:
    # ansible-test needs the collection at ansible_collections/<namespace>/<name>.
    dest = tmp_path / "ansible_collections" / "gpuops" / "bringup"
    for name in collection_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    seed_pip_bootstrap(python)
    run(["ansible-test", "sanity", "--color", "no", "--python", python, "--venv"], cwd=dest)
