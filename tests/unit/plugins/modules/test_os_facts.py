"""os_facts.gather over captured host trees (tests/fixtures/os/<case>, sources in tests/fixtures/SOURCES.md).

Each case holds root/ (the files os_facts reads, as captured), tree.txt (the
names under /boot and /lib/modules: the images themselves are too big to keep)
and commands/ (what the tools printed, and which tools the host had).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import repositories
from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE
from ansible_collections.gpuops.bringup.plugins.modules import os_facts

OS = Path(__file__).resolve().parents[3] / "fixtures" / "os"
DPKG_FORMAT = "${Package}\t${Version}\t${db:Status-Abbrev}\t${db:Status-Want}\n"
RPM_FORMAT = "%{NAME}\t%{VERSION}-%{RELEASE}.%{ARCH}\n"
UNIT_PROPERTIES = "--property=Id,LoadState,ActiveState,UnitFileState"
# The units asked for when the cases were captured (commands/systemctl-show-units.txt).
BENCH_UNITS = ["ssh.service", "chrony.service", "systemd-udevd.service", "systemd-journald.service"]
HOST_UNITS = ["ssh.service", "chrony.service"]
SYSCTL_KEYS = ["net.ipv4.ip_forward", "net.ipv4.tcp_rmem", "net.bridge.bridge-nf-call-iptables", "vm.swappiness"]
MODULES = ["br_netfilter", "unix", "mq-deadline", "nouveau"]
NOUVEAU_CONF = "/etc/modprobe.d/gpuops-blacklist-nouveau.conf"
GRUB_DROPIN = "/etc/default/grub.d/90-gpuops.cfg"


def commands(units):
    """The argv os_facts runs for each captured output file."""
    return {
        "dpkg-query.txt": ("dpkg-query", "-W", "-f", DPKG_FORMAT),
        "rpm-qa.txt": ("rpm", "-qa", "--qf", RPM_FORMAT),
        "systemctl-show-units.txt": ("systemctl", "show", UNIT_PROPERTIES, "--", *units),
        "systemctl-show-memlock.txt": ("systemctl", "show", "--property=DefaultLimitMEMLOCK"),
    }


class FixtureReader(os_facts.HostReader):
    """HostReader over a materialised case; what the tree cannot hold comes from commands/."""

    def __init__(self, module, root, case, uname=None):
        super().__init__(module, root=str(root))
        self.case = case
        self._uname = uname or tuple((case / "commands" / "uname.txt").read_text().split())

    def uname(self):
        return self._uname

    def pid_namespace(self):
        return (self.case / "commands" / "pid-namespace.txt").read_text().strip()

    def readonly(self, path):
        """What statvfs would say, from the captured mount table: the options of the longest matching mount point."""
        mounts = [line.split() for line in self.read("/proc/self/mounts", "").splitlines()]
        matching = [m for m in mounts if path == m[1] or path.startswith(m[1].rstrip("/") + "/")]
        return bool(matching) and "ro" in max(matching, key=lambda m: len(m[1]))[3].split(",")


def materialise(case, dest):
    """Copy root/ and create the names of tree.txt as empty files and directories."""
    shutil.copytree(case / "root", dest)
    for line in (case / "tree.txt").read_text().splitlines():
        kind, path = line.split(" ", 1)
        target = dest / path.lstrip("/")
        if kind == "d":
            target.mkdir(parents=True, exist_ok=True)
        elif not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
    return dest


def command_table_for(command_table, case, units):
    tools = {}
    for line in (case / "commands" / "tools.txt").read_text().splitlines():
        name, _tab, path = line.partition("\t")
        if path:
            tools[name] = path
    outputs = {}
    for name, argv in commands(units).items():
        captured = case / "commands" / name
        if captured.exists():
            rc_file = captured.with_suffix(".rc")
            rc = int(rc_file.read_text()) if rc_file.exists() else 0
            outputs[(tools[argv[0]], *argv[1:])] = (rc, captured.read_text(), "")
    return command_table(tools, outputs)


@pytest.fixture
def gather(tmp_path, command_table):
    """gather() on a case; returns (facts, root, table)."""

    def run(case_name, units=(), uname=None, prepare=None, now=None, **params):
        case = OS / case_name
        root = materialise(case, tmp_path / "root")
        if prepare:
            prepare(root)
        table = command_table_for(command_table, case, list(units))
        reader = FixtureReader(table, root, case, uname)
        if now is not None:
            reader.now = lambda: now
        args = {
            "sysctl_keys": [],
            "kernel_modules": [],
            "units": list(units),
            "grub_inputs": [],
            "initramfs_inputs": [],
            "package_names": [],
            **params,
        }
        return os_facts.gather(reader, args), root, table

    return run


def pick(facts, dotted):
    for part in dotted.split("."):
        facts = facts[part]
    return facts


BENCH_UNIT_STATES = {
    "ssh.service": {"exists": True, "active": True, "enabled": True, "failed": False},
    "chrony.service": {"exists": False, "active": False, "enabled": False, "failed": False},
    # Masked: loaded as masked, so it does not exist for os_facts.
    "systemd-udevd.service": {"exists": False, "active": False, "enabled": False, "failed": False},
    "systemd-journald.service": {"exists": True, "active": True, "enabled": True, "failed": False},
}
CONTAINER_CAPABILITIES = {
    "own_kernel": False,
    "sysctl_writable": False,
    "modules_loadable": False,
    "clock_settable": False,
    "swap_controllable": False,
    "memlock_raisable": False,
}
BENCH_SYSCTL = {
    "net.ipv4.ip_forward": "1",
    "net.ipv4.tcp_rmem": "4096 131072 33554432",
    "net.bridge.bridge-nf-call-iptables": "1",
    "vm.swappiness": "60",
}

CASES = {
    # The bench's Debian 12 node: a podman container running the VM's kernel.
    "debian12": (
        {"units": BENCH_UNITS},
        {
            "os.id": "debian",
            "os.version_id": "12",
            "os.package_manager": "apt",
            "container": "podman",
            "kernel.running": "6.18.44-fc-v509",
            "kernel.installed": ["6.1.0-50-amd64"],
            "kernel.newest": "6.1.0-50-amd64",
            "kernel.running_installed": False,
            "kernel.drift": False,
            "kernel.packages": {"running": [], "meta": ["linux-image-amd64"]},
            "packages": {
                "held": ["linux-image-amd64"],
                "broken": [],
                "source_files": ["/etc/apt/sources.list"],
                "managed_source_files": [],
                "index_age_seconds": None,
                "states": {},
            },
            "capabilities": CONTAINER_CAPABILITIES,
            "boot.loader": "grub",
            "boot.grub_config": "/boot/grub/grub.cfg",
            "boot.initramfs_tool": "update-initramfs",
            "swap": {"active": [], "fstab": []},
            # The running kernel's modules.builtin is not in the container: nothing is built in for it.
            "kernel_modules": {
                "br_netfilter": "absent",
                "unix": "absent",
                "mq-deadline": "absent",
                "nouveau": "absent",
            },
            "sysctl": BENCH_SYSCTL,
            "units": BENCH_UNIT_STATES,
            "limits": {"memlock": {"soft": 8388608, "hard": 8388608}, "systemd_default_memlock": "8388608"},
        },
    ),
    # The same node after an upgrade pulled the backports kernel, booted (uname) into its original kernel.
    "debian12-drift": (
        {"units": BENCH_UNITS, "uname": ("6.1.0-50-amd64", "x86_64")},
        {
            "kernel.running": "6.1.0-50-amd64",
            "kernel.installed": ["6.1.0-50-amd64", "6.12.95+deb12-amd64"],
            "kernel.newest": "6.12.95+deb12-amd64",
            "kernel.running_installed": True,
            "kernel.drift": True,
            "kernel.packages": {"running": ["linux-image-6.1.0-50-amd64"], "meta": ["linux-image-amd64"]},
            "packages": {
                "held": ["linux-image-amd64"],
                "broken": ["gpuops-fixture-broken", "gpuops-fixture-unpacked"],
                "source_files": ["/etc/apt/sources.list", "/etc/apt/sources.list.d/backports.list"],
                "managed_source_files": [],
                "index_age_seconds": None,
                "states": {},
            },
            "kernel_modules": {
                "br_netfilter": "absent",
                "unix": "builtin",
                "mq-deadline": "builtin",
                "nouveau": "absent",
            },
        },
    ),
    # Debian 13, after gpuops.bringup.package_repository added the bench repository.
    "debian13": (
        {"units": BENCH_UNITS},
        {
            "os.codename": "trixie",
            "container": "podman",
            "kernel.installed": ["6.12.117+deb13-amd64"],
            "kernel.drift": False,
            "kernel.packages": {"running": [], "meta": ["linux-image-amd64"]},
            "packages": {
                "held": ["linux-image-amd64"],
                "broken": [],
                "source_files": ["/etc/apt/sources.list", "/etc/apt/sources.list.d/gpuops-bench.sources"],
                "managed_source_files": ["/etc/apt/sources.list.d/gpuops-bench.sources"],
                "index_age_seconds": None,
                "states": {},
            },
            "capabilities": CONTAINER_CAPABILITIES,
            "sysctl": BENCH_SYSCTL,
            "units": BENCH_UNIT_STATES,
        },
    ),
    # The Debian 12 VM the tests run on: its own kernel (no image installed), /.dockerenv left by the image it
    # was built from, and no systemd as PID 1.
    "host-vm": (
        {"units": HOST_UNITS},
        {
            "os.id": "debian",
            "container": "",
            "kernel.running": "6.18.44-fc-v509",
            "kernel.installed": [],
            "kernel.newest": "",
            "kernel.running_installed": False,
            "kernel.drift": False,
            "kernel.packages": {"running": [], "meta": []},
            "packages": {
                "held": [],
                "broken": [],
                "source_files": [],
                "managed_source_files": [],
                "index_age_seconds": None,
                "states": {},
            },
            "capabilities": {
                "own_kernel": True,
                "sysctl_writable": True,
                # No /lib/modules for the running kernel.
                "modules_loadable": False,
                "clock_settable": True,
                "swap_controllable": True,
                # CAP_SYS_RESOURCE is not in its set, but the hard limit is unlimited.
                "memlock_raisable": True,
            },
            "boot": {
                "loader": "none",
                "grub_config": "",
                "initramfs_tool": "",
                "grub_stale": False,
                "initramfs_stale": [],
            },
            "units": {
                unit: {"exists": False, "active": False, "enabled": False, "failed": False} for unit in HOST_UNITS
            },
            "limits": {"memlock": {"soft": "unlimited", "hard": "unlimited"}, "systemd_default_memlock": None},
        },
    ),
    # RHEL family (derived case, see SOURCES.md): AlmaLinux 9 booted into the older of two kernels.
    "almalinux9-drift": (
        {},
        {
            "os.family": "RedHat",
            "os.package_manager": "dnf",
            "container": "",
            "kernel.running": "5.14.0-503.11.1.el9_5.x86_64",
            "kernel.newest": "5.14.0-503.34.1.el9_5.x86_64",
            "kernel.running_installed": True,
            "kernel.drift": True,
            "packages": {
                "held": ["kernel"],
                "broken": [],
                "source_files": [],
                "managed_source_files": [],
                "index_age_seconds": None,
                "states": {},
            },
            "boot.loader": "grubby",
            "boot.grub_config": "/boot/grub2/grub.cfg",
            "boot.initramfs_tool": "dracut",
            "units": {},
            "limits": {"memlock": None, "systemd_default_memlock": None},
        },
    ),
}


@pytest.mark.parametrize(
    ("case", "expected"), [(name, expected) for name, (_opts, expected) in CASES.items()], ids=list(CASES)
)
def test_gather(gather, case, expected):
    opts = CASES[case][0]
    facts, _root, _table = gather(case, sysctl_keys=SYSCTL_KEYS, kernel_modules=MODULES, **opts)
    assert {key: pick(facts, key) for key in expected} == expected


@pytest.mark.parametrize("case", list(CASES))
def test_gather_runs_every_tool_in_the_c_locale(gather, case):
    _facts, _root, table = gather(case, **CASES[case][0])
    assert table.calls
    assert {env == C_LOCALE for _argv, env in table.calls} == {True}


def edit(remove=(), add=()):
    """A prepare step that deletes and creates (empty) files in the materialised tree."""

    def prepare(root):
        for path in remove:
            (root / path.lstrip("/")).unlink()
        for path in add:
            (root / path.lstrip("/")).touch()

    return prepare


@pytest.mark.parametrize(
    ("case", "prepare", "container"),
    [
        ("debian12", None, "podman"),
        # Without systemd's note, podman's marker file names the manager.
        ("debian12", edit(remove=["/run/systemd/container"]), "podman"),
        ("debian12", edit(remove=["/run/systemd/container", "/run/.containerenv"], add=["/.dockerenv"]), "docker"),
        # Another PID namespace without a marker is still a container.
        ("debian12", edit(remove=["/run/systemd/container", "/run/.containerenv"]), "unknown"),
        # The host's PID namespace settles it, whatever marker the image left.
        ("host-vm", None, ""),
    ],
)
def test_container_detection(gather, case, prepare, container):
    facts, _root, _table = gather(case, prepare=prepare)
    assert facts["container"] == container
    assert facts["capabilities"]["own_kernel"] is (container == "")


def test_privileged_container_still_does_not_own_the_kernel(gather):
    # podman exec --privileged: every capability, but the kernel, swap and modules are the host's.
    def prepare(root):
        shutil.copy(OS.parent / "proc" / "status-privileged-exec", root / "proc" / "self" / "status")

    facts, _root, _table = gather("debian12-drift", uname=("6.1.0-50-amd64", "x86_64"), prepare=prepare)
    assert facts["capabilities"] == {
        "own_kernel": False,
        "sysctl_writable": False,
        "modules_loadable": False,
        "clock_settable": True,
        "swap_controllable": False,
        "memlock_raisable": False,
    }


def test_grub_needs_its_defaults_file(gather):
    # update-grub is installed but /etc/default/grub is gone: nothing to generate the configuration from.
    facts, _root, _table = gather("debian12", prepare=edit(remove=["/etc/default/grub"]))
    assert facts["boot"]["loader"] == "none"
    assert facts["boot"]["grub_config"] == ""
    assert facts["boot"]["grub_stale"] is False


def test_sysctl_that_does_not_exist_is_null(gather):
    facts, _root, _table = gather("debian12", sysctl_keys=["net.netfilter.nf_conntrack_max"])
    assert facts["sysctl"] == {"net.netfilter.nf_conntrack_max": None}


def test_module_states_from_proc_modules(gather):
    # The bench VM boots with modules disabled (nomodule): /proc/modules of a CloudLinux 9 host stands in.
    def prepare(root):
        shutil.copy(OS.parent / "proc" / "modules-cloudlinuxvm9", root / "proc" / "modules")

    facts, _root, _table = gather(
        "debian12-drift",
        uname=("6.1.0-50-amd64", "x86_64"),
        prepare=prepare,
        kernel_modules=["ext4", "vfat", "unix", "mq_deadline", "mq-deadline", "nouveau"],
    )
    assert facts["kernel_modules"] == {
        "ext4": "loaded",
        "vfat": "loaded",
        "unix": "builtin",
        "mq_deadline": "builtin",
        "mq-deadline": "builtin",
        "nouveau": "absent",
    }


def test_active_swap_and_fstab_swap(gather):
    # A host with swap: /proc/swaps of a host swapping on a partition, an fstab with two swap partitions.
    def prepare(root):
        shutil.copy(OS.parent / "proc" / "swaps-partition", root / "proc" / "swaps")
        shutil.copy(OS.parent / "fstab" / "ubuntu-2204-two-swaps", root / "etc" / "fstab")

    facts, _root, _table = gather("debian12", prepare=prepare)
    assert facts["swap"] == {
        "active": [{"device": "/dev/dm-2", "type": "partition", "size_kib": 131068}],
        "fstab": [
            "UUID=343c4a05-59d3-48f1-9bfb-2abcb53bb2fc\tswap\tswap\tdefaults\t0\t0",
            "UUID=6959ff3c-c302-4af6-8c05-2284ac330e71\tswap\tswap\tdefaults\t0\t0",
        ],
    }


def test_a_yum_repo_written_by_the_collection_is_managed(gather):
    def prepare(root):
        repos = root / "etc" / "yum.repos.d"
        repos.mkdir(parents=True)
        (repos / "gpuops-bench.repo").write_text(
            repositories.yum_repo("gpuops-bench", ["http://bench.gpuops.test/rpm"], "/etc/pki/rpm-gpg/RPM-GPG-KEY-x")
        )
        # Anyone else's file: whatever it holds, it does not start with the collection's header.
        (repos / "almalinux-baseos.repo").touch()

    facts, _root, _table = gather("almalinux9-drift", prepare=prepare)
    assert facts["packages"]["source_files"] == [
        "/etc/yum.repos.d/almalinux-baseos.repo",
        "/etc/yum.repos.d/gpuops-bench.repo",
    ]
    assert facts["packages"]["managed_source_files"] == ["/etc/yum.repos.d/gpuops-bench.repo"]


def set_mtimes(root, mtimes):
    for path, mtime in mtimes.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
        os.utime(target, (mtime, mtime))


@pytest.mark.parametrize(
    ("mtimes", "grub_stale", "initramfs_stale"),
    [
        # Nothing written by the role yet: nothing to regenerate.
        ({"/boot/initrd.img-6.1.0-50-amd64": 1000, "/boot/initrd.img-6.12.95+deb12-amd64": 1000}, False, []),
        # The drop-in exists but grub.cfg was never generated.
        ({GRUB_DROPIN: 1000}, True, []),
        ({GRUB_DROPIN: 1000, "/boot/grub/grub.cfg": 2000}, False, []),
        ({GRUB_DROPIN: 3000, "/boot/grub/grub.cfg": 2000}, True, []),
        # The blacklist is newer than one kernel's initramfs only.
        (
            {
                NOUVEAU_CONF: 2000,
                "/boot/initrd.img-6.1.0-50-amd64": 1000,
                "/boot/initrd.img-6.12.95+deb12-amd64": 3000,
            },
            False,
            ["6.1.0-50-amd64"],
        ),
        (
            {
                NOUVEAU_CONF: 4000,
                "/boot/initrd.img-6.1.0-50-amd64": 1000,
                "/boot/initrd.img-6.12.95+deb12-amd64": 3000,
            },
            False,
            ["6.1.0-50-amd64", "6.12.95+deb12-amd64"],
        ),
    ],
)
def test_boot_staleness_from_mtimes(gather, mtimes, grub_stale, initramfs_stale):
    facts, _root, _table = gather(
        "debian12-drift",
        prepare=lambda root: set_mtimes(root, mtimes),
        grub_inputs=[GRUB_DROPIN],
        initramfs_inputs=[NOUVEAU_CONF],
    )
    assert facts["boot"]["grub_stale"] is grub_stale
    assert facts["boot"]["initramfs_stale"] == initramfs_stale


RESCUE = "0-rescue-b83de91843ca43a1bb8d01784272f524"


def test_dracut_initramfs_staleness(gather):
    mtimes = {
        NOUVEAU_CONF: 2000,
        "/boot/initramfs-5.14.0-503.11.1.el9_5.x86_64.img": 1000,
        "/boot/initramfs-5.14.0-503.34.1.el9_5.x86_64.img": 3000,
        f"/boot/initramfs-{RESCUE}.img": 3000,
    }
    facts, _root, _table = gather(
        "almalinux9-drift", prepare=lambda root: set_mtimes(root, mtimes), initramfs_inputs=[NOUVEAU_CONF]
    )
    assert facts["boot"]["initramfs_stale"] == ["5.14.0-503.11.1.el9_5.x86_64"]


def test_rhel_kernels_are_ordered_as_rpm_orders_them(gather):
    # A release's first kernel is named without a z-stream part (CentOS Stream 9's 5.14.0-503.el9, Rocky Linux 8.10's
    # 4.18.0-553.el8_10); rpm sorts it before the updates (a number after letters), so the newest is an update.
    facts, _root, _table = gather(
        "almalinux9-drift", prepare=lambda root: (root / "boot" / "vmlinuz-5.14.0-503.el9.x86_64").touch()
    )
    assert facts["kernel"]["installed"] == [
        "5.14.0-503.el9.x86_64",
        "5.14.0-503.11.1.el9_5.x86_64",
        "5.14.0-503.34.1.el9_5.x86_64",
    ]
    assert facts["kernel"]["newest"] == "5.14.0-503.34.1.el9_5.x86_64"


def test_rescue_image_is_no_installed_kernel(gather):
    facts, _root, _table = gather("almalinux9-drift")
    assert facts["kernel"]["installed"] == ["5.14.0-503.11.1.el9_5.x86_64", "5.14.0-503.34.1.el9_5.x86_64"]


def test_rescue_initramfs_is_never_stale(gather):
    mtimes = {
        NOUVEAU_CONF: 2000,
        f"/boot/initramfs-{RESCUE}.img": 1000,
        "/boot/initramfs-5.14.0-503.11.1.el9_5.x86_64.img": 3000,
        "/boot/initramfs-5.14.0-503.34.1.el9_5.x86_64.img": 3000,
    }
    facts, _root, _table = gather(
        "almalinux9-drift", prepare=lambda root: set_mtimes(root, mtimes), initramfs_inputs=[NOUVEAU_CONF]
    )
    assert facts["boot"]["initramfs_stale"] == []


def test_running_rpm_kernel_is_found_beside_a_newer_one(gather):
    facts, _root, _table = gather("almalinux9-drift")
    assert facts["kernel"]["packages"] == {"running": ["kernel"], "meta": []}


def test_main_returns_only_facts(monkeypatch, run_module, command_table, tmp_path):
    case = OS / "debian13"
    root = materialise(case, tmp_path / "root")
    table = command_table_for(command_table, case, BENCH_UNITS)
    monkeypatch.setattr(os_facts, "HostReader", lambda module: FixtureReader(module, root, case))
    result, failed = run_module(os_facts.main, {"units": BENCH_UNITS}, table, check_mode=True)
    assert not failed
    assert result["changed"] is False
    assert set(result) == {"changed", "ansible_facts"}
    facts = result["ansible_facts"]["gpuops_os"]
    assert facts["units"] == BENCH_UNIT_STATES
    assert facts["packages"]["managed_source_files"] == ["/etc/apt/sources.list.d/gpuops-bench.sources"]


def test_index_age_comes_from_apt_s_update_stamp(gather):
    stamp = "/var/lib/apt/periodic/update-success-stamp"

    def prepare(root):
        path = root / stamp.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        os.utime(path, (1_000_000, 1_000_000))

    facts, _root, _table = gather("debian12", prepare=prepare, now=1_000_000 + 4000)
    assert facts["packages"]["index_age_seconds"] == 4000


def test_named_package_states_for_apt_pending(gather):
    names = ["openssh-server", "linux-image-amd64", "gpuops-fixture-broken", "not-a-package"]
    facts, _root, _table = gather("debian12-drift", package_names=names)
    assert facts["packages"]["states"] == {
        "openssh-server": {"installed": "1:9.2p1-2+deb12u10", "broken": False},
        "linux-image-amd64": {"installed": "6.12.95-1~bpo12+1", "broken": False},
        # Half-configured: dpkg has it, but not installed.
        "gpuops-fixture-broken": {"installed": None, "broken": True},
        "not-a-package": {"installed": None, "broken": False},
    }


def test_named_package_states_of_an_rpm_node_take_the_newest_version(gather):
    facts, _root, _table = gather("almalinux9-drift", package_names=["kernel"])
    assert facts["packages"]["states"] == {"kernel": {"installed": "5.14.0-503.34.1.el9_5.x86_64", "broken": False}}
