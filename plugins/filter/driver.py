# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA driver role's decisions: kernel module flavour, package plan, DKMS targets, what is in the way."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils import driver_plan
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping


def driver_flavor(pci, requested, branch, table, where):
    """{flavor, reason, problem}: the kernel module flavour for the GPUs pci_facts found."""
    if requested not in ("auto", *driver_plan.FLAVORS):
        raise AnsibleFilterError(
            f"gpuops.bringup.driver_flavor: requested must be auto, open or proprietary, got {requested!r}"
        )
    return driver_plan.choose_flavor(
        mapping(pci, "pci_facts' pci", "driver_flavor"),
        str(requested),
        str(branch),
        mapping(table, "the branch table", "driver_flavor"),
        str(where),
    )


def _manager(manager, name):
    if manager not in driver_plan.VERSIONS:
        raise AnsibleFilterError(f"gpuops.bringup.{name}: manager must be apt or dnf, got {manager!r}")
    return manager


def driver_plan_packages(info, branch_entry, flavor, pin, companions, where, branch, manager="apt"):
    """{track, version, package_version, kmod_package, dkms_module, packages, problem}: exact versions to install."""
    return driver_plan.choose_packages(
        mapping(branch_entry, "the branch's table entry", "driver_plan"),
        str(flavor),
        str(pin or ""),
        mapping(info, "package_info's packages", "driver_plan"),
        [str(c) for c in companions],
        str(where),
        str(branch),
        _manager(manager, "driver_plan"),
    )


def driver_kernels(os_state, info, kernels, manager="apt"):
    """{targets, headers, skipped, problem}: the kernels DKMS builds for and the headers that takes."""
    return driver_plan.kernel_targets(
        mapping(os_state, "os_facts' gpuops_os", "driver_kernels"),
        mapping(info, "package_info's packages", "driver_kernels"),
        mapping(kernels, "nvidia_driver_facts' kernels", "driver_kernels"),
        _manager(manager, "driver_kernels"),
    )


def driver_install_problems(plan, table, info, broken, companions, runfile, manager="apt"):
    """{purge, problem}: broken driver packages to purge first, or what stands in the way of the plan."""
    return driver_plan.install_problems(
        mapping(table, "the branch table", "driver_install_problems"),
        mapping(info, "package_info's packages", "driver_install_problems"),
        mapping(plan, "the package plan", "driver_install_problems"),
        [str(b) for b in broken],
        [str(c) for c in companions],
        bool(runfile),
        _manager(manager, "driver_install_problems"),
    )


def driver_table_packages(table):
    """Every package a branch table names (kernel module packages, firmware, userland), sorted."""
    return driver_plan.table_packages(mapping(table, "the branch table", "driver_table_packages"))[1]


def driver_package_problems(wanted, info):
    """Sentences for the packages not installed at their planned version, or not held."""
    return driver_plan.package_problems(
        mapping(wanted, "the planned packages", "driver_package_problems"),
        mapping(info, "package_info's packages", "driver_package_problems"),
    )


def driver_reboot(os_state, pci_facts, loaded, plan, flavor, targets):
    """{live, required, reasons}: whether the new driver loads now or needs a reboot."""
    return driver_plan.reboot_plan(
        mapping(os_state, "os_facts' gpuops_os", "driver_reboot"),
        mapping(pci_facts, "pci_facts' pci", "driver_reboot"),
        mapping(loaded, "nvidia_driver_facts' loaded", "driver_reboot"),
        mapping(plan, "the package plan", "driver_reboot"),
        str(flavor),
        [str(t) for t in targets],
    )


def driver_unload_outcome(result):
    """unloaded, in_use, error (or None, not run) of the task that ran modprobe --remove (its registered result)."""
    result = mapping(result, "the unload task's result", "driver_unload_outcome")
    if result.get("skipped"):
        return None
    rc = result.get("rc")
    return driver_plan.unload_outcome(int(rc) if rc is not None else None, str(result.get("stderr") or ""))


def driver_fabricmanager(index, info, plan, branch, where, manager="apt"):
    """{package, version, problem}: fabric manager's package at exactly the planned driver's version."""
    return driver_plan.choose_fabricmanager(
        mapping(index, "repository_index's packages", "driver_fabricmanager"),
        mapping(info, "package_info's packages", "driver_fabricmanager"),
        mapping(plan, "the package plan", "driver_fabricmanager"),
        str(branch),
        str(where),
        _manager(manager, "driver_fabricmanager"),
    )


def driver_dcgm(index, info, plan, version, architectures, where, manager="apt"):
    """{packages, cuda, problem}: DCGM's packages at the pinned version for the planned driver's CUDA major."""
    if not isinstance(architectures, list):
        raise AnsibleFilterError(f"gpuops.bringup.driver_dcgm: architectures must be a list, got {architectures!r}")
    return driver_plan.choose_dcgm(
        mapping(index, "repository_index's packages", "driver_dcgm"),
        mapping(info, "package_info's packages", "driver_dcgm"),
        mapping(plan, "the package plan", "driver_dcgm"),
        str(version),
        [str(a) for a in architectures],
        str(where),
        _manager(manager, "driver_dcgm"),
    )


def driver_repository_info(info, index, manager="apt"):
    """package_info's packages with the packages of repository_index's answer available at its versions only."""
    return driver_plan.repository_info(
        mapping(info, "package_info's packages", "driver_repository_info"),
        mapping(index, "repository_index's packages", "driver_repository_info"),
        _manager(manager, "driver_repository_info"),
    )


def driver_gpu_problems(gpu, fabric):
    """Sentences for gpu_facts' error findings and, where fabric manager is needed, GPUs not in the fabric."""
    return driver_plan.gpu_problems(mapping(gpu, "gpu_facts' gpu", "driver_gpu_problems"), bool(fabric))


class FilterModule:
    def filters(self):
        return {
            "driver_flavor": driver_flavor,
            "driver_plan": driver_plan_packages,
            "driver_kernels": driver_kernels,
            "driver_install_problems": driver_install_problems,
            "driver_table_packages": driver_table_packages,
            "driver_package_problems": driver_package_problems,
            "driver_reboot": driver_reboot,
            "driver_unload_outcome": driver_unload_outcome,
            "driver_fabricmanager": driver_fabricmanager,
            "driver_dcgm": driver_dcgm,
            "driver_gpu_problems": driver_gpu_problems,
            "driver_repository_info": driver_repository_info,
        }
