# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the acceptance stage collects on a node (module acceptance_read) and judges on the controller (acceptance):
the evidence files by name, and the paths and units both sides agree on. Kept apart so the node's payload does not
carry the controller's decisions."""

from __future__ import annotations

# The units read; fabric manager's unit has the same name in NVIDIA's deb and rpm packages.
UNITS = ("nvidia-persistenced.service", "nvidia-fabricmanager.service")
# The nccl_tests stage's kept measurements (roles/nccl_tests vars __nccl_tests_results).
NCCL_RESULTS = "/var/lib/gpuops/nccl_tests/results.json"
# What the rdma_fabric stage recorded (roles/rdma_fabric vars __rdma_fabric_state_file): the RoCE GID index among it.
RDMA_FABRIC_STATE = "/var/lib/gpuops/rdma_fabric/state.json"
# Every evidence file, by name, and what it holds.
FILES = {
    "nvidia-smi-query.xml": "nvidia-smi -q -x",
    "nvidia-smi-topo.txt": "nvidia-smi topo -m",
    "nvidia-smi-nvlink.txt": "nvidia-smi nvlink -s",
    "lspci.txt": "lspci -Dnn",
    "sysfs-pci.json": "/sys/bus/pci/devices (vendor, device, class), where lspci is not installed",
    "ibstat.txt": "ibstat",
    "sysfs-infiniband.json": "/sys/class/infiniband (adapters and ports)",
    "kernel-log.txt": "journalctl -k -b -o short-iso, else dmesg",
    "dkms-status.txt": "dkms status",
    "driver-files.json": "/proc/driver/nvidia/version, /sys/module/nvidia/version, the NVML library ldconfig finds",
    "systemd-units.txt": "systemctl show " + " ".join(UNITS),
    "packages.txt": "dpkg-query -W (or rpm -qa): every installed package with its version",
    "dmidecode.txt": "dmidecode -t system -t bios",
    "nccl-tests-results.json": NCCL_RESULTS,
    "rdma-fabric-state.json": RDMA_FABRIC_STATE,
    "perfquery.json": "perfquery -x -C <adapter> -P <port> of every active InfiniBand port, read twice",
    "ethtool.json": "ethtool -S <interface> of every active RoCE port, read twice (where the node has RoCE ports)",
    "rdma-link.txt": "rdma link show: the RoCE ports' interfaces sysfs did not name (where it was needed)",
    "dcgm-diag.json": "dcgmi diag -r <level> -j, where DCGM is installed",
    "cuda-check.txt": "the CUDA check program (roles/_common/files/cuda_check.cu) built with nvcc and run",
    "container-gpus.txt": "nvidia-smi -L in a container through containerd's nvidia runtime (ctr run)",
    # Made on the controller, beside the node's read (roles/acceptance tasks/judge.yml).
    "ib-write-bw.json": "ib_write_bw between node pairs: the run's members and every test's ends (the whole run's)",
    "kubernetes-node.json": "the node's Node object as the Kubernetes API returned it",
}
