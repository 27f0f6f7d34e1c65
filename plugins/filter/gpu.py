# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU catalog filters: what a GPU is, and which driver a CUDA toolkit needs, for preflight checks."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils import gpu_catalog


def gpu_arch(value):
    """The catalog entry for a product name (as nvidia-smi prints it) or a PCI device id; an unknown GPU is an error."""
    # Plain types: Ansible hands templates tagged str/int subclasses.
    if isinstance(value, str):
        value = str(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        value = int(value)
    entry = gpu_catalog.identify(value)
    if entry is None:
        raise AnsibleFilterError(f"gpuops.bringup.gpu_arch: {gpu_catalog.unknown_gpu(value)}")
    return entry


def cuda_min_driver(version, compatibility="toolkit"):
    """The minimum Linux driver version for a CUDA toolkit version; compare with the version test."""
    if isinstance(version, str):
        version = str(version)
    try:
        return gpu_catalog.cuda_min_driver(version, compatibility)
    except ValueError as exc:
        raise AnsibleFilterError(f"gpuops.bringup.cuda_min_driver: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"gpu_arch": gpu_arch, "cuda_min_driver": cuda_min_driver}
