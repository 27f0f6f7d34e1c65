"""The shared index refresh waits for another apt holding the lists lock, and stops at once on any other failure.

On a freshly booted node apt-daily or unattended-upgrades often hold /var/lib/apt/lists/lock; apt-get update does not
wait for it. Here a process on a bench node holds that lock (an fcntl lock, as apt takes it) for some seconds while the
refresh runs: the refresh retries until the lock is free, then succeeds; with gpuops_package_lock_timeout 0 it fails
at once. A source that cannot be fetched fails on the first attempt.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from preflight_harness import MIRROR, ROOT, bench_nodes

PLAYBOOK = Path(__file__).with_name("apt_index.yml")
NODE = "node"
TASK = "Refresh the package index when it is over an hour old"
# Holds apt's lists lock the way apt does (fcntl, whole file), says so, and lets go after HOLD seconds.
HOLD = 12
HOLDER = (
    "import fcntl, time; f = open('/var/lib/apt/lists/lock', 'w'); fcntl.lockf(f, fcntl.LOCK_EX); "
    f"open('/tmp/apt-lock-held', 'w').close(); time.sleep({HOLD})"
)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with bench_nodes(tmp_path_factory, "apt-lock", [{"name": NODE, "image": "debian13"}]) as started:
        started.debian_sources(NODE, "trixie")
        yield started


def refresh(inventory: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["ansible-playbook", "-i", str(inventory), *extra, str(PLAYBOOK)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def hold_the_lists_lock(node) -> None:
    """Start the holder on the node and return once it holds the lock."""
    container = node.containers[NODE]
    node.sh(NODE, "rm -f /tmp/apt-lock-held")
    subprocess.run(["podman", "exec", "-d", container, "python3", "-c", HOLDER], check=True)
    deadline = time.monotonic() + 10
    held = ["podman", "exec", container, "test", "-e", "/tmp/apt-lock-held"]
    while subprocess.run(held, check=False).returncode != 0:
        if time.monotonic() > deadline:
            pytest.fail("the lock holder did not start")
        time.sleep(0.2)


def test_without_a_wait_the_refresh_fails_at_once_on_the_lock(node) -> None:
    hold_the_lists_lock(node)
    started = time.monotonic()
    proc = refresh(node.inventory, "--extra-vars", "gpuops_package_lock_timeout=0")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Could not get lock /var/lib/apt/lists/lock" in output and "FAILED - RETRYING" not in output, output[-3000:]
    # Let the holder go before the next test holds the lock again.
    time.sleep(max(0.0, HOLD - (time.monotonic() - started)) + 1)


def test_the_refresh_waits_for_the_lists_lock(node) -> None:
    hold_the_lists_lock(node)
    started = time.monotonic()
    proc = refresh(node.inventory)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    # It met the lock (so it waited, not just ran after the holder), and succeeded once the lock was free.
    assert f"FAILED - RETRYING: [{NODE}]: {TASK}" in output, output[-3000:]
    assert time.monotonic() - started >= HOLD - 2


def test_any_other_failure_stops_at_once(node) -> None:
    node.sh(NODE, f"echo 'deb {MIRROR}/no-such-repository trixie main' > /etc/apt/sources.list.d/broken.list")
    try:
        proc = refresh(node.inventory)
    finally:
        node.sh(NODE, "rm -f /etc/apt/sources.list.d/broken.list")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no-such-repository" in output and "FAILED - RETRYING" not in output, output[-3000:]
