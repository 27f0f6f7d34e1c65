"""Every read-only module, run through Ansible on captured outputs: what Ansible makes of its result is the contract.

A module's own unit tests call its main() and read the dict it returns; Ansible then decides failed, changed and
skipped on its own rules (any result with an rc that is not 0 - None included - is failed unless it says failed:
false). So each case here is an inventory host of one ansible-playbook run on this machine: the module runs as
Ansible runs it, with stand-ins on PATH that replay captures of tools this machine lacks (nvidia-smi, lspci's GPU
server output, ibstat, dmesg, ib_write_bw, nvidia-ctk) and the real tools it has (dpkg, apt, systemctl, /proc).
Hostile cases feed the same modules cut, mutated and non-UTF-8 outputs: each ends ok or failed with the module's own
message, never a traceback (MODULE FAILURE) or an exception.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from signing import Signer, flat_repo

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SMI = FIXTURES / "nvidia_smi"
H100 = (SMI / "h100-sxm-x8-565.derived.xml").read_bytes()
DCGM = FIXTURES / "dcgm"
PERFQUERY = FIXTURES / "infiniband" / "perfquery" / "treydock-hca-edr-lid133.txt"
A10G = (SMI / "a10g-515.xml").read_bytes()
NCCL_OK = FIXTURES / "nccl" / "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt"
NCCL_CUDA_ERROR = FIXTURES / "nccl" / "nccl-tests-124-all_reduce-rtx3090-unhandled-cuda-error.txt"
IMAGE = "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"
# The first two lines of nvcc --version of Debian 13's nvidia-cuda-toolkit (test_cuda_toolkit.py's capture).
NVCC_12_4 = b"nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n"
PERFTEST = "-d mlx5_0 -D 5 -s 65536 -p 18515 -F --report_gbits 10.0.0.2"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CRASHED = ("Task failed: Module failed", "MODULE FAILURE", "Module result deserialization failed")

# Replays a capture for the tool it is installed as: commands.json beside it maps the argument string to a file and
# an exit status, as tests/sim's stand-ins do on bench nodes.
REPLAY = """\
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
tool, args = os.path.basename(sys.argv[0]), " ".join(sys.argv[1:])
entry = json.load(open(os.path.join(here, "commands.json"))).get(tool, {}).get(args)
if entry is None:
    sys.stderr.write(f"{tool} (replay): no capture for {args!r}\\n")
    sys.exit(2)
sys.stdout.buffer.write(open(os.path.join(here, entry["file"]), "rb").read())
sys.exit(entry.get("rc", 0))
"""


ROCE_CLIENT = FIXTURES / "perftest" / "ib-write-bw-roce400-h200-client.derived.txt"
ROCE_DIED = FIXTURES / "perftest" / "ib-write-bw-roce400-h200-sweep-failed.txt"
ROCE_RAILS = [("mlx5_0", True, 381.41), ("mlx5_3", False, 381.41)]


def counters_read_twice(item, ports):
    """perfquery.json holds two reads of every port, at least the interval apart, each the capture's text."""
    data = json.loads(item["stdout"])
    return (
        data["interval_s"] >= 1
        and [len(sample) for sample in data["samples"]] == [ports, ports]
        and all(read["rc"] == 0 and "SymbolErrorCounter" in read["stdout"]
                for sample in data["samples"] for read in sample.values())
    )  # fmt: skip


def interfaces_read_twice(item, netdevs):
    """ethtool.json holds two reads of every RoCE port's interface, at least a second apart."""
    data = json.loads(item["stdout"])
    return data["interval_s"] >= 1 and all(
        sample.keys() == netdevs.keys()
        and all(read["cmd"][1:] == ["-S", netdevs[port]] and "rx_crc_errors_phy" in read["stdout"]
                for port, read in sample.items())
        for sample in data["samples"]
    )  # fmt: skip


def ok(check=None):
    return ("ok", check)


def refused(text):
    return ("refused", text)


def either():
    return ("either", None)


def finding_codes(result, key):
    return sorted(f["code"] for f in result["ansible_facts"][key]["findings"])


CASES = {
    # gpu_facts
    "gpu_h100": (
        "gpu_facts",
        {"expected_count": 8},
        {"nvidia-smi": {"-q -x": H100, "topo -m": SMI / "h100-x4-nv6-4nic.topo.txt", "nvlink -s": b""}},
        ok(lambda r: r["ansible_facts"]["gpu"]["count"] == 8),
    ),
    "gpu_undecodable_process_name": (
        "gpu_facts",
        {},
        {
            "nvidia-smi": {
                "-q -x": A10G.replace(b"/usr/lib/xorg/Xorg", b"/usr/lib/xorg/X\xff\xfeorg"),
                "topo -m": b"",
                "nvlink -s": b"",
            }
        },
        ok(lambda r: r["ansible_facts"]["gpu"]["count"] == 1),
    ),
    "gpu_more_attached_than_listed": (
        "gpu_facts",
        {"topology": False, "nvlink": False},
        {"nvidia-smi": {"-q -x": H100.replace(b"<attached_gpus>8<", b"<attached_gpus>9<")}},
        ok(lambda r: finding_codes(r, "gpu") == ["gpus_not_listed"]),
    ),
    "gpu_truncated": (
        "gpu_facts",
        {},
        {"nvidia-smi": {"-q -x": H100[: len(H100) // 3]}},
        refused("nvidia-smi -q -x output is not well-formed XML"),
    ),
    "gpu_garbage": (
        "gpu_facts",
        {},
        {"nvidia-smi": {"-q -x": bytes(range(256)) * 4}},
        refused("nvidia-smi -q -x output"),
    ),
    "gpu_endless_number": (
        "gpu_facts",
        {"topology": False, "nvlink": False},
        {"nvidia-smi": {"-q -x": H100.replace(b"<total>81559 MiB", b"<total>" + b"9" * 400 + b" MiB", 1)}},
        ok(lambda r: r["ansible_facts"]["gpu"]["devices"][0]["memory_total_mib"] is None),
    ),
    "gpu_driver_unreachable": (
        "gpu_facts",
        {},
        {"nvidia-smi": {"-q -x": (SMI / "driver-unreachable.txt", 9)}},
        ok(lambda r: finding_codes(r, "gpu") == ["driver_unreachable"]),
    ),
    # pci_facts
    "pci_hgx": (
        "pci_facts",
        {},
        {"lspci": {"-Dnn": FIXTURES / "pci" / "hgx-h100-x8-cx7.derived.txt"}},
        ok(lambda r: len(r["ansible_facts"]["pci"]["gpus"]) == 8),
    ),
    "pci_cut_mid_device": (
        "pci_facts",
        {},
        {"lspci": {"-Dnn": (FIXTURES / "pci" / "hgx-h100-x8-cx7.derived.txt").read_bytes()[:-25]}},
        ok(lambda r: finding_codes(r, "pci") == ["lspci_lines_unread"]),
    ),
    "pci_not_lspci_nn": (
        "pci_facts",
        {},
        {"lspci": {"-Dnn": FIXTURES / "pci" / "gpud-gb200.lspci.txt"}},
        refused("lspci printed 87 line(s) without a device address"),
    ),
    # ib_facts (the empty sysfs_root stands for a container's: ibstat fills the ports, as on the bench)
    "ib_ndr": (
        "ib_facts",
        {"expected_active_ports": 8, "expected_link_layer": "InfiniBand", "sysfs_root": "{case}/sys"},
        {"ibstat": {"": FIXTURES / "infiniband" / "ibstat" / "gpud-h100-ib-bluefield3-all-active-2.txt"}},
        ok(lambda r: r["ansible_facts"]["infiniband"]["findings"] is not None),
    ),
    "ib_blank_runs": (
        "ib_facts",
        {"sysfs_root": "{case}/sys"},
        {"ibstat": {"": b"CA 'mlx5_0'\n\tPort 1:\n\t\tRate:" + b" " * 200000 + b"x\n\t\tState: \xff\n"}},
        ok(),
    ),
    # xid_scan
    "xid_saved_log": (
        "xid_scan",
        {"path": str(FIXTURES / "xid" / "dmesg-ctime-xid79-fallen-off-bus.log")},
        {},
        ok(lambda r: r["summary"]["xid_counts"] == {"79": 1}),
    ),
    "xid_corrupt_gzip": (
        "xid_scan",
        {"path": "{case}/kern.log.gz"},
        {"files": {"kern.log.gz": b"\x1f\x8b\x08\x00" + bytes(range(100))}},
        refused("as a gzip-compressed kernel log: the compressed data is corrupt"),
    ),
    "xid_dmesg_undecodable": (
        "xid_scan",
        {"source": "dmesg"},
        {
            "dmesg": {
                "": b"[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=\xff\xfe, name=\xff, GPU has fallen off the bus.\n"
            }
        },
        ok(lambda r: r["events"][0]["xid"] == 79),
    ),
    # nccl_test: a finished benchmark is data, whatever its verdict or exit status
    "nccl_log_passing": (
        "nccl_test",
        {"log_path": str(NCCL_OK), "min_busbw_gbps": 400},
        {},
        ok(lambda r: r["passed"] is True and r["rc"] is None),
    ),
    "nccl_log_failing": ("nccl_test", {"log_path": str(NCCL_CUDA_ERROR)}, {}, ok(lambda r: r["passed"] is False)),
    "nccl_run_cuda_error": (
        "nccl_test",
        {"binary": "all_reduce_perf", "args": ["-g", "8"], "timeout": 0},
        {"all_reduce_perf": {"-g 8": (NCCL_CUDA_ERROR, 1)}},
        ok(lambda r: r["passed"] is False and r["rc"] == 1),
    ),
    "nccl_check_mode": (
        "nccl_test",
        {"binary": "all_reduce_perf", "args": ["-g", "8"]},
        {"all_reduce_perf": {}, "check_mode": True},
        ok(lambda r: r.get("skipped") is True),
    ),
    "nccl_log_hostile": (
        "nccl_test",
        {"log_path": "{case}/run.log"},
        {"files": {"run.log": b"1 2 3 4 5 6 7 8\n# Avg bus bandwidth : 1e400\n \xff inf inf inf\n"}},
        ok(lambda r: r["passed"] is False),
    ),
    # perftest_bw
    "perftest_run": (
        "perftest_bw",
        {"device": "mlx5_0", "server": "10.0.0.2"},
        {"ib_write_bw": {PERFTEST: FIXTURES / "perftest" / "perftest-273-write-bw-post-list-gbits.txt"}},
        ok(lambda r: r["ok"] is True and r["average_gbps"] == 0.48 and "RDMA_Write Post List BW Test" in r["output"]),
    ),
    # RoCE: every rail of a client with the node's GID index; the 400G RoCE sweep that died after its 65536-byte row
    # is no result, whatever its rows measured.
    "perftest_roce_rails": (
        "perftest_bw",
        {
            "rails": [{"device": "mlx5_0", "port": 18515}, {"device": "mlx5_3", "port": 18516}],
            "server": "10.0.0.2",
            "gid_index": 3,
            "duration": 5,
        },
        {
            "ib_write_bw": {
                "-d mlx5_0 -D 5 -s 65536 -p 18515 -F --report_gbits -x 3 10.0.0.2": ROCE_CLIENT,
                "-d mlx5_3 -D 5 -s 65536 -p 18516 -F --report_gbits -x 3 10.0.0.2": (ROCE_DIED, 1),
            }
        },
        ok(lambda r: [(x["device"], x["ok"], x["average_gbps"]) for x in r["rails"]] == ROCE_RAILS),
    ),
    "perftest_no_device": (
        "perftest_bw",
        {"device": "mlx5_0", "server": "10.0.0.2"},
        {"ib_write_bw": {PERFTEST: (FIXTURES / "perftest" / "debian12-no-device.stdout", 1)}},
        ok(lambda r: r["ok"] is False and r["exit_code"] == 1),
    ),
    # container_toolkit_facts (the version line in the format of the bench's nvidia-ctk stand-in)
    "ctk_facts": (
        "container_toolkit_facts",
        {},
        {
            "nvidia-ctk": {
                "--version": b"NVIDIA Container Toolkit CLI version 1.17.8\ncommit: 1\n",
                "cdi list": b"nvidia.com/gpu=0\nnvidia.com/gpu=all\n",
            }
        },
        ok(
            lambda r: (
                r["ansible_facts"]["container_toolkit"]["cdi_devices"] == ["nvidia.com/gpu=0", "nvidia.com/gpu=all"]
            )
        ),
    ),
    "ctk_facts_garbage": (
        "container_toolkit_facts",
        {},
        {"nvidia-ctk": {"--version": bytes(range(256)), "cdi list": b"\xff" * 1000}},
        ok(lambda r: r["ansible_facts"]["container_toolkit"]["version"] is None),
    ),
    # repository_index over file:// (a flat repository the test writes)
    "repo_index": (
        "repository_index",
        {"url": "file://{case}/repo", "names": ["libnccl2"]},
        {"files": {"repo/Packages.gz": gzip.compress(b"Package: libnccl2\nVersion: 2.22.3-1+cuda12.6\n\n")}},
        ok(lambda r: r["packages"] == {"libnccl2": ["2.22.3-1+cuda12.6"]}),
    ),
    "repo_index_signed": (
        "repository_index",
        {"url": "file://{case}/repo", "names": ["libnccl2"], "key_url": "file://{case}/key.asc"},
        {"files": lambda case_dir: signed_repo(case_dir, "repository")},
        ok(
            lambda r: (
                r["packages"] == {"libnccl2": ["2.22.3-1+cuda12.6"]} and r["signed_by"] == r["key_fingerprints"][0]
            )
        ),
    ),
    "repo_index_signed_by_another_key": (
        "repository_index",
        {"url": "file://{case}/repo", "names": ["libnccl2"], "key_url": "file://{case}/key.asc"},
        {"files": lambda case_dir: signed_repo(case_dir, "stranger")},
        refused("is not signed by the key file://"),
    ),
    "repo_index_corrupt": (
        "repository_index",
        {"url": "file://{case}/repo", "names": ["libnccl2"]},
        {"files": {"repo/Packages.gz": b"\x1f\x8b\x08\x00" + bytes(range(60))}},
        refused("is not a gzip-compressed package index: the compressed data is corrupt"),
    ),
    # acceptance_read: every tool's output is evidence, whatever it printed or returned; only its options fail it.
    "acceptance_simulated_h100": (
        "acceptance_read",
        {"counter_interval": 1, "link_layer": "InfiniBand"},
        {
            # Every active InfiniBand port of the ibstat capture; the Ethernet bond (mlx5_bond_0) is not read.
            "perfquery": {f"-x -C mlx5_{n} -P 1": PERFQUERY for n in (0, 1, 4, 5, 6, 7, 8, 9)},
            "dcgmi": {"diag -r 1 -j": FIXTURES / "dcgm" / "dcgm-jsonresulttests-r1-8gpu-3.1.0.txt"},
            "nvidia-smi": {
                "-q -x": H100,
                "topo -m": SMI / "h100-x8-8nic-sglang.topo.txt",
                "nvlink -s": SMI / "h100-sxm-x8-aws-p5.nvlink.txt",
            },
            "lspci": {"-Dnn": FIXTURES / "pci" / "hgx-h100-x8-cx7.derived.txt"},
            "ibstat": {"": FIXTURES / "infiniband" / "ibstat" / "gpud-h100-ib-bluefield3-all-active-2.txt"},
            "dmesg": {"": FIXTURES / "xid" / "dmesg-ctime-xid79-fallen-off-bus.log"},
            "journalctl": {"-k -b --no-pager -o short-iso": (FIXTURES / "xid" / "journalctl-no-entries.out", 0)},
        },
        ok(
            lambda r: (
                r["changed"] is False
                and r["evidence"]["nvidia-smi-query.xml"]["stdout"].startswith("<?xml")
                and r["evidence"]["nvidia-smi-nvlink.txt"]["rc"] == 0
                and r["evidence"]["kernel-log.txt"]["source"] == "dmesg"
                and r["evidence"]["kernel-log.txt"]["fallback"].startswith("journalctl returned no kernel messages")
                and counters_read_twice(r["evidence"]["perfquery.json"], 8)
                and "ethtool.json" not in r["evidence"]
                and '"DCGM GPU Diagnostic"' in r["evidence"]["dcgm-diag.json"]["stdout"]
            )
        ),
    ),
    # A RoCE node whose ports ibstat shows without their interfaces: rdma link show names them, ethtool reads them.
    "acceptance_simulated_roce": (
        "acceptance_read",
        {"counter_interval": 1, "link_layer": "Ethernet", "dcgm_level": 0},
        {
            "ibstat": {"": FIXTURES / "infiniband" / "ibstat" / "gpud-h100-roce-2port.derived.txt"},
            "rdma": {"link show": FIXTURES / "infiniband" / "rdma-link" / "l40s-roce-2port.derived.txt"},
            "ethtool": {
                f"-S {netdev}": FIXTURES / "ethtool" / "wirtee-cx6dx-eth5-grep-err.txt" for netdev in ("p1p1", "p1p2")
            },
        },
        ok(
            lambda r: (
                json.loads(r["evidence"]["perfquery.json"]["stdout"])["samples"] == [{}, {}]
                and r["evidence"]["rdma-link.txt"]["rc"] == 0
                and interfaces_read_twice(r["evidence"]["ethtool.json"], {"mlx5_0/1": "p1p1", "mlx5_3/1": "p1p2"})
            )
        ),
    ),
    "acceptance_driver_mismatch": (
        "acceptance_read",
        {},
        {
            "nvidia-smi": {"-q -x": (SMI / "driver-library-mismatch-nvml-version.txt", 18)},
            "dmesg": {"": b"[ 1.0] NVRM: API mismatch: \xff\xfe" + b"x" * 5000 + b"\n"},
        },
        ok(
            lambda r: (
                r["evidence"]["nvidia-smi-query.xml"]["rc"] == 18
                and r["evidence"]["nvidia-smi-nvlink.txt"] == {"skipped": "no GPU query"}
            )
        ),
    ),
    "acceptance_cut_outputs": (
        "acceptance_read",
        {"max_bytes": 4096},
        {
            "nvidia-smi": {"-q -x": H100, "topo -m": (b"", 3), "nvlink -s": (b"", 3)},
            "dmesg": {"": (FIXTURES / "xid" / "dmesg-ctime-xid119-gsp.log", 1)},
        },
        ok(
            lambda r: (
                r["evidence"]["nvidia-smi-query.xml"]["truncated"] is True
                and len(r["evidence"]["nvidia-smi-query.xml"]["stdout"]) == 4096
                and r["evidence"]["kernel-log.txt"]["rc"] == 1
            )
        ),
    ),
    # Where the machine running the tests has its own kernel (a VM) the CUDA check and the GPU container run: the
    # replayed nvcc has no capture of a compile (so that step fails, as data) and ctr lists the node's GPUs; in a
    # container both say why they did not run.
    "acceptance_cuda_and_container": (
        "acceptance_read",
        {"cuda_source": "int main() { return 0; }", "cuda_root": "{case}", "container_image": IMAGE, "dcgm_level": 0},
        {
            "nvcc": {"--version": NVCC_12_4},
            "ctr": {
                f"-n gpuops image check name=={IMAGE}": f"REF TYPE DIGEST STATUS SIZE UNPACKED\n{IMAGE} x\n".encode(),
                f"-n gpuops run --rm --runc-binary /usr/bin/nvidia-container-runtime --env NVIDIA_VISIBLE_DEVICES=all "
                f"--env NVIDIA_DISABLE_REQUIRE=1 {IMAGE} gpuops-acceptance-gpus nvidia-smi -L": FIXTURES
                / "container"
                / "nvidia-smi-L-h100-x8.derived.txt",
            },
        },
        ok(
            lambda r: (
                (
                    r["evidence"]["cuda-check.txt"].get("container") is True
                    and r["evidence"]["container-gpus.txt"].get("container") is True
                )
                or (
                    r["evidence"]["cuda-check.txt"]["step"] == "compiling and linking"
                    and "no capture for" in r["evidence"]["cuda-check.txt"]["stderr"]
                    and r["evidence"]["container-gpus.txt"]["rc"] == 0
                    and r["evidence"]["container-gpus.txt"]["step"] == "run"
                    and r["evidence"]["container-gpus.txt"]["stdout"].startswith("GPU 0: NVIDIA H100")
                )
            )
        ),
    ),
    # In check mode an image containerd lacks is not pulled (where the machine has its own kernel).
    "acceptance_check_mode_no_pull": (
        "acceptance_read",
        {"container_image": IMAGE, "dcgm_level": 0},
        {
            "ctr": {f"-n gpuops image check name=={IMAGE}": b"REF TYPE DIGEST STATUS SIZE UNPACKED\n"},
            "check_mode": True,
        },
        ok(
            lambda r: (
                r["evidence"]["container-gpus.txt"].get("container") is True
                or r["evidence"]["container-gpus.txt"]["skipped"].startswith("check mode: nvcr.io/nvidia/cuda")
            )
        ),
    ),
    "acceptance_check_mode": ("acceptance_read", {}, {"nvidia-smi": {}, "check_mode": True}, ok()),
    "acceptance_bad_option": ("acceptance_read", {"max_bytes": 10}, {}, refused("max_bytes must be 4096 or more")),
    "acceptance_no_dcgm": (
        "acceptance_read",
        {"dcgm_level": 0},
        {"dcgmi": {}},
        ok(lambda r: r["evidence"]["dcgm-diag.json"] == {"skipped": "dcgm_level is 0"}),
    ),
    "acceptance_dcgm_not_installed": (
        "acceptance_read",
        {},
        {"nvidia-smi": {}},
        ok(lambda r: r["evidence"]["dcgm-diag.json"] == {"tool": "dcgmi", "missing": True}),
    ),
    # Level 3 under its time limit (coreutils timeout, this machine's): the capture's status and text are the item's.
    "acceptance_dcgm_level_3": (
        "acceptance_read",
        {"dcgm_level": 3, "dcgm_timeout": 600},
        {"dcgmi": {"diag -r 3 -j": DCGM / "sagemaker-hc-r3-a10g-pass.txt"}},
        ok(
            lambda r: (
                r["evidence"]["dcgm-diag.json"]["cmd"][1:]
                == ["--kill-after=10", "600", "dcgmi", "diag", "-r", "3", "-j"]
                and r["evidence"]["dcgm-diag.json"]["rc"] == 0
                and "Targeted Stress" in r["evidence"]["dcgm-diag.json"]["stdout"]
            )
        ),
    ),
    "acceptance_dcgm_level_5": (
        "acceptance_read",
        {"dcgm_level": 5},
        {},
        refused("value of dcgm_level must be one of: 0, 1, 2, 3, 4, got: 5"),
    ),
    "acceptance_dcgm_timeout_short": (
        "acceptance_read",
        {"dcgm_timeout": 59},
        {},
        refused("dcgm_timeout must be 60 to 86400 seconds, got 59"),
    ),
    "acceptance_bad_interval": (
        "acceptance_read",
        {"counter_interval": 0},
        {},
        refused("counter_interval must be 1 to 600 seconds, got 0"),
    ),
    "perftest_bad_rails": (
        "perftest_bw",
        {"rails": [{"device": "mlx5_0", "port": 18515}, {"device": "mlx5_1", "port": 18515}]},
        {},
        refused("rails use a TCP port twice ([18515, 18515]): each rail needs its own"),
    ),
    # dcgm_diag: a failed diagnosis is data (not failed); no result at all fails the task with DCGM's words.
    "dcgm_diag_gpu1_fails": (
        "dcgm_diag",
        {"level": 3, "required": ["Targeted Power"]},
        {"dcgmi": {"diag -r 3 -j": (DCGM / "sagemaker-hc-r3-a10g-targeted-power-gpu1-fail.txt", 1)}},
        ok(lambda r: r["passed"] is False and r["failed_gpus"] == [1] and r["rc"] == 1 and r["changed"] is False),
    ),
    "dcgm_diag_json_passes": (
        "dcgm_diag",
        {"gpus": [0, 1, 2, 3, 4, 5, 6, 7]},
        {"dcgmi": {"diag -r 1 -j -i 0,1,2,3,4,5,6,7": DCGM / "dcgm-jsonresulttests-r1-8gpu-3.1.0.txt"}},
        ok(lambda r: r["passed"] is True and r["dcgm_version"] == "3.1.0" and len(r["tests"]) == 10),
    ),
    "dcgm_diag_log_path": (
        "dcgm_diag",
        {"log_path": "{case}/diag.txt"},
        {"files": {"diag.txt": (DCGM / "nolebase-r2-rtx3090-pcie-fail.txt").read_bytes()}, "check_mode": True},
        ok(lambda r: r["failed_gpus"] == [0] and r["driver_version"] == "530.30.02" and "cmd" not in r),
    ),
    "dcgm_diag_could_not_run": (
        "dcgm_diag",
        {"level": 3},
        {"dcgmi": {"diag -r 3 -j": (DCGM / "dcgm-254-r3-4.4.1-error-plugins.txt", 1)}},
        refused("DCGM gave no diagnostic result: Error: Unable to complete diagnostic for entities 0,1,2,3"),
    ),
    "dcgm_diag_not_installed": ("dcgm_diag", {}, {}, refused("dcgmi was not found on this host")),
    "dcgm_diag_check_mode": ("dcgm_diag", {}, {"dcgmi": {}, "check_mode": True}, either()),
    "dcgm_diag_bad_gpu": ("dcgm_diag", {"gpus": [-1]}, {}, refused("gpus must be GPU indexes 0 to 4095, got [-1]")),
    "dcgm_diag_unreadable_log": (
        "dcgm_diag",
        {"log_path": "{case}/none.json"},
        {},
        refused("cannot read log_path"),
    ),
    # The machine running the tests, as it is.
    "os_facts_here": ("os_facts", {"units": ["ssh.service"], "kernel_modules": ["nvidia"]}, {}, ok()),
    "package_info_here": ("package_info", {"name": ["dpkg", "no-such-package-x"], "manager": "apt"}, {}, ok()),
    "cuda_toolkit_facts_here": ("cuda_toolkit_facts", {"manager": "apt"}, {}, ok()),
    "nvidia_driver_facts_here": ("nvidia_driver_facts", {}, {}, ok()),
    "rdma_fabric_facts_here": ("rdma_fabric_facts", {}, {}, ok()),
}
MODULES = sorted({module for module, *_rest in CASES.values()})


def signed_repo(case_dir: Path, signed_by: str) -> dict:
    """A flat repository (repo/) and a key (key.asc, of "repository"), its Release signed by signed_by's key."""
    owner = Signer("repository")
    signer = owner if signed_by == "repository" else Signer(signed_by)
    files = flat_repo(case_dir / "build", signer, b"Package: libnccl2\nVersion: 2.22.3-1+cuda12.6\n\n")
    owner.close()
    if signer is not owner:
        signer.close()
    return {"key.asc": owner.key, **{f"repo/{name}": data for name, data in files.items()}}


def stage(case_dir: Path, tools: dict) -> bool:
    """The case's stand-ins and files under case_dir; True when it runs in check mode."""
    (case_dir / "bin").mkdir(parents=True)
    (case_dir / "sys").mkdir()
    commands = {}
    for tool, entries in tools.items():
        if tool == "check_mode":
            continue
        if tool == "files":
            # A callable makes its files at staging time (a signed repository needs gpg and the case's directory).
            for name, data in (entries(case_dir) if callable(entries) else entries).items():
                (case_dir / name).parent.mkdir(parents=True, exist_ok=True)
                (case_dir / name).write_bytes(data)
            continue
        commands[tool] = {}
        for index, (args, output) in enumerate(entries.items()):
            data, rc = output if isinstance(output, tuple) else (output, 0)
            data = data.read_bytes() if isinstance(data, Path) else data
            name = f"{tool}.{index}.out"
            (case_dir / "bin" / name).write_bytes(data)
            commands[tool][args] = {"file": name, "rc": rc}
        script = case_dir / "bin" / tool
        script.write_text(f"#!{sys.executable}\n{REPLAY}")
        script.chmod(0o755)
    (case_dir / "bin" / "commands.json").write_text(json.dumps(commands))
    return bool(tools.get("check_mode"))


def playbook() -> list:
    """One task per module, each running on the hosts whose case names it."""
    tasks = [
        {
            "name": f"Run {module}",
            f"gpuops.bringup.{module}": "{{ case_args }}",
            "when": f"case_module == '{module}'",
            "check_mode": "{{ case_check_mode }}",
            "register": "case_result",
        }
        for module in MODULES
    ]
    return [{"hosts": "all", "gather_facts": False, "environment": {"PATH": "{{ case_path }}"}, "tasks": tasks}]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("modules")
    hosts = {}
    for case, (module, args, tools, _expect) in CASES.items():
        case_dir = base / case
        check_mode = stage(case_dir, tools)
        filled = json.loads(json.dumps(args).replace("{case}", str(case_dir)))
        hosts[case] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "case_module": module,
            "case_args": filled,
            "case_check_mode": check_mode,
            "case_path": f"{case_dir / 'bin'}:{SYSTEM_PATH}",
        }
    (base / "inventory.json").write_text(json.dumps({"all": {"hosts": hosts}}))
    (base / "play.json").write_text(json.dumps(playbook()))
    proc = subprocess.run(
        ["ansible-playbook", "--inventory", str(base / "inventory.json"), str(base / "play.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
    )
    try:
        output = json.loads(proc.stdout)
    except json.JSONDecodeError as error:
        output = (proc.stdout + proc.stderr)[-3000:]
        raise AssertionError(f"no JSON from ansible-playbook ({error}):\n{output}") from error
    results = {}
    for task in output["plays"][0]["tasks"]:
        for host, result in task["hosts"].items():
            if result.get("skipped") and result.get("false_condition"):
                continue
            results[host] = result
    return results


@pytest.mark.parametrize("case", sorted(CASES))
def test_module_result_as_ansible_sees_it(run, case):
    _module, _args, _tools, (expect, detail) = CASES[case]
    result = run[case]
    shown = json.dumps(result, default=str)[-2500:]
    # Never a traceback. ansible-core 2.19 reports a module's unhandled exception as "Task failed: Module failed:
    # <the exception>" (a fail_json keeps the module's own message; both carry an "exception" key).
    assert not str(result.get("msg", "")).startswith(CRASHED), shown
    if expect == "ok":
        assert not result.get("failed"), shown
        assert detail is None or detail(result), shown
    elif expect == "refused":
        assert result.get("failed") is True, shown
        assert detail in result["msg"], shown
    else:
        assert not result.get("failed") or result.get("msg"), shown


def test_every_read_only_module_is_run():
    """A facts or read module added to the collection gets a case here."""
    read_only = {
        path.stem
        for path in (ROOT / "plugins" / "modules").glob("*.py")
        if path.stem.endswith(("_facts", "_scan", "_index", "_info", "_read"))
        or path.stem in ("nccl_test", "perftest_bw", "dcgm_diag")
    }
    assert read_only - set(MODULES) == set()
