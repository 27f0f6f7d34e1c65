"""osinfo's parsers on real captured outputs (tests/fixtures, sources in tests/fixtures/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import osinfo, rpm

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
OS = FIXTURES / "os"


def fixture(path):
    return (FIXTURES / path).read_text()


def test_parse_os_release_reads_every_key_and_unquotes():
    assert osinfo.parse_os_release(fixture("os/debian12/root/etc/os-release")) == {
        "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)",
        "NAME": "Debian GNU/Linux",
        "VERSION_ID": "12",
        "VERSION": "12 (bookworm)",
        "VERSION_CODENAME": "bookworm",
        "ID": "debian",
        "HOME_URL": "https://www.debian.org/",
        "SUPPORT_URL": "https://www.debian.org/support",
        "BUG_REPORT_URL": "https://bugs.debian.org/",
    }


def test_parse_os_release_skips_blank_lines_and_keeps_unquoted_values():
    release = osinfo.parse_os_release(fixture("os-release/rhel-9.6"))
    assert len(release) == 17
    assert release["REDHAT_BUGZILLA_PRODUCT_VERSION"] == "9.6"
    assert release["CPE_NAME"] == "cpe:/o:redhat:enterprise_linux:9::baseos"


def identity(os_id, id_like, name, version_id, codename, family, arch, package_arch):
    return {
        "id": os_id,
        "id_like": id_like,
        "name": name,
        "version_id": version_id,
        "major": version_id.split(".")[0],
        "codename": codename,
        "family": family,
        "arch": arch,
        "package_arch": package_arch,
        "package_manager": {"Debian": "apt", "RedHat": "dnf"}[family],
    }


@pytest.mark.parametrize(
    ("release", "machine", "expected"),
    [
        (
            "os/debian12/root/etc/os-release",
            "x86_64",
            identity("debian", [], "Debian GNU/Linux 12 (bookworm)", "12", "bookworm", "Debian", "x86_64", "amd64"),
        ),
        (
            "os/debian13/root/etc/os-release",
            "x86_64",
            identity("debian", [], "Debian GNU/Linux 13 (trixie)", "13", "trixie", "Debian", "x86_64", "amd64"),
        ),
        (
            "os-release/ubuntu-22.04",
            "x86_64",
            identity("ubuntu", ["debian"], "Ubuntu 22.04.2 LTS", "22.04", "jammy", "Debian", "x86_64", "amd64"),
        ),
        (
            "os-release/ubuntu-24.04",
            "aarch64",
            identity("ubuntu", ["debian"], "Ubuntu 24.04.3 LTS", "24.04", "noble", "Debian", "aarch64", "arm64"),
        ),
        # Known only through ID_LIKE.
        (
            "os-release/pop-22.04",
            "x86_64",
            identity("pop", ["ubuntu", "debian"], "Pop!_OS 22.04 LTS", "22.04", "jammy", "Debian", "x86_64", "amd64"),
        ),
        (
            "os-release/rocky-8.3",
            "x86_64",
            identity("rocky", ["rhel", "fedora"], "Rocky Linux 8.3", "8.3", "", "RedHat", "x86_64", "x86_64"),
        ),
        (
            "os-release/rocky-9.3",
            "aarch64",
            identity(
                "rocky",
                ["rhel", "centos", "fedora"],
                "Rocky Linux 9.3 (Blue Onyx)",
                "9.3",
                "",
                "RedHat",
                "aarch64",
                "aarch64",
            ),
        ),
        (
            "os-release/rhel-8.7",
            "x86_64",
            identity(
                "rhel", ["fedora"], "Red Hat Enterprise Linux 8.7 (Ootpa)", "8.7", "", "RedHat", "x86_64", "x86_64"
            ),
        ),
        (
            "os-release/rhel-9.6",
            "x86_64",
            identity(
                "rhel", ["fedora"], "Red Hat Enterprise Linux 9.6 (Plow)", "9.6", "", "RedHat", "x86_64", "x86_64"
            ),
        ),
        (
            "os-release/almalinux-9.1",
            "x86_64",
            identity(
                "almalinux",
                ["rhel", "centos", "fedora"],
                "AlmaLinux 9.1 (Lime Lynx)",
                "9.1",
                "",
                "RedHat",
                "x86_64",
                "x86_64",
            ),
        ),
    ],
)
def test_os_identity(release, machine, expected):
    assert osinfo.os_identity(osinfo.parse_os_release(fixture(release)), machine) == expected


def test_os_identity_of_an_unknown_os_names_no_package_manager():
    # An empty os-release (the file is missing) must not pass for a supported OS.
    assert osinfo.os_identity({}, "x86_64") == {
        "id": "",
        "id_like": [],
        "name": "",
        "version_id": "",
        "major": "",
        "codename": "",
        "family": "unknown",
        "arch": "x86_64",
        "package_arch": "x86_64",
        "package_manager": "unknown",
    }


def test_parse_cmdline_of_a_real_boot():
    args = osinfo.parse_cmdline(fixture("os/host-vm/root/proc/cmdline"))
    assert args[:3] == ["mitigations=auto,no_guest_host,no_guest_guest", "console=ttyS0", "quiet"]
    assert args.index("--") == 17
    assert args[-1] == "--auth-required"
    assert len(args) == 32
    assert "nvproxy.enable=1" in args


@pytest.mark.parametrize(
    ("link", "initial"),
    [
        (fixture("os/host-vm/commands/pid-namespace.txt"), True),
        (fixture("os/debian12/commands/pid-namespace.txt"), False),
        (fixture("os/debian13/commands/pid-namespace.txt"), False),
        # readlink failed (no /proc): never taken for the host.
        ("", False),
    ],
)
def test_in_initial_pid_namespace(link, initial):
    assert osinfo.in_initial_pid_namespace(link.strip()) is initial


@pytest.mark.parametrize(
    ("versions", "ordered"),
    [
        # Kernels installed side by side on the bench's Debian 12 node (tests/fixtures/os/debian12-drift/tree.txt).
        (["6.12.95+deb12-amd64", "6.1.0-50-amd64"], ["6.1.0-50-amd64", "6.12.95+deb12-amd64"]),
        # AlmaLinux 9.5: rpm -q kernel (tests/fixtures/os/almalinux9-drift).
        (
            ["5.14.0-503.34.1.el9_5.x86_64", "5.14.0-503.11.1.el9_5.x86_64"],
            ["5.14.0-503.11.1.el9_5.x86_64", "5.14.0-503.34.1.el9_5.x86_64"],
        ),
        # The docstring's promise: numeric, not lexical.
        (["6.12.1", "6.1.0-50", "6.1.0-9"], ["6.1.0-9", "6.1.0-50", "6.12.1"]),
    ],
)
def test_version_key_orders_numerically(versions, ordered):
    assert sorted(versions, key=osinfo.version_key) == ordered


def dpkg_installed(path):
    parsed = osinfo.parse_dpkg_query(fixture(path))
    return {name: p["version"] for name, p in parsed.items() if p["installed"]}


DRIFT = "os/debian12-drift/commands/dpkg-query.txt"
DEBIAN13 = "os/debian13/commands/dpkg-query.txt"
HEADERS = "dpkg/debian12-headers-triggers.txt"


@pytest.mark.parametrize(
    ("installed", "running", "family", "expected"),
    [
        # Debian 12 with the backports kernel installed beside its own.
        (
            dpkg_installed(DRIFT),
            "6.1.0-50-amd64",
            "Debian",
            {"running": ["linux-image-6.1.0-50-amd64"], "meta": ["linux-image-amd64"]},
        ),
        (
            dpkg_installed(DRIFT),
            "6.12.95+deb12-amd64",
            "Debian",
            {"running": ["linux-image-6.12.95+deb12-amd64"], "meta": ["linux-image-amd64"]},
        ),
        (
            dpkg_installed(DEBIAN13),
            "6.12.117+deb13-amd64",
            "Debian",
            {"running": ["linux-image-6.12.117+deb13-amd64"], "meta": ["linux-image-amd64"]},
        ),
        # DKMS needs the running kernel's headers: they are held with it. The flavour-less -common package and
        # linux-kbuild follow from their dependencies.
        (
            dpkg_installed(HEADERS),
            "6.1.0-50-amd64",
            "Debian",
            {
                "running": ["linux-headers-6.1.0-50-amd64", "linux-image-6.1.0-50-amd64"],
                "meta": ["linux-headers-amd64", "linux-image-amd64"],
            },
        ),
        # A container runs its host's kernel: none of its packages are the running kernel's.
        (dpkg_installed(DEBIAN13), "6.18.44-fc-v509", "Debian", {"running": [], "meta": ["linux-image-amd64"]}),
        # linux-libc-dev and linux-perf are no kernel packages.
        (
            dpkg_installed("os/host-vm/commands/dpkg-query.txt"),
            "6.18.44-fc-v509",
            "Debian",
            {"running": [], "meta": []},
        ),
        (
            osinfo.parse_rpm_query("kernel\t5.14.0-503.11.1.el9_5.x86_64\n"),
            "5.14.0-503.11.1.el9_5.x86_64",
            "RedHat",
            {"running": ["kernel"], "meta": []},
        ),
        (dpkg_installed(DEBIAN13), "6.12.117+deb13-amd64", "unknown", {"running": [], "meta": []}),
    ],
)
def test_classify_kernel_packages(installed, running, family, expected):
    assert osinfo.classify_kernel_packages(installed, running, family) == expected


def test_classify_kernel_packages_finds_the_running_kernel_beside_a_newer_one():
    installed = osinfo.parse_rpm_query(fixture("os/almalinux9-drift/commands/rpm-qa.txt"))
    assert osinfo.classify_kernel_packages(installed, "5.14.0-503.11.1.el9_5.x86_64", "RedHat") == {
        "running": ["kernel"],
        "meta": [],
    }


def test_parse_dpkg_query_states():
    parsed = osinfo.parse_dpkg_query(fixture("os/debian12-drift/commands/dpkg-query.txt"))
    assert len(parsed) == 178
    assert parsed["linux-image-amd64"] == {
        "version": "6.12.95-1~bpo12+1",
        "installed": True,
        "held": True,
        "broken": False,
    }
    assert parsed["linux-image-6.1.0-50-amd64"] == {
        "version": "6.1.176-1",
        "installed": True,
        "held": False,
        "broken": False,
    }
    # A failed postinst leaves a package half-configured (iF), dpkg --unpack leaves it unpacked (iU),
    # dpkg -r leaves its configuration files (rc).
    assert parsed["gpuops-fixture-broken"] == {"version": "1.0", "installed": False, "held": False, "broken": True}
    assert parsed["gpuops-fixture-unpacked"] == {"version": "1.0", "installed": False, "held": False, "broken": True}
    assert parsed["gpuops-fixture-removed"] == {"version": "1.0", "installed": False, "held": False, "broken": False}
    assert sorted(n for n, p in parsed.items() if p["held"]) == ["linux-image-amd64"]


def test_parse_dpkg_query_trigger_states_are_installed():
    # dpkg --no-triggers left a package awaiting a trigger (iW) and the one interested in it pending (it).
    parsed = osinfo.parse_dpkg_query(fixture(HEADERS))
    assert parsed["gpuops-fixture-activate"] == {"version": "1.0", "installed": True, "held": False, "broken": False}
    assert parsed["gpuops-fixture-interest"] == {"version": "1.0", "installed": True, "held": False, "broken": False}


def test_parse_dpkg_query_ignores_stderr_noise():
    # dpkg-query's complaint about an unknown name goes to stderr; were it mixed in, it would not count.
    text = fixture("package_hold/apt/dpkg-query-missing.err") + fixture("package_hold/apt/dpkg-query-missing.out")
    assert sorted(osinfo.parse_dpkg_query(text)) == [
        "gpuops-fixture-broken",
        "gpuops-fixture-removed",
        "linux-image-amd64",
    ]


def test_parse_rpm_query_orders_kernels_as_rpm_does():
    # rpm sorts a number after letters (tests/fixtures/dnf/rpm-vercmp.txt: "a 1 -1"): a z-stream kernel
    # (503.11.1.el9_5) is newer than the release's first (503.el9), whatever order rpm -qa lists them in.
    text = "kernel\t5.14.0-503.11.1.el9_5.x86_64\nkernel\t5.14.0-503.el9.x86_64\n"
    assert osinfo.parse_rpm_query(text) == {"kernel": ["5.14.0-503.el9.x86_64", "5.14.0-503.11.1.el9_5.x86_64"]}


def test_parse_rpm_query_keeps_every_version_oldest_first():
    assert osinfo.parse_rpm_query(fixture("os/almalinux9-drift/commands/rpm-qa.txt")) == {
        "kernel": ["5.14.0-503.11.1.el9_5.x86_64", "5.14.0-503.34.1.el9_5.x86_64"]
    }


@pytest.mark.parametrize(
    ("lock_list", "names"),
    [
        ("versionlock/lock-running-kernel.list", ["kernel"]),
        ("versionlock/lock-and-exclude.list", ["kernel"]),
        # An exclude keeps one version out; it holds nothing.
        ("versionlock/exclude-only.list", []),
    ],
)
def test_parse_versionlock(lock_list, names):
    assert rpm.parse_versionlock(fixture(lock_list)) == names


@pytest.mark.parametrize(
    ("swaps", "active"),
    [
        ("os/debian12/root/proc/swaps", []),
        ("os/host-vm/root/proc/swaps", []),
        ("proc/swaps-partition", [{"device": "/dev/dm-2", "type": "partition", "size_kib": 131068}]),
    ],
)
def test_parse_swaps(swaps, active):
    assert osinfo.parse_swaps(fixture(swaps)) == active


@pytest.mark.parametrize(
    ("fstab", "entries"),
    [
        ("os/debian12/root/etc/fstab", []),
        (
            "fstab/ubuntu-2204-two-swaps",
            [
                "UUID=343c4a05-59d3-48f1-9bfb-2abcb53bb2fc\tswap\tswap\tdefaults\t0\t0",
                "UUID=6959ff3c-c302-4af6-8c05-2284ac330e71\tswap\tswap\tdefaults\t0\t0",
            ],
        ),
        # What os_baseline's "Comment swap out of /etc/fstab" leaves behind.
        ("fstab/ubuntu-2204-two-swaps-disabled", []),
        # Commented bind mounts and a swap file.
        ("fstab/debian-desktop-swapfile", ["/var/swap/swapfile none swap sw 0 0"]),
    ],
)
def test_fstab_swap_entries(fstab, entries):
    assert osinfo.fstab_swap_entries(fixture(fstab)) == entries


@pytest.mark.parametrize(
    ("limits", "label", "expected"),
    [
        ("os/debian12/root/proc/1/limits", "Max locked memory", {"soft": 8388608, "hard": 8388608}),
        ("os/host-vm/root/proc/1/limits", "Max locked memory", {"soft": "unlimited", "hard": "unlimited"}),
        (
            "proc/limits-procfs",
            "Max locked memory",
            {"soft": 18446744073708503040, "hard": 18446744073708503040},
        ),
        ("os/debian12/root/proc/1/limits", "Max open files", {"soft": 1024, "hard": 1024}),
        ("os/debian12/root/proc/1/limits", "Max stack size", {"soft": 8388608, "hard": "unlimited"}),
        ("os/debian12/root/proc/1/limits", "Max frobnication", None),
    ],
)
def test_parse_limit(limits, label, expected):
    assert osinfo.parse_limit(fixture(limits), label) == expected


@pytest.mark.parametrize(
    ("status", "mask", "caps"),
    [
        # A root shell in a rootful podman container: the default capability set.
        (
            "os/debian12/root/proc/self/status",
            0x800405FB,
            {"SYS_MODULE": False, "SYS_ADMIN": False, "SYS_RESOURCE": False, "SYS_TIME": False},
        ),
        # Root on the VM: everything but CAP_SYS_RESOURCE.
        (
            "os/host-vm/root/proc/self/status",
            0x1FFFEFFFFFF,
            {"SYS_MODULE": True, "SYS_ADMIN": True, "SYS_RESOURCE": False, "SYS_TIME": True},
        ),
        (
            "os/debian12/root/etc/os-release",
            0,
            {"SYS_MODULE": False, "SYS_ADMIN": False, "SYS_RESOURCE": False, "SYS_TIME": False},
        ),
    ],
)
def test_effective_caps(status, mask, caps):
    got = osinfo.effective_caps(fixture(status))
    assert got == mask
    assert {name: osinfo.has_cap(got, getattr(osinfo, f"CAP_{name}")) for name in caps} == caps


def test_parse_systemctl_show():
    units = osinfo.parse_systemctl_show(fixture("os/debian13/commands/systemctl-show-units.txt"))
    assert units == {
        "ssh.service": {
            "Id": "ssh.service",
            "LoadState": "loaded",
            "ActiveState": "active",
            "UnitFileState": "enabled",
        },
        "chrony.service": {
            "Id": "chrony.service",
            "LoadState": "not-found",
            "ActiveState": "inactive",
            "UnitFileState": "",
        },
        "systemd-udevd.service": {
            "Id": "systemd-udevd.service",
            "LoadState": "masked",
            "ActiveState": "inactive",
            "UnitFileState": "masked",
        },
        "systemd-journald.service": {
            "Id": "systemd-journald.service",
            "LoadState": "loaded",
            "ActiveState": "active",
            "UnitFileState": "static",
        },
    }


@pytest.mark.parametrize(
    ("props", "state"),
    [
        (
            {"LoadState": "loaded", "ActiveState": "active", "UnitFileState": "enabled"},
            {"exists": True, "active": True, "enabled": True, "failed": False},
        ),
        # A daemon that cannot run yet (no driver): what `systemctl is-failed` exits 0 for.
        (
            {"LoadState": "loaded", "ActiveState": "failed", "UnitFileState": "enabled"},
            {"exists": True, "active": False, "enabled": True, "failed": True},
        ),
        (
            {"LoadState": "loaded", "ActiveState": "activating", "UnitFileState": "static"},
            {"exists": True, "active": False, "enabled": True, "failed": False},
        ),
        (
            {"LoadState": "masked", "ActiveState": "inactive", "UnitFileState": "masked"},
            {"exists": False, "active": False, "enabled": False, "failed": False},
        ),
        ({}, {"exists": False, "active": False, "enabled": False, "failed": False}),
    ],
)
def test_unit_state(props, state):
    assert osinfo.unit_state(props) == state


def test_parse_systemctl_show_without_systemd():
    # systemctl on a host not booted with systemd prints nothing on stdout.
    assert osinfo.parse_systemctl_show(fixture("os/host-vm/commands/systemctl-show-units.txt")) == {}


@pytest.mark.parametrize(
    ("value", "normalized"),
    [
        # tcp_rmem reads back tab-separated.
        (fixture("os/debian12/root/proc/sys/net/ipv4/tcp_rmem"), "4096 131072 33554432"),
        ("4096 131072 33554432", "4096 131072 33554432"),
        (fixture("os/debian12/root/proc/sys/vm/swappiness"), "60"),
        (1, "1"),
    ],
)
def test_normalize_sysctl(value, normalized):
    assert osinfo.normalize_sysctl(value) == normalized
