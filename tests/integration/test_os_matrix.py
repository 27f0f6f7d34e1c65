"""os_baseline's variables load, and its templates and files render, on every supported OS; others are refused.

Each node is a bench container whose /etc/os-release is a real one of that
OS (tests/fixtures/os-release, sources in SOURCES.md): os_facts reads it as
it would on that OS, and the role loads that OS's variables. Only preflight
and rendering run; installing packages needs the real OS.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "bench" / "bench.py"
RELEASES = ROOT / "tests" / "fixtures" / "os-release"
GROUP = "os-matrix"
MIRROR = "http://mirror.example.com:8080"
SUPPORTED = ["ubuntu-22.04", "ubuntu-24.04", "rocky-8.3", "rocky-9.3", "rhel-8.7", "rhel-9.6"]
UNSUPPORTED = ["pop-22.04"]


def instance(release: str) -> str:
    return release.replace(".", "")


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """Run the matrix playbook once over every release; yield each host's result and the run's text output."""
    tmp = tmp_path_factory.mktemp("os-matrix")
    specs = [{"name": instance(r), "image": "debian12"} for r in SUPPORTED + UNSUPPORTED]
    inventory = tmp / "hosts.json"
    started = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "nodes",
            "up",
            "--prefix",
            GROUP,
            json.dumps(specs),
            "--inventory",
            str(inventory),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    try:
        containers = {node["instance"]: node["container"] for node in json.loads(started.stdout)}
        for release in SUPPORTED + UNSUPPORTED:
            container = containers[instance(release)]
            # /etc/os-release links to /usr/lib/os-release on Debian: replace the link by the file.
            subprocess.run(["podman", "exec", container, "rm", "-f", "/etc/os-release"], check=True)
            subprocess.run(["podman", "cp", str(RELEASES / release), f"{container}:/etc/os-release"], check=True)
        proc = subprocess.run(
            ["ansible-playbook", "-i", str(inventory), str(Path(__file__).with_name("os_matrix.yml"))],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"},
        )
        output = json.loads(proc.stdout)
        results = {}
        for task in output["plays"][0]["tasks"]:
            for host, result in task["hosts"].items():
                if result.get("failed"):
                    results[host] = {"failed": result.get("msg", "")}
                elif task["task"]["name"] == "Report what the variables resolved to":
                    results[host] = result["msg"]
        yield results
    finally:
        subprocess.run([sys.executable, str(BENCH), "nodes", "down", GROUP], check=True)


def test_every_release_ran(matrix):
    assert sorted(matrix) == sorted(instance(r) for r in SUPPORTED + UNSUPPORTED)


@pytest.mark.parametrize("release", SUPPORTED)
def test_supported_release_loads_and_renders(matrix, release):
    result = matrix[instance(release)]
    assert "failed" not in result, result
    family = "RedHat" if release.startswith(("rocky", "rhel")) else "Debian"
    assert result["family"] == family
    rendered = result["rendered"]
    configuration = result["configuration"]
    assert all(text.startswith("# Managed by gpuops.bringup") for text in [*rendered.values(), *configuration.values()])
    if family == "Debian":
        codename = {"ubuntu-22.04": "jammy", "ubuntu-24.04": "noble"}[release]
        sources = rendered["os.sources.j2"]
        assert f"URIs: {MIRROR}/archive.ubuntu.com/ubuntu" in sources
        assert f"URIs: {MIRROR}/security.ubuntu.com/ubuntu" in sources
        assert f"Suites: {codename} {codename}-updates {codename}-backports" in sources
        assert "Components: main restricted universe multiverse" in sources
        assert "Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg" in sources
        assert result["chrony_service"] == "chrony.service"
        assert "pool ntp.ubuntu.com iburst" in configuration["/etc/chrony/chrony.conf"]
        assert result["initramfs_command"] == ["update-initramfs", "-u", "-k", "all"]
    else:
        major = release.split("-")[1].split(".")[0]
        repo = rendered["gpuops-os.repo.j2"]
        if release.startswith("rocky"):
            extra, key = ("PowerTools", "RPM-GPG-KEY-rockyofficial") if major == "8" else ("CRB", "RPM-GPG-KEY-Rocky-9")
            assert f"baseurl={MIRROR}/dl.rockylinux.org/pub/rocky/{major}/BaseOS/x86_64/os/" in repo
            assert f"baseurl={MIRROR}/dl.rockylinux.org/pub/rocky/{major}/{extra}/x86_64/os/" in repo
            assert f"gpgkey=file:///etc/pki/rpm-gpg/{key}" in repo
        else:
            assert f"baseurl={MIRROR}/cdn.redhat.com/content/dist/rhel{major}/{major}/x86_64/baseos/os/" in repo
            assert "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-redhat-release" in repo
        assert len(re.findall(r"^gpgcheck=1$", repo, re.MULTILINE)) == len(re.findall(r"^\[", repo, re.MULTILINE))
        assert result["chrony_service"] == "chronyd.service"
        assert result["chrony_conf"] == "/etc/chrony.conf"
        assert "driftfile /var/lib/chrony/drift\n" in configuration["/etc/chrony.conf"]
        assert "python3-dnf-plugin-versionlock" in result["packages"]
        assert result["initramfs_command"] == ["dracut", "-f", "--regenerate-all"]


@pytest.mark.parametrize("release", UNSUPPORTED)
def test_unsupported_release_is_refused_in_preflight(matrix, release):
    message = " ".join(matrix[instance(release)]["failed"].split())
    assert "runs Pop!_OS 22.04 LTS (ID=pop, VERSION_ID=22.04), which os_baseline does not support" in message
    assert "Supported: Debian 12/13, Ubuntu 22.04/24.04, Rocky Linux and RHEL 8/9" in message
    assert "Fix: install a supported release" in message
