"""What the scenarios' testinfra tests share; pytest loads it for every test below molecule/."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "on(*hosts): the test checks these hosts of the scenario only (it is not run on the others)"
    )


def pytest_collection_modifyitems(config, items):
    """A test marked on(...) runs on the hosts it names and is left out on the others, not skipped there; a name no
    host of the scenario has (a platform renamed or dropped in molecule.yml) stops the run instead of leaving the
    test unrun."""

    def host_of(item):
        param = getattr(item, "callspec", None) and item.callspec.params.get("_testinfra_host")
        return param.backend.get_hostname() if param is not None else None

    hosts = {host_of(item) for item in items} - {None}
    kept, left_out = [], []
    for item in items:
        mark = item.get_closest_marker("on")
        if mark is None:
            kept.append(item)
            continue
        unknown = sorted(set(mark.args) - hosts)
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid} is marked on({', '.join(mark.args)}), but the scenario has no host "
                f"{', '.join(unknown)} (its hosts: {', '.join(sorted(hosts))})"
            )
        (kept if host_of(item) in mark.args else left_out).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


def _stage_run(playbook: Path, tags: str, extra: list[str] | None = None) -> tuple[int, str]:
    argv = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(playbook), "--tags", tags]
    proc = subprocess.run(
        argv + (extra or []),
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )
    # The YAML callback folds long messages and doubles quotes inside single-quoted strings.
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split()).replace("''", "'")


# Session-wide: it keeps no state, and module fixtures drive whole stages with it.
@pytest.fixture(scope="session")
def stage_run():
    """Runs a playbook with tags (preflight runs with each phase) on the converged nodes, with more ansible-playbook
    arguments (a limit, extra vars, a second inventory): returns its status and its output on one line."""
    return _stage_run


@contextlib.contextmanager
def _replay_fault(host, tool: str, args: str, capture: Path):
    # The profile's stand-in is a read-only mount in /usr/local/bin; a wrapper in /usr/local/sbin, which comes first
    # in PATH, answers the call with exactly these arguments from the capture and hands every other call to it.
    container = f"molecule-{os.environ['MOLECULE_SCENARIO_NAME']}-{host.backend.get_hostname()}"
    subprocess.run(["podman", "cp", str(capture), f"{container}:/root/gpuops-fault"], check=True)
    host.run_expect([0], f"printf '#!/bin/sh\\n[ \"$*\" = \"{args}\" ] && exec cat /root/gpuops-fault\\n"
                         f"exec /usr/local/bin/{tool} \"$@\"\\n' > /usr/local/sbin/{tool} && "
                         f"chmod 755 /usr/local/sbin/{tool}")  # fmt: skip
    try:
        yield
    finally:
        host.run_expect([0], f"rm -f /usr/local/sbin/{tool} /root/gpuops-fault")


@pytest.fixture
def replay_fault():
    """For the test's length, the node's simulated `tool` answers `args` with a fault capture (a file of
    tests/fixtures): a GPU fallen off the bus, a port down, as verify would meet them on a real node.
    Use: `with replay_fault(host, "nvidia-smi", "-q -x", path):`."""
    return _replay_fault
