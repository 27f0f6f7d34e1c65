"""nvidia_container_toolkit on Debian 13 (simulated 4x L40S, Debian's containerd 1.7): the real state after converge.

The packages are the bench's stand-ins of NVIDIA's (tests/standins/libnvidia-container), from the mirror's copy of
NVIDIA's repository, which also carries a newer version than the pinned one.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

VERSION = "1.17.8-1"
NEWER = "1.18.0-1"
PACKAGES = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
            "libnvidia-container1"]  # fmt: skip
PROFILE_UUIDS = [f"GPU-eaf0bc12-3996-9441-6965-b6955608929{c}" for c in "cdef"]
CRI = "io.containerd.grpc.v1.cri"
CONVERGE = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"


@pytest.fixture(scope="module")
def dump(host):
    """containerd's effective configuration, as containerd itself reads it (imports merged)."""
    return tomllib.loads(host.check_output("containerd config dump"))


def test_every_package_is_at_the_pinned_version_and_held_though_a_newer_one_is_offered(host):
    held = host.check_output("apt-mark showhold").split()
    for package in PACKAGES:
        assert host.check_output(f"dpkg-query -W -f '${{Version}}' {package}") == VERSION, package
        assert package in held, package
        assert NEWER in host.check_output(f"apt-cache madison {package}"), package


def test_the_repository_is_nvidias_path_on_the_mirror_with_its_key(host):
    sources = host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.sources").content_string
    assert "URIs: http://gpuops-mirror:8080/nvidia.github.io/libnvidia-container/stable/deb/amd64" in sources
    assert "Signed-By: /etc/apt/keyrings/nvidia-container-toolkit.asc" in sources


def test_nvidia_ctk_reports_the_pinned_version(host):
    out = host.check_output("nvidia-ctk --version")
    assert out.splitlines()[0] == f"NVIDIA Container Toolkit CLI version {VERSION.rsplit('-', 1)[0]}"


def test_containerd_runs_the_nvidia_runtime_through_nvidia_container_runtime(dump):
    nvidia = dump["plugins"][CRI]["containerd"]["runtimes"]["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert nvidia["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    # Copied from the site's runc: the cgroup driver must match kubelet's.
    assert nvidia["options"]["SystemdCgroup"] is True


def test_every_site_setting_survives(host, dump):
    cri = dump["plugins"][CRI]
    assert dump["oom_score"] == -999
    assert dump["grpc"]["max_recv_message_size"] == 16777216
    assert cri["sandbox_image"] == "registry.gpuops.test/pause:3.10"
    assert cri["max_container_log_line_size"] == 32768
    assert cri["registry"]["mirrors"]["docker.io"]["endpoint"] == ["https://registry.gpuops.test"]
    assert cri["containerd"]["default_runtime_name"] == "runc"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert dump["plugins"]["io.containerd.internal.v1.opt"]["path"] == "/var/lib/containerd/opt"


def test_the_site_config_gained_only_the_import(host):
    config = host.file("/etc/containerd/config.toml").content_string
    assert config.startswith("# Site containerd configuration, written by the site's own tooling")
    assert 'imports = ["/etc/containerd/conf.d/99-nvidia.toml"]' in config.splitlines()
    assert "nvidia-container-runtime" not in config


def test_containerd_is_active_and_was_restarted_for_the_new_config(host):
    assert host.service("containerd").is_running
    started = host.check_output("systemctl show -P ActiveEnterTimestampMonotonic containerd.service")
    written = host.check_output("stat -c %Y /etc/containerd/conf.d/99-nvidia.toml")
    boot = float(host.check_output("cut -d' ' -f1 /proc/uptime"))
    now = float(host.check_output("date +%s"))
    # Started after the drop-in was written (monotonic microseconds since boot vs. wall-clock seconds).
    assert now - boot + int(started) / 1e6 >= int(written) - 1


def test_the_cdi_spec_lists_the_four_simulated_l40s(host):
    devices = host.check_output("nvidia-ctk cdi list 2>/dev/null").split()
    assert [d for d in devices if d[len("nvidia.com/gpu=") :].isdigit()] == [f"nvidia.com/gpu={i}" for i in range(4)]
    for uuid in PROFILE_UUIDS:
        assert f"nvidia.com/gpu={uuid}" in devices
    assert "nvidia.com/gpu=all" in devices
    assert host.file("/etc/cdi/nvidia.yaml").mode == 0o644


def test_the_record_says_what_the_spec_was_generated_for(host):
    record = json.loads(host.file("/var/lib/gpuops/nvidia_container_toolkit/cdi.json").content_string)
    assert record["driver_version"] == "570.172.08"
    assert record["gpus"] == PROFILE_UUIDS
    assert record["toolkit_version"] == VERSION.rsplit("-", 1)[0]
    assert record["spec_sha256"] == host.check_output("sha256sum /etc/cdi/nvidia.yaml").split()[0]


def test_verification_passes_and_says_what_the_container_node_cannot_show(stage_run):
    rc, output = stage_run(CONVERGE, "nvidia_container_toolkit_verify")
    assert rc == 0, output[-3000:]
    assert (
        "l40s passed nvidia_container_toolkit verification: 4 packages held at 1.17.8-1 (nvidia-ctk 1.17.8), the "
        "nvidia runtime in containerd, CDI spec with 4 GPU(s) [SIMULATED pcie_l40s_4gpu] (not applicable: a GPU "
        "container (this node's kernel belongs to its container host: its containers reach the host's GPUs, not this "
        "install's; nvidia-smi replays another machine's capture))"
    ) in output


def test_verification_names_a_runtime_stopped_behind_the_roles_back(host, stage_run):
    host.run_expect([0], "systemctl stop containerd")
    try:
        rc, output = stage_run(CONVERGE, "nvidia_container_toolkit_verify")
    finally:
        host.run_expect([0], "systemctl start containerd")
    assert rc != 0
    assert "l40s failed nvidia_container_toolkit verification: containerd.service is not active" in output
