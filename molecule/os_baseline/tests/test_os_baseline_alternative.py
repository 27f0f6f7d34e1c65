"""os_baseline with most options changed: the real state of each node after converge."""

import hashlib
import json
import os
from pathlib import Path

testinfra_hosts = ["alternative-debian12", "alternative-debian13"]
MIRROR = "http://gpuops-mirror:8080"
BENCH_KEY = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"], ".bench", "mirror", "mirror.json")


def test_os_archive_comes_through_the_mirror(host):
    sources = host.file("/etc/apt/sources.list.d/debian.sources")
    assert sources.contains(f"^URIs: {MIRROR}/deb.debian.org/debian$")
    assert sources.contains(f"^URIs: {MIRROR}/security.debian.org/debian-security$")
    assert sources.contains("^Components: main non-free-firmware$")
    policy = host.check_output("apt-cache policy")
    assert f"{MIRROR}/deb.debian.org/debian" in policy
    assert "deb.debian.org/debian " not in policy.replace(f"{MIRROR}/deb.debian.org/debian", "")


def test_third_party_repository_is_signed_and_verified(host):
    key = host.file("/etc/apt/keyrings/gpuops-bench.asc")
    wanted = json.loads(BENCH_KEY.read_text())["local_repo_key_sha256"]
    assert hashlib.sha256(key.content).hexdigest() == wanted
    repo = host.file("/etc/apt/sources.list.d/gpuops-bench.sources")
    assert repo.contains("^Signed-By: /etc/apt/keyrings/gpuops-bench.asc$")
    assert repo.contains(f"^URIs: {MIRROR}/bench.gpuops.test/apt$")
    # apt keeps a repository's InRelease only once its signature checked out.
    lists = host.check_output("ls /var/lib/apt/lists")
    assert "gpuops-mirror:8080_bench.gpuops.test_apt_dists_stable_InRelease" in lists.split()


def test_swap_is_kept(host):
    fstab = host.file("/etc/fstab").content_string
    assert "\nUUID=0f4b5d1e-3c1b-4a9e-9a52-5d8c1e6b7a10 none swap sw 0 0" in "\n" + fstab


def test_no_kubernetes_prerequisites(host):
    modules = host.file("/etc/modules-load.d/gpuops.conf").content_string.split()
    assert [m for m in modules if not m.startswith("#")][-3:] == ["ib_umad", "rdma_ucm", "ib_ipoib"]
    assert "br_netfilter" not in modules
    sysctl = host.file("/etc/sysctl.d/90-gpuops.conf").content_string
    assert "net.ipv4.ip_forward" not in sysctl
    assert "net.ipv4.tcp_rmem = 4096 87380 134217728" in sysctl.splitlines()
    assert "vm.max_map_count = 1048576" in sysctl.splitlines()


def test_all_kernel_arguments_reach_grub(host):
    cmdline = host.check_output(
        'sh -c \'. /etc/default/grub; for f in /etc/default/grub.d/*.cfg; do . "$f"; done; echo "$GRUB_CMDLINE_LINUX"\''
    ).split()
    assert cmdline[-5:] == ["iommu=pt", "pci=realloc=off", "default_hugepagesz=1G", "hugepagesz=1G", "hugepages=16"]


def test_switched_off_settings_leave_nothing_behind(host):
    for path in (
        "/etc/modprobe.d/gpuops-blacklist-nouveau.conf",
        "/etc/security/limits.d/90-gpuops-memlock.conf",
        "/etc/systemd/system.conf.d/90-gpuops-memlock.conf",
    ):
        assert not host.file(path).exists, path
    assert host.check_output("apt-mark showhold") == ""


def test_chrony_uses_the_site_servers(host):
    conf = host.file("/etc/chrony/chrony.conf").content_string.splitlines()
    assert "server ntp1.gpuops.test iburst" in conf
    assert "server ntp2.gpuops.test iburst" in conf
    assert not [line for line in conf if line.startswith("pool ")]
    host.run_expect([0], "chronyd -p -f /etc/chrony/chrony.conf")
