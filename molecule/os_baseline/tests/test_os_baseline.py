"""os_baseline with its defaults: the real state of each node after converge."""

import re

import pytest

# The alternative nodes: test_os_baseline_alternative.py.
testinfra_hosts = ["debian12", "debian13"]

KUBERNETES_SYSCTL = {
    "net.ipv4.ip_forward": "1",
    "net.bridge.bridge-nf-call-iptables": "1",
    "net.bridge.bridge-nf-call-ip6tables": "1",
    "fs.inotify.max_user_instances": "8192",
    "fs.inotify.max_user_watches": "524288",
}


def installed_kernels(host):
    return host.run("ls /lib/modules").stdout.split()


def test_nouveau_is_blacklisted_in_the_initramfs(host):
    conf = host.file("/etc/modprobe.d/gpuops-blacklist-nouveau.conf")
    assert conf.contains("^blacklist nouveau$")
    assert conf.contains("^options nouveau modeset=0$")
    kernels = installed_kernels(host)
    assert kernels, "the node image carries a kernel"
    for kernel in kernels:
        listing = host.check_output(f"lsinitramfs /boot/initrd.img-{kernel}")
        assert "etc/modprobe.d/gpuops-blacklist-nouveau.conf" in listing.splitlines(), kernel


def test_grub_sees_the_kernel_arguments(host):
    # grub-mkconfig sources /etc/default/grub and then each drop-in: do the same.
    cmdline = host.check_output(
        'sh -c \'. /etc/default/grub; for f in /etc/default/grub.d/*.cfg; do . "$f"; done; echo "$GRUB_CMDLINE_LINUX"\''
    )
    assert "iommu=pt" in cmdline.split()


def test_kernel_modules_load_at_boot(host):
    modules = host.file("/etc/modules-load.d/gpuops.conf").content_string.split("\n")
    for module in ("ib_umad", "rdma_ucm", "overlay", "br_netfilter"):
        assert module in modules


def test_sysctls_for_kubernetes_and_gpus(host):
    lines = host.file("/etc/sysctl.d/90-gpuops.conf").content_string.splitlines()
    settings = dict(line.split(" = ", 1) for line in lines if " = " in line)
    assert settings == {**KUBERNETES_SYSCTL, "kernel.numa_balancing": "0"}


def test_sysctl_file_is_what_systemd_sysctl_would_load(host):
    # systemd-sysctl parses the same files at boot; --cat-config shows the merged result.
    merged = host.check_output("systemd-analyze cat-config sysctl.d")
    assert "kernel.numa_balancing = 0" in merged


def test_memlock_unlimited_for_users_and_services(host):
    limits = host.file("/etc/security/limits.d/90-gpuops-memlock.conf").content_string
    for domain in (r"\*", "root"):
        for kind in ("soft", "hard"):
            assert re.search(rf"^{domain}\s+{kind}\s+memlock\s+unlimited$", limits, re.MULTILINE), (domain, kind)
    merged = host.check_output("systemd-analyze cat-config systemd/system.conf")
    assert "DefaultLimitMEMLOCK=infinity" in merged.splitlines()


def test_swap_is_commented_out_of_fstab(host):
    fstab = host.file("/etc/fstab").content_string
    swap = [line for line in fstab.splitlines() if " swap " in line]
    assert swap, "prepare added a swap entry"
    assert all(line.lstrip().startswith("#") for line in swap), swap


def test_chrony_is_installed_enabled_and_configured(host):
    assert host.package("chrony").is_installed
    assert host.service("chrony").is_enabled
    conf = host.file("/etc/chrony/chrony.conf")
    assert conf.contains("^pool 2.debian.pool.ntp.org iburst$")
    assert conf.contains("^driftfile /var/lib/chrony/chrony.drift$")
    # chronyd parses the file it will run with.
    host.run_expect([0], "chronyd -p -f /etc/chrony/chrony.conf")


def test_kernel_meta_package_is_held(host):
    held = host.check_output("apt-mark showhold").split()
    assert "linux-image-amd64" in held


def test_os_sources_carry_the_nvidia_components(host):
    sources = host.file("/etc/apt/sources.list.d/debian.sources")
    assert sources.contains("^Components: main contrib non-free non-free-firmware$")
    assert sources.contains("^Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg$")
    assert sources.contains("^URIs: http://deb.debian.org/debian$")
    # apt really reads them: a package only non-free-firmware carries resolves.
    host.run_expect([0], "apt-cache show firmware-misc-nonfree")


def test_legacy_sources_list_is_emptied_and_its_original_kept(host):
    legacy = host.file("/etc/apt/sources.list")
    assert not [line for line in legacy.content_string.splitlines() if line.startswith("deb ")]
    backup = host.file("/var/lib/gpuops/backup/etc/apt/sources.list")
    assert backup.contains("^deb http://deb.debian.org/debian ")


def test_no_package_left_half_installed(host):
    assert host.check_output("dpkg --audit") == ""


@pytest.mark.parametrize("path", ["/etc/default/grub.d/90-gpuops.cfg", "/etc/sysctl.d/90-gpuops.conf"])
def test_managed_files_say_so(host, path):
    assert host.file(path).content_string.startswith("# Managed by gpuops.bringup")
