# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance stage's fault dictionary: for every way a check can fail or not run, its severity and the next
action an operator takes, kept as data with the sources each rests on.

A check that ends FAIL or ERROR names one fault code here; the node's results carry the code, its severity and its
action. Xid events keep the action of the Xid catalog (xid_catalog.py) instead, which has its own sources.

Severities, worst first:

- critical: the node must not take work (a GPU gone, a memory row that could not be remapped, the NVLink fabric
  down);
- high: the node cannot do its job until the fault is fixed (a port down, the driver mismatched, a reset due);
- medium: the node works but below what it was bought for, or a fix waits for a reset;
- low: a check could not judge (a tool missing, a value not reported): rerun once the cause is fixed.
"""

from __future__ import annotations

SEVERITIES = ("low", "medium", "high", "critical")

SOURCES = {
    "nvidia_memory_error_management": (
        "NVIDIA, GPU Memory Error Management, 'Error Recovery and Response Flags', "
        "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html: 'This flag "
        "indicates that row-remapping will happen at the next GPU reset.' Its RMA policy ('the RMA criteria is met "
        "when the row-remapping failure flag is set and validated by the field diagnostic', section "
        "rma-policy-thresholds-for-row-remapping) was read as quoted in leptonai/gpud "
        "components/accelerator/nvidia/remapped-rows/remapped_rows.go at commit "
        "4a8de33a3f02e207f39e9023d67125592d599731, not on NVIDIA's page itself."
    ),
    "nvidia_smi_manual": (
        "NVIDIA, nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/index.html: remapped rows 'The "
        "GPU must be reset for the remapping to go into effect'; 'Volatile error counters track the number of errors "
        "detected since the last driver load'; PCIe 'The current link generation and width. These may be reduced "
        "when the GPU is not in use'; HW Power Brake Slowdown 'External Power Brake Assertion is triggered (e.g. by "
        "the system power supply)', HW Thermal Slowdown 'due to temperature being too high'; recovery action Reset "
        "'reset the GPU using nvidia-smi -r', Reboot 'Reboot the operating system'; 'Changes to ECC mode require a "
        "reboot'."
    ),
    "dcgm_errors": (
        "NVIDIA/DCGM dcgmlib/dcgm_errors.h and dcgmlib/src/dcgm_errors.c at commit "
        "72fa3feaa67d716a75323a8f47c34ff3ee73f824: VOLATILE_DBE_DETECTED (isolate) 'Drain the GPU and reset it or "
        "reboot the node'; ROW_REMAP_FAILURE (reset) 'unrecoverable memory hardware damage'; FALLEN_OFF_BUS 'Please "
        "re-seat the GPU, check for thermal and power issues ... run a field diagnostic'; ECC disabled 'Enable ECC "
        "memory by running nvidia-smi -i <gpuId> -e 1'; PERSISTENCE_MODE 'Enable persistence mode by running "
        "nvidia-smi -i <gpuId> -pm 1'; PCIE_WIDTH (config); thermal 'Verify that the cooling on this machine is "
        "functional'; GPU_EXPECTED_NVLINKS_UP 'Ensure Fabric Manager is running'; FABRIC_PROBE_STATE 'Ensure that the "
        "FabricManager is running without errors'."
    ),
    "nvml_header": (
        "NVIDIA's nvml.h as copied in NVIDIA/go-nvml gen/nvml/nvml.h at commit "
        "2f9e261fe40a7a1c54783d66805e8920564763b4: NVML_ERROR_LIB_RM_VERSION_MISMATCH 'RM detects a driver/library "
        "version mismatch'; NVML_ERROR_RESET_REQUIRED 'The GPU requires a reset before it can be used again'; retired "
        "pages 'pending retirement and need a reboot to fully retire'."
    ),
    "nvidia_persistence_daemon": (
        "NVIDIA, Driver Persistence, https://docs.nvidia.com/deploy/driver-persistence/persistence-daemon.html: "
        "'NVIDIA encourages customers to shift to this daemon approach at their earliest availability.'"
    ),
    "nvidia_fabric_manager": (
        "NVIDIA, Fabric Manager User Guide, https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/: "
        "the FM service 'checks the currently loaded kernel driver stack version for compatibility, and if the loaded "
        "driver stack version is not compatible, aborts the process'; CUDA initialization fails with "
        "cudaErrorSystemNotReady until FM has initialized the system. NVIDIA/yum-packaging-fabric-manager README.md "
        "at commit 423e29f614ce1c1b535b8110901efdd2710c7303: 'the version of fabricmanager must match the NVIDIA "
        "driver installed.'"
    ),
    "driver_mismatch_reboot": (
        "NVIDIA/nvidia-docker issue #365 (https://github.com/NVIDIA/nvidia-docker/issues/365), NVIDIA's flx42 on a "
        "driver/library version mismatch: 'you should probably just reboot your machine'; NVIDIA/nvidia-docker issue "
        "#182: unload the modules and load the installed ones, or reboot."
    ),
    "azure_health_checks": (
        "Azure/azurehpc-health-checks at commit 0e0a1ac26a64b32ac4dd7632a529638505d3314a: conf/nd96isr_h100_v5.conf "
        "and nd96isr_h200_v5.conf run check_gpu_count 8, check_nvlink_status, check_gpu_ecc, check_gpu_xid, "
        "check_ib_link_flapping; customTests/azure_gpu_vbios.nhc fails a node whose GPUs report more than one VBIOS "
        "version ('More than 1 VBIOS version found on GPUs!') or another than expected."
    ),
    "oci_ncclscout": (
        "Oracle's NCCL pair test, ncclscout.py, as kept in UncleMac66/nodenurse bin/ncclscout.py at commit 8b368a95: "
        "all_reduce between two hosts at a time, each pair's bus bandwidth against a threshold per GPU shape "
        "(H100 and H200 365, A100 185 GB/s); the bad nodes are then 'Retesting bad nodes with a known good node', "
        "the isolation Google's cluster health scanner also runs before it reports a node."
    ),
    "nvidia_health_validation": (
        "NVIDIA Health Validation check catalog, https://docs.nvidia.com/health-validation/reference/checks/: "
        "nvlink_active 'CRITICAL when inactive_count > max_inactive_nvlinks' and gpu_count 'CRITICAL when gpu_count "
        "!= expected_gpu_count', each with the action drain, then reset_gpu, restart_os, service_required."
    ),
    "nvsentinel_power_brake": (
        "NVIDIA/NVSentinel docs/runbooks/gpu-power-brake.md at commit 4df67df84a6d6674851fcf0c0b881c1d17fa27b5: a "
        "power brake 'is a facility, PDU, busbar or board-level power problem, so a node reboot does not resolve it'."
    ),
    "nvidia_ib_operations": (
        "NVIDIA, InfiniBand Cluster Operation and Maintenance Guide, 'List of Scenarios', Bad Link/Port, "
        "https://docs.nvidia.com/networking/display/IBClusterOpMainGuide/List+of+Scenarios: 'Pullout, clean, and "
        "reinsert the fiber', then 'Consider replacing the transceiver'; 'Review the firmware version of both the "
        "device and cable to ensure they are up to date.' No published minimum adapter firmware exists: the site "
        "sets its own (gpuops_hardware.firmware.hca_min)."
    ),
    "dcgm_diag_outputs": (
        "What dcgmi diag itself advises in its warnings, as captured in tests/fixtures/dcgm (NVIDIA/DCGM issues "
        "#253 and #254, NVIDIA/nccl-tests#264, nolebase/nolebase at commit "
        "15536367a9ae104aa139ac5e3978f7f2486416c5): 'Check DCGM and system logs for errors. Reset GPU. Restart "
        "DCGM. Rerun diagnostics.'; Targeted Power: 'Verify that the clock speeds and GPU utilization are high.'; "
        "thermal violations: 'Verify that the cooling on this machine is functional'. In nccl-tests#264 every GPU "
        "failed the GPU Memory test with 'Error using CUDA API cuInit' while nvidia-fabricmanager was not running."
    ),
    "cuda_runtime_errors": (
        "NVIDIA, CUDA Runtime API, Data types, enum cudaError "
        "(https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html): cudaErrorInsufficientDriver (35) "
        "'the installed NVIDIA CUDA driver is older than the CUDA runtime library ... Users should install an updated "
        "NVIDIA display driver'; cudaErrorNoDevice (100); cudaErrorDevicesUnavailable (46) 'all CUDA devices are busy "
        "or unavailable at the current time' (exclusive compute mode, or another process); cudaErrorECCUncorrectable "
        "(214); cudaErrorSystemNotReady (802) 'the system is not yet ready to start any CUDA work ... verify ... all "
        "required driver daemons are actively running'; cudaErrorSystemDriverMismatch (803) 'a mismatch between the "
        "versions of the display driver and the CUDA driver'."
    ),
    "nvidia_container_toolkit": (
        "NVIDIA Container Toolkit documentation, Installing the NVIDIA Container Toolkit, 'Configuring containerd' "
        "(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html): "
        "'sudo nvidia-ctk runtime configure --runtime=containerd' then 'sudo systemctl restart containerd'; "
        "Troubleshooting (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/troubleshooting.html)"
        " for nvidia-container-cli's initialization errors."
    ),
    "kubernetes_nodes": (
        "Kubernetes documentation, Nodes, 'Node status' (https://kubernetes.io/docs/reference/node/node-status/): "
        "'Ready: True if the node is healthy and ready to accept pods'; Schedule GPUs "
        "(https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/): GPUs are advertised as a schedulable "
        "resource (nvidia.com/gpu) by the vendor's device plugin, which 'you have to install'."
    ),
    "mlx5_ethtool_counters": (
        "Linux kernel, Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst, Physical Port "
        "Counters (type Error): link_down_events_phy 'In case this counter is increasing it may imply on port "
        "flapping. You may need to replace the cable/transceiver'; rx_pcs_symbol_err_phy 'symbol errors that wasn't "
        "corrected by FEC ... If this counter is increasing, it implies that the link between the NIC and the network "
        "is suffering from high BER, and that traffic is lost. You may need to replace the cable/transceiver'; "
        "rx_crc_errors_phy 'dropped received packets due to FCS (Frame Check Sequence) error'; rx_discards_phy 'the "
        "adapter is congested and cannot absorb the traffic coming from the network'; rx_oversize_pkts_phy 'the peer "
        "connected to the adapter has a larger MTU configured'. A third-party optic a ConnectX-6 Dx would not power "
        "(kernel log 'Cable error, Power budget exceeded') showed as rx_crc_errors_phy and rx_symbol_err_phy in the "
        "millions (tests/fixtures/SOURCES.md, ethtool)."
    ),
    "rdma_fabric_roce": (
        "linux-rdma/perftest src/perftest_parameters.c at commit fdf716b1344cd9ddf07700a6a5a1dc3440d67891, usage: "
        "'-x, --gid-index=<index> Test uses GID with GID index (Default : IB - no gid . ETH - 0)': on RoCE perftest "
        "takes GID 0 unless told, a RoCE v1 or link-local entry that does not route between subnets; NVIDIA, NCCL "
        "environment variables, NCCL_IB_GID_INDEX 'Defines the Global ID index used in RoCE mode'. The rdma_fabric "
        "stage chooses the index (module_utils rdma_fabric.roce_gid_index: the RoCE v2 entry of an IPv4 address) and "
        "records it for NCCL."
    ),
    "ofa_error_counters": (
        "OpenFabrics Alliance wiki, Overview of Error Counters, "
        "https://www.openfabrics.org/mediawiki/index.php/Overview_of_Error_Counters: LinkDowned 'Usually associated "
        "with a node reboot. If not associated with a reboot, could be a failing connection (like port flapping)'; a "
        "malformed packet received 'indicates a problem somewhere else on the fabric'; large PortXmitWait 'indicate "
        "congestion. If the congestion gets really bad, you will see XmitDiscards'. rdma-core "
        "infiniband-diags/man/ibqueryerrors.8.in.rst at commit c2462bc3a6193587af1304ed73209e2192f1a9eb: 'The default "
        "threshold is zero (0)': any non-zero error counter is reported."
    ),
    "dmidecode_manual": (
        "dmidecode(8), https://man.archlinux.org/man/dmidecode.8.en: the DMI (SMBIOS) table holds 'serial numbers and "
        "BIOS revision', read 'without having to probe for the actual hardware', which 'also makes the presented "
        "information possibly unreliable'; dmidecode -s system-serial-number prints the system's serial alone. Boards "
        "leave vendor templates there (tests/fixtures/dmidecode: an ASUS board's serial reads 'System Serial "
        "Number'): the chassis label is what the rack manifest's serial is copied from."
    ),
}


def _fault(severity, action, source, title):
    return {"severity": severity, "action": action, "source": source, "title": title}


RESEAT_GPU = (
    "Drain the node and reboot it; if the GPU stays missing, reseat it (or its baseboard), check its power and "
    "cooling, run the field diagnostic and replace it (RMA) when that fails."
)
RERUN = "Fix what stopped the check (the reason says what), then rerun the acceptance stage on this node."
CABLE = "Pull out, clean and reinsert the port's cable, then replace the transceiver or cable"

FAULTS = {
    # GPUs
    "gpu_missing": _fault("critical", RESEAT_GPU, "dcgm_errors", "fewer GPUs than the profile"),
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
        "medium",
        "Drain the node; measure the link again under load; if it stays narrow, reseat the GPU and its riser or "
        "cable, and replace the part (RMA) when that does not help.",
        "dcgm_errors",
        "PCIe link narrower than its maximum",
    ),
    "ecc_uncorrectable": _fault(
        "critical",
        "Drain the node; reset the GPU (or reboot) and run the field diagnostic (DCGM level 3); replace the GPU (RMA) "
        "when errors return.",
        "dcgm_errors",
        "uncorrectable ECC errors since the driver loaded",
    ),
    "ecc_disabled": _fault(
        "high",
        "Enable ECC (nvidia-smi -i <gpu> -e 1) and reboot: a change of ECC mode takes effect at the next boot.",
        "dcgm_errors",
        "ECC disabled",
    ),
    "row_remap_pending": _fault(
        "high",
        "Drain the node and reset the GPU (nvidia-smi -r) or reboot, so the pending row remapping takes effect; "
        "then rerun.",
        "nvidia_memory_error_management",
        "row remapping pending",
    ),
    "row_remap_failure": _fault(
        "critical",
        "Drain the node and run the field diagnostic; the GPU meets NVIDIA's RMA criteria when it confirms the "
        "remapping failure: replace it.",
        "nvidia_memory_error_management",
        "row remapping failed",
    ),
    "retired_pages_pending": _fault(
        "high",
        "Drain the node and reset the GPU or reboot, so the pending page retirement takes effect.",
        "nvml_header",
        "page retirement pending",
    ),
    "gpu_reset_required": _fault(
        "high",
        "Drain the node and do the recovery action the driver names (Reset: nvidia-smi -r with no GPU process left; "
        "Reboot: reboot the node); if it returns, collect nvidia-bug-report.sh and contact NVIDIA support.",
        "nvidia_smi_manual",
        "the driver asks for a GPU reset or recovery",
    ),
    "nvlink_down": _fault(
        "critical",
        "Check that nvidia-fabricmanager runs; drain the node, reset the GPUs, then reboot; links still down need "
        "the vendor (baseboard or NVSwitch service).",
        "nvidia_health_validation",
        "NVLink links down",
    ),
    "fabric_not_ready": _fault(
        "critical",
        "Check that nvidia-fabricmanager runs at the driver's version (journalctl -u nvidia-fabricmanager); "
        "restart it, then reset the GPUs or reboot.",
        "nvidia_fabric_manager",
        "GPU not registered with the NVLink fabric",
    ),
    "clock_hw_slowdown": _fault(
        "high",
        "Check the node's cooling (fans, airflow, heatsink, inlet temperature) for a thermal slowdown, and the power "
        "supplies and their feed for a power brake (a reboot does not clear a power brake).",
        "nvsentinel_power_brake",
        "hardware clock slowdown at idle",
    ),
    "clock_sw_thermal": _fault(
        "medium",
        "Check the node's cooling: the driver slows the GPU down for its temperature while it is idle.",
        "dcgm_errors",
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
        "Reboot the node (or, with no GPU process left, unload and reload the NVIDIA modules) so the kernel module of "
        "the installed driver is the one loaded.",
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
        "critical",
        "Install nvidia-fabricmanager at the driver's version (the driver stage does on NVSwitch profiles).",
        "nvidia_fabric_manager",
        "fabric manager not installed",
    ),
    "fabricmanager_stopped": _fault(
        "critical",
        "Start nvidia-fabricmanager and read why it stopped (journalctl -u nvidia-fabricmanager).",
        "nvidia_fabric_manager",
        "fabric manager not running",
    ),
    "fabricmanager_version": _fault(
        "critical",
        "Install nvidia-fabricmanager at the loaded driver's version and restart it (the driver stage pins both); "
        "reboot first where the loaded driver is not the installed one.",
        "nvidia_fabric_manager",
        "fabric manager at another version than the driver",
    ),
    # DCGM diagnostics
    "dcgm_memory": _fault(
        "critical",
        "Drain the node; reset the GPU (nvidia-smi -r) or reboot so pending row remaps take effect, and run dcgmi "
        "diag -r 3 again; replace the GPU (RMA) when it fails again.",
        "dcgm_errors",
        "DCGM found a GPU memory fault",
    ),
    "dcgm_pcie": _fault(
        "high",
        "Check DCGM and system logs for errors, reset the GPU, restart DCGM (nv-hostengine) and rerun the "
        "diagnostic; reseat the GPU when the PCIe test fails again.",
        "dcgm_diag_outputs",
        "DCGM's PCIe test failed",
    ),
    "dcgm_stress": _fault(
        "high",
        "Verify cooling, power and clocks (this report's gpu.clocks), then rerun dcgmi diag -r 3; a GPU that fails "
        "again goes to the field diagnostic and RMA.",
        "dcgm_diag_outputs",
        "DCGM's stress or power test failed",
    ),
    "dcgm_deployment": _fault(
        "high",
        "Fix what the warning names (persistence mode, the driver and CUDA libraries, processes on the GPU, the "
        "environment) and rerun the acceptance stage.",
        "dcgm_diag_outputs",
        "DCGM's deployment checks failed",
    ),
    "dcgm_cuda": _fault(
        "high",
        "CUDA could not start the test: check fabric manager on NVSwitch systems and the driver (this report's driver "
        "checks), reset the GPU, restart DCGM and rerun the diagnostic.",
        "dcgm_diag_outputs",
        "CUDA could not run DCGM's test",
    ),
    "dcgm_failed": _fault("high", RERUN, "dcgm_diag_outputs", "a DCGM diagnostic test failed"),
    # CUDA
    "cuda_toolkit_missing": _fault(
        "high",
        "Run the cuda_toolkit stage on the node (it installs the toolkit under /usr/local/cuda), then rerun.",
        "cuda_runtime_errors",
        "no CUDA toolkit to build the check",
    ),
    "cuda_toolkit_broken": _fault(
        "high",
        "Rerun the cuda_toolkit stage: its verification compiles the same program and shows the compiler's error.",
        "cuda_runtime_errors",
        "the CUDA toolkit cannot build a program",
    ),
    "cuda_driver_too_old": _fault(
        "high",
        "Install a driver that supports the toolkit's CUDA version (the nvidia_driver stage's branch), or a toolkit "
        "the driver supports (cuda_toolkit_versions), then rerun.",
        "cuda_runtime_errors",
        "driver older than the CUDA runtime",
    ),
    "cuda_no_device": _fault(
        "critical",
        "Check that nvidia-smi lists the GPUs and the driver is loaded (this report's GPU and driver checks); reboot; "
        "if CUDA still finds none, drain the node and reseat or replace the GPUs.",
        "cuda_runtime_errors",
        "CUDA finds no GPU",
    ),
    "cuda_device_busy": _fault(
        "medium",
        "Set the default compute mode (nvidia-smi -c DEFAULT) and stop the processes holding the GPUs "
        "(nvidia-smi --query-compute-apps=pid,name --format=csv), then rerun.",
        "cuda_runtime_errors",
        "GPU busy or in exclusive compute mode",
    ),
    "cuda_failed": _fault(
        "high",
        "Read CUDA's error in the evidence; reset the GPU named (nvidia-smi -r -i <index>) with no process on it, or "
        "reboot, and rerun; drain and RMA a GPU that fails again.",
        "cuda_runtime_errors",
        "a CUDA kernel failed",
    ),
    # The container path
    "container_image_unavailable": _fault(
        "low",
        "Make the image reachable (mirror it for an air-gapped site and set acceptance_container_image to the copy), "
        "then rerun.",
        "nvidia_container_toolkit",
        "the GPU container's image could not be pulled",
    ),
    "container_gpu_runtime": _fault(
        "high",
        "Rerun the nvidia_container_toolkit stage (it configures containerd's nvidia runtime and checks it); read the "
        "runtime's error in the evidence (nvidia-container-cli: a driver not loaded, a library missing).",
        "nvidia_container_toolkit",
        "a GPU container could not start",
    ),
    "container_gpus_missing": _fault(
        "high",
        "Rerun the nvidia_container_toolkit stage and compare its CDI spec (nvidia-ctk cdi list) with nvidia-smi -L; "
        "regenerate the spec after a GPU or driver change (nvidia-ctk cdi generate).",
        "nvidia_container_toolkit",
        "a container sees fewer GPUs than the node",
    ),
    # Kubernetes
    "k8s_node_missing": _fault(
        "high",
        "Run the Kubernetes stage on the node (playbooks/k8s_node.yml): it joins it and waits for Ready; then rerun.",
        "kubernetes_nodes",
        "the node has not joined",
    ),
    "k8s_not_ready": _fault(
        "high",
        "Read why kubelet is not Ready (journalctl -u kubelet; the Node's conditions: network plugin, disk, memory "
        "pressure), fix it, then rerun.",
        "kubernetes_nodes",
        "the Node is not Ready",
    ),
    "k8s_labels": _fault(
        "medium",
        "Rerun the Kubernetes stage: it labels the Node from the node's GPUs and profile; schedulers select GPU nodes "
        "by these labels.",
        "kubernetes_nodes",
        "the Node's labels are wrong",
    ),
    "k8s_gpus_missing": _fault(
        "high",
        "Check the NVIDIA device plugin's pod on this node (its log lists the GPUs it found) and the container "
        "runtime's nvidia runtime (this report's container check); restart the plugin after a driver change.",
        "kubernetes_nodes",
        "Kubernetes offers fewer GPUs than the node has",
    ),
    # Kernel log
    "kernel_log_unreadable": _fault("low", RERUN, "nvidia_smi_manual", "kernel log unreadable"),
    # Fabric
    "port_down": _fault(
        "high",
        f"{CABLE}; check the switch port and the subnet manager.",
        "nvidia_ib_operations",
        "RDMA port not active",
    ),
    "port_bandwidth_low": _fault(
        "high",
        f"{CABLE}; check the port's link width and speed (mlxlink) and the adapter's PCIe link, then rerun the "
        "acceptance stage with this node and a node that passed.",
        "azure_health_checks",
        "ib_write_bw below the gate with a node that passed",
    ),
    "bandwidth_unisolated": _fault(
        "high",
        "Rerun the acceptance stage on this node together with nodes known good (--limit): no partner passed, so "
        "the test could not tell which node of the pair is at fault.",
        "azure_health_checks",
        "ib_write_bw below the gate, no good partner to isolate the fault",
    ),
    "port_rate_low": _fault(
        "high", f"{CABLE}: the link trained below its rate.", "nvidia_ib_operations", "RDMA port below its rate"
    ),
    "port_errors_rising": _fault(
        "high",
        f"{CABLE}; after the fix clear the counters (perfquery -R -C <adapter> -P <port>) and rerun the acceptance "
        "stage on this node.",
        "nvidia_ib_operations",
        "RDMA port error counters rising",
    ),
    "port_link_flapping": _fault(
        "high",
        f"The link went down and came back while the node was idle (flapping): {CABLE[0].lower()}{CABLE[1:]}; check "
        "the switch port's counters too, then clear them (perfquery -R) and rerun.",
        "ofa_error_counters",
        "RDMA port link flapping",
    ),
    "roce_gid_unknown": _fault(
        "low",
        "Run the rdma_fabric stage on this node (it records the RoCE GID index NCCL and perftest use), or set "
        "rdma_fabric_gid_index where the node's GID table holds several RoCE v2 entries, then rerun the acceptance "
        "stage.",
        "rdma_fabric_roce",
        "RoCE GID index not known",
    ),
    "roce_errors_rising": _fault(
        "high",
        f"{CABLE}, and check that the transceiver is on the adapter's supported list (mlx5_core logs 'Cable error' "
        "or 'Power budget exceeded' for one it will not drive); then rerun the acceptance stage on this node. The "
        "interface's counters are cleared only when its driver reloads: the check judges their rise, not their value.",
        "mlx5_ethtool_counters",
        "RoCE port error counters rising",
    ),
    "roce_link_flapping": _fault(
        "high",
        f"The Ethernet link went down and came back while the node was idle (flapping): {CABLE[0].lower()}"
        f"{CABLE[1:]}; check the switch port's counters and log too, then rerun the acceptance stage on this node.",
        "mlx5_ethtool_counters",
        "RoCE port link flapping",
    ),
    "port_link_layer": _fault(
        "medium",
        "Set the port's link layer (mlxconfig LINK_TYPE_P<n>) to the profile's, or fix the profile.",
        "nvidia_ib_operations",
        "RDMA port on another link layer",
    ),
    # Firmware
    "vbios_drift": _fault(
        "medium",
        "Update every GPU of the node to the site's qualified VBIOS (the vendor's firmware bundle), or list the "
        "versions the site accepts in the profile.",
        "azure_health_checks",
        "GPUs on different or unexpected VBIOS versions",
    ),
    "hca_firmware_old": _fault(
        "medium",
        "Update the adapter's firmware (mlxfwmanager or the vendor's bundle) to at least the site's minimum.",
        "nvidia_ib_operations",
        "RDMA adapter firmware below the minimum",
    ),
    # Identity
    "system_serial_mismatch": _fault(
        "high",
        "The machine answering as this node is not the one the rack manifest lists for its rack and U: read the "
        "serial on the chassis label in that slot and find it in the manifest. If the manifest is wrong (a typo, two "
        "rows swapped), correct its serial column; if the machine is in the wrong slot or its chassis was swapped, "
        "re-rack it so the manifest's machine answers at this address. Then rerun the acceptance stage on this node.",
        "dmidecode_manual",
        "system serial differs from the rack manifest",
    ),
    "system_serial_unreported": _fault(
        "low",
        "The firmware reports no system serial to compare: have the vendor's tool (or the BMC) write the chassis "
        "label's serial into the system's SMBIOS record and rerun the acceptance stage, or check the label against "
        "the manifest by hand and put inventory.system_serial in acceptance_optional for this node.",
        "dmidecode_manual",
        "system serial not reported",
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
    "nccl_pair_below_gate": _fault(
        "high",
        f"{CABLE}: NCCL across nodes leaves this node through its InfiniBand ports; check this report's fabric checks "
        "(ports, counters, ib_write_bw) and nvidia-peermem, then rerun the nccl_tests stage with "
        "nccl_tests_rerun=true on this node and nodes that passed.",
        "oci_ncclscout",
        "NCCL bus bandwidth between nodes below the gate, with a node that passed",
    ),
    "nccl_pair_failed": _fault(
        "high",
        "Read the pair's output in the evidence (NCCL WARN lines, mpirun's errors: SSH, a missing library, a rank "
        "that died) and rerun the nccl_tests stage with nccl_tests_rerun=true on this node and nodes that passed.",
        "oci_ncclscout",
        "NCCL between nodes failed with a node that passed",
    ),
    "nccl_pair_unisolated": _fault(
        "high",
        "Rerun the nccl_tests stage (nccl_tests_rerun=true) on this node together with nodes known good (--limit): "
        "no partner passed, so the pairs could not tell which node is at fault.",
        "oci_ncclscout",
        "NCCL between nodes failed, no good partner to isolate the fault",
    ),
    # Could not judge
    "not_reported": _fault("low", RERUN, "nvidia_smi_manual", "the tool did not report the value"),
    "tool_missing": _fault("low", RERUN, "nvidia_smi_manual", "the tool is not installed"),
    "tool_failed": _fault("low", RERUN, "nvidia_smi_manual", "the tool failed"),
}


def lookup(code):
    """The fault's {severity, action, source, title}; KeyError for a code this dictionary does not hold."""
    return FAULTS[code]
