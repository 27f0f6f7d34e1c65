# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA driver role's decisions: its preflight (every problem of a node at once), what verify and the upgrade
make of what they read."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import driver_plan, driver_preflight, driver_verify
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import fields, mapping, plain


def nvidia_driver_preflight(node, host, pci, values, controller, data):
    """{problems, branch, table, flavor, ...}: the variables, the node's OS release, GPUs and NVSwitches and the
    controller's files judged together, before any package source is read."""
    return driver_preflight.preflight(
        host=str(host),
        node=plain(mapping(node, "os_facts' gpuops_os", "nvidia_driver_preflight")),
        pci=plain(mapping(pci, "pci_facts' pci", "nvidia_driver_preflight")),
        values=plain(mapping(values, "the role's variables", "nvidia_driver_preflight")),
        controller=plain(mapping(controller, "what the controller holds", "nvidia_driver_preflight")),
        data=plain(mapping(data, "the role's data for the OS", "nvidia_driver_preflight")),
    )


def nvidia_driver_packages_preflight(resolved, host, reads, values, data):
    """{problems, plan, kernels, obstacles, reboot, upgrade, ...}: what the package sources carry and what the node
    has installed and loaded, judged together once nvidia_driver_preflight found no problem."""
    reads = plain(mapping(reads, "preflight's reads", "nvidia_driver_packages_preflight"))
    return driver_preflight.packages_preflight(
        host=str(host),
        node=mapping(reads.get("os"), "os_facts' gpuops_os", "nvidia_driver_packages_preflight"),
        pci=mapping(reads.get("pci"), "pci_facts' pci", "nvidia_driver_packages_preflight"),
        driver=mapping(reads.get("driver"), "nvidia_driver_facts' nvidia_driver", "nvidia_driver_packages_preflight"),
        packages=mapping(reads.get("packages"), "package_info's packages", "nvidia_driver_packages_preflight"),
        index=mapping(reads.get("repository"), "repository_index's result", "nvidia_driver_packages_preflight"),
        resolved=plain(mapping(resolved, "nvidia_driver_preflight's result", "nvidia_driver_packages_preflight")),
        values=plain(mapping(values, "the role's variables", "nvidia_driver_packages_preflight")),
        data=plain(mapping(data, "the role's data", "nvidia_driver_packages_preflight")),
    )


def nvidia_driver_table_packages(table):
    """Every package a branch table names (kernel module packages, firmware, userland), sorted."""
    return driver_plan.table_packages(mapping(table, "the branch table", "nvidia_driver_table_packages"))[1]


def nvidia_driver_package_problems(wanted, info):
    """Sentences for the packages not installed at their planned version, or not held."""
    return driver_plan.package_problems(
        mapping(wanted, "the planned packages", "nvidia_driver_package_problems"),
        mapping(info, "package_info's packages", "nvidia_driver_package_problems"),
    )


def nvidia_driver_unload_outcome(result):
    """unloaded, in_use, error (or None, not run) of the task that ran modprobe --remove (its registered result)."""
    result = mapping(result, "the unload task's result", "nvidia_driver_unload_outcome")
    if result.get("skipped"):
        return None
    rc = result.get("rc")
    return driver_plan.unload_outcome(int(rc) if rc is not None else None, str(result.get("stderr") or ""))


def nvidia_driver_gpu_problems(gpu, fabric):
    """Sentences for gpu_facts' error findings and, where fabric manager is needed, GPUs not in the fabric."""
    return driver_plan.gpu_problems(mapping(gpu, "gpu_facts' gpu", "nvidia_driver_gpu_problems"), bool(fabric))


def nvidia_driver_verify(reads, host, judged):
    """{failures, not_applicable, passed}: the node read again after converge against what preflight judged."""
    reads = fields(
        reads, "verify's reads", "nvidia_driver_verify", ("driver", "os", "packages", "gpu", "audit", "pci_gpus")
    )
    judged_keys = ("plan", "flavor", "kernels", "live", "fabricmanager", "dcgm", "persistenced", "services")
    judged = fields(judged, "what preflight judged", "nvidia_driver_verify", judged_keys)
    persistenced = mapping(judged.get("persistenced"), "nvidia-persistenced's state", "nvidia_driver_verify")
    return driver_verify.verify(
        host=str(host),
        plan=mapping(judged.get("plan"), "the plan", "nvidia_driver_verify"),
        flavor=str(judged.get("flavor")),
        kernels=mapping(judged.get("kernels"), "the kernels", "nvidia_driver_verify"),
        live=bool(judged.get("live")),
        fabricmanager=judged.get("fabricmanager"),
        dcgm=judged.get("dcgm"),
        persistenced={"wanted": bool(persistenced.get("wanted")), "unit": str(persistenced.get("unit"))},
        services=[str(unit) for unit in judged.get("services") or []],
        reads={
            "driver": mapping(reads.get("driver"), "nvidia_driver_facts' nvidia_driver", "nvidia_driver_verify"),
            "os": mapping(reads.get("os"), "os_facts' gpuops_os", "nvidia_driver_verify"),
            "packages": mapping(reads.get("packages"), "package_info's packages", "nvidia_driver_verify"),
            "gpu": mapping(reads.get("gpu"), "gpu_facts' gpu", "nvidia_driver_verify"),
            "audit": str(reads.get("audit") or ""),
            "pci_gpus": list(reads.get("pci_gpus") or []),
        },
    )


class FilterModule:
    def filters(self):
        return {
            "nvidia_driver_preflight": nvidia_driver_preflight,
            "nvidia_driver_packages_preflight": nvidia_driver_packages_preflight,
            "nvidia_driver_table_packages": nvidia_driver_table_packages,
            "nvidia_driver_package_problems": nvidia_driver_package_problems,
            "nvidia_driver_unload_outcome": nvidia_driver_unload_outcome,
            "nvidia_driver_gpu_problems": nvidia_driver_gpu_problems,
            "nvidia_driver_verify": nvidia_driver_verify,
        }
