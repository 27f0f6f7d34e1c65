"""What the bad-input tests of the stage roles share: running a role's preflight in check mode, on the machine running
the tests or on bench nodes, and reading its failure.

Each test file names its playbook and tag; a case passes when the play fails on the host with the expected sentences
and nothing changed (changed=0).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "bench" / "bench.py"
MIRROR = "http://gpuops-mirror:8080"
UBUNTU_OS_RELEASE = ROOT / "tests" / "fixtures" / "os-release" / "ubuntu-24.04"


def unfold(text: str) -> str:
    """Messages are folded in the output, with YAML's doubled quotes: compare them unfolded."""
    return re.sub(r"\s+", " ", text).replace("''", "'")


def run_preflight(playbook: Path, tag: str, tmp_path: Path, inventory: list[str], variables: dict,
                  limit: str | None = None) -> subprocess.CompletedProcess:  # fmt: skip
    """ansible-playbook --check --tags <tag> with the variables as extra vars."""
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    argv = ["ansible-playbook", *inventory, "--check", "--tags", tag, "--extra-vars", f"@{extra}", str(playbook)]
    if limit:
        argv[1:1] = ["--limit", limit]
    return subprocess.run(
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )


def run_local(playbook: Path, tag: str, tmp_path: Path, variables: dict) -> subprocess.CompletedProcess:
    """The preflight on the machine running the tests (it has no NVIDIA GPU and no NVSwitch)."""
    # Modules run with the tests' own Python: interpreter discovery on a developer machine may find shims.
    return run_preflight(
        playbook,
        tag,
        tmp_path,
        ["--inventory", "localhost,", "--connection", "local"],
        {**variables, "ansible_python_interpreter": sys.executable},
    )


def assert_fails_with(proc: subprocess.CompletedProcess, host: str, expected: list[str]) -> None:
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode != 0, output[-3000:]
    for text in expected:
        assert unfold(text) in output, f"{text!r} not in:\n{output[-3000:]}"
    assert re.search(rf"{host}\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", proc.stdout), proc.stdout[-2000:]


def assert_passes_unchanged(proc: subprocess.CompletedProcess, host: str) -> str:
    """The control case: the play passes with changed=0; returns the unfolded output for further checks."""
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode == 0, output[-3000:]
    assert re.search(rf"{host}\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", proc.stdout), proc.stdout[-2000:]
    return output


class Nodes:
    """Bench nodes started for a test module: their inventory file and a way to run commands in them."""

    def __init__(self, inventory: Path, containers: dict[str, str]):
        self.inventory = inventory
        self.containers = containers

    def sh(self, node: str, script: str) -> None:
        subprocess.run(["podman", "exec", self.containers[node], "sh", "-c", script], check=True, capture_output=True)

    def debian_sources(self, node: str, suite: str) -> None:
        """What stage 1 leaves behind: Debian's archive with the components NVIDIA's packages are in, through the
        bench's mirror (a cache)."""
        self.sh(node, f"echo 'deb {MIRROR}/deb.debian.org/debian {suite} main contrib non-free non-free-firmware' "
                      "> /etc/apt/sources.list")  # fmt: skip

    def ubuntu(self, node: str) -> None:
        """A real Ubuntu 24.04 os-release (tests/fixtures/os-release, public) in place of Debian's."""
        self.sh(node, "rm -f /etc/os-release")
        subprocess.run(["podman", "cp", str(UBUNTU_OS_RELEASE), f"{self.containers[node]}:/etc/os-release"],
                       check=True)  # fmt: skip


@contextlib.contextmanager
def bench_nodes(tmp_path_factory, group: str, specs: list[dict]):
    """Start bench nodes ({name, image, hardware}) named <group>-<name>; remove them afterwards."""
    inventory = tmp_path_factory.mktemp(group) / "hosts.json"
    started = subprocess.run(
        [sys.executable, str(BENCH), "nodes", "up", "--prefix", group, json.dumps(specs), "--inventory",
         str(inventory)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    try:
        yield Nodes(inventory, {node["instance"]: node["container"] for node in json.loads(started.stdout)})
    finally:
        subprocess.run([sys.executable, str(BENCH), "nodes", "down", group], check=True)
