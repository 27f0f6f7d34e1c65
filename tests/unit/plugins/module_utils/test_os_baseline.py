"""The OS baseline's preflight: every problem of a node at once, and the reasons its changes need a reboot."""

from __future__ import annotations

import pytest
from nested import changed

from ansible_collections.gpuops.bringup.plugins.module_utils import os_baseline

# os_facts' gpuops_os of a Debian 12 node that owns its kernel, with GRUB, as the role's defaults leave it.
NODE = {
    "os": {"id": "debian", "major": "12", "version_id": "12", "name": "Debian GNU/Linux", "package_manager": "apt"},
    "kernel": {"cmdline": ["BOOT_IMAGE=/vmlinuz", "ro", "iommu=pt"], "drift": False, "running": "6.1.0-40-amd64",
               "newest": "6.1.0-40-amd64"},
    "capabilities": {"own_kernel": True},
    "boot": {"loader": "grub"},
    "kernel_modules": {"nouveau": "absent"},
}  # fmt: skip
VARIABLES = {
    "os_baseline_disable_swap": True,
    "gpuops_kubernetes_join": True,
    "os_baseline_package_repositories": [],
    "os_baseline_kernel_drift_action": "warn",
    "os_baseline_kernel_cmdline": ["iommu=pt"],
    "os_baseline_blacklist_nouveau": True,
}


def node(**changes):
    return changed(NODE, **changes)


def preflight(state=None, **variables):
    return os_baseline.preflight(host="n1", node=state or NODE, variables={**VARIABLES, **variables})


def test_a_node_as_wanted_has_no_problem_and_needs_no_reboot():
    assert preflight() == {"problems": [], "warnings": [], "reboot_reasons": []}


def test_every_problem_at_once_each_with_its_fix():
    state = node(os__id="centos", os__major="7", os__name="CentOS Linux", os__version_id="7", kernel__drift=True,
                 kernel__newest="6.1.0-41-amd64", boot__loader="none")  # fmt: skip
    result = preflight(state, os_baseline_disable_swap=False, os_baseline_kernel_drift_action="fail",
                       os_baseline_kernel_cmdline=["iommu=pt", "pci=realloc=off"])  # fmt: skip
    assert result["problems"] == [
        "os_baseline_disable_swap is false (swap kept) but gpuops_kubernetes_join is true: kubelet refuses to start "
        "with swap on (failSwapOn). Fix: set os_baseline_disable_swap: true, or gpuops_kubernetes_join: false for "
        "nodes that stay out of Kubernetes.",
        "n1 runs CentOS Linux (ID=centos, VERSION_ID=7), which os_baseline does not support. Supported: Debian 12/13, "
        "Ubuntu 22.04/24.04, Rocky Linux and RHEL 8/9. Fix: install a supported release, or remove the host from "
        "this play.",
        "n1 runs kernel 6.1.0-40-amd64 but 6.1.0-41-amd64 is installed too, so the next boot changes kernel under "
        "DKMS, and os_baseline_kernel_drift_action is fail. Fix: reboot into 6.1.0-41-amd64 (or remove it), or set "
        "os_baseline_kernel_drift_action: warn.",
        'os_baseline_kernel_cmdline is ["iommu=pt", "pci=realloc=off"] but n1 has no bootloader this role manages '
        "(GRUB with /etc/default/grub and update-grub, or grubby). Fix: install GRUB, or set "
        "os_baseline_kernel_cmdline: [] and manage the command line yourself.",
    ]
    # The reboot is worked out too, for the gate that comes after the problems are fixed.
    assert result["reboot_reasons"] == ["kernel arguments pci=realloc=off are not in the running command line"]


@pytest.mark.parametrize(
    ("os_id", "major", "supported"),
    [("debian", "12", True), ("debian", "13", True), ("debian", "11", False), ("ubuntu", "22", True),
     ("ubuntu", "24", True), ("ubuntu", "20", False), ("rocky", "9", True), ("rhel", "8", True), ("rhel", "10", False),
     ("almalinux", "9", False), (None, None, False)],
)  # fmt: skip
def test_the_supported_releases(os_id, major, supported):
    problems = preflight(node(os__id=os_id, os__major=major))["problems"]
    assert (problems == []) is supported
    if not supported:
        assert "which os_baseline does not support" in problems[0]


def test_an_unknown_os_is_named_as_such():
    state = node(os__name="", os__id=None)
    assert preflight(state)["problems"][0].startswith("n1 runs an unknown OS (ID=None, VERSION_ID=12)")


def test_swap_may_stay_on_outside_kubernetes():
    assert preflight(os_baseline_disable_swap=False, gpuops_kubernetes_join=False)["problems"] == []


def test_drift_fails_only_when_asked_to_and_warns_otherwise():
    state = node(kernel__drift=True, kernel__newest="6.1.0-41-amd64")
    warned = preflight(state)
    assert warned["problems"] == []
    assert warned["warnings"] == [
        "n1 runs kernel 6.1.0-40-amd64 but 6.1.0-41-amd64 is installed too: the next boot changes kernel, and DKMS "
        "modules must be built for it. Reboot into it before installing the driver, or remove it."
    ]
    failed = preflight(state, os_baseline_kernel_drift_action="fail")
    assert "os_baseline_kernel_drift_action is fail" in failed["problems"][0]
    assert failed["warnings"] == []


@pytest.mark.parametrize(("own_kernel", "warned"), [(True, True), (False, False)])
def test_a_running_kernel_no_package_provides_is_a_warning_where_the_node_owns_its_kernel(own_kernel, warned):
    """A container's kernel is its host's: that no package of the container provides it is no finding."""
    state = node(kernel__running_installed=False, kernel__installed=["6.1.0-39-amd64"],
                 capabilities__own_kernel=own_kernel)  # fmt: skip
    expected = [
        "n1 runs kernel 6.1.0-40-amd64, which no installed package provides (installed: 6.1.0-39-amd64): the guard "
        "cannot hold it, and DKMS needs its headers from wherever it was built."
    ]
    assert preflight(state)["warnings"] == (expected if warned else [])
    assert preflight(node(kernel__running_installed=False, kernel__installed=[]))["warnings"][0].startswith(
        "n1 runs kernel 6.1.0-40-amd64, which no installed package provides (installed: none)"
    )


def test_repository_problems_are_numbered_by_entry():
    repos = [{"name": "ok", "uris": ["https://repo.example.com/apt"], "suites": ["stable"], "components": ["main"],
              "key_url": "https://repo.example.com/key.asc", "key_fingerprint": "A" * 40},
             {"name": "bad", "uris": ["https://repo.example.com/apt"], "suites": ["/"], "components": ["main"],
              "key_content": "-----BEGIN PGP PUBLIC KEY BLOCK-----"}]  # fmt: skip
    (problem,) = preflight(os_baseline_package_repositories=repos)["problems"]
    assert problem.startswith("os_baseline_package_repositories[1] a flat repository (suite '/') takes no components")
    assert problem.endswith("key_fingerprint: <the vendor's fingerprint>}.")
    # A node whose package manager is unknown has its OS refused; its repositories are not judged against nothing.
    assert len(preflight(node(os__package_manager=None, os__id="slackware"), os_baseline_package_repositories=repos)[
        "problems"
    ]) == 1  # fmt: skip


def test_a_container_needs_no_reboot_and_no_bootloader():
    state = node(capabilities__own_kernel=False, boot__loader="none", kernel_modules__nouveau="loaded")
    assert preflight(state, os_baseline_kernel_cmdline=["absent=1"]) == {
        "problems": [],
        "warnings": [],
        "reboot_reasons": [],
    }


@pytest.mark.parametrize(
    ("changes", "variables", "reasons"),
    [
        ({}, {"os_baseline_kernel_cmdline": []}, []),
        ({}, {"os_baseline_kernel_cmdline": ["iommu=pt", "a=1", "b"]},
         ["kernel arguments a=1 b are not in the running command line"]),
        ({"kernel_modules__nouveau": "loaded"}, {}, ["nouveau is loaded"]),
        ({"kernel_modules__nouveau": "loaded"}, {"os_baseline_blacklist_nouveau": False}, []),
        ({"kernel_modules__nouveau": "builtin"}, {}, []),
        ({"kernel_modules__nouveau": "loaded"}, {"os_baseline_kernel_cmdline": ["x"]},
         ["kernel arguments x are not in the running command line", "nouveau is loaded"]),
    ],
)  # fmt: skip
def test_reboot_reasons(changes, variables, reasons):
    assert preflight(node(**changes), **variables)["reboot_reasons"] == reasons


def test_no_bootloader_is_a_problem_only_with_arguments_to_manage():
    state = node(boot__loader="none")
    assert preflight(state, os_baseline_kernel_cmdline=[])["problems"] == []
    assert "has no bootloader this role manages" in preflight(state)["problems"][0]


# The role's settings as its defaults leave them on Debian (__os_baseline_settings), and os_facts' gpuops_os of a
# node that already has all of it.
FILES = {
    "nouveau": "/etc/modprobe.d/gpuops-blacklist-nouveau.conf", "grub": "/etc/default/grub.d/90-gpuops.cfg",
    "modules": "/etc/modules-load.d/gpuops.conf", "sysctl": "/etc/sysctl.d/90-gpuops.conf",
    "limits": "/etc/security/limits.d/90-gpuops-memlock.conf",
    "systemd": "/etc/systemd/system.conf.d/90-gpuops-memlock.conf", "chrony": "/etc/chrony/chrony.conf",
}  # fmt: skip
SETTINGS = {
    "files": FILES, "blacklist_nouveau": True, "kernel_cmdline": ["iommu=pt"], "modules": ["ib_umad", "overlay"],
    "sysctl": {"net.ipv4.ip_forward": 1, "kernel.numa_balancing": 0}, "memlock_unlimited": True,
    "disable_swap": True, "kernel_hold": True, "chrony_service": "chrony.service",
    "chrony": {"servers": [], "pools": ["2.debian.pool.ntp.org"], "driftfile": "/var/lib/chrony/chrony.drift",
               "includes": ["confdir /etc/chrony/conf.d"]},
}  # fmt: skip
CONVERGED = {
    **NODE,
    "capabilities": {"own_kernel": True, "modules_loadable": True, "sysctl_writable": True, "swap_controllable": True,
                     "clock_settable": True, "memlock_raisable": True},
    "boot": {"loader": "grub", "initramfs_tool": "update-initramfs", "initramfs_stale": [], "grub_stale": False},
    "kernel": {**NODE["kernel"], "installed": ["6.1.0-40-amd64"],
               "packages": {"running": ["linux-image-6.1.0-40-amd64"], "meta": ["linux-image-amd64"]}},
    "kernel_modules": {"ib_umad": "loaded", "overlay": "builtin", "nouveau": "absent"},
    "sysctl": {"net.ipv4.ip_forward": "1", "kernel.numa_balancing": "0"},
    "limits": {"systemd_default_memlock": "infinity"},
    "swap": {"active": [], "fstab": []},
    "units": {"chrony.service": {"enabled": True, "active": True}},
    "packages": {"held": ["linux-image-6.1.0-40-amd64", "linux-image-amd64"], "broken": []},
}  # fmt: skip
CONTAINER_CAPABILITIES = dict.fromkeys(CONVERGED["capabilities"], False)


def converged(**changes):
    return changed(CONVERGED, **changes)


def paths(state=None, **settings):
    entries = os_baseline.configuration_paths(node=state or CONVERGED, settings={**SETTINGS, **settings})
    return {e["path"]: e for e in entries}


def test_every_configuration_file_with_its_whole_text():
    entries = paths()
    assert list(entries) == [FILES["nouveau"], FILES["grub"], FILES["modules"], FILES["sysctl"], FILES["limits"],
                             "/etc/systemd/system.conf.d", FILES["systemd"], FILES["chrony"]]  # fmt: skip
    assert entries["/etc/systemd/system.conf.d"] == {"path": "/etc/systemd/system.conf.d", "state": "directory",
                                                     "mode": "0755"}  # fmt: skip
    assert all(e["mode"] == "0644" and e["content"].startswith(os_baseline.HEADER)
               for e in entries.values() if e["state"] == "file")  # fmt: skip
    assert entries[FILES["grub"]]["content"].endswith(
        'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }iommu=pt"\n'
    )
    assert entries[FILES["modules"]]["content"].endswith("by systemd-modules-load.\nib_umad\noverlay\n")
    assert entries[FILES["chrony"]]["content"] == (
        os_baseline.HEADER + "pool 2.debian.pool.ntp.org iburst\ndriftfile /var/lib/chrony/chrony.drift\n"
        "# Step the clock at start-up only: later steps would break NCCL and MPI timeouts.\nmakestep 1 3\nrtcsync\n"
        "leapsectz right/UTC\nconfdir /etc/chrony/conf.d\n"
    )


def test_sysctls_are_written_in_the_order_and_form_the_template_wrote_them():
    # Jinja's dictsort ignored case; values as Jinja printed them (an upgrade must not rewrite the file).
    content = paths(sysctl={"net.b": "4096\t87380", "Net.a": True, "fs.c": 0.5, "kernel.d": 0})[FILES["sysctl"]]
    assert content["content"] == os_baseline.HEADER + "fs.c = 0.5\nkernel.d = 0\nNet.a = True\nnet.b = 4096\t87380\n"


def test_switched_off_settings_remove_their_files():
    entries = paths(blacklist_nouveau=False, kernel_cmdline=[], memlock_unlimited=False, chrony=None)
    assert {p: e["state"] for p, e in entries.items()} == {
        FILES["nouveau"]: "absent", FILES["grub"]: "absent", FILES["modules"]: "file", FILES["sysctl"]: "file",
        FILES["limits"]: "absent", FILES["systemd"]: "absent",
    }  # fmt: skip


@pytest.mark.parametrize("loader", ["grubby", "none"])
def test_the_grub_drop_in_only_where_grub_boots_the_node(loader):
    assert FILES["grub"] not in paths(converged(boot__loader=loader))


def steps(state=None, changed=(), **settings):
    changed_paths = {FILES[name]: ["absent"] for name in changed}
    return os_baseline.configuration_steps(
        node=state or CONVERGED, settings={**SETTINGS, **settings}, changed_paths=changed_paths
    )


NOTHING = {"initramfs": False, "grub": False, "load_modules": [], "sysctl": False, "reexec": False,
           "swap_fstab": False, "swapoff": False, "apply": False, "restart_chrony": False, "chrony": False,
           "cmdline_changed": False}  # fmt: skip
# The steps apply.yml takes: any of them makes the role include it.
APPLIED = ("initramfs", "grub", "load_modules", "sysctl", "reexec", "swap_fstab", "swapoff")


def test_a_converged_node_needs_no_step():
    assert steps() == NOTHING


@pytest.mark.parametrize(
    ("changed", "wanted"),
    [
        (["nouveau"], {"initramfs": True}),
        (["grub"], {"grub": True, "cmdline_changed": True}),
        (["sysctl"], {"sysctl": True}),
        (["systemd"], {"reexec": True}),
        (["chrony"], {"restart_chrony": True, "chrony": True}),
        # Written by the modules-load file alone, the limits for users: their next boot and login read them.
        (["modules", "limits"], {}),
    ],
)
def test_each_written_file_asks_for_its_step(changed, wanted):
    applied = any(wanted.get(name) for name in APPLIED)
    assert steps(changed=changed) == {**NOTHING, **wanted, "apply": applied}


@pytest.mark.parametrize(
    ("changes", "wanted"),
    [
        ({"boot__initramfs_stale": ["6.1.0-40-amd64"]}, {"initramfs": True}),
        ({"boot__grub_stale": True}, {"grub": True}),
        ({"kernel_modules__ib_umad": "absent"}, {"load_modules": ["ib_umad"]}),
        ({"sysctl__kernel.numa_balancing": "1"}, {"sysctl": True}),
        ({"sysctl": {"net.ipv4.ip_forward": "1"}}, {"sysctl": True}),
        ({"limits__systemd_default_memlock": "8388608"}, {"reexec": True}),
    ],
)  # fmt: skip
def test_what_an_earlier_failed_run_left_undone_is_done(changes, wanted):
    assert steps(converged(**changes)) == {**NOTHING, **wanted, "apply": True}


@pytest.mark.parametrize(
    ("swap", "capabilities", "disable_swap", "wanted"),
    [
        ({"fstab": ["/dev/vda3"], "active": [{"device": "/dev/vda3"}]}, {"swap_controllable": True}, True,
         {"swap_fstab": True, "swapoff": True, "apply": True}),
        # A container's swap is its host's: only its fstab is the image's.
        ({"fstab": ["/dev/vda3"], "active": [{"device": "/dev/vda3"}]}, {"swap_controllable": False}, True,
         {"swap_fstab": True, "apply": True}),
        ({"fstab": [], "active": [{"device": "/swapfile"}]}, {"swap_controllable": True}, True,
         {"swapoff": True, "apply": True}),
        ({"fstab": ["/dev/vda3"], "active": [{"device": "/dev/vda3"}]}, {"swap_controllable": True}, False, {}),
        ({"fstab": [], "active": []}, {"swap_controllable": True}, True, {}),
    ],
)  # fmt: skip
def test_swap_is_turned_off_where_it_is_on_and_allowed(swap, capabilities, disable_swap, wanted):
    state = converged(swap=swap, capabilities={**CONVERGED["capabilities"], **capabilities})
    assert steps(state, disable_swap=disable_swap) == {**NOTHING, **wanted}


def test_no_initramfs_without_its_tool_or_a_kernel_package():
    assert steps(converged(boot__initramfs_tool=""), changed=["nouveau"])["initramfs"] is False
    assert steps(converged(kernel__installed=[]), changed=["nouveau"])["initramfs"] is False


def test_a_container_takes_only_the_steps_its_own_files_need():
    state = converged(capabilities=CONTAINER_CAPABILITIES, kernel_modules__ib_umad="absent",
                      limits__systemd_default_memlock="65536", boot__grub_stale=True)  # fmt: skip
    everything = ["nouveau", "grub", "sysctl", "systemd", "chrony"]
    assert steps(state, changed=everything) == {**NOTHING, "initramfs": True, "reexec": True, "apply": True}
    assert steps(state) == NOTHING


@pytest.mark.parametrize(
    ("unit", "clock_settable", "wanted"),
    [
        ({"enabled": True, "active": True}, True, False),
        ({"enabled": False, "active": True}, True, True),
        ({"enabled": True, "active": False}, True, True),
        # A container's clock is its host's: chrony is enabled there, never started.
        ({"enabled": True, "active": False}, False, False),
        ({"enabled": False, "active": False}, False, True),
        # Not installed yet (the install step comes first): the read found no unit.
        (None, True, True),
    ],
)
def test_chrony_is_put_right_only_where_its_unit_differs(unit, clock_settable, wanted):
    state = converged(units={"chrony.service": unit} if unit else {}, capabilities__clock_settable=clock_settable)
    assert steps(state)["chrony"] is wanted
    # Time sync switched off: chrony is left alone.
    assert steps(state, chrony=None)["chrony"] is False


def test_switched_off_settings_ask_for_nothing_of_their_own():
    state = converged(limits__systemd_default_memlock="65536")
    assert steps(state, memlock_unlimited=False, chrony=None, changed=["chrony"]) == NOTHING
    # Removing the services' limit re-executes systemd too, so services lose it without a reboot.
    assert steps(state, memlock_unlimited=False, changed=["systemd"]) == {**NOTHING, "reexec": True, "apply": True}


def verify(state=None, **settings):
    return os_baseline.verify_problems(node=state or CONVERGED, settings={**SETTINGS, **settings})


def test_a_converged_node_passes_with_nothing_left_out():
    assert verify() == {"failures": [], "not_applicable": []}


def test_every_failure_at_once():
    state = converged(
        packages={"held": ["linux-image-amd64"], "broken": ["nvidia-kernel-dkms"]},
        kernel_modules={"ib_umad": "absent", "overlay": "absent", "nouveau": "loaded"},
        sysctl={"kernel.numa_balancing": "1"},
        swap={"active": [{"device": "/dev/vda3"}], "fstab": ["/dev/vda3"]},
        kernel__cmdline=["ro"],
        limits__systemd_default_memlock="65536",
        units={"chrony.service": {"enabled": False, "active": False}},
    )
    assert verify(state)["failures"] == [
        "packages not held: linux-image-6.1.0-40-amd64",
        "kernel modules not loaded: ib_umad, overlay",
        "nouveau is loaded",
        "sysctls differ from the configuration: kernel.numa_balancing, net.ipv4.ip_forward",
        "swap is still on: /dev/vda3",
        "swap is still in /etc/fstab",
        "kernel arguments missing from the running command line: iommu=pt",
        "services do not get unlimited locked memory (DefaultLimitMEMLOCK=65536)",
        "chrony is not enabled",
        "chrony is not running",
        "packages left half-installed: nvidia-kernel-dkms",
    ]


def test_switched_off_settings_are_not_verified():
    state = converged(packages__held=[], kernel_modules__nouveau="loaded", swap={"active": [{"device": "/s"}],
                      "fstab": ["/s"]}, limits__systemd_default_memlock="65536", units={})  # fmt: skip
    assert verify(state, kernel_hold=False, blacklist_nouveau=False, disable_swap=False, memlock_unlimited=False,
                  chrony=None) == {"failures": [], "not_applicable": []}  # fmt: skip


def test_no_command_line_to_verify_without_a_bootloader():
    assert verify(converged(kernel__cmdline=["ro"], boot__loader="none"))["failures"] == []


def test_a_container_is_verified_for_what_it_owns_and_says_what_its_host_owns():
    state = converged(capabilities=CONTAINER_CAPABILITIES, kernel_modules={"nouveau": "loaded"}, sysctl={},
                      kernel__cmdline=[], swap={"active": [{"device": "/s"}], "fstab": []},
                      limits__systemd_default_memlock="65536",
                      units={"chrony.service": {"enabled": True, "active": False}})  # fmt: skip
    assert verify(state) == {
        "failures": [],
        "not_applicable": ["kernel command line", "loaded modules", "swap state", "live sysctls", "chrony running",
                           "service memlock limit"],
    }  # fmt: skip
    state = converged(capabilities=CONTAINER_CAPABILITIES, swap={"active": [], "fstab": ["/s"]}, units={})
    assert verify(state)["failures"] == ["swap is still in /etc/fstab", "chrony is not enabled"]
