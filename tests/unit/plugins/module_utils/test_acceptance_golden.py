"""Whole node documents of the acceptance stage for real captured evidence, compared with the reviewed copies in
golden/acceptance/: every check's status, reason, value, gate, fault, severity and action, the inventory and the
summary, word for word. These are the words an operator and a customer read; the other tests pin the decisions,
these pin what is said about them (and leave no message or value a mutation could change unseen).

After an intended change, write the copies again and review their diff like code:
    GPUOPS_GOLDEN=write pytest tests/unit/plugins/module_utils/test_acceptance_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_acceptance import (
    ETHTOOL_HEALTHY,
    H100,
    IN_CONTAINER,
    L40S,
    NODE,
    PERFQUERY_HEALTHY,
    PERFQUERY_SWITCH_ERRORS,
    PERFQUERY_SYMBOL_ERRORS,
    RAILS,
    ROCE_PORTS,
    bandwidth_record,
    evidence,
    fixture,
    run,
)

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance

GOLDEN = Path(__file__).with_name("golden") / "acceptance"
SMI = "nvidia_smi/h100-sxm-x8-565-{}.derived.xml"
NCCL_RUN = {"largest_busbw_gbps": 476.53, "errors": [], "results": [{"size": 4294967296}], "rc": 0,
            "measured_at": "2026-12-05T10:00:00Z"}  # fmt: skip

PERFQUERY_NO_DEVICE = "infiniband/perfquery/debian12-mlx5_0-missing"
PERFQUERY_MISSING = {
    port: run(
        fixture(f"{PERFQUERY_NO_DEVICE}.stdout"),
        int(fixture(f"{PERFQUERY_NO_DEVICE}.rc")),
        fixture(f"{PERFQUERY_NO_DEVICE}.stderr"),
    )
    for port in ("mlx5_0/1", "mlx5_1/1")
}
CUDA_OK = fixture("cuda/cuda-check-h100-x8.derived.txt")
CUDA_SEVEN = "".join(line for line in CUDA_OK.splitlines(keepends=True) if not line.startswith("device 3 ")).replace(
    "devices 8 ", "devices 7 "
)
CUDA_FAILED = CUDA_OK.replace(
    "device 5 0000:ab:00 NVIDIA H100 80GB HBM3 kernel ok",
    "device 5 0000:ab:00 failed: an illegal memory access was encountered, last value 0",
).replace("driver 12070 kernel ok", "driver 12070 failed 1")
DELL_DMIDECODE = run(fixture("dmidecode/dell-xe9680-system.txt"))
NCCL_DIED = {"largest_busbw_gbps": None, "errors": ["ArchLinux: Test NCCL failure all_reduce.cu:44 'unhandled cuda "
             "error / '"], "results": [], "rc": 1, "measured_at": "2026-12-05T10:00:00Z"}  # fmt: skip

# Driver 570.172.08 as captured, no fabric manager, two RoCE ports (their interfaces' counters at 0), no DCGM.
ROCE_READ = {port: run(fixture(ETHTOOL_HEALTHY)) for port in ROCE_PORTS}
L40S_EVIDENCE = {
    "query": "nvidia_smi/l40s-x4.derived.xml",
    "nvml": ("570.172.08",),
    "fm_package": None,
    "ibstat": "infiniband/ibstat/gpud-h100-roce-2port.derived.txt",
    "counters": ({}, {}),
    "bandwidth": bandwidth_record(nodes=2, roce=True),
    "replace": {"ethtool.json": run(json.dumps({"interval_s": 10.0, "samples": [ROCE_READ, ROCE_READ]}))},
    "dcgm": {"tool": "dcgmi", "missing": True},
    "cuda": IN_CONTAINER,
    "container": IN_CONTAINER,
}

# Case -> (profile, evidence arguments, required, optional).
CASES = {
    "h100-healthy": (H100, {}, None, ("nccl.single_node",)),
    "h100-gpu-missing": (H100, {"query": SMI.format("gpu3-missing")}, None, ()),
    "h100-pcie-x8": (H100, {"query": SMI.format("pcie-x8")}, None, ()),
    "h100-ecc": (H100, {"query": SMI.format("ecc")}, None, ()),
    "h100-remap": (H100, {"query": SMI.format("remap")}, None, ()),
    "h100-fabric-in-progress": (H100, {"query": SMI.format("fabric-in-progress")}, None, ()),
    "h100-slowdown": (H100, {"query": SMI.format("slowdown")}, None, ()),
    "h100-vbios-mix": (H100, {"query": SMI.format("vbios-mix")}, None, ()),
    "h100-xid79": (H100, {"log": "xid/dmesg-ctime-xid79-fallen-off-bus.log"}, None, ()),
    "h100-xid-gsp": (H100, {"log": "xid/dmesg-ctime-xid119-gsp.log"}, None, ()),
    "h100-port-down": (
        H100,
        {"ibstat": "infiniband/ibstat/gpud-h100-ib-bluefield3-mlx5_4-down.derived.txt"},
        None,
        (),
    ),
    "h100-port-hdr": (H100, {"ibstat": "infiniband/ibstat/gpud-h100-ib-bluefield3-mlx5_6-hdr.derived.txt"}, None, ()),
    "h100-symbol-errors-rising": (
        H100,
        {"counters": (PERFQUERY_HEALTHY, {"mlx5_0/1": PERFQUERY_HEALTHY, "mlx5_4/1": PERFQUERY_SYMBOL_ERRORS})},
        None,
        (),
    ),
    "h100-link-down-rising": (
        H100,
        {"counters": ({"mlx5_0/1": PERFQUERY_HEALTHY}, {"mlx5_0/1": PERFQUERY_SWITCH_ERRORS})},
        None,
        (),
    ),
    "h100-counters-history": (H100, {"counters": (PERFQUERY_SWITCH_ERRORS, PERFQUERY_SWITCH_ERRORS)}, None, ()),
    "h100-dcgm-row-remap": (
        H100,
        {"dcgm": ("dcgm/dcgm-jsonresulttests-r1-8gpu-3.1.0-gpu3-row-remap.derived.txt", 1)},
        None,
        (),
    ),
    "h100-dcgm-cuinit": (H100, {"dcgm": ("dcgm/nccl-tests-264-r3-h100-memory-fail-cuinit.txt", 1)}, ["gpu.dcgm"], ()),
    "h100-driver-mismatch": (
        H100,
        {
            "query": "nvidia_smi/driver-library-mismatch-nvml-version.txt",
            "query_rc": 18,
            "log": "xid/dmesg-loading-api-mismatch-570.log",
            "nvml": ("535.309.01",),
            "cuda": ("cuda/cuda-check-803-unsupported-driver.txt", 1, "running the program"),
            "container": ("nvidia_smi/driver-library-mismatch.txt", 18),
        },
        None,
        (),
    ),
    "h100-no-driver": (
        H100,
        {
            "query": "nvidia_smi/driver-unreachable.txt",
            "query_rc": 9,
            "nvml": (),
            "fm_package": None,
            "fm": "inactive",
            "fm_file": "",
            "cuda": ("cuda/matrixmul-100-no-device.txt", 1, "running the program"),
            "container": {**run("", 125, fixture("container/docker-nvml-driver-not-loaded.stderr.txt")), "step": "run"},
        },
        None,
        (),
    ),
    "h100-fabric-manager-stopped": (
        H100,
        {"fm": "failed", "cuda": ("cuda/bandwidthtest-802-system-not-initialized.txt", 1, "running the program")},
        None,
        (),
    ),
    "h100-cuda-driver-too-old": (
        H100,
        {"cuda": ("cuda/devicequery-35-insufficient-driver.txt", 1, "running the program")},
        None,
        (),
    ),
    # Port mlx5_4 moves half its rate: below the gate with n2, then with n3, which passed with n4.
    "h100-ib-bw-low": (H100, {"bandwidth": bandwidth_record(slow={("n1", "mlx5_4")})}, None, ()),
    "h100-container-lost-gpus": (
        H100,
        {"container": ("container/nvidia-smi-L-a10-t4-x4-host.txt", 0)},
        None,
        (),
    ),
    "h100-fabric-manager-other-version": (H100, {"fm_package": "565.57.02-1"}, None, ()),
    "h100-nccl-passed": (H100, {"nccl": {"node/all_reduce_perf": {"measurement": NCCL_RUN}}}, None, ()),
    "h100-nccl-below-gate": (
        {**H100, "gates": {"nccl_all_reduce_busbw_gbps": 480}},
        {"nccl": {"node/all_reduce_perf": {"measurement": NCCL_RUN}}},
        None,
        (),
    ),
    # systemctl as it answers in a container not booted with systemd.
    "h100-systemctl-unreadable": (
        H100,
        {
            "replace": {
                "systemd-units.txt": run(
                    "",
                    1,
                    "System has not been booted with systemd as init system (PID 1). "
                    "Can't operate.\nFailed to connect to bus: Host is down\n",
                )
            }
        },
        None,
        (),
    ),
    # The branch-named package and the unnamed one of a later version side by side (versions compared as numbers).
    "h100-fabric-manager-two-packages": (
        H100,
        {
            "replace": {
                "packages.txt": run(
                    "nvidia-fabricmanager-570\t570.86.10-1\tii \tinstall\n"
                    "nvidia-fabricmanager\t570.133.20-1\tii \tinstall\n"
                )
            }
        },
        None,
        (),
    ),
    "h100-ib-bw-record-unreadable": (
        H100,
        {"replace": {"ib-write-bw.json": run(json.dumps({"node": "n1"}))}},
        None,
        (),
    ),
    "h100-ib-bw-no-partner": (
        H100,
        {
            "replace": {
                "ib-write-bw.json": run(
                    json.dumps({"skipped": "no other node with an active InfiniBand port in this run"})
                )
            }
        },
        None,
        (),
    ),
    # One link slow between n1 and n2 only (a cable between them, say): each passed with other partners.
    "h100-ib-bw-one-pair-slow": (
        H100,
        {"bandwidth": bandwidth_record(slow_pairs={(("n1", "n2"), "mlx5_4")})},
        None,
        (),
    ),
    # Two nodes both slow on two rails: no partner that passed to tell which end is at fault.
    "h100-ib-bw-unisolated": (
        H100,
        {"bandwidth": bandwidth_record(nodes=2, slow={("n1", "mlx5_4"), ("n1", "mlx5_5")})},
        None,
        (),
    ),
    "h100-ib-bw-rail-missing": (
        H100,
        {"bandwidth": bandwidth_record(rails={"n1": [r for r in RAILS if r != "mlx5_9"]})},
        None,
        (),
    ),
    "h100-ib-bw-no-rails": (H100, {"bandwidth": bandwidth_record(rails={"n1": []})}, None, ()),
    "h100-counters-not-collected": (H100, {"replace": {"perfquery.json": run("")}}, None, ()),
    "h100-counters-no-ports": (
        H100,
        {"replace": {"perfquery.json": run(json.dumps({"interval_s": 10.0, "samples": [{}, {}]}))}},
        None,
        (),
    ),
    # perfquery as Debian 12's infiniband-diags answers for a device that is not there, on two ports.
    "h100-counters-unread": (H100, {"counters": (PERFQUERY_MISSING, PERFQUERY_MISSING)}, None, ()),
    "h100-xid13-31-109": (H100, {"log": "xid/dmesg-ctime-xid13-31-109.log"}, None, ()),
    "h100-xid43-31-94": (H100, {"log": "xid/dmesg-ctime-xid43-31-94.log"}, None, ()),
    "h100-xid32-31": (H100, {"log": "xid/dmesg-xid32-31.log"}, None, ()),
    "h100-fallen-off-bus-no-xid": (H100, {"log": "xid/dmesg-fallen-off-bus-no-xid.log"}, None, ()),
    "h100-gsp-timeout-no-xid": (H100, {"log": "xid/dmesg-gsp-timeout-no-xid.log"}, None, ()),
    # dmesg as an unprivileged container answers (kernel.dmesg_restrict).
    "h100-kernel-log-eperm": (
        H100,
        {
            "replace": {
                "kernel-log.txt": {
                    **run(
                        fixture("xid/dmesg-eperm.out"),
                        int(fixture("xid/dmesg-eperm.rc")),
                        fixture("xid/dmesg-eperm.err"),
                    ),
                    "source": "dmesg",
                }
            }
        },
        None,
        (),
    ),
    # The module in /sys is another version than the userland: an upgrade not yet rebooted into.
    "h100-driver-not-rebooted": (H100, {"sys_version": "560.35.03"}, None, ()),
    "h100-driver-two-userlands": (H100, {"nvml": ("565.57.01", "570.86.10")}, None, ()),
    "h100-driver-no-nvml": (H100, {"nvml": ()}, None, ()),
    # nvidia-smi's mismatch with no kernel line saying which module is loaded.
    "h100-driver-mismatch-unexplained": (
        H100,
        {"query": "nvidia_smi/driver-library-mismatch.txt", "query_rc": 18, "nvml": ("565.57.01", "570.86.10")},
        None,
        (),
    ),
    # The CUDA check's steps as cuda_program reports them.
    "h100-cuda-no-toolkit": (
        H100,
        {
            "cuda": {
                "cmd": None,
                "rc": None,
                "stdout": "",
                "stderr": "",
                "truncated": False,
                "step": "nvcc",
                "message": "/usr/local/cuda/bin/nvcc is missing or not executable: /usr/local/cuda is not a CUDA "
                "root with bin/nvcc",
            }
        },
        None,
        (),
    ),
    "h100-cuda-build-failed": (
        H100,
        {
            "cuda": {
                **run("", 1, "nvcc fatal   : Unsupported gpu architecture 'compute_35'\n"),
                "step": "compiling and linking",
                "message": "compiling and linking failed (exit 1): nvcc fatal   : Unsupported gpu architecture "
                "'compute_35'",
            }
        },
        None,
        (),
    ),
    "h100-cuda-no-summary": (H100, {"cuda": {**run(""), "step": None}}, None, ()),
    # cuda_check.cu's printf formats: device 3 gone from CUDA's count; device 5's kernel returning a wrong value.
    "h100-cuda-seven-devices": (H100, {"cuda": {**run(CUDA_SEVEN), "step": None}}, None, ()),
    "h100-cuda-device-failed": (H100, {"cuda": {**run(CUDA_FAILED, 1), "step": "running the program"}}, None, ()),
    # all_reduce_perf dying with the CUDA error of a captured run (tests/fixtures/nccl), and one both below the gate
    # and with an error.
    "h100-nccl-failed": (H100, {"nccl": {"node/all_reduce_perf": {"measurement": NCCL_DIED}}}, None, ()),
    "h100-nccl-below-gate-with-error": (
        H100,
        {
            "nccl": {
                "node/all_reduce_perf": {
                    "measurement": {**NCCL_RUN, "largest_busbw_gbps": 120.5, "errors": NCCL_DIED["errors"]}
                }
            }
        },
        None,
        (),
    ),
    "l40s": (L40S, L40S_EVIDENCE, None, ()),
    # The L40S node seeing the ports of other captures: a site's profile of four 100 Gb/s RoCE ports met, with the
    # capture's other port polling; ConnectX-4 Lx RoCE beside ConnectX-6 HDR InfiniBand.
    "l40s-roce-some-polling": (
        {**L40S, "infiniband": {"ports": 4, "rate_gbps": 100, "link_layer": "Ethernet"}},
        {**L40S_EVIDENCE, "ibstat": "infiniband/ibstat/gpud-h100-roce-some-down-with-polling-1.txt"},
        None,
        (),
    ),
    "l40s-roce-beside-hdr": (
        L40S,
        {**L40S_EVIDENCE, "ibstat": "infiniband/ibstat/nccl-tests-350-cx4lx-roce-cx6-hdr.txt"},
        None,
        (),
    ),
    # Ports of other captures on the H100: one port initializing (link up, no subnet manager); some down but eight
    # active.
    "h100-ib-initializing": (
        H100,
        {"ibstat": "infiniband/ibstat/azhpc-diagnostics-59-ibstat-mlx5_ib0-initializing.txt"},
        None,
        (),
    ),
    "h100-ib-some-down": (H100, {"ibstat": "infiniband/ibstat/gpud-h100-some-down-0.txt"}, None, ()),
    # The Node's GPUs for pods: a device plugin offering one fewer than the profile (a GPU it marked unhealthy), none
    # deployed.
    "h100-k8s-gpus-fewer": (
        H100,
        {"node": {**NODE, "status": {**NODE["status"], "allocatable": {"cpu": "224", "nvidia.com/gpu": "7"}}}},
        None,
        (),
    ),
    "h100-k8s-no-device-plugin": (
        H100,
        {"node": {**NODE, "status": {**NODE["status"], "allocatable": {"cpu": "224"}, "capacity": {"cpu": "224"}}}},
        None,
        (),
    ),
    # The GPU container: no ctr, an image that would not pull, the runtime refusing (ctr's captured cgroup error), an
    # exit with nothing said.
    "h100-container-no-ctr": (H100, {"container": {"tool": "ctr", "missing": True}}, None, ()),
    "h100-container-pull-failed": (H100, {"container": {**run("", 1), "step": "pull"}}, None, ()),
    "h100-container-cgroup-error": (
        H100,
        {"container": {**run("", 1, fixture("container/ctr-cgroup-devices-not-found.stderr.txt")), "step": "run"}},
        None,
        (),
    ),
    "h100-container-exited-silently": (H100, {"container": {**run("", 1), "step": "run"}}, None, ()),
    # The adapters' firmware against a minimum: 28.41.1000 on the eight ConnectX-7, 32.38.3056 on the BlueField-3.
    "h100-hca-at-minimum": ({**H100, "firmware": {"hca_min": "28.41.1000"}}, {}, None, ()),
    "h100-hca-below-minimum": ({**H100, "firmware": {"hca_min": "28.41.1001"}}, {}, None, ()),
    "h100-hca-below-minimum-fails": (
        {**H100, "firmware": {"hca_min": "28.41.1001", "hca_drift": "fail"}},
        {},
        None,
        (),
    ),
    "h100-hca-none-read": ({**H100, "firmware": {"hca_min": "28.41.1000"}}, {"ibstat": None}, None, ()),
    # The L40S node with an all_reduce_perf measurement: no gate is published for 4x L40S and the profile sets none.
    "l40s-nccl-no-gate": (
        L40S,
        {**L40S_EVIDENCE, "nccl": {"node/all_reduce_perf": {"measurement": NCCL_RUN}}},
        None,
        ("nccl.single_node",),
    ),
    # The rack manifest's serial (SYSTEM_SERIALS) against dmidecode's: the Dell capture's HSR8X04, the ASUS
    # capture's placeholder, no dmidecode.
    "h100-system-serial-matches": (H100, {"replace": {"dmidecode.txt": DELL_DMIDECODE}}, None, ()),
    "h100-system-serial-differs": (H100, {"replace": {"dmidecode.txt": DELL_DMIDECODE}}, None, ()),
    "h100-system-serial-placeholder": (
        H100,
        {"replace": {"dmidecode.txt": run(fixture("dmidecode/asus-placeholders.txt"))}},
        None,
        (),
    ),
    "h100-system-serial-no-dmidecode": (H100, {}, None, ()),
}
# Case -> the node's gpuops_system_serial, where it has one.
SYSTEM_SERIALS = {
    "h100-system-serial-matches": "hsr8x04",
    "h100-system-serial-differs": "HSR8X05",
    "h100-system-serial-placeholder": "SN0001",
    "h100-system-serial-no-dmidecode": "SN0001",
}


def document(case):
    hardware, arguments, required, optional = CASES[case]
    return acceptance.node_results(
        "n1",
        hardware,
        evidence(**arguments),
        required=required,
        optional=optional,
        rack="r1",
        run_id="20261205T000000Z",
        system_serial=SYSTEM_SERIALS.get(case),
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_node_document_says_word_for_word_what_was_reviewed(case):
    found = json.loads(json.dumps(document(case)))
    path = GOLDEN / f"{case}.json"
    if os.environ.get("GPUOPS_GOLDEN") == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    assert found == json.loads(path.read_text())


def test_every_golden_copy_has_its_case():
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(CASES)


# A profile's acceptance keys, each bad in one way (and the values at each boundary that pass), -> the problems
# hardware_problems says, word for word: golden/acceptance-inputs.json. (A gpu that is no mapping is inventory_schema's
# to refuse, before any check's applicability reads it: here only its NVLinks are looked for.)
INPUT_CASES = {
    "healthy": {},
    "gpu-not-a-mapping": {"gpu": "NVIDIA H100"},
    "nvlinks-0": {"gpu": {**H100["gpu"], "nvlinks": 0}},
    "nvlinks-18": {"gpu": {**H100["gpu"], "nvlinks": 18}},
    "nvlinks-19": {"gpu": {**H100["gpu"], "nvlinks": 19}},
    "nvlinks-negative": {"gpu": {**H100["gpu"], "nvlinks": -1}},
    "nvlinks-true": {"gpu": {**H100["gpu"], "nvlinks": True}},
    "nvlinks-quoted": {"gpu": {**H100["gpu"], "nvlinks": "18"}},
    "gates-not-a-mapping": {"gates": "460"},
    "gate-unknown": {"gates": {"nccl_busbw": 460}},
    "gate-0": {"gates": {"ib_write_bw_gbps": 0}},
    "gate-1": {"gates": {"ib_write_bw_gbps": 1}},
    "gate-fraction": {"gates": {"ib_write_bw_gbps": 0.5}},
    "gate-99999": {"gates": {"ib_write_bw_gbps": 99999}},
    "gate-100000": {"gates": {"ib_write_bw_gbps": 100000}},
    "gate-quoted": {"gates": {"nccl_all_reduce_busbw_gbps": "460"}},
    "gate-true": {"gates": {"nccl_pair_busbw_gbps": True}},
    "firmware-not-a-mapping": {"firmware": ["96.00.74.00.01"]},
    "firmware-unknown": {"firmware": {"bios": "1.2"}},
    "firmware-drift-words": {"firmware": {"vbios_drift": "error", "hca_drift": "ignore"}},
    "firmware-drift-valid": {"firmware": {"vbios_drift": "fail", "hca_drift": "warn"}},
    "vbios-not-a-list": {"firmware": {"vbios": "96.00.74.00.01"}},
    "vbios-empty-entry": {"firmware": {"vbios": [""]}},
    "vbios-unquoted": {"firmware": {"vbios": [96.0]}},
    "vbios-valid": {"firmware": {"vbios": ["96.00.74.00.01", "96.00.99.00.01"]}},
    "hca-min-unquoted": {"firmware": {"hca_min": 28.39}},
    "hca-min-one-part": {"firmware": {"hca_min": "28"}},
    "hca-min-valid": {"firmware": {"hca_min": "28.39.1002"}},
    "acceptance-not-a-mapping": {"acceptance": ["gpu.count"]},
    "acceptance-unknown-key": {"acceptance": {"optional": ["nccl.pairs"]}},
    "acceptance-required-unknown-id": {"acceptance": {"required": ["gpu.count", "gpu.temperature"]}},
    "acceptance-required-valid": {"acceptance": {"required": ["gpu.count", "driver.version"]}},
    "dcgm-level-0": {"acceptance": {"dcgm_level": 0}},
    "dcgm-level-4": {"acceptance": {"dcgm_level": 4}},
    "dcgm-level-5": {"acceptance": {"dcgm_level": 5}},
    "dcgm-level-negative": {"acceptance": {"dcgm_level": -1}},
    "dcgm-level-quoted": {"acceptance": {"dcgm_level": "3"}},
    "dcgm-level-true": {"acceptance": {"dcgm_level": True}},
    "several": {
        "gates": {"ib_write_bw_gbps": -1},
        "firmware": {"hca_drift": "no"},
        "acceptance": {"x": 1, "required": ["gpu.temperature"]},
    },
}


def test_every_bad_profile_key_gets_its_words():
    found = {case: acceptance.hardware_problems({**H100, **changes}) for case, changes in INPUT_CASES.items()}
    path = GOLDEN.with_name("acceptance-inputs.json")
    if os.environ.get("GPUOPS_GOLDEN") == "write":
        path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    assert found == json.loads(path.read_text())
