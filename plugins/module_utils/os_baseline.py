# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The OS baseline stage's decisions, each from one read of the node (os_facts' gpuops_os) and the role's settings.

preflight: every problem of a node at once, and why its changes will need a reboot. A node with problems is refused
with all of them in one message, so one round of fixes clears it; the reboot reasons feed the reboot contract's gate
(module_utils reboot.gate, applied by the decide action), which comes after the problems: an operator is never
asked to allow a reboot for a node that would be refused anyway.
configuration_paths: the configuration files (and their absence) in one managed_paths call. configuration_steps: what
the node needs after that call (initramfs, GRUB, modprobe, sysctl, systemd re-exec, chrony restart), from what it
changed and from what the read found undone by an earlier, failed run. verify_problems: the live state after the
run, against the settings, as far as the node lets itself be changed.
"""

from __future__ import annotations

import json
import posixpath

from ansible_collections.gpuops.bringup.plugins.module_utils.osinfo import normalize_sysctl
from ansible_collections.gpuops.bringup.plugins.module_utils.repositories import list_problems

# os-release ID -> the major releases the role supports.
SUPPORTED = {"debian": ("12", "13"), "ubuntu": ("22", "24"), "rocky": ("8", "9"), "rhel": ("8", "9")}
SUPPORTED_TEXT = "Debian 12/13, Ubuntu 22.04/24.04, Rocky Linux and RHEL 8/9"
REPOSITORY_EXAMPLE = (
    "{name: example, uris: [https://repo.example.com/apt], suites: [stable], components: [main], "
    "key_url: https://repo.example.com/key.asc, key_fingerprint: <the vendor's fingerprint>}"
)


def _get(mapping, *path, default=None):
    for key in path:
        mapping = mapping.get(key) if isinstance(mapping, dict) else None
    return default if mapping is None else mapping


def reboot_reasons(*, node, cmdline, blacklist_nouveau):
    """Why the baseline's changes need a reboot: kernel arguments missing from the running command line, nouveau
    loaded; none on a node that does not own its kernel (a container: its host's command line and modules)."""
    if not _get(node, "capabilities", "own_kernel"):
        return []
    running = _get(node, "kernel", "cmdline", default=[])
    missing = [argument for argument in cmdline if argument not in running]
    reasons = [f"kernel arguments {' '.join(missing)} are not in the running command line"] if missing else []
    if blacklist_nouveau and _get(node, "kernel_modules", "nouveau") == "loaded":
        reasons.append("nouveau is loaded")
    return reasons


def preflight(*, host, node, variables):
    """{problems, warnings, reboot_reasons} of one node from os_facts' gpuops_os and the role's variables
    (os_baseline_*, gpuops_kubernetes_join), each problem naming the value and the fix; warnings are what the
    operator should know that stops nothing (the kernel guard's: a next boot into another kernel, a running kernel
    no package provides)."""
    problems = []
    warnings = []
    if not variables.get("os_baseline_disable_swap") and variables.get("gpuops_kubernetes_join"):
        problems.append(
            "os_baseline_disable_swap is false (swap kept) but gpuops_kubernetes_join is true: kubelet refuses to "
            "start with swap on (failSwapOn). Fix: set os_baseline_disable_swap: true, or gpuops_kubernetes_join: "
            "false for nodes that stay out of Kubernetes."
        )
    release = _get(node, "os", default={})
    if release.get("major") not in SUPPORTED.get(release.get("id"), ()):
        problems.append(
            f"{host} runs {release.get('name') or 'an unknown OS'} (ID={release.get('id')}, "
            f"VERSION_ID={release.get('version_id')}), which os_baseline does not support. Supported: "
            f"{SUPPORTED_TEXT}. Fix: install a supported release, or remove the host from this play."
        )
    manager = release.get("package_manager")
    # A node of an unknown package manager has its OS refused above; its repositories are not judged against it.
    found = (
        list_problems(variables.get("os_baseline_package_repositories") or [], manager)
        if manager in ("apt", "dnf")
        else []
    )
    if found:
        problems.append(
            "os_baseline_package_repositories"
            + "; os_baseline_package_repositories".join(found)
            + f". Fix the entry, e.g. {REPOSITORY_EXAMPLE}."
        )
    kernel = _get(node, "kernel", default={})
    own_kernel = _get(node, "capabilities", "own_kernel")
    if kernel.get("drift") and variables.get("os_baseline_kernel_drift_action") == "fail":
        problems.append(
            f"{host} runs kernel {kernel.get('running')} but {kernel.get('newest')} is installed too, so the next "
            "boot changes kernel under DKMS, and os_baseline_kernel_drift_action is fail. Fix: reboot into "
            f"{kernel.get('newest')} (or remove it), or set os_baseline_kernel_drift_action: warn."
        )
    elif kernel.get("drift"):
        warnings.append(
            f"{host} runs kernel {kernel.get('running')} but {kernel.get('newest')} is installed too: the next boot "
            "changes kernel, and DKMS modules must be built for it. Reboot into it before installing the driver, or "
            "remove it."
        )
    # A container's kernel is its host's: no package of the container provides it, and that is no finding.
    if own_kernel and not kernel.get("running_installed", True):
        warnings.append(
            f"{host} runs kernel {kernel.get('running')}, which no installed package provides (installed: "
            f"{', '.join(kernel.get('installed') or []) or 'none'}): the guard cannot hold it, and DKMS needs its "
            "headers from wherever it was built."
        )
    cmdline = variables.get("os_baseline_kernel_cmdline") or []
    if cmdline and own_kernel and _get(node, "boot", "loader", default="none") == "none":
        problems.append(
            f"os_baseline_kernel_cmdline is {json.dumps(cmdline)} but {host} has no bootloader this role manages "
            "(GRUB with /etc/default/grub and update-grub, or grubby). Fix: install GRUB, or set "
            "os_baseline_kernel_cmdline: [] and manage the command line yourself."
        )
    return {
        "problems": problems,
        "warnings": warnings,
        "reboot_reasons": reboot_reasons(
            node=node, cmdline=cmdline, blacklist_nouveau=bool(variables.get("os_baseline_blacklist_nouveau"))
        ),
    }


HEADER = "# Managed by gpuops.bringup: edit the inventory, not this file.\n"
NOUVEAU = (
    HEADER + "# nouveau must not bind NVIDIA GPUs: the NVIDIA driver owns them.\n"
    "blacklist nouveau\noptions nouveau modeset=0\n"
)
LIMITS = (
    HEADER + "# RDMA memory registration and CUDA pinned host memory need unlimited locked\n"
    '# memory. "*" does not cover root, hence the second pair.\n'
    "*    soft memlock unlimited\n*    hard memlock unlimited\n"
    "root soft memlock unlimited\nroot hard memlock unlimited\n"
)
SYSTEMD = (
    HEADER + "# The same for services (containerd, kubelet, nvidia-persistenced...).\n[Manager]\n"
    "DefaultLimitMEMLOCK=infinity\n"
)
# The files the role writes, by name: settings["files"] maps each name to its path on the node's OS.
FILES = ("nouveau", "grub", "modules", "sysctl", "limits", "systemd", "chrony")


def sysctl_drift(desired, live):
    """Keys whose live value (os_facts' sysctl) differs from the desired one; a key the node lacks differs."""
    return sorted(
        key for key, value in desired.items() if live.get(key) is None or normalize_sysctl(value) != live[key]
    )


def _file(path, content):
    return {"path": path, "state": "file", "mode": "0644", "content": content}


def _chrony(chrony):
    lines = [f"server {server} iburst" for server in chrony["servers"]]
    lines += [f"pool {pool} iburst" for pool in chrony["pools"]]
    lines += [
        f"driftfile {chrony['driftfile']}",
        "# Step the clock at start-up only: later steps would break NCCL and MPI timeouts.",
        "makestep 1 3",
        "rtcsync",
        "leapsectz right/UTC",
    ]
    return HEADER + "".join(line + "\n" for line in lines + list(chrony["includes"]))


def configuration_paths(*, node, settings):
    """managed_paths entries of the baseline's configuration files, each present or absent as the settings say.

    settings: files (FILES -> path), blacklist_nouveau, kernel_cmdline, modules, sysctl, memlock_unlimited, chrony
    (None without time sync, else servers, pools, driftfile and includes). The GRUB drop-in only where GRUB is the
    node's bootloader (grubby nodes keep their arguments in the boot entries); chrony's file is left alone when the
    role does not sync time.
    """
    files = settings["files"]
    entries = [
        _file(files["nouveau"], NOUVEAU)
        if settings["blacklist_nouveau"]
        else {"path": files["nouveau"], "state": "absent"}
    ]
    if _get(node, "boot", "loader") == "grub":
        cmdline = " ".join(settings["kernel_cmdline"])
        entries.append(
            _file(
                files["grub"],
                HEADER + "# Kernel arguments from os_baseline_kernel_cmdline, appended to the distribution's.\n"
                f'GRUB_CMDLINE_LINUX="${{GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }}{cmdline}"\n',
            )
            if cmdline
            else {"path": files["grub"], "state": "absent"}
        )
    entries.append(
        _file(
            files["modules"],
            HEADER + "# Loaded at boot by systemd-modules-load.\n" + "".join(f"{m}\n" for m in settings["modules"]),
        )
    )
    # Sorted as Jinja's dictsort did when a template wrote this file: a re-run after an upgrade changes nothing.
    sysctl = sorted(settings["sysctl"].items(), key=lambda item: item[0].lower())
    entries.append(_file(files["sysctl"], HEADER + "".join(f"{key} = {value}\n" for key, value in sysctl)))
    if settings["memlock_unlimited"]:
        entries += [
            _file(files["limits"], LIMITS),
            {"path": posixpath.dirname(files["systemd"]), "state": "directory", "mode": "0755"},
            _file(files["systemd"], SYSTEMD),
        ]
    else:
        entries += [{"path": files["limits"], "state": "absent"}, {"path": files["systemd"], "state": "absent"}]
    if settings["chrony"] is not None:
        entries.append(_file(files["chrony"], _chrony(settings["chrony"])))
    return entries


def configuration_steps(*, node, settings, changed_paths):
    """What the node needs after managed_paths wrote configuration_paths (changed_paths: its result), each step also
    where the read shows an earlier run wrote a file but failed before the step (the initramfs or GRUB configuration
    older than its inputs, sysctls or limits not live). Steps this node cannot take (a container's kernel, sysctls
    and clock are its host's) are never asked for.

    {initramfs, grub, load_modules (list), sysctl, reexec, swap_fstab (swap entries to comment out of /etc/fstab),
    swapoff (swap to turn off now), restart_chrony, chrony (whether chrony's unit needs enabling, starting where the
    node may set its clock, or the restart), cmdline_changed (the running kernel's arguments are stale until a
    reboot), apply (whether any step from initramfs to swapoff is needed: the role's apply.yml runs them)}.
    """
    files = settings["files"]
    caps = _get(node, "capabilities", default={})
    own_kernel = bool(caps.get("own_kernel"))
    grub_changed = files["grub"] in changed_paths
    loaded = _get(node, "kernel_modules", default={})
    swap = _get(node, "swap", default={})
    steps = {
        "initramfs": bool(
            _get(node, "boot", "initramfs_tool")
            and _get(node, "kernel", "installed")
            and (files["nouveau"] in changed_paths or _get(node, "boot", "initramfs_stale"))
        ),
        "grub": own_kernel
        and _get(node, "boot", "loader") == "grub"
        and (grub_changed or bool(_get(node, "boot", "grub_stale"))),
        "load_modules": [m for m in settings["modules"] if loaded.get(m) == "absent"]
        if caps.get("modules_loadable")
        else [],
        "sysctl": bool(caps.get("sysctl_writable"))
        and (
            files["sysctl"] in changed_paths or bool(sysctl_drift(settings["sysctl"], _get(node, "sysctl", default={})))
        ),
        # Re-executing the service manager makes new services inherit the limit without a reboot; where PID 1 may not
        # raise its own limit (an unprivileged container), systemd clamps services to it, and nothing more can be done.
        "reexec": files["systemd"] in changed_paths
        or bool(
            settings["memlock_unlimited"]
            and caps.get("memlock_raisable")
            and _get(node, "limits", "systemd_default_memlock") != "infinity"
        ),
        # Kubelet refuses to start with swap on.
        "swap_fstab": bool(settings["disable_swap"] and swap.get("fstab")),
        "swapoff": bool(settings["disable_swap"] and caps.get("swap_controllable") and swap.get("active")),
    }
    restart_chrony = (
        bool(caps.get("clock_settable")) and settings["chrony"] is not None and files["chrony"] in changed_paths
    )
    chrony = _get(node, "units", settings["chrony_service"], default={})
    return {
        **steps,
        "apply": any(steps.values()),
        "restart_chrony": restart_chrony,
        "chrony": settings["chrony"] is not None
        and (
            restart_chrony
            or not chrony.get("enabled")
            or (bool(caps.get("clock_settable")) and not chrony.get("active"))
        ),
        "cmdline_changed": own_kernel and grub_changed,
    }


def verify_problems(*, node, settings):
    """{failures, not_applicable} of the node read again after the run (os_facts' gpuops_os), against the settings
    (configuration_paths' plus disable_swap, kernel_hold, chrony_service). A container's kernel, sysctls, swap and clock
    belong to its host: they are reported as not applicable, not passed."""
    caps = _get(node, "capabilities", default={})
    kernel = _get(node, "kernel", default={})
    failures = []
    held_wanted = (
        _get(kernel, "packages", "running", default=[]) + _get(kernel, "packages", "meta", default=[])
        if settings["kernel_hold"]
        else []
    )
    held = _get(node, "packages", "held", default=[])
    not_held = [name for name in held_wanted if name not in held]
    if not_held:
        failures.append("packages not held: " + ", ".join(not_held))
    modules = _get(node, "kernel_modules", default={})
    not_loaded = [m for m in settings["modules"] if modules.get(m) == "absent"]
    if caps.get("modules_loadable") and not_loaded:
        failures.append("kernel modules not loaded: " + ", ".join(not_loaded))
    if caps.get("own_kernel") and settings["blacklist_nouveau"] and modules.get("nouveau") == "loaded":
        failures.append("nouveau is loaded")
    drifted = sysctl_drift(settings["sysctl"], _get(node, "sysctl", default={}))
    if caps.get("sysctl_writable") and drifted:
        failures.append("sysctls differ from the configuration: " + ", ".join(drifted))
    swap = _get(node, "swap", default={})
    if settings["disable_swap"] and caps.get("swap_controllable") and swap.get("active"):
        failures.append("swap is still on: " + ", ".join(str(entry.get("device")) for entry in swap["active"]))
    if settings["disable_swap"] and swap.get("fstab"):
        failures.append("swap is still in /etc/fstab")
    missing = [argument for argument in settings["kernel_cmdline"] if argument not in kernel.get("cmdline", [])]
    if caps.get("own_kernel") and _get(node, "boot", "loader") != "none" and missing:
        failures.append("kernel arguments missing from the running command line: " + " ".join(missing))
    memlock = _get(node, "limits", "systemd_default_memlock")
    if settings["memlock_unlimited"] and caps.get("memlock_raisable") and memlock != "infinity":
        failures.append(f"services do not get unlimited locked memory (DefaultLimitMEMLOCK={memlock})")
    if settings["chrony"] is not None:
        chrony = _get(node, "units", settings["chrony_service"], default={})
        if not chrony.get("enabled"):
            failures.append("chrony is not enabled")
        if caps.get("clock_settable") and not chrony.get("active"):
            failures.append("chrony is not running")
    broken = _get(node, "packages", "broken", default=[])
    if broken:
        failures.append("packages left half-installed: " + ", ".join(broken))
    not_applicable = [] if caps.get("own_kernel") else ["kernel command line", "loaded modules", "swap state"]
    not_applicable += [] if caps.get("sysctl_writable") else ["live sysctls"]
    not_applicable += [] if caps.get("clock_settable") else ["chrony running"]
    not_applicable += [] if caps.get("memlock_raisable") else ["service memlock limit"]
    return {"failures": failures, "not_applicable": not_applicable}
