# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance stage's fault dictionary: for every way a check can fail or not run, its severity and the next
action an operator takes, kept as data with the sources each rests on.

A check that ends FAIL or ERROR names one fault code here; the node's results carry the code, its severity and its
action. Xid events keep the action of the Xid catalog (xid_catalog.py) instead, which has its own sources.

Severities, worst first:

- critical: the node must not take work (a GPU fell off the bus, a memory row could not be remapped);
- high: the node cannot do its job until the fault is fixed (a GPU missing, a link degraded, the driver mismatched);
- medium: the node works but below what it was bought for, or a fix waits for a reset;
- low: a check could not judge (a tool missing, a value not reported): rerun once the cause is fixed.
"""

from __future__ import annotations

SEVERITIES = ("low", "medium", "high", "critical")

SOURCES = {
    "nvidia_memory_error_management": (
        "NVIDIA, GPU Memory Error Management (A100 and later, row remapping): "
        "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html: a pending remapping takes effect only "
        "after a GPU reset; a remapping failure means the GPU has no spare row left for the bank, and NVIDIA "
        "recommends the board be replaced (RMA)."
    ),
    "nvidia_page_retirement": (
        "NVIDIA, Dynamic Page Retirement: https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html: a page "
        "retirement is pending until the driver reloads (a reboot or GPU reset); the page is then blacklisted."
    ),
    "nvidia_smi_manual": (
        "NVIDIA, nvidia-smi documentation: https://docs.nvidia.com/deploy/nvidia-smi/index.html: Volatile ECC "
        "counts since the last driver load, Aggregate over the GPU's life; Persistence Mode keeps the driver loaded "
        "with no client (recommended through nvidia-persistenced); Clocks Event Reasons: HW Slowdown (thermal or "
        "power brake, by hardware), HW Thermal Slowdown, HW Power Brake Slowdown (an external power brake "
        "assertion, e.g. the power supply), SW Thermal Slowdown; GPU Reset Status and GPU Recovery Action."
    ),
    "nvidia_persistence_daemon": (
        "NVIDIA, Driver Persistence: https://docs.nvidia.com/deploy/driver-persistence/index.html: NVIDIA "
        "recommends nvidia-persistenced over the legacy persistence mode to keep GPUs initialized."
    ),
    "nvidia_fabric_manager": (
        "NVIDIA, Fabric Manager User Guide: https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/: on "
        "NVSwitch systems (HGX, DGX) GPUs join the NVLink fabric only once Fabric Manager runs; its version must "
        "match the installed driver's; the GPU's fabric state reads Completed once registration succeeded."
    ),
    "driver_mismatch_reboot": (
        "canonical/ubuntu-server-documentation pull request #369 (troubleshooting NVML 'Driver/library version "
        "mismatch'): the userspace driver was upgraded while the old kernel module stays loaded; reboot to load the "
        "module of the installed driver. Also NVIDIA/nvidia-docker issue #182: reload the modules or reboot."
    ),
    "azure_health_checks": (
        "Azure/azurehpc-health-checks at commit 0e0a1ac26a64b32ac4dd7632a529638505d3314a: conf/nd96isr_h100_v5.conf "
        "and nd96isr_h200_v5.conf run check_gpu_count 8, check_nvlink_status, check_gpu_ecc, check_gpu_xid, "
        "check_ib_link_flapping; customTests/azure_gpu_vbios.nhc fails a node whose GPUs report more than one VBIOS "
        "version or another than expected; azure_gpu_clock_throttling.nhc warns on any clock event reason other "
        "than idle or the software power cap."
    ),
    "infiniband_link": (
        "NVIDIA Networking, InfiniBand troubleshooting: a port that is not Active or trains below its rated speed "
        "points at the cable or transceiver (reseat, then swap it) or the switch port."
    ),
}


def _fault(severity, action, source, title):
    return {"severity": severity, "action": action, "source": source, "title": title}


RESEAT_GPU = (
    "Drain the node; check lspci for the GPU; reseat the GPU (or its baseboard) and reboot; if it stays missing, "
    "replace it (RMA)."
)
RERUN = "Fix what stopped the check (the reason says what), then rerun the acceptance stage on this node."

FAULTS = {
    # GPUs
    "gpu_missing": _fault("high", RESEAT_GPU, "azure_health_checks", "fewer GPUs than the profile"),
    "gpu_extra": _fault(
        "low",
        "Check the node's hardware profile: the node has more GPUs than the profile says.",
        "azure_health_checks",
        "more GPUs than the profile",
    ),
    "gpu_wrong_model": _fault(
        "high",
        "Check the node's hardware profile group; if the profile is right, the node carries other GPUs than ordered.",
        "azure_health_checks",
        "GPU model differs from the profile",
    ),
    "pcie_degraded": _fault(
        "high",
        "Drain the node; reseat the GPU and its riser or cable; if the link stays narrow, replace the part (RMA).",
        "nvidia_smi_manual",
        "PCIe link narrower than its maximum",
    ),
    "ecc_uncorrectable": _fault(
        "high",
        "Drain the node; reset the GPU (or reboot) and run DCGM diagnostics at level 3; replace the GPU (RMA) when "
        "errors return.",
        "nvidia_memory_error_management",
        "uncorrectable ECC errors since the driver loaded",
    ),
    "ecc_disabled": _fault(
        "medium",
        "Enable ECC (nvidia-smi -e 1 on each GPU) and reset the GPUs or reboot.",
        "nvidia_smi_manual",
        "ECC disabled",
    ),
    "row_remap_pending": _fault(
        "medium",
        "Drain the node and reset the GPU (nvidia-smi -r) or reboot, so the pending row remapping takes effect.",
        "nvidia_memory_error_management",
        "row remapping pending",
    ),
    "row_remap_failure": _fault(
        "critical",
        "Drain the node and replace the GPU (RMA): a memory row could not be remapped.",
        "nvidia_memory_error_management",
        "row remapping failed",
    ),
    "retired_pages_pending": _fault(
        "medium",
        "Drain the node and reset the GPU or reboot, so the pending page retirement takes effect.",
        "nvidia_page_retirement",
        "page retirement pending",
    ),
    "gpu_reset_required": _fault(
        "high",
        "Drain the node and do the recovery action the driver names (reset the GPU, reboot the node); if it "
        "returns, collect nvidia-bug-report.sh and contact NVIDIA support.",
        "nvidia_smi_manual",
        "the driver asks for a GPU reset or recovery",
    ),
    "nvlink_down": _fault(
        "high",
        "Drain the node; reset the GPUs (or reboot) and check again; links that stay down mean a baseboard or "
        "NVSwitch fault: contact the vendor (RMA).",
        "azure_health_checks",
        "NVLink links down",
    ),
    "fabric_not_ready": _fault(
        "high",
        "Check that nvidia-fabricmanager runs at the driver's version (journalctl -u nvidia-fabricmanager); "
        "restart it, then reset the GPUs or reboot.",
        "nvidia_fabric_manager",
        "GPU not registered with the NVLink fabric",
    ),
    "clock_hw_slowdown": _fault(
        "high",
        "Check the node's cooling (fans, airflow, inlet temperature) and power supplies; the hardware slows the "
        "GPU down while it is idle.",
        "nvidia_smi_manual",
        "hardware clock slowdown at idle",
    ),
    "clock_sw_thermal": _fault(
        "medium",
        "Check the node's cooling: the driver slows the GPU down for its temperature while it is idle.",
        "nvidia_smi_manual",
        "software thermal slowdown at idle",
    ),
    # Driver
    "driver_not_loaded": _fault(
        "high",
        "Run the driver stage on this node (or load the module: modprobe nvidia), then rerun the acceptance stage.",
        "nvidia_smi_manual",
        "no NVIDIA driver answers",
    ),
    "driver_mismatch": _fault(
        "high",
        "Reboot the node (or unload and reload the NVIDIA modules) so the kernel module of the installed driver "
        "is the one loaded.",
        "driver_mismatch_reboot",
        "loaded kernel module differs from the installed driver",
    ),
    "persistence_off": _fault(
        "medium",
        "Enable and start nvidia-persistenced (the driver stage does), then rerun.",
        "nvidia_persistence_daemon",
        "persistence mode off",
    ),
    "fabricmanager_missing": _fault(
        "high",
        "Install nvidia-fabricmanager at the driver's version (the driver stage does on NVSwitch profiles).",
        "nvidia_fabric_manager",
        "fabric manager not installed",
    ),
    "fabricmanager_stopped": _fault(
        "high",
        "Start nvidia-fabricmanager and read why it stopped (journalctl -u nvidia-fabricmanager).",
        "nvidia_fabric_manager",
        "fabric manager not running",
    ),
    "fabricmanager_version": _fault(
        "high",
        "Install nvidia-fabricmanager at the driver's version and restart it (the driver stage pins both).",
        "nvidia_fabric_manager",
        "fabric manager at another version than the driver",
    ),
    # Kernel log
    "kernel_log_unreadable": _fault("low", RERUN, "nvidia_smi_manual", "kernel log unreadable"),
    # Fabric
    "port_down": _fault(
        "high",
        "Reseat the port's cable or transceiver, then swap it; check the switch port and the subnet manager.",
        "infiniband_link",
        "RDMA port not active",
    ),
    "port_rate_low": _fault(
        "high",
        "Reseat the port's cable or transceiver, then swap it: the link trained below its rate.",
        "infiniband_link",
        "RDMA port below its rate",
    ),
    "port_link_layer": _fault(
        "medium",
        "Set the port's link layer (mlxconfig LINK_TYPE_P<n>) to the profile's, or fix the profile.",
        "infiniband_link",
        "RDMA port on another link layer",
    ),
    # Firmware
    "vbios_drift": _fault(
        "medium",
        "Update every GPU of the node to the same VBIOS (the vendor's firmware bundle), or accept the mix in the "
        "profile.",
        "azure_health_checks",
        "GPUs on different or unexpected VBIOS versions",
    ),
    "hca_firmware_old": _fault(
        "medium",
        "Update the adapter's firmware (mlxfwmanager / the vendor's bundle) to at least the profile's minimum.",
        "infiniband_link",
        "RDMA adapter firmware below the minimum",
    ),
    # NCCL
    "nccl_below_gate": _fault(
        "high",
        "Check NVLink, fabric manager and clocks (this report's other checks), run DCGM diagnostics at level 3, then "
        "rerun the nccl_tests stage with nccl_tests_rerun=true.",
        "azure_health_checks",
        "NCCL bus bandwidth below the gate",
    ),
    "nccl_failed": _fault(
        "high",
        "Read the benchmark's output in the evidence (errors, wrong results) and rerun the nccl_tests stage with "
        "nccl_tests_rerun=true.",
        "azure_health_checks",
        "NCCL benchmark failed",
    ),
    # Could not judge
    "not_reported": _fault("low", RERUN, "nvidia_smi_manual", "the tool did not report the value"),
    "tool_missing": _fault("low", RERUN, "nvidia_smi_manual", "the tool is not installed"),
    "tool_failed": _fault("low", RERUN, "nvidia_smi_manual", "the tool failed"),
}


def lookup(code):
    """The fault's {severity, action, source, title}; KeyError for a code this dictionary does not hold."""
    return FAULTS[code]
