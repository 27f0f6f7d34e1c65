"""Linters and ansible-test sanity over the whole tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# ansible-test installs each sanity test's pinned requirements into this
# environment (`make setup` creates it with the pinned ansible-core): its
# --venv mode would fetch get-pip.py from a host CI cannot reach.
SANITY_VENV = ROOT / ".venv-sanity"


def run(cmd: list[str], cwd: Path = ROOT) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed (rc={proc.returncode}):\n{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}")


def test_ruff() -> None:
    run(["ruff", "check", "."])


def test_ruff_format() -> None:
    run(["ruff", "format", "--check", "."])


def test_yamllint() -> None:
    run(["yamllint", "--strict", "."])


def test_ansible_lint_production_profile() -> None:
    run(["ansible-lint", "--profile", "production"])


def collection_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [f for f in out.splitlines() if (ROOT / f).is_file() and not (ROOT / f).is_symlink()]


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
    ansible_test = str(SANITY_VENV / "bin" / "ansible-test")
    run([ansible_test, "sanity", "--color", "no", "--python", python, "--requirements"], cwd=dest)
