#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: os_facts
short_description: Read a node's OS, kernel, boot, package and capability state in one round trip
version_added: 0.1.0
description:
  - Reads C(/etc/os-release), the running and installed kernels, the kernel packages and held packages, the kernel
    command line, swap, the state of chosen kernel modules, sysctls and systemd units, the limits of PID 1, and what
    this host may change itself (its own kernel, sysctls, modules, clock).
  - Replaces C(setup) for the collection's roles, one module that reads many things instead of a dozen tasks.
  - Changes nothing. Returns only C(ansible_facts.gpuops_os).
author: gpuops.bringup developers (@gpuops)
options:
  sysctl_keys:
    description: Sysctl keys whose live values to read (C(null) when a key does not exist).
    type: list
    elements: str
    default: []
  kernel_modules:
    description: Kernel modules whose state to report (C(loaded), C(builtin) or C(absent)).
    type: list
    elements: str
    default: []
  units:
    description: Systemd units whose active and enabled state to report.
    type: list
    elements: str
    default: []
  grub_inputs:
    description: Files the GRUB configuration is generated from; C(boot.grub_stale) is true when one is newer than it.
    type: list
    elements: path
    default: []
  initramfs_inputs:
    description: Files copied into the initramfs; C(boot.initramfs_stale) lists kernels whose initramfs is older.
    type: list
    elements: path
    default: []
  package_names:
    description:
      - Packages whose state to report in C(packages.states), from the same package database query, in the shape the
        C(gpuops.bringup.apt_pending) filter reads (a role's install step then needs no second read).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
  - gpuops.bringup.attributes.facts
notes:
  - Supports Debian and Ubuntu (dpkg) and RHEL-family systems (rpm). Must run as root to read PID 1's limits.
"""

EXAMPLES = r"""
- name: Read OS state
  gpuops.bringup.os_facts:
    sysctl_keys: [net.ipv4.ip_forward, kernel.numa_balancing]
    kernel_modules: [br_netfilter, nouveau]
    units: [chrony.service]

- name: Stop if this host boots another kernel than the newest installed
  ansible.builtin.assert:
    that: not ansible_facts.gpuops_os.kernel.drift
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(gpuops_os).
  returned: always
  type: dict
  contains:
    gpuops_os:
      description: Everything read.
      type: dict
      contains:
        os:
          description: >-
            Identity from os-release: C(id), C(id_like), C(name), C(version_id), C(major), C(codename),
            C(family) (Debian, RedHat or unknown), C(arch), C(package_arch), C(package_manager) (apt, dnf).
          type: dict
        container:
          description: Container manager this host runs under (podman, docker, lxc...), empty on a machine or VM.
          type: str
        kernel:
          description: >-
            C(running) (uname -r), C(cmdline) (list of arguments), C(installed) (kernel versions with an image
            in /boot or /lib/modules, oldest first), C(newest), C(running_installed) (the running kernel's image
            is installed), C(drift) (the running kernel is installed but a newer one is too: the next boot changes
            kernel), C(packages.running) and C(packages.meta) (installed packages to hold against kernel drift).
          type: dict
        packages:
          description: >-
            C(held) (packages held or version-locked), C(broken) (half-installed or half-configured),
            C(source_files) (/etc/apt/sources.list and the files in sources.list.d, or the files in /etc/yum.repos.d),
            C(managed_source_files) (those of them written by this collection) and C(index_age_seconds) (since apt's
            last successful update, from /var/lib/apt/periodic/update-success-stamp; null when unknown or on dnf),
            C(states) (for each of O(package_names): C(installed), its version, the newest of an rpm's, null when
            not fully installed, and C(broken)).
          type: dict
        capabilities:
          description: >-
            What this host may change: C(own_kernel) (false in a container, whose kernel belongs to its host),
            C(sysctl_writable), C(modules_loadable), C(clock_settable), C(swap_controllable), C(memlock_raisable)
            (PID 1 may lock unlimited memory, or raise its limit).
          type: dict
        boot:
          description: >-
            C(loader) (grub, grubby or none), C(grub_config) (path of the generated GRUB configuration),
            C(initramfs_tool) (update-initramfs, dracut or empty), C(grub_stale), C(initramfs_stale) (kernel versions).
          type: dict
        swap:
          description: C(active) (areas from /proc/swaps) and C(fstab) (uncommented swap lines of /etc/fstab).
          type: dict
        kernel_modules:
          description: State of each requested module, C(loaded), C(builtin) or C(absent).
          type: dict
        sysctl:
          description: Live value of each requested key, whitespace-normalised, or null.
          type: dict
        units:
          description: >-
            For each requested unit, C(active), C(enabled), C(exists) and C(failed) (what C(systemctl is-failed)
            says).
          type: dict
        limits:
          description: C(memlock) of PID 1 (C(soft), C(hard)); C(systemd_default_memlock) from the service manager.
          type: dict
"""

import os
import platform
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import osinfo, repositories, rpm
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RootedReader


class HostReader(RootedReader):
    """File and command access, rooted so unit tests can point it at a captured tree."""

    def __init__(self, module, root="/"):
        super().__init__(root)
        self.module = module

    def tool(self, name):
        return ToolRunner(self.module, name, required=False)

    def pid_namespace(self):
        try:
            return os.readlink("/proc/self/ns/pid")
        except OSError:
            return ""

    def now(self):
        return time.time()

    def uname(self):
        """Running kernel release and machine, as uname -r and -m print them."""
        return platform.release(), platform.machine()


def detect_container(reader):
    """The container manager's name, or "" when this host runs its own kernel.

    A container never shares the host's initial PID namespace, which settles
    it; the markers only name the manager. A marker alone proves nothing: a
    VM whose root filesystem came from a Docker image keeps /.dockerenv.
    """
    if osinfo.in_initial_pid_namespace(reader.pid_namespace()):
        return ""
    name = (reader.read("/run/systemd/container") or "").strip()
    if name:
        return name
    if reader.exists("/run/.containerenv"):
        return "podman"
    if reader.exists("/.dockerenv"):
        return "docker"
    return "unknown"


def installed_kernels(reader, family):
    """The kernels in /boot (and /lib/modules), oldest first in the order of the OS's package manager."""
    versions = {name[len("vmlinuz-") :] for name in reader.listdir("/boot") if name.startswith("vmlinuz-")}
    versions.update(v for v in reader.listdir("/lib/modules") if reader.exists(f"/lib/modules/{v}/vmlinuz"))
    # dracut's rescue image (vmlinuz-0-rescue-<machine-id>) is a copy, not a kernel anyone installs or updates.
    return sorted((v for v in versions if not v.startswith("0-rescue-")), key=osinfo.kernel_order(family))


def read_packages(reader, family):
    """Installed packages (name -> version) and held and broken names, from one package database query."""
    if family == "Debian":
        dpkg = reader.tool("dpkg-query")
        if not dpkg.available:
            return {}, [], []
        _rc, out, _err = dpkg(list(osinfo.DPKG_QUERY_ARGS))
        parsed = osinfo.parse_dpkg_query(out)
        installed = {name: p["version"] for name, p in parsed.items() if p["installed"]}
        held = sorted(name for name, p in parsed.items() if p["held"])
        broken = sorted(name for name, p in parsed.items() if p["broken"])
        return installed, held, broken
    if family == "RedHat":
        query = reader.tool("rpm")
        if not query.available:
            return {}, [], []
        _rc, out, _err = query(list(osinfo.RPM_QUERY_ARGS))
        held = rpm.parse_versionlock(reader.read("/etc/dnf/plugins/versionlock.list", ""))
        return osinfo.parse_rpm_query(out), held, []
    return {}, [], []


def package_states(names, installed, broken):
    """The named packages' installed version (the newest of an rpm's; None when not fully installed) and brokenness."""
    states = {}
    for name in names:
        version = installed.get(name)
        states[name] = {"installed": version[-1] if isinstance(version, list) else version, "broken": name in broken}
    return states


def source_files(reader, family):
    """Package source files, and which of them this collection wrote (they start with its header)."""
    if family == "Debian":
        files = [f"/etc/apt/sources.list.d/{n}" for n in reader.listdir("/etc/apt/sources.list.d")]
        files = (["/etc/apt/sources.list"] if reader.exists("/etc/apt/sources.list") else []) + files
    elif family == "RedHat":
        files = [f"/etc/yum.repos.d/{n}" for n in reader.listdir("/etc/yum.repos.d")]
    else:
        files = []
    managed = [f for f in files if (reader.read(f) or "").startswith(repositories.HEADER)]
    return files, managed


def index_age(reader, family):
    """Seconds since the last successful apt update, from the stamp apt's update hooks (and this collection) touch."""
    if family != "Debian":
        return None
    stamp = reader.mtime("/var/lib/apt/periodic/update-success-stamp")
    return None if stamp is None else max(0, int(reader.now() - stamp))


def boot_state(reader, family, kernels, grub_inputs, initramfs_inputs):
    if family == "Debian" and reader.exists("/etc/default/grub") and reader.tool("update-grub").available:
        loader, grub_config = "grub", "/boot/grub/grub.cfg"
    elif family == "RedHat" and reader.tool("grubby").available:
        loader, grub_config = "grubby", "/boot/grub2/grub.cfg"
    else:
        loader, grub_config = "none", ""
    if reader.tool("update-initramfs").available:
        tool, initrd = "update-initramfs", "/boot/initrd.img-{0}"
    elif reader.tool("dracut").available:
        tool, initrd = "dracut", "/boot/initramfs-{0}.img"
    else:
        tool, initrd = "", ""

    def newer_input(target_mtime, inputs):
        mtimes = [m for m in (reader.mtime(p) for p in inputs) if m is not None]
        return bool(mtimes) and (target_mtime is None or max(mtimes) > target_mtime)

    return {
        "loader": loader,
        "grub_config": grub_config,
        "initramfs_tool": tool,
        "grub_stale": bool(grub_config) and newer_input(reader.mtime(grub_config), grub_inputs),
        "initramfs_stale": [
            k for k in kernels if tool and newer_input(reader.mtime(initrd.format(k)), initramfs_inputs)
        ],
    }


def module_states(reader, running, names):
    loaded = {line.split()[0] for line in reader.read("/proc/modules", "").splitlines() if line.strip()}
    builtin = {
        os.path.basename(line.strip())[: -len(".ko")]
        for line in reader.read(f"/lib/modules/{running}/modules.builtin", "").splitlines()
        if line.strip().endswith(".ko")
    }

    def state(name):
        # The kernel reports module names with underscores whatever the file name says.
        canonical = name.replace("-", "_")
        if canonical in loaded:
            return "loaded"
        if canonical in {b.replace("-", "_") for b in builtin}:
            return "builtin"
        return "absent"

    return {name: state(name) for name in names}


def unit_states(reader, units):
    if not units:
        return {}
    systemctl = reader.tool("systemctl")
    if not systemctl.available:
        return {u: osinfo.unit_state({}) for u in units}
    _rc, out, _err = systemctl(["show", osinfo.SYSTEMCTL_PROPERTIES, "--", *units], ok_rc=(0, 1))
    shown = osinfo.parse_systemctl_show(out)
    return {unit: osinfo.unit_state(shown.get(unit, {})) for unit in units}


def systemd_default_memlock(reader):
    systemctl = reader.tool("systemctl")
    if not systemctl.available:
        return None
    _rc, out, _err = systemctl(["show", "--property=DefaultLimitMEMLOCK"], ok_rc=(0, 1))
    value = out.strip().partition("=")[2]
    return value or None


def gather(reader, params):
    release = osinfo.parse_os_release(reader.read("/etc/os-release") or reader.read("/usr/lib/os-release", ""))
    running, machine = reader.uname()
    identity = osinfo.os_identity(release, machine)
    container = detect_container(reader)
    kernels = installed_kernels(reader, identity["family"])
    newest = kernels[-1] if kernels else ""
    installed, held, broken = read_packages(reader, identity["family"])
    sources, managed_sources = source_files(reader, identity["family"])
    caps = osinfo.effective_caps(reader.read("/proc/self/status", ""))
    own_kernel = not container
    memlock = osinfo.parse_limit(reader.read("/proc/1/limits", ""), "Max locked memory")
    sysctl = {}
    for key in params["sysctl_keys"]:
        value = reader.read("/proc/sys/" + key.replace(".", "/"))
        sysctl[key] = None if value is None else osinfo.normalize_sysctl(value)

    return {
        "os": identity,
        "container": container,
        "kernel": {
            "running": running,
            "cmdline": osinfo.parse_cmdline(reader.read("/proc/cmdline", "")),
            "installed": kernels,
            "newest": newest,
            "running_installed": running in kernels,
            "drift": running in kernels and newest != running,
            "packages": osinfo.classify_kernel_packages(installed, running, identity["family"]),
        },
        "packages": {
            "held": held,
            "broken": broken,
            "source_files": sources,
            "managed_source_files": managed_sources,
            "index_age_seconds": index_age(reader, identity["family"]),
            "states": package_states(params["package_names"], installed, broken),
        },
        "capabilities": {
            "own_kernel": own_kernel,
            "sysctl_writable": not reader.readonly("/proc/sys"),
            "modules_loadable": own_kernel
            and osinfo.has_cap(caps, osinfo.CAP_SYS_MODULE)
            and reader.exists(f"/lib/modules/{running}"),
            "clock_settable": osinfo.has_cap(caps, osinfo.CAP_SYS_TIME),
            "swap_controllable": own_kernel and osinfo.has_cap(caps, osinfo.CAP_SYS_ADMIN),
            "memlock_raisable": (memlock or {}).get("hard") == "unlimited"
            or osinfo.has_cap(caps, osinfo.CAP_SYS_RESOURCE),
        },
        "boot": boot_state(reader, identity["family"], kernels, params["grub_inputs"], params["initramfs_inputs"]),
        "swap": {
            "active": osinfo.parse_swaps(reader.read("/proc/swaps", "")),
            "fstab": osinfo.fstab_swap_entries(reader.read("/etc/fstab", "")),
        },
        "kernel_modules": module_states(reader, running, params["kernel_modules"]),
        "sysctl": sysctl,
        "units": unit_states(reader, params["units"]),
        "limits": {
            "memlock": memlock,
            "systemd_default_memlock": systemd_default_memlock(reader),
        },
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "sysctl_keys": {"type": "list", "elements": "str", "default": [], "no_log": False},
            "kernel_modules": {"type": "list", "elements": "str", "default": []},
            "units": {"type": "list", "elements": "str", "default": []},
            "grub_inputs": {"type": "list", "elements": "path", "default": []},
            "initramfs_inputs": {"type": "list", "elements": "path", "default": []},
            "package_names": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    facts = gather(HostReader(module), module.params)
    module.exit_json(changed=False, ansible_facts={"gpuops_os": facts})


if __name__ == "__main__":
    main()
