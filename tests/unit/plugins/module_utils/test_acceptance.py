"""The acceptance stage's decisions, on evidence made of captured outputs (tests/fixtures/SOURCES.md): every check's
statuses with their boundaries, the verdict, the gates, and the input problems."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    acceptance,
    acceptance_faults,
    acceptance_pairs,
    hardware_profiles,
    kubernetes_node,
    perftest,
)

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
H100 = hardware_profiles.BUILTIN["hgx_h100_8gpu"]
L40S = hardware_profiles.BUILTIN["pcie_l40s_4gpu"]
NVML = "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.{}"
# systemctl show's format (a blank line between units), as the node side runs it.
UNITS = (
    "Id=nvidia-persistenced.service\nLoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n\n"
    "Id=nvidia-fabricmanager.service\nLoadState=loaded\nActiveState={fm}\nSubState=running\nUnitFileState={fm_file}\n"
)


def run(stdout, rc=0, stderr=""):
    return {"cmd": ["tool"], "rc": rc, "stdout": stdout, "stderr": stderr, "truncated": False}


def fixture(path):
    return (FIXTURES / path).read_text(errors="replace")


# The 8 active InfiniBand ports of the healthy H100 ibstat capture.
IB_PORTS = [f"mlx5_{n}/1" for n in (0, 1, 4, 5, 6, 7, 8, 9)]
PERFQUERY_HEALTHY = "infiniband/perfquery/treydock-hca-edr-lid133.txt"
PERFQUERY_SYMBOL_ERRORS = "infiniband/perfquery/treydock-hca-edr-lid133-symbol-errors.derived.txt"
PERFQUERY_SWITCH_ERRORS = "infiniband/perfquery/treydock-switch-edr-lid2052-errors.txt"


# acceptance_read's items of the CUDA check (capture, exit status, the step that failed) and of the GPU container
# (capture, exit status): both derived from the H100 capture, as the program and nvidia-smi -L print.
CUDA_HEALTHY = ("cuda/cuda-check-h100-x8.derived.txt", 0, None)
CONTAINER_HEALTHY = ("container/nvidia-smi-L-h100-x8.derived.txt", 0)
IN_CONTAINER = {"skipped": "this node's kernel is its container host's", "container": True}


# The rails of the healthy H100 ibstat capture, and ib_write_bw's reports on one of them: NDR's 392.34 Gb/s (client
# capture and the server's derived from it), or half of it.
RAILS = [f"mlx5_{n}" for n in (0, 1, 4, 5, 6, 7, 8, 9)]
NDR = {"client": "perftest/ib-write-bw-ndr-cx7-client-gbits.txt",
       "server": "perftest/ib-write-bw-ndr-server.derived.txt"}  # fmt: skip
HALF = {"client": "perftest/ib-write-bw-ndr-cx7-client-half-rate.derived.txt",
        "server": "perftest/ib-write-bw-ndr-server-half-rate.derived.txt"}  # fmt: skip
# The 4x L40S profile's RoCE rails and a 400G RoCE run (an H200 node's, GID index 3): 381.41 Gb/s both ends.
ROCE_RAILS = ["mlx5_0", "mlx5_3"]
ROCE_400 = {"client": "perftest/ib-write-bw-roce400-h200-client.derived.txt",
            "server": "perftest/ib-write-bw-roce400-server.derived.txt"}  # fmt: skip


# A Node object as the Kubernetes API returns it (the fields the checks read; the k8s_node stage's labels), with the
# NVIDIA device plugin's resource.
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"gpuops.io/hardware-profile": "hgx_h100_8gpu", "gpuops.io/gpu.count": "8",
                                          "kubernetes.io/hostname": "n1"}},
    "spec": {},
    "status": {
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status"}],
        "capacity": {"cpu": "224", "nvidia.com/gpu": "8"},
        "allocatable": {"cpu": "224", "nvidia.com/gpu": "8"},
        "nodeInfo": {"kubeletVersion": "v1.31.4"},
    },
}  # fmt: skip


NOT_JOINING = {"skipped": "gpuops_kubernetes_join is false: the node joins no cluster", "not_applicable": True}


def bw_run(capture):
    parsed = perftest.parse_write_bw(fixture(capture))
    return {"ok": True, "exit_code": 0, "average_gbps": parsed["average_gbps"], "messages": []}


def bandwidth_record(node="n1", nodes=4, slow=(), rails=None, passes=3, slow_pairs=(), roce=False):
    """The run's ib_write_bw record as the stage keeps it, its passes planned by acceptance_pairs: slow is the
    (node, rail)s whose end reports half the rate, slow_pairs the ((node, node), rail)s whose runs together do; rails
    the nodes' rails where they differ from RAILS. roce: the L40S nodes' two RoCE rails at GID index 3 and the 400G
    RoCE run's 381.41 Gb/s instead."""
    slow_pairs = {(frozenset(pair), rail) for pair, rail in slow_pairs}
    names = [f"n{i}" for i in range(1, nodes + 1)]
    fabric = {"fabric": "Ethernet", "gid_index": 3} if roce else {"fabric": "InfiniBand", "gid_index": None}
    members = [{"node": n, "rack": "r1", "rails": (rails or {}).get(n, ROCE_RAILS if roce else RAILS),
                "gate_gbps": 360 if roce else 380, **fabric, "problem": None} for n in names]  # fmt: skip
    healthy = ROCE_400 if roce else NDR
    entries = []
    for number in range(1, passes + 1):
        for roles in acceptance_pairs.plan(members, entries, number)["rounds"]:
            for client, role in roles.items():
                if role["role"] != "client":
                    continue
                server = role["partner"]
                pair = frozenset((client, server))
                entries.append({"pass": number, "client": client, "server": server, "rails": {
                    r["device"]: {end: bw_run((HALF if (host, r["device"]) in slow or (pair, r["device"]) in slow_pairs
                                               else healthy)[end])
                                  for end, host in (("client", client), ("server", server))}
                    for r in role["rails"]}})  # fmt: skip
    return {"node": node, "members": members, "entries": entries}


def perfquery(reads):
    """One read of every port: a capture for all of them, or {port: capture or evidence item}."""
    reads = reads if isinstance(reads, dict) else dict.fromkeys(IB_PORTS, reads)
    return {port: run(fixture(read)) if isinstance(read, str) else read for port, read in reads.items()}


def evidence(
    query="nvidia_smi/h100-sxm-x8-565.derived.xml",
    query_rc=0,
    nvlink="nvidia_smi/h100-sxm-x8-aws-p5.nvlink.txt",
    ibstat="infiniband/ibstat/gpud-h100-ib-bluefield3-all-active-2.txt",
    log="xid/dmesg-iso-clean.log",
    nvml=("565.57.01",),
    sys_version=None,
    dkms="",
    fm="active",
    fm_file="enabled",
    fm_package="565.57.01-1",
    nccl="pairs",
    counters=(PERFQUERY_HEALTHY, PERFQUERY_HEALTHY),
    interval=10.0,
    dcgm=("dcgm/dcgm-jsonresulttests-r1-8gpu-3.1.0.txt", 0),
    cuda=CUDA_HEALTHY,
    container=CONTAINER_HEALTHY,
    bandwidth=None,
    node=None,
    replace=None,
):
    """A node's acceptance_read evidence: by default the healthy simulated H100 node with driver 565.57.01 (the
    counters: each InfiniBand port read twice, both reads given as (first, second) evidence items or captures);
    replace: {file name: evidence item} for what the arguments do not shape."""
    items = {
        "nvidia-smi-query.xml": run(fixture(query), query_rc),
        "nvidia-smi-nvlink.txt": run(fixture(nvlink)) if nvlink else {"skipped": "no GPU query"},
        "nvidia-smi-topo.txt": {"skipped": "no GPU query"},
        "lspci.txt": run(fixture("pci/hgx-h100-x8-cx7.derived.txt")),
        "ibstat.txt": run(fixture(ibstat)) if ibstat else {"tool": "ibstat", "missing": True},
        "sysfs-infiniband.json": run(json.dumps({"files": {}, "dirs": {}, "counters": {}})),
        "kernel-log.txt": {**run(fixture(log)), "source": "dmesg"} if log else {"tool": "dmesg", "missing": True},
        "dkms-status.txt": run(dkms),
        "driver-files.json": run(
            json.dumps(
                {"proc_version": None, "sys_version": sys_version, "nvml_libraries": [NVML.format(v) for v in nvml]}
            )
        ),
        "systemd-units.txt": run(UNITS.format(fm=fm, fm_file=fm_file)),
        # os_facts' dpkg-query format: name, version, status, want.
        "packages.txt": run(
            f"nvidia-fabricmanager-565\t{fm_package}\tii \tinstall\nlibc6\t2.36-9\tii \tinstall\n" if fm_package else ""
        ),
        "dmidecode.txt": {"tool": "dmidecode", "missing": True},
        "nccl-tests-results.json": (
            run(json.dumps(pairs_results() if nccl == "pairs" else nccl))
            if nccl is not None
            else {"path": "x", "missing": True}
        ),
        "perfquery.json": run(json.dumps({"interval_s": interval, "samples": [perfquery(c) for c in counters]})),
        "dcgm-diag.json": run(fixture(dcgm[0]), dcgm[1]) if isinstance(dcgm, tuple) else dcgm,
        "cuda-check.txt": {**run(fixture(cuda[0]), cuda[1]), "step": cuda[2]} if isinstance(cuda, tuple) else cuda,
        "container-gpus.txt": (
            {**run(fixture(container[0]), container[1]), "step": "run"} if isinstance(container, tuple) else container
        ),
        "ib-write-bw.json": run(json.dumps(bandwidth_record() if bandwidth is None else bandwidth)),
        "kubernetes-node.json": (
            {**run(json.dumps([NODE if node is None else node])), "label_prefix": "gpuops.io"}
            if not (isinstance(node, dict) and ("rc" in node or "skipped" in node or not node))
            else node
        ),
    }
    return {**items, **(replace or {})}


def pair_entry(a, b, busbw=400.0, rc=0, number=1, errors=()):
    return {"pass": number, "nodes": [a, b], "measurement": {
        "largest_busbw_gbps": busbw, "errors": list(errors), "results": [{"size": 17179869184}], "rc": rc,
        "measured_at": "2026-12-05T09:00:00Z"}}  # fmt: skip


def pairs_results(entries=None, names=("n1", "n2"), gate=365):
    """A node's nccl_tests results with the pairs' record: by default n1 and n2 passed together."""
    members = [{"node": n, "rack": "rack_a", "address": n, "gpus": 8, "gate_gbps": gate} for n in names]
    entries = [pair_entry("n1", "n2")] if entries is None else entries
    return {"pairs/all_reduce_perf": {"inputs": {}, "measurement": {"members": members, "entries": entries}}}


def judge(hardware=H100, optional=("nccl.single_node",), **kwargs):
    return acceptance.node_results("n1", hardware, evidence(**kwargs), optional=optional)


def statuses(result):
    return {c["id"]: c["status"] for c in result["checks"]}


def check(result, check_id):
    return next(c for c in result["checks"] if c["id"] == check_id)


def test_a_healthy_h100_node_is_accepted_with_every_check_passed():
    """Every check passed but two: NCCL without a measurement (optional here), the serial without a manifest's."""
    result = judge()
    assert statuses(result) == dict.fromkeys(acceptance.CHECKS, "PASS") | {
        "nccl.single_node": "SKIPPED", "inventory.system_serial": "SKIPPED"}  # fmt: skip
    assert result["verdict"] == "accepted" and result["accepted"] is True
    assert result["counts"] == {"PASS": 25, "WARN": 0, "FAIL": 0, "ERROR": 0, "SKIPPED": 2}
    assert result["summary"] == "n1 (hgx_h100_8gpu): ACCEPTED (25 PASS, 2 SKIPPED)"
    assert result["gates"]["nccl_all_reduce_busbw_gbps"]["value"] == 460.0


def test_not_run_never_counts_as_passed():
    """nccl.single_node is required by default on a profile with a gate; with no measurement the node is
    incomplete, not accepted."""
    result = judge(optional=())
    assert check(result, "nccl.single_node")["status"] == "SKIPPED" and check(result, "nccl.single_node")["required"]
    assert result["verdict"] == "incomplete"


@pytest.mark.parametrize(
    ("query", "check_id", "status", "fault", "reason"),
    [
        ("h100-sxm-x8-565-gpu3-missing.derived.xml", "gpu.count", "FAIL", "gpu_missing",
         "nvidia-smi lists 7 GPU(s), the profile 8"),
        ("h100-sxm-x8-565-pcie-x8.derived.xml", "gpu.pcie", "FAIL", "pcie_degraded",
         "GPU 1 (00000000:2A:00.0) runs x8 of x16"),
        ("h100-sxm-x8-565-ecc.derived.xml", "gpu.ecc", "FAIL", "ecc_uncorrectable",
         "GPU 4 (00000000:9A:00.0) counts 3 uncorrectable error(s) since the driver loaded"),
        ("h100-sxm-x8-565-remap.derived.xml", "gpu.memory", "FAIL", "row_remap_failure",
         "GPU 6 (00000000:BA:00.0) failed to remap a memory row"),
        ("h100-sxm-x8-565-fabric-in-progress.derived.xml", "gpu.fabric", "FAIL", "fabric_not_ready",
         "GPU 0 (00000000:18:00.0) fabric state In Progress; GPU 1"),
        ("h100-sxm-x8-565-slowdown.derived.xml", "gpu.clocks", "FAIL", "clock_hw_slowdown",
         "clocks held down at idle by GPU 7 (00000000:DB:00.0): hw_slowdown, hw_thermal_slowdown"),
        ("h100-sxm-x8-565-vbios-mix.derived.xml", "inventory.vbios", "WARN", None,
         "the GPUs run 2 VBIOS versions: 96.00.74.00.01, 96.00.89.00.01"),
    ],
)  # fmt: skip
def test_each_captured_fault_ends_its_check(query, check_id, status, fault, reason):
    result = judge(query=f"nvidia_smi/{query}")
    found = check(result, check_id)
    assert (found["status"], found["fault"]) == (status, fault)
    assert found["reason"].startswith(reason)
    # No NCCL measurement, no manifest's serial: those two are SKIPPED on every node judge() makes.
    skipped = (check_id, "nccl.single_node", "inventory.system_serial")
    others = {i: s for i, s in statuses(result).items() if i not in skipped}
    assert set(others.values()) == {"PASS"}, others
    assert result["verdict"] == ("rejected" if status == "FAIL" else "accepted")


def test_a_pending_row_remap_is_a_fail_with_a_reset_when_no_remap_failed():
    hardware = copy.deepcopy(H100)
    state = acceptance.read_state(evidence(query="nvidia_smi/h100-sxm-x8-565-remap.derived.xml"))
    for device in state["gpu"]["query"]["devices"]:
        device["remapped_rows"]["failure"] = False
    found = acceptance.check_gpu_memory(state, hardware, {})
    assert (found["status"], found["fault"]) == ("FAIL", "row_remap_pending")
    assert found["reason"] == "GPU 2 (00000000:3A:00.0) has a row remapping pending"


def test_retired_pages_pending_fail_on_a_gpu_without_row_remapping():
    hardware = {**H100, "gpu": {**H100["gpu"], "count": 1, "model": "Tesla V100-PCIE-32GB", "nvswitch": False}}
    result = judge(hardware, query="nvidia_smi/v100-pcie-32gb-460-retired-pending.derived.xml")
    assert (check(result, "gpu.memory")["status"], check(result, "gpu.memory")["fault"]) == (
        "FAIL", "retired_pages_pending")  # fmt: skip


def test_the_vbios_policy_of_the_profile_decides_warn_or_fail():
    strict = {**H100, "firmware": {"vbios_drift": "fail"}}
    result = judge(strict, query="nvidia_smi/h100-sxm-x8-565-vbios-mix.derived.xml")
    assert check(result, "inventory.vbios")["status"] == "FAIL" and result["verdict"] == "rejected"
    pinned = {**H100, "firmware": {"vbios": ["96.00.99.00.01"]}}
    found = check(judge(pinned), "inventory.vbios")
    assert found["status"] == "WARN"
    assert found["reason"] == "96.00.74.00.01 not in the profile's list (96.00.99.00.01)"
    assert check(judge({**H100, "firmware": {"vbios": ["96.00.74.00.01"]}}), "inventory.vbios")["status"] == "PASS"


@pytest.mark.parametrize(
    ("minimum", "status"),
    [("28.41.999", "PASS"), ("28.41.1000", "PASS"), ("28.41.1001", "WARN"), ("32.38.3056", "WARN")],
)
def test_hca_firmware_at_the_minimum_passes_and_one_below_does_not(minimum, status):
    """The capture's adapters run 28.41.1000 (ConnectX-7) and 32.38.3056 (BlueField-3)."""
    found = check(judge({**H100, "firmware": {"hca_min": minimum}}), "inventory.hca_firmware")
    assert found["status"] == status
    strict = check(judge({**H100, "firmware": {"hca_min": minimum, "hca_drift": "fail"}}), "inventory.hca_firmware")
    assert strict["status"] == ("PASS" if status == "PASS" else "FAIL")


@pytest.mark.parametrize(("links", "status"), [(17, "PASS"), (18, "PASS"), (19, "FAIL")])
def test_nvlink_needs_the_profiles_links_on_every_gpu(links, status):
    found = check(judge({**H100, "gpu": {**H100["gpu"], "nvlinks": links}}), "gpu.nvlink")
    assert found["status"] == status
    if status == "FAIL":
        assert found["reason"].startswith("GPU 0 has 18 of 19 NVLinks active")


def test_nvlink_that_did_not_answer_is_an_error():
    found = check(judge(nvlink=None), "gpu.nvlink")
    assert (found["status"], found["reason"]) == ("ERROR", "nvidia-smi nvlink -s was not run: no GPU query")


@pytest.mark.parametrize(
    ("value", "status", "fault"),
    [(459.99, "FAIL", "nccl_below_gate"), (460.0, "PASS", None), (460.01, "PASS", None)],
)
def test_the_nccl_gate_boundary(value, status, fault):
    nccl = {"node/all_reduce_perf": {"inputs": {}, "measurement": {
        "largest_busbw_gbps": value, "errors": [], "results": [{"size": 17179869184}], "rc": 0,
        "measured_at": "2026-12-05T09:00:00Z"}}}  # fmt: skip
    found = check(judge(nccl=nccl, optional=()), "nccl.single_node")
    assert (found["status"], found["fault"], found["value"], found["gate"]) == (status, fault, value, 460.0)


def test_a_failed_nccl_run_is_a_fail_whatever_its_bandwidth():
    nccl = {"node/all_reduce_perf": {"measurement": {"largest_busbw_gbps": 480.0, "errors": ["#wrong results"],
                                                     "results": [{}], "rc": 1}}}  # fmt: skip
    found = check(judge(nccl=nccl), "nccl.single_node")
    assert (found["status"], found["fault"]) == ("FAIL", "nccl_failed")
    assert "the benchmark exited with return code 1" in found["reason"]


@pytest.mark.parametrize(
    ("busbw", "status", "fault"),
    [(364.99, "FAIL", "nccl_pair_below_gate"), (365.0, "PASS", None), (365.01, "PASS", None)],
)
def test_the_pair_gate_boundary(busbw, status, fault):
    """n1 with n2 (good: it passed with n3) at the given bandwidth."""
    entries = [pair_entry("n1", "n2", busbw), pair_entry("n2", "n3")]
    found = check(judge(nccl=pairs_results(entries, ("n1", "n2", "n3"))), "nccl.pairs")
    assert (found["status"], found["fault"], found["gate"]) == (status, fault, 365.0)
    assert found["value"][0] == {"pass": 1, "partner": "n2", "busbw_gbps": busbw, "passed": status == "PASS"}


def test_a_pair_that_failed_with_a_bad_partner_leaves_the_node_passed_or_warned():
    # n1 failed with n2, which passed nothing: n2's fault; n1 passed with n3.
    entries = [pair_entry("n1", "n2", 10.0), pair_entry("n1", "n3"), pair_entry("n2", "n4", 10.0, number=2)]
    names = ("n1", "n2", "n3", "n4")
    assert check(judge(nccl=pairs_results(entries, names)), "nccl.pairs")["status"] == "PASS"
    # n1 failed with n3, which passed with n4: the pair's fault, not either node's.
    entries = [pair_entry("n1", "n2"), pair_entry("n3", "n4"), pair_entry("n1", "n3", 10.0)]
    found = check(judge(nccl=pairs_results(entries, names)), "nccl.pairs")
    assert found["status"] == "WARN" and "with n3, which passed with others" in found["reason"]


def test_a_pair_failure_is_put_on_its_node_or_left_unisolated():
    entries = [pair_entry("n1", "n2"), pair_entry("n3", "n1", rc=1, errors=["NCCL WARN NET/IB : Got completion"])]
    found = check(judge(nccl=pairs_results(entries, ("n1", "n2", "n3"))), "nccl.pairs")
    assert found["status"] == "PASS"
    # The same record, judged on n3.
    state = {**acceptance.read_state(evidence(nccl=pairs_results(entries, ("n1", "n2", "n3")))), "node": "n3"}
    found = acceptance.check_nccl_pairs(state, H100, {"nccl_pair_busbw_gbps": 365})
    assert (found["status"], found["fault"]) == ("FAIL", "nccl_pair_failed")
    assert found["reason"].startswith("failed with n1, which passed with others: the benchmark exited with return")
    found = check(judge(nccl=pairs_results([pair_entry("n1", "n2", 100.0)])), "nccl.pairs")
    assert (found["status"], found["fault"]) == ("FAIL", "nccl_pair_unisolated")
    assert found["reason"].startswith("every pair failed (n2 100 GB/s), none with a node that passed: ")


@pytest.mark.parametrize(
    ("nccl", "gates", "status", "reason"),
    [
        ({}, None, "SKIPPED", "no pair measurement on the node"),
        ({"pairs/all_reduce_perf": {"measurement": []}}, None, "SKIPPED", "no pair measurement on the node"),
        ("pairs", {}, "ERROR", "no pair bus bandwidth gate for this profile"),
        ({"pairs/all_reduce_perf": {"measurement": {"members": 3, "entries": []}}}, None, "ERROR",
         "the pairs' record is unreadable"),
        (pairs_results([pair_entry("n2", "n3")], ("n2", "n3")), None, "SKIPPED", "the kept pairs did not include"),
        (pairs_results([], ("n1", "n2")), None, "SKIPPED", "the node was in no pair of the kept run"),
        (pairs_results([{"pass": 1, "nodes": ["n1", "n2"], "measurement": None, "why": "nccl_test failed: x"}]), None,
         "ERROR", "no pair with this node could run: nccl_test failed: x"),
    ],
)  # fmt: skip
def test_pairs_that_cannot_be_judged(nccl, gates, status, reason):
    state = {**acceptance.read_state(evidence(nccl=nccl)), "node": "n1"}
    found = acceptance.check_nccl_pairs(state, H100, {"nccl_pair_busbw_gbps": 365} if gates is None else gates)
    assert found["status"] == status and found["reason"].startswith(reason), found


@pytest.mark.parametrize("junk", [[], {"node/all_reduce_perf": "x"}, {"node/all_reduce_perf": {"measurement": 3}}])
def test_a_results_file_without_a_measurement_is_skipped(junk):
    assert check(judge(nccl=junk), "nccl.single_node")["status"] == "SKIPPED"


def test_the_tool_versions_are_those_the_judged_runs_printed():
    measurement = {"largest_busbw_gbps": 480.0, "errors": [], "results": [{}], "rc": 0, "nccl_version": "2.21.5",
                   "tests_version": "2.13.10"}  # fmt: skip
    nccl = {"node/all_reduce_perf": {"measurement": measurement}}
    tools = judge(nccl=nccl)["inventory"]["tools"]
    # The healthy H100's DCGM run is NVIDIA's level-1 JSON of DCGM 3.1.0.
    assert tools == {"dcgm": "3.1.0", "nccl": "2.21.5", "nccl_tests": "2.13.10"}


@pytest.mark.parametrize(
    "nccl",
    [{}, [], {"node/all_reduce_perf": "x"}, {"node/all_reduce_perf": {"measurement": 3}},
     {"node/all_reduce_perf": {"measurement": {"nccl_version": 2.21, "tests_version": ""}}}],
)  # fmt: skip
def test_no_run_or_no_printed_version_is_none(nccl):
    tools = judge(nccl=nccl, dcgm={"tool": "dcgmi", "missing": True})["inventory"]["tools"]
    assert tools == {"dcgm": None, "nccl": None, "nccl_tests": None}


def test_the_driver_loaded_must_be_the_driver_installed():
    assert check(judge(nvml=("565.57.01",)), "driver.version")["status"] == "PASS"
    found = check(judge(nvml=("570.86.15",)), "driver.version")
    assert (found["status"], found["fault"]) == ("FAIL", "driver_mismatch")
    assert found["reason"] == ("loaded 565.57.01 (from nvidia-smi (NVML)), installed 570.86.15: the installed driver "
                               "is not the one running")  # fmt: skip
    # The module's own version wins over NVML's.
    found = check(judge(sys_version="560.35.03\n"), "driver.version")
    assert found["status"] == "FAIL" and found["value"]["loaded"] == "560.35.03"
    # DKMS built another version for the next boot.
    dkms = "nvidia-current/570.86.15, 6.1.0-50-amd64, x86_64: installed\n"
    assert check(judge(dkms=dkms), "driver.version")["status"] == "FAIL"
    found = check(judge(nvml=()), "driver.version")
    assert (found["status"], found["fault"]) == ("ERROR", "not_reported")


def test_an_upgrade_without_reboot_fails_the_driver_and_errors_the_gpu_checks():
    result = judge(query="nvidia_smi/driver-library-mismatch-nvml-version.txt", query_rc=18,
                   log="xid/dmesg-loading-api-mismatch-570.log", nvml=("535.309.01",))  # fmt: skip
    found = check(result, "driver.version")
    assert found["reason"] == ("the kernel refused a client at 570.148.08: its loaded module is 570.148.06; "
                               "installed: 535.309.01")  # fmt: skip
    assert found["action"].startswith("Reboot the node")
    assert check(result, "gpu.count")["status"] == "ERROR"
    assert check(result, "gpu.count")["fault"] == "driver_mismatch"
    assert check(result, "gpu.xid")["status"] == "PASS"


def test_a_node_without_a_driver_still_gets_its_results():
    result = judge(query="nvidia_smi/driver-unreachable.txt", query_rc=9, nvml=(), fm_package=None, fm="inactive",
                   fm_file="")  # fmt: skip
    found = check(result, "gpu.count")
    assert (found["status"], found["fault"], found["value"]) == ("ERROR", "driver_not_loaded", {"gpus_on_pci_bus": 8})
    assert found["reason"].endswith("; lspci lists 8 NVIDIA GPU(s)")
    assert check(result, "driver.version")["status"] == "ERROR"
    assert result["inventory"]["gpus_on_pci_bus"][0] == "0000:1b:00.0"


def test_a_missing_nvidia_smi_is_an_error_naming_the_tool():
    items = evidence()
    items["nvidia-smi-query.xml"] = {"tool": "nvidia-smi", "missing": True}
    found = check(acceptance.node_results("n1", H100, items), "gpu.model")
    assert (found["status"], found["fault"]) == ("ERROR", "tool_missing")
    assert found["reason"].startswith("nvidia-smi is not installed on the node")


@pytest.mark.parametrize(
    ("fm", "fm_file", "package", "sys_version", "status", "fault"),
    [
        ("active", "enabled", "565.57.01-1", None, "PASS", None),
        ("active", "enabled", "570.86.15-1", None, "FAIL", "fabricmanager_version"),
        ("inactive", "enabled", "565.57.01-1", "565.57.01", "FAIL", "fabricmanager_stopped"),
        ("failed", "disabled", "565.57.01-1", None, "FAIL", "fabricmanager_stopped"),
        ("inactive", "enabled", "565.57.01-1", None, "WARN", None),
        ("inactive", "", None, None, "FAIL", "fabricmanager_missing"),
    ],
)
def test_fabric_manager(fm, fm_file, package, sys_version, status, fault):
    items = evidence(fm=fm, fm_file=fm_file, fm_package=package, sys_version=sys_version)
    if not fm_file:
        items["systemd-units.txt"] = run(UNITS.split("\n\n", maxsplit=1)[0] + "\n\nId=nvidia-fabricmanager.service\n"
                                         "LoadState=not-found\nActiveState=inactive\n")  # fmt: skip
    found = check(acceptance.node_results("n1", H100, items), "driver.fabric_manager")
    assert (found["status"], found["fault"]) == (status, fault)


def test_fabric_ports_follow_the_ports_findings():
    down = judge(ibstat="infiniband/ibstat/gpud-h100-ib-bluefield3-mlx5_4-down.derived.txt")
    found = check(down, "fabric.ports")
    assert (found["status"], found["fault"], found["value"]) == ("FAIL", "port_down", 7)
    assert found["action"].startswith("Pull out, clean and reinsert the port's cable")
    slow = check(judge(ibstat="infiniband/ibstat/gpud-h100-ib-bluefield3-mlx5_6-hdr.derived.txt"), "fabric.ports")
    assert (slow["status"], slow["fault"]) == ("FAIL", "port_rate_low")
    assert check(judge(ibstat=None), "fabric.ports")["status"] == "FAIL"


def test_port_counters_all_zero_and_still_pass():
    found = check(judge(), "fabric.counters")
    assert found["reason"] == "no error counter of 8 InfiniBand port(s) is above 0, none rose in 10 s"
    assert (found["value"], found["gate"]) == ({"rising": {}, "nonzero": {}}, {"rise": 0, "interval_s": 10.0})
    assert found["evidence"] == ["perfquery.json"]


def test_symbol_errors_rising_on_one_port_fail_it_with_the_cable_action():
    second = dict.fromkeys(IB_PORTS, PERFQUERY_HEALTHY) | {"mlx5_4/1": PERFQUERY_SYMBOL_ERRORS}
    result = judge(counters=(PERFQUERY_HEALTHY, second))
    found = check(result, "fabric.counters")
    assert (found["status"], found["fault"], found["severity"]) == ("FAIL", "port_errors_rising", "high")
    assert found["reason"] == "error counters rose in 10 s while the node was idle: mlx5_4/1 symbol_error +37"
    assert found["value"] == {"rising": {"mlx5_4/1": {"symbol_error": 37}}, "nonzero": {}}
    assert found["action"].startswith("Pull out, clean and reinsert the port's cable")
    assert result["verdict"] == "rejected"


def test_symbol_errors_that_do_not_rise_warn_as_history():
    found = check(judge(counters=(PERFQUERY_SYMBOL_ERRORS, PERFQUERY_SYMBOL_ERRORS)), "fabric.counters")
    assert (found["status"], found["fault"], found["findings"]) == ("WARN", None, ["port_errors_history"])
    assert found["reason"].startswith(
        "non-zero since the counters were last cleared, not rising: mlx5_0/1 symbol_error 37; mlx5_1/1 symbol_error 37"
    )


def test_a_link_down_while_idle_is_flapping():
    """The switch port's capture counts one link down, 7 switch relay errors and 20046 discards: read after a clean
    read, the link down fails the port as flapping; the fabric-side counters alone would warn."""
    second = {"mlx5_0/1": PERFQUERY_SWITCH_ERRORS}
    found = check(judge(counters=({"mlx5_0/1": PERFQUERY_HEALTHY}, second)), "fabric.counters")
    assert (found["status"], found["fault"]) == ("FAIL", "port_link_flapping")
    assert found["reason"].endswith("mlx5_0/1 link_downed +1")
    assert found["value"]["rising"] == {"mlx5_0/1": {"link_downed": 1, "port_rcv_switch_relay_errors": 7,
                                                     "port_xmit_discards": 20046}}  # fmt: skip


def test_fabric_side_counters_rising_warn():
    link_downed = "LinkDownedCounter:..............."
    errors = fixture(PERFQUERY_SWITCH_ERRORS).replace(f"{link_downed}1", f"{link_downed}0")
    found = check(judge(counters=({"mlx5_0/1": PERFQUERY_HEALTHY}, {"mlx5_0/1": run(errors)})), "fabric.counters")
    assert (found["status"], found["findings"]) == ("WARN", ["port_errors_fabric"])
    assert found["reason"] == ("fabric-side error counters rose in 10 s: mlx5_0/1 port_rcv_switch_relay_errors +7, "
                               "port_xmit_discards +20046")  # fmt: skip


@pytest.mark.parametrize(("before", "after", "status"), [(36, 36, "WARN"), (36, 37, "FAIL"), (37, 36, "WARN")])
def test_the_rise_boundary(before, after, status):
    """A counter one above its first read fails; equal or lower (cleared in between) does not."""

    def read(value):
        return {
            "mlx5_0/1": run(
                fixture(PERFQUERY_HEALTHY).replace(
                    "SymbolErrorCounter:..............0", f"SymbolErrorCounter:..............{value}"
                )
            )
        }

    assert check(judge(counters=(read(before), read(after))), "fabric.counters")["status"] == status


def test_a_counter_at_its_maximum_warns_that_a_rise_cannot_show():
    basic = (
        fixture(PERFQUERY_HEALTHY)
        .replace("# Port extended counters", "# Port counters")
        .replace("LinkDownedCounter:...............0", "LinkDownedCounter:...............255")
    )
    found = check(judge(counters=({"mlx5_0/1": run(basic)}, {"mlx5_0/1": run(basic)})), "fabric.counters")
    assert found["status"] == "WARN"
    assert found["findings"] == ["port_counters_saturated", "port_errors_history"]
    assert (
        "at their maximum, so a rise cannot show (clear them with perfquery -R and rerun): mlx5_0/1 link_downed"
        in found["reason"]
    )


@pytest.mark.parametrize(
    ("read", "fault", "reason"),
    [
        ({"tool": "perfquery", "missing": True}, "tool_missing", "perfquery is not installed on the node"),
        (
            run(
                fixture("infiniband/perfquery/debian12-mlx5_0-missing.stdout"),
                255,
                fixture("infiniband/perfquery/debian12-mlx5_0-missing.stderr"),
            ),
            "tool_failed",
            "perfquery of mlx5_0/1 exited with 255: ",
        ),
        (
            run("PortXmitData:....................4294967295\n"),
            "tool_failed",
            "perfquery of mlx5_0/1 printed no error counters: 'PortXmitData:",
        ),
    ],
)
def test_counters_that_cannot_be_read_are_an_error(read, fault, reason):
    found = check(judge(counters=({"mlx5_0/1": read}, {"mlx5_0/1": PERFQUERY_HEALTHY})), "fabric.counters")
    assert (found["status"], found["fault"]) == ("ERROR", fault)
    assert found["reason"].startswith(reason)


def test_a_rise_on_one_port_fails_even_where_another_could_not_be_read():
    second = {"mlx5_0/1": PERFQUERY_SYMBOL_ERRORS, "mlx5_1/1": {"tool": "perfquery", "missing": True}}
    found = check(judge(counters=(dict.fromkeys(second, PERFQUERY_HEALTHY), second)), "fabric.counters")
    assert (found["status"], found["fault"]) == ("FAIL", "port_errors_rising")


@pytest.mark.parametrize("junk", [None, "[]", '{"samples": [{}]}', '{"samples": "x"}', '{"samples": [{}, 1]}'])
def test_counters_not_collected_are_an_error(junk):
    items = evidence()
    items["perfquery.json"] = run(junk) if junk else {}
    found = check(acceptance.node_results("n1", H100, items, optional=("nccl.single_node",)), "fabric.counters")
    assert (found["status"], found["fault"], found["reason"]) == (
        "ERROR",
        "not_reported",
        "the port counters were not collected",
    )


def test_no_active_port_leaves_no_counters_to_judge():
    found = check(judge(counters=({}, {})), "fabric.counters")
    assert (found["status"], found["fault"]) == ("ERROR", "not_reported")
    assert found["reason"].startswith("no active InfiniBand port to read the counters of")


# The RoCE ports of the 4x L40S profile's ibstat capture and ethtool -S of their interfaces: the failing optic's
# counters (grep err of a ConnectX-6 Dx) and the same lines at 0.
ROCE_PORTS = ("mlx5_0/1", "mlx5_3/1")
ETHTOOL_HEALTHY = "ethtool/wirtee-cx6dx-eth5-grep-err-zero.derived.txt"
ETHTOOL_OPTIC = "ethtool/wirtee-cx6dx-eth5-grep-err.txt"


def roce(first=ETHTOOL_HEALTHY, second=ETHTOOL_HEALTHY, interval=10.0, perfquery_file=True):
    """The L40S node's evidence with its RoCE ports' two ethtool reads (each a capture for every port, or a mapping
    of port to capture or evidence item)."""

    def sample(read):
        read = read if isinstance(read, dict) else dict.fromkeys(ROCE_PORTS, read)
        return {port: run(fixture(item)) if isinstance(item, str) else item for port, item in read.items()}

    replace = {"ethtool.json": run(json.dumps({"interval_s": interval, "samples": [sample(first), sample(second)]}))}
    if perfquery_file:
        # The node side writes perfquery.json always: empty where no InfiniBand port is active.
        replace["perfquery.json"] = run(json.dumps({"interval_s": interval, "samples": [{}, {}]}))
    items = evidence(
        query="nvidia_smi/l40s-x4.derived.xml",
        ibstat="infiniband/ibstat/gpud-h100-roce-2port.derived.txt",
        replace=replace,
    )
    if not perfquery_file:
        del items["perfquery.json"]
    return check(acceptance.node_results("n1", L40S, items), "fabric.counters")


def test_the_interval_is_that_of_the_reads_that_read_a_port():
    """A RoCE node writes perfquery.json with no port too; its interval (the perfquery reads end before the ethtool
    ones) is not the time the RoCE counters had to rise in."""
    items = evidence(query="nvidia_smi/l40s-x4.derived.xml", replace={
        "perfquery.json": run(json.dumps({"interval_s": 10.0, "samples": [{}, {}]})),
        "ethtool.json": run(json.dumps({"interval_s": 10.311, "samples": [
            {p: run(fixture(ETHTOOL_HEALTHY)) for p in ROCE_PORTS}] * 2}))})  # fmt: skip
    found = check(acceptance.node_results("n1", L40S, items), "fabric.counters")
    assert found["reason"] == "no error counter of 2 RoCE port(s) is above 0, none rose in 10.311 s"
    # No port read at all: the files' intervals, as before.
    assert check(judge(counters=({}, {}), interval=9.5), "fabric.counters")["gate"]["interval_s"] == 9.5


def test_roce_ports_read_through_ethtool_pass_at_zero():
    found = roce()
    assert found["status"] == "PASS"
    assert found["reason"] == "no error counter of 2 RoCE port(s) is above 0, none rose in 10 s"
    assert found["evidence"] == ["ethtool.json"]
    assert roce(perfquery_file=False)["status"] == "PASS"


def test_a_failing_optic_fails_its_roce_port_with_the_optics_action():
    found = roce(second={"mlx5_0/1": ETHTOOL_HEALTHY, "mlx5_3/1": ETHTOOL_OPTIC})
    assert (found["status"], found["fault"], found["severity"]) == ("FAIL", "roce_errors_rising", "high")
    assert found["reason"] == ("error counters rose in 10 s while the node was idle: mlx5_3/1 rx_symbol_err_phy "
                               "+13115284, rx_crc_errors_phy +13147323")  # fmt: skip
    # The lanes' raw errors are FEC's to correct: not judged.
    assert found["value"] == {"rising": {"mlx5_3/1": {"rx_symbol_err_phy": 13115284, "rx_crc_errors_phy": 13147323}},
                              "nonzero": {}}  # fmt: skip
    assert "supported list" in found["action"] and "perfquery" not in found["action"]


def test_roce_errors_that_do_not_rise_warn_as_history():
    found = roce(first=ETHTOOL_OPTIC, second=ETHTOOL_OPTIC)
    assert (found["status"], found["findings"]) == ("WARN", ["port_errors_history"])
    assert found["reason"].startswith("non-zero since the counters were last cleared, not rising: mlx5_0/1 "
                                      "rx_symbol_err_phy 13115284, rx_crc_errors_phy 13147323")  # fmt: skip


@pytest.mark.parametrize(
    ("name", "layer", "fault"),
    [
        ("link_down_events_phy", "Ethernet", "roce_link_flapping"),
        ("rx_pcs_symbol_err_phy", "Ethernet", "roce_errors_rising"),
        ("module_bad_shorted", "Ethernet", "roce_errors_rising"),
        ("rx_discards_phy", "Ethernet", None),
        ("tx_pause_storm_error_events", "Ethernet", None),
        ("rx_corrected_bits_phy", "Ethernet", "pass"),
        ("rx_err_lane_0_phy", "Ethernet", "pass"),
    ],
)
def test_each_roce_counter_in_its_group(name, layer, fault):
    """A link counter one above its first read fails (a link down as flapping); a fabric-side one warns; the bits FEC
    corrected are not errors."""
    base = fixture(ETHTOOL_HEALTHY)
    found = roce(first={"mlx5_0/1": run(base + f" {name}: 5\n")},
                 second={"mlx5_0/1": run(base + f" {name}: 6\n")})  # fmt: skip
    if fault == "pass":
        assert found["status"] == "PASS", found
    elif fault is None:
        assert (found["status"], found["findings"]) == ("WARN", ["port_errors_fabric"])
        assert found["reason"] == f"fabric-side error counters rose in 10 s: mlx5_0/1 {name} +1"
    else:
        assert (found["status"], found["fault"]) == ("FAIL", fault)
        assert found["reason"].endswith(f"mlx5_0/1 {name} +1")


@pytest.mark.parametrize(
    ("read", "fault", "reason"),
    [
        ({"tool": "ethtool", "missing": True}, "tool_missing", "ethtool is not installed on the node"),
        (
            {"skipped": "no network interface is known for mlx5_0/1 (sysfs gid_attrs/ndevs, rdma link show)"},
            "tool_failed",
            "ethtool -S of mlx5_0/1 was not run: no network interface is known for mlx5_0/1",
        ),
        (
            "ethtool/ethq8-cx4-ubuntu1804-head.txt",
            "tool_failed",
            "ethtool -S of mlx5_0/1 printed none of the physical-layer error counters read (rx_symbol_err_phy, ",
        ),
        (
            run("", 1, "netlink error: no device matches name (offset 24)\n"),
            "tool_failed",
            "ethtool -S of mlx5_0/1 exited with 1: netlink error",
        ),
    ],
)
def test_roce_counters_that_cannot_be_read_are_an_error(read, fault, reason):
    found = roce(first={"mlx5_0/1": read, "mlx5_3/1": ETHTOOL_HEALTHY})
    assert (found["status"], found["fault"]) == ("ERROR", fault)
    assert found["reason"].startswith(reason)


def test_a_node_with_both_kinds_of_port_names_both():
    items = evidence(replace={"ethtool.json": run(json.dumps({"interval_s": 12.5, "samples": [
        {"mlx5_2/1": run(fixture(ETHTOOL_HEALTHY))}, {"mlx5_2/1": run(fixture(ETHTOOL_HEALTHY))}]}))})  # fmt: skip
    found = check(acceptance.node_results("n1", H100, items, optional=("nccl.single_node",)), "fabric.counters")
    assert found["reason"] == "no error counter of 9 InfiniBand and RoCE port(s) is above 0, none rose in 10 s"
    assert found["evidence"] == ["perfquery.json", "ethtool.json"]


@pytest.mark.parametrize(
    ("state", "gid_index", "why"),
    [
        ('{"link_layer": "Ethernet", "gid_index": 3}', 3, None),
        ('{"link_layer": "Ethernet", "gid_index": 0}', 0, None),
        (
            '{"link_layer": "Ethernet", "gid_index": null}',
            None,
            "the rdma_fabric stage recorded no RoCE GID index (gid_index null; rdma_fabric_gid_index sets one)",
        ),
        ('{"gid_index": true}', None, "the rdma_fabric stage recorded no RoCE GID index (gid_index true;"),
        ('{"gid_index": 256}', None, "the rdma_fabric stage recorded no RoCE GID index (gid_index 256;"),
        ('{"gid_index": "3"}', None, 'the rdma_fabric stage recorded no RoCE GID index (gid_index "3";'),
        ("[3]", None, "no rdma_fabric state (/var/lib/gpuops/rdma_fabric/state.json): it is unreadable"),
        (
            None,
            None,
            "no rdma_fabric state (/var/lib/gpuops/rdma_fabric/state.json): the rdma_fabric stage has not run here",
        ),
    ],
)
def test_the_roce_gid_index_is_the_rdma_fabric_stages(state, gid_index, why):
    item = run(state) if state is not None else {"path": "x", "missing": True}
    found = acceptance.read_state({"rdma-fabric-state.json": item})["rdma_fabric"]
    assert found["gid_index"] == gid_index
    assert (found["why"] or "").startswith(why or "")


def test_a_roce_node_without_its_gid_index_cannot_measure():
    record = bandwidth_record(nodes=2, roce=True)
    record["members"][0] |= {"rails": [], "gid_index": None, "problem": "no rdma_fabric state (x): the rdma_fabric "
                             "stage has not run here"}  # fmt: skip
    items = evidence(query="nvidia_smi/l40s-x4.derived.xml", bandwidth=record)
    found = check(acceptance.node_results("n1", L40S, items), "fabric.bandwidth")
    assert (found["status"], found["fault"], found["severity"]) == ("ERROR", "roce_gid_unknown", "low")
    assert found["reason"] == ("ib_write_bw cannot run on RoCE without the GID index: no rdma_fabric state (x): the "
                               "rdma_fabric stage has not run here")  # fmt: skip
    assert found["action"].startswith("Run the rdma_fabric stage on this node")


def test_roce_nodes_measure_at_90_percent_of_their_rate():
    found = check(judge(hardware=L40S, bandwidth=bandwidth_record(nodes=2, roce=True)), "fabric.bandwidth")
    assert (found["status"], found["gate"]) == ("PASS", "360.0 Gb/s per port (90 % of the port rate), both ends")
    assert found["reason"] == "2 port(s) at or above the gate, the slowest 381.41 Gb/s"


def test_no_active_roce_port_names_the_kind():
    found = roce(first={}, second={})
    assert (found["status"], found["fault"]) == ("ERROR", "not_reported")
    assert found["reason"].startswith("no active RoCE port to read the counters of")


def test_the_interval_unknown_is_said_so():
    found = check(judge(interval="x"), "fabric.counters")
    assert found["reason"].endswith("none rose between the two reads") and found["gate"]["interval_s"] is None


@pytest.mark.parametrize(
    ("capture", "rc", "status", "fault", "reason"),
    [
        ("dcgm-jsonresulttests-r1-8gpu-3.1.0.txt", 0, "PASS", None, "DCGM 3.1.0: 10 test(s) passed, 0 skipped"),
        ("sagemaker-hc-r3-a10g-pass.txt", 0, "PASS", None, "DCGM 3.3.9: 15 test(s) passed, 1 skipped"),
        ("dcgm-jsonresulttests-r1-8gpu-3.1.0-gpu3-row-remap.derived.txt", 1, "FAIL", "dcgm_memory",
         "Deployment Page Retirement/Row Remap failed on GPU 3: GPU 3 has uncorrectable memory errors and row "
         "remappings are pending"),
        ("sagemaker-hc-r3-a10g-targeted-power-gpu1-fail.txt", 1, "FAIL", "dcgm_stress",
         "Stress Targeted Power failed on GPU 1: GPU 1 Max power of 224.1 did not reach desired power minimum "
         "target_power_min_ratio of 224.2 for GPU 1 Verify that the clock speeds and GPU utilization are high."),
        ("nolebase-r2-rtx3090-pcie-fail.txt", 1, "FAIL", "dcgm_cuda",
         "Integration PCIe failed on every GPU: GPU 0 Error using CUDA API cudaDeviceGetByPCIBusId"),
        ("dcgm-253-r2-b200-4.4.1-pcie-fail.txt", 1, "FAIL", "dcgm_pcie",
         "Integration pcie failed on every GPU: There was an internal error during the test"),
        ("ml-engineering-deployment-gpu3-row-remap-pending.fragment.txt", 1, "FAIL", "dcgm_memory",
         "Deployment Error failed: GPU 3 has uncorrectable memory errors and row remappings are pending"),
        ("dcgm-254-r3-4.4.1-error-plugins.txt", 1, "ERROR", "tool_failed",
         "dcgmi diag exited with 1: Error: Unable to complete diagnostic for entities 0,1,2,3. Return: (-30)"),
        ("dcgm-215-r3-8gpu-4.x-test.fragment.txt", 1, "ERROR", "tool_failed",
         "dcgmi diag exited with 1: the JSON holds none of DCGM GPU Diagnostic, DCGM Diagnostic"),
    ],
)  # fmt: skip
def test_dcgm_diagnostics(capture, rc, status, fault, reason):
    found = check(judge(dcgm=(f"dcgm/{capture}", rc)), "gpu.dcgm")
    assert (found["status"], found["fault"], found["required"]) == (status, fault, True)
    assert found["reason"].startswith(reason)
    assert found["evidence"] == ["dcgm-diag.json"]


LIMITED = ["/usr/bin/timeout", "--kill-after=10", "7200", "dcgmi", "diag", "-r", "3", "-j"]


@pytest.mark.parametrize(
    ("item", "status", "reason"),
    [
        # The time ran out: whatever the run printed before it was stopped is not judged.
        ({"cmd": LIMITED, "rc": 124, "stdout": fixture("dcgm/sagemaker-hc-r3-a10g-pass.txt"), "stderr": ""}, "ERROR",
         "dcgmi diag did not finish within 7200 s (acceptance_dcgm_timeout) and was stopped"),
        # Status 124 from dcgmi itself (no time limit around it) is its own.
        ({"cmd": ["dcgmi", "diag", "-r", "3", "-j"], "rc": 124, "stdout": "", "stderr": "x"}, "ERROR",
         "dcgmi diag exited with 124: x"),
        ({"cmd": LIMITED[:3], "rc": 124, "stdout": "", "stderr": ""}, "ERROR",
         "dcgmi diag exited with 124: no message"),
        ({"cmd": LIMITED, "rc": 0, "stdout": fixture("dcgm/sagemaker-hc-r3-a10g-pass.txt"), "stderr": ""}, "PASS",
         "DCGM 3.3.9: 15 test(s) passed, 1 skipped"),
        ({"tool": "dcgmi", "missing": True}, "SKIPPED",
         "DCGM is not installed on the node (no dcgmi; the driver stage installs it unless nvidia_driver_dcgm is "
         "false)"),
    ],
)  # fmt: skip
def test_dcgm_under_its_time_limit(item, status, reason):
    found = check(judge(dcgm=item), "gpu.dcgm")
    assert (found["status"], found["reason"]) == (status, reason)


@pytest.mark.parametrize(
    ("category", "name", "warnings", "fault"),
    [
        ("Hardware", "Memory", ["Error using CUDA API cudaMalloc"], "dcgm_cuda"),
        ("Hardware", "Diagnostic", ["GPU 3 has pending row remaps"], "dcgm_memory"),
        ("Hardware", "Diagnostic", ["GPU 1 has 65 retired pages"], "dcgm_memory"),
        ("Hardware", "Diagnostic", ["GPU 2 had Uncorrectable ECC errors"], "dcgm_memory"),
        ("Hardware", "Diagnostic", ["GPU 0: Memory error found"], "dcgm_memory"),
        ("Deployment", "Persistence Mode", ["Persistence mode for GPU 0 is disabled"], "dcgm_deployment"),
        ("Deployment", "Page Retirement/Row Remap", [], "dcgm_memory"),
        ("Integration", "PCIe", [], "dcgm_pcie"),
        ("Stress", "Targeted Stress", [], "dcgm_stress"),
        ("Stress", "Memory Bandwidth", [], "dcgm_memory"),
        ("Stress", "A test DCGM adds later", [], "dcgm_failed"),
    ],
)
def test_a_failed_dcgm_test_points_at_its_fault(category, name, warnings, fault):
    assert acceptance._dcgm_fault({"category": category, "name": name, "warnings": warnings}) == fault


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ({}, "dcgmi diag was not collected"),
        ({"missing": True}, "dcgmi diag is not installed on the node"),
        ({"missing": True, "tool": "dcgmi"}, "dcgmi is not installed on the node"),
        ({"skipped": "no GPU query"}, "dcgmi diag was not run: no GPU query"),
        ({"rc": 1, "stderr": "", "stdout": "Error: unable to establish a connection to the specified host: "
          "localhost\n"}, "dcgmi diag exited with 1: Error: unable to establish a connection to the specified host: "
         "localhost"),
        ({"rc": 255, "stderr": "first\n", "stdout": "  second  "}, "dcgmi diag exited with 255: first second"),
        ({"rc": 2, "stderr": None, "stdout": None}, "dcgmi diag exited with 2: no message"),
        ({"rc": 1, "stderr": "x" * 290 + " " + "y" * 20}, "dcgmi diag exited with 1: " + "x" * 279 + " " + "y" * 20),
        ({"rc": 0, "stdout": ""}, "dcgmi diag printed nothing"),
    ],
)  # fmt: skip
def test_why_an_evidence_item_gives_nothing_to_judge(item, said):
    assert acceptance._why_not(item, "dcgmi diag") == said


def test_a_dcgm_warning_warns():
    pcie = "| PCIe                      | {} - All "
    text = fixture("dcgm/hypercomputer-r2-h100-pass.txt").replace(pcie.format("Pass"), pcie.format("Warn"))
    found = check(judge(dcgm=run(text)), "gpu.dcgm")
    assert (found["status"], found["fault"], found["reason"]) == ("WARN", None, "Integration PCIe warned on every GPU")


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        (
            {"tool": "dcgmi", "missing": True},
            "DCGM is not installed on the node (no dcgmi; the driver stage installs it unless nvidia_driver_dcgm is "
            "false)",
        ),
        ({"skipped": "dcgm_level is 0"}, "dcgmi diag was not run: dcgm_level is 0"),
        ({}, "dcgmi diag was not collected"),
    ],
)
def test_dcgm_not_run_is_skipped_with_the_reason(item, reason):
    found = check(judge(dcgm=item), "gpu.dcgm")
    assert (found["status"], found["reason"]) == ("SKIPPED", reason)


def test_a_required_dcgm_that_did_not_run_leaves_the_node_incomplete():
    result = acceptance.node_results("n1", H100, evidence(dcgm={"tool": "dcgmi", "missing": True}),
                                     required=["gpu.count", "gpu.dcgm"])  # fmt: skip
    assert (check(result, "gpu.dcgm")["required"], result["verdict"]) == (True, "incomplete")


def test_dcgm_is_required_by_default_and_optional_where_the_site_leaves_it_out():
    """The driver stage installs DCGM unless nvidia_driver_dcgm is false: by default a node without it is incomplete;
    with gpu.dcgm in acceptance_optional the same node is accepted."""
    missing = evidence(dcgm={"tool": "dcgmi", "missing": True})
    by_default = acceptance.node_results("n1", H100, missing, optional=["nccl.single_node"])
    assert (check(by_default, "gpu.dcgm")["required"], by_default["verdict"]) == (True, "incomplete")
    left_out = acceptance.node_results("n1", H100, missing, optional=["nccl.single_node", "gpu.dcgm"])
    assert (check(left_out, "gpu.dcgm")["required"], left_out["verdict"]) == (False, "accepted")


def test_dcgm_failing_without_output_is_an_error():
    found = check(judge(dcgm=run("", 255, "Error: unable to establish a connection to the specified host")),
                  "gpu.dcgm")  # fmt: skip
    assert (found["status"], found["fault"]) == ("ERROR", "tool_failed")
    assert (
        found["reason"] == "dcgmi diag exited with 255: Error: unable to establish a connection to the specified host"
    )


@pytest.mark.parametrize(
    ("capture", "fault", "reason"),
    [
        ("devicequery-35-insufficient-driver.txt", "cuda_driver_too_old",
         "CUDA failed: CUDA driver version is insufficient for CUDA runtime version"),
        ("cuda-check-803-unsupported-driver.txt", "driver_mismatch",
         "CUDA failed: system has unsupported display driver / cuda driver combination"),
        ("bandwidthtest-802-system-not-initialized.txt", "fabricmanager_stopped",
         "CUDA failed: system not yet initialized"),
        ("matrixmul-100-no-device.txt", "cuda_no_device", "CUDA failed: cudaErrorNoDevice"),
        ("devicequery-999-unknown-error.txt", "cuda_failed", "CUDA failed: unknown error"),
    ],
)  # fmt: skip
def test_a_cuda_failure_fails_with_the_fault_its_error_points_at(capture, fault, reason):
    found = check(judge(cuda=(f"cuda/{capture}", 1, "running the program")), "cuda.runtime")
    assert (found["status"], found["fault"], found["reason"], found["required"]) == ("FAIL", fault, reason, True)
    assert found["action"] == acceptance_faults.FAULTS[fault]["action"]


def test_one_gpu_failing_its_kernel_names_the_gpu():
    text = (
        fixture(CUDA_HEALTHY[0])
        .replace(
            "device 3 0000:5d:00 NVIDIA H100 80GB HBM3 kernel ok",
            "device 3 0000:5d:00 failed: uncorrectable ECC error encountered, last value 0",
        )
        .replace("devices 8 runtime 12040 driver 12070 kernel ok", "devices 8 runtime 12040 driver 12070 failed 1")
    )
    found = check(judge(cuda={**run(text, 1), "step": "running the program"}), "cuda.runtime")
    assert (found["status"], found["fault"]) == ("FAIL", "ecc_uncorrectable")
    assert found["reason"] == "CUDA failed: device 3 (0000:5d:00): uncorrectable ECC error encountered"
    assert found["value"] == {"devices": 8, "runtime": 12040, "driver": 12070, "failed": [3]}


@pytest.mark.parametrize(
    ("count", "status"),
    [(7, "FAIL"), (8, "PASS"), (9, "PASS")],
)
def test_cuda_must_see_the_profiles_gpus(count, status):
    text = fixture(CUDA_HEALTHY[0]).replace("devices 8 ", f"devices {count} ")
    found = check(judge(cuda={**run(text), "step": None}), "cuda.runtime")
    assert (found["status"], found["value"]["devices"]) == (status, count)
    assert found["fault"] == ("gpu_missing" if status == "FAIL" else None)


def test_cuda_passes_with_the_versions_it_ran_on():
    found = check(judge(), "cuda.runtime")
    assert found["reason"] == "a kernel ran on each of 8 GPU(s) (CUDA runtime 12.4, driver 12.7)"
    assert found["gate"] == "a kernel round trip on each of 8 GPU(s)"


@pytest.mark.parametrize(
    ("item", "status", "fault", "reason"),
    [
        ({"cmd": None, "rc": None, "stdout": "", "stderr": "", "step": "nvcc",
          "message": "/usr/local/cuda/bin/nvcc is missing or not executable: /usr/local/cuda is not a CUDA root with "
                     "bin/nvcc"},
         "ERROR", "cuda_toolkit_missing", "/usr/local/cuda/bin/nvcc is missing or not executable"),
        ({**run("", 2, "cuda_check.cu(3): error: x"), "step": "compiling and linking",
          "message": "compiling and linking failed (exit 2): cuda_check.cu(3): error: x"},
         "FAIL", "cuda_toolkit_broken", "the toolkit could not build the CUDA check: compiling and linking failed"),
        ({**run("devices 8 runtime 12040 driver 12070"), "step": None},
         "ERROR", "tool_failed", "the CUDA check printed no summary line"),
        ({"skipped": "no cuda_source given"}, "SKIPPED", None, "the CUDA check was not run: no cuda_source given"),
        ({}, "SKIPPED", None, "the CUDA check was not collected"),
    ],
)  # fmt: skip
def test_cuda_check_that_could_not_judge(item, status, fault, reason):
    found = check(judge(cuda=item), "cuda.runtime")
    assert (found["status"], found["fault"]) == (status, fault)
    assert found["reason"].startswith(reason)


def test_in_a_container_cuda_and_the_gpu_container_are_not_applicable_nor_required():
    result = judge(cuda=IN_CONTAINER, container=IN_CONTAINER)
    for check_id in ("cuda.runtime", "container.gpus"):
        found = check(result, check_id)
        assert (found["status"], found["required"]) == ("SKIPPED", False)
        assert found["reason"] == "not applicable: this node's kernel is its container host's"
    assert result["verdict"] == "accepted"


def test_a_cuda_check_the_node_did_not_run_leaves_it_incomplete():
    result = judge(cuda={"skipped": "no cuda_source given"})
    assert (check(result, "cuda.runtime")["required"], result["verdict"]) == (True, "incomplete")


@pytest.mark.parametrize(
    ("capture", "rc", "status", "fault", "reason"),
    [
        ("container/nvidia-smi-L-in-container-nvml-unknown-error.txt", 255, "FAIL", "container_gpu_runtime",
         "the GPU container exited with 255: Failed to initialize NVML: Unknown Error"),
        ("container/ctr-cgroup-devices-not-found.stderr.txt", 1, "FAIL", "container_gpu_runtime",
         "the GPU container exited with 1: nvidia-container-cli: container error: cgroup subsystem devices not found"),
        ("container/nvidia-smi-L-a10-t4-x4-host.txt", 0, "FAIL", "container_gpus_missing",
         "a container saw 4 GPU(s), the profile has 8 (missing GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1, "),
        ("container/nvidia-smi-L-h100-x8.derived.txt", 0, "PASS", None,
         "a container through the nvidia runtime saw 8 GPU(s)"),
    ],
)  # fmt: skip
def test_the_gpu_container(capture, rc, status, fault, reason):
    text = fixture(capture)
    item = {**(run("", rc, text) if capture.endswith(".stderr.txt") else run(text, rc)), "step": "run"}
    found = check(judge(container=item), "container.gpus")
    assert (found["status"], found["fault"]) == (status, fault)
    assert found["reason"].startswith(reason)


def test_a_container_seeing_other_gpus_than_the_nodes_fails():
    text = fixture(CONTAINER_HEALTHY[0]).replace("GPU-33135771", "GPU-00000000")
    found = check(judge(container={**run(text), "step": "run"}), "container.gpus")
    assert (found["status"], found["fault"]) == ("FAIL", "container_gpus_missing")
    assert found["reason"] == ("a container saw 8 GPU(s), the profile has 8 (missing "
                               "GPU-33135771-a848-ece1-b61e-489e221d663c)")  # fmt: skip


@pytest.mark.parametrize(
    ("item", "status", "fault", "reason"),
    [
        ({"tool": "ctr", "missing": True}, "ERROR", "tool_missing", "containerd's ctr is not installed"),
        ({**run("", 1, "ctr: failed to resolve reference"), "step": "pull"}, "ERROR", "container_image_unavailable",
         "pulling the container image exited with 1: ctr: failed to resolve reference"),
        ({"skipped": "no container_image given"}, "SKIPPED", None,
         "the GPU container was not run: no container_image given"),
    ],
)  # fmt: skip
def test_a_gpu_container_that_could_not_run(item, status, fault, reason):
    found = check(judge(container=item), "container.gpus")
    assert (found["status"], found["fault"]) == (status, fault)
    assert found["reason"].startswith(reason)


def test_xid_events_take_the_catalogs_severity_and_action():
    found = check(judge(log="xid/dmesg-ctime-xid79-fallen-off-bus.log"), "gpu.xid")
    assert (found["status"], found["fault"], found["severity"]) == ("FAIL", "xid_79", "critical")
    assert found["action"].startswith("Drain the node")
    found = check(judge(log=None), "gpu.xid")
    assert (found["status"], found["fault"]) == ("ERROR", "kernel_log_unreadable")
    assert found["reason"] == "dmesg is not installed on the node"


@pytest.mark.parametrize(
    ("reasons", "status"),
    [([], "PASS"), (["sw_power_cap"], "PASS"), (["sw_thermal_slowdown"], "WARN"), (["hw_power_brake_slowdown"], "FAIL"),
     (None, "ERROR")],
)  # fmt: skip
def test_clock_event_reasons(reasons, status):
    state = acceptance.read_state(evidence())
    for device in state["gpu"]["query"]["devices"]:
        device["clock_event_reasons"] = reasons
    assert acceptance.check_gpu_clocks(state, H100, {})["status"] == status


def test_recovery_and_persistence():
    state = acceptance.read_state(evidence())
    state["gpu"]["query"]["devices"][3]["recovery_action"] = "Reset"
    state["gpu"]["query"]["devices"][4]["persistence_mode"] = False
    found = acceptance.check_gpu_recovery(state, H100, {})
    assert (found["status"], found["reason"]) == ("FAIL", "GPU 3 (00000000:5D:00.0) asks for recovery action Reset")
    assert acceptance.check_driver_persistence(state, H100, {})["status"] == "FAIL"


def test_a_profile_without_gpus_skips_the_gpu_checks_with_the_reason():
    cpu = {"profile": "cpu", "gpu": {"model": "none", "architecture": "none", "count": 0, "nvswitch": False},
           "infiniband": {"ports": 0, "rate_gbps": 0, "link_layer": "InfiniBand"}}  # fmt: skip
    # A node that joins no cluster: the Kubernetes checks do not apply either.
    result = acceptance.node_results("n1", cpu, {"kubernetes-node.json": NOT_JOINING})
    assert set(statuses(result).values()) == {"SKIPPED"}
    assert check(result, "gpu.count")["reason"] == "the profile has no GPUs"
    assert result["verdict"] == "accepted"
    # Without that: nothing read the Node, which the node must have.
    result = acceptance.node_results("n1", cpu, {})
    found = check(result, "kubernetes.ready")
    assert (found["reason"], result["verdict"]) == ("the Node object was not collected", "incomplete")


@pytest.mark.parametrize(
    ("required", "found", "verdict"),
    [
        (True, "PASS", "accepted"), (True, "WARN", "accepted"), (True, "FAIL", "rejected"),
        (True, "ERROR", "incomplete"), (True, "SKIPPED", "incomplete"), (False, "FAIL", "accepted"),
    ],
)  # fmt: skip
def test_the_verdict_of_each_status(required, found, verdict):
    checks = [{"required": True, "status": "PASS"}, {"required": required, "status": found}]
    assert acceptance.verdict(checks) == verdict
    assert acceptance.verdict([*checks, {"required": True, "status": "FAIL"}]) == "rejected"


def test_the_profile_and_the_operator_choose_the_required_checks():
    assert acceptance.required_checks(L40S) == [i for i in acceptance.CHECKS if i not in (
        "gpu.nvlink", "gpu.fabric", "driver.fabric_manager", "nccl.single_node", "nccl.pairs")]  # fmt: skip
    assert acceptance.required_checks({**L40S, "acceptance": {"required": ["gpu.count"]}}) == ["gpu.count"]
    assert acceptance.required_checks(L40S, required=["gpu.model"]) == ["gpu.model"]
    assert "gpu.xid" not in acceptance.required_checks(H100, optional=["gpu.xid"])


def test_gates_come_from_the_gpus_not_the_profiles_name():
    dgx = {**H100, "profile": "dgx_h100"}
    assert acceptance.gates(dgx)[0] == {
        "nccl_all_reduce_busbw_gbps": 460.0, "ib_write_bw_gbps": 380.0, "nccl_pair_busbw_gbps": 365.0
    }  # fmt: skip
    own = {**dgx, "gates": {"nccl_all_reduce_busbw_gbps": 470}}
    values, sources = acceptance.gates(own)
    assert values["nccl_all_reduce_busbw_gbps"] == 470
    assert (
        sources["nccl_all_reduce_busbw_gbps"] == "gpuops_hardware.gates.nccl_all_reduce_busbw_gbps of profile dgx_h100"
    )
    seven = {**H100, "gpu": {**H100["gpu"], "count": 7}}
    assert acceptance.gates(seven)[0] == {}
    assert acceptance.nccl_gates_by_profile([dgx, L40S, own, "x"]) == {"dgx_h100": 470}
    # A gpu that is no mapping (inventory_schema refuses it elsewhere) has no published gate, and no traceback.
    assert acceptance.nccl_gates_by_profile([{"profile": "odd", "gpu": "NVIDIA H100"}]) == {}


@pytest.mark.parametrize(
    ("change", "required", "problem"),
    [
        ({"acceptance": {"required": ["gpu.count", "gpu.teleport"]}}, [],
         "gpuops_hardware.acceptance.required names 'gpu.teleport', no check of the acceptance stage; known: "),
        ({"acceptance": {"required": "gpu.count"}}, [],
         "gpuops_hardware.acceptance.required is 'gpu.count': expected a list of check ids"),
        ({"acceptance": {"skip": []}}, [],
         "gpuops_hardware.acceptance.skip is not an acceptance setting; known: required, dcgm_level"),
        ({"gates": {"nccl_all_reduce_busbw_gbps": "460"}}, [],
         "gpuops_hardware.gates.nccl_all_reduce_busbw_gbps is '460': expected a number above 0"),
        ({"gates": {"nccl_all_reduce_busbw_gbps": True}}, [],
         "gpuops_hardware.gates.nccl_all_reduce_busbw_gbps is True: expected a number above 0"),
        ({"gates": {"nccl_all_reduce_busbw_gbps": 0}}, [],
         "gpuops_hardware.gates.nccl_all_reduce_busbw_gbps is 0: expected a number above 0"),
        ({"gates": {"busbw": 400}}, [], "gpuops_hardware.gates.busbw is no gate; known: nccl_all_reduce_busbw_gbps"),
        ({"gates": [460]}, [], "gpuops_hardware.gates is [460]: expected a mapping of gate names to numbers"),
        ({"firmware": {"vbios_drift": "error"}}, [],
         "gpuops_hardware.firmware.vbios_drift is 'error': expected warn or fail"),
        ({"firmware": {"hca_min": 28.39}}, [],
         "gpuops_hardware.firmware.hca_min is 28.39: expected a firmware version"),
        ({"firmware": {"vbios": "96.00.74.00.01"}}, [],
         "gpuops_hardware.firmware.vbios is '96.00.74.00.01': expected a list"),
        ({"gpu": {**H100["gpu"], "nvlinks": 19}}, [],
         "gpuops_hardware.gpu.nvlinks is 19: the NVLinks each GPU has, 0 to 18"),
        ({}, ["gpu.count", "gpu.teleport"],
         "acceptance_required names 'gpu.teleport', no check of the acceptance stage"),
        ({"gpu": {**H100["gpu"], "nvswitch": False}}, ["gpu.fabric"],
         "gpu.fabric is required but does not apply to profile hgx_h100_8gpu (the profile has no NVSwitch): it would "
         "never pass. Fix: take it out of the required checks."),
        ({"gpu": {**H100["gpu"], "count": 4}}, ["nccl.single_node"],
         "nccl.single_node is required, but profile hgx_h100_8gpu has no bus bandwidth gate"),
        ({"gpu": {**H100["gpu"], "count": 4}}, ["nccl.pairs"],
         "nccl.pairs is required, but profile hgx_h100_8gpu has no bus bandwidth gate for node pairs (no published "
         "one for its GPU model and count). Fix: set gpuops_hardware.gates.nccl_pair_busbw_gbps, or add nccl.pairs"),
        ({"infiniband": {**H100["infiniband"], "ports": 0}}, ["nccl.pairs"],
         "nccl.pairs is required but does not apply to profile hgx_h100_8gpu (the profile has no RDMA port: NCCL "
         "between nodes would measure TCP)"),
    ],
)  # fmt: skip
def test_bad_acceptance_inputs_are_named_with_their_fix(change, required, problem):
    problems = acceptance.input_problems({**H100, **change}, required)
    assert any(p.startswith(problem) for p in problems), problems


@pytest.mark.parametrize(
    ("hardware", "problem"),
    [
        # No profile group (the inventory check, which a play may skip, says so too): named, not a KeyError.
        ({}, "gpuops_hardware.gpu.model is missing; see plugins/module_utils/hardware_profiles.py"),
        ({"profile": "site_box", "gpu": {"model": "NVIDIA H100 80GB HBM3"}},
         "gpuops_hardware.gpu.count is missing; see plugins/module_utils/hardware_profiles.py"),
        ({**H100, "infiniband": {**H100["infiniband"], "rate_gbps": "400"}},
         "gpuops_hardware.infiniband.rate_gbps is '400', expected one of 0, 10, 20"),
        (None, "gpuops_hardware is None, expected a mapping; see plugins/module_utils/hardware_profiles.py"),
        (["hgx_h100_8gpu"], "gpuops_hardware is ['hgx_h100_8gpu'], expected a mapping"),
    ],
)  # fmt: skip
def test_an_incomplete_profile_is_named_before_any_check_reads_it(hardware, problem):
    problems = acceptance.input_problems(hardware, ["gpu.count", "nccl.single_node"])
    assert any(p.startswith(problem) for p in problems), problems


@pytest.mark.parametrize("name", sorted(hardware_profiles.BUILTIN))
def test_the_shipped_profiles_have_no_acceptance_problem(name):
    assert acceptance.input_problems(hardware_profiles.BUILTIN[name]) == []


@pytest.mark.parametrize(
    ("version", "key_order"),
    [("535.54.03", "535.104.05"), ("28.39.1002", "28.41.1000"), ("96.00.74.00.01", "96.00.89.00.01")],
)
def test_versions_sort_by_their_numbers(version, key_order):
    assert acceptance.version_key(version) < acceptance.version_key(key_order)
    assert acceptance.version_key(version) == acceptance.version_key(version)


@pytest.mark.parametrize(
    ("package", "upstream"), [("535.309.01-1", "535.309.01"), ("3:550.163.01-1.el9", "550.163.01"), ("", None)]
)
def test_upstream_version_drops_epoch_and_revision(package, upstream):
    assert acceptance.upstream_version(package) == upstream


@pytest.mark.parametrize(
    ("capture", "system"),
    [
        ("dell-xe9680-system.txt", {"manufacturer": "Dell Inc.", "product": "PowerEdge XE9680", "serial": "HSR8X04",
                                    "uuid": "4c4c4544-0053-5210-8038-c8c04f583034", "bios_vendor": None,
                                    "bios_version": None, "bios_date": None}),
        ("supermicro-sys-6018r.txt", {"manufacturer": "Supermicro", "serial": "A177950X7709591",
                                      "bios_vendor": "American Megatrends Inc.", "bios_version": "2.0b"}),
        # Vendor templates are no identity: null, not a serial every such board shares.
        ("asus-placeholders.txt", {"manufacturer": None, "product": None, "serial": None}),
    ],
)  # fmt: skip
def test_dmidecode_records_the_system_and_bios(capture, system):
    items = evidence()
    items["dmidecode.txt"] = run(fixture(f"dmidecode/{capture}"))
    found = acceptance.node_results("n1", H100, items)["inventory"]["system"]
    assert {k: found[k] for k in system} == system


def test_every_fault_has_a_severity_an_action_and_a_source():
    from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance_faults

    for code, fault in acceptance_faults.FAULTS.items():
        assert fault["severity"] in acceptance_faults.SEVERITIES, code
        assert fault["action"].endswith(".") and fault["source"] in acceptance_faults.SOURCES, code
    assert {f["source"] for f in acceptance_faults.FAULTS.values()} == set(acceptance_faults.SOURCES)


def test_every_fault_a_check_names_is_in_the_dictionary():
    """Each FAIL and ERROR of these nodes names a fault of the dictionary, or an Xid event with the catalog's."""
    from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance_faults

    nodes = [judge(query=f"nvidia_smi/{q}") for q in (
        "h100-sxm-x8-565-gpu3-missing.derived.xml", "h100-sxm-x8-565-pcie-x8.derived.xml",
        "h100-sxm-x8-565-ecc.derived.xml", "h100-sxm-x8-565-remap.derived.xml",
        "h100-sxm-x8-565-fabric-in-progress.derived.xml", "h100-sxm-x8-565-slowdown.derived.xml",
        "driver-unreachable.txt", "driver-library-mismatch.txt")]  # fmt: skip
    nodes += [judge(nvml=(), fm_package=None, fm="failed", ibstat=None, log=None, nvlink=None)]
    faults = {c["fault"] for n in nodes for c in n["checks"] if c["status"] in ("FAIL", "ERROR")}
    assert len(faults) >= 11
    assert faults <= set(acceptance_faults.FAULTS), faults - set(acceptance_faults.FAULTS)


@pytest.mark.parametrize(
    "files",
    [
        '{"proc_version": [1], "sys_version": {"a": 1}, "nvml_libraries": "x"}',
        "[]",
        "{",
        '{"nvml_libraries": [3, null]}',
    ],
)
def test_driver_files_of_any_shape_read_as_unknown(files):
    items = evidence()
    items["driver-files.json"] = run(files)
    found = check(acceptance.node_results("n1", H100, items), "driver.version")
    assert (found["status"], found["fault"]) == ("ERROR", "not_reported")


def test_a_gpu_the_driver_counts_but_does_not_describe_is_missing():
    """attached_gpus above the GPUs listed: nvidia-smi knows of a GPU it cannot read."""
    items = evidence()
    items["nvidia-smi-query.xml"] = run(fixture("nvidia_smi/h100-sxm-x8-565.derived.xml").replace(
        "<attached_gpus>8</attached_gpus>", "<attached_gpus>9</attached_gpus>"))  # fmt: skip
    found = check(acceptance.node_results("n1", H100, items), "gpu.count")
    assert (found["status"], found["fault"], found["value"]) == ("FAIL", "gpu_missing", 8)


def test_the_missing_gpu_is_named_when_lspci_and_nvidia_smi_number_the_bus_alike():
    state = acceptance.read_state(evidence(query="nvidia_smi/h100-sxm-x8-565-gpu3-missing.derived.xml"))
    listed = [d["pci_bus_id"].lower()[-12:] for d in state["gpu"]["query"]["devices"]]
    state["pci"] = {"gpus": [{"address": a} for a in [*listed, "0000:5d:00.0"]]}
    found = acceptance.check_gpu_count(state, H100, {})
    assert (
        found["reason"]
        == "nvidia-smi lists 7 GPU(s), the profile 8; on the PCI bus but not in nvidia-smi: 0000:5d:00.0"
    )
    # Another numbering (a capture of another machine): only the counts are said.
    state["pci"] = {"gpus": [{"address": f"0000:{n:02x}:00.0"} for n in range(8)]}
    found = acceptance.check_gpu_count(state, H100, {})
    assert found["reason"] == "nvidia-smi lists 7 GPU(s), the profile 8; lspci lists 8 NVIDIA GPU(s)"


def test_fabric_manager_read_from_rpm():
    """On RHEL the package query is rpm's (os_facts' format): its fabric manager package and version."""
    items = evidence(fm_package=None)
    items["packages.txt"] = {**run("nvidia-fabricmanager\t565.57.01-1.el9.x86_64\n"), "cmd": ["/usr/bin/rpm", "-qa"]}
    found = check(acceptance.node_results("n1", H100, items), "driver.fabric_manager")
    assert (found["status"], found["value"]["packages"]) == (
        "PASS",
        {"nvidia-fabricmanager": ["565.57.01-1.el9.x86_64"]},
    )


def bandwidth_check(**kwargs):
    node = kwargs.pop("node", "n1")
    return check(judge(bandwidth=bandwidth_record(node=node, **kwargs)), "fabric.bandwidth")


def test_bandwidth_passes_on_every_rail_at_ndr_rate():
    found = bandwidth_check()
    assert (found["status"], found["required"]) == ("PASS", True)
    assert found["reason"] == "8 port(s) at or above the gate, the slowest 392.34 Gb/s"
    assert found["gate"] == "380 Gb/s per port (gate), both ends"
    assert found["value"]["mlx5_4"] == [{"partner": "n2", "role": "client", "client_gbps": 392.34,
                                         "server_gbps": 392.34, "gpudirect": False}]  # fmt: skip


def test_each_rail_measures_from_the_gpu_that_shares_its_pcie_switch():
    """8x H100 with eight NICs (topo -m): NIC i sits on GPU i's switch (PIX); mlx5_8 and mlx5_9, not in the matrix,
    and a rail whose nearest GPU is across the CPUs get none (host memory)."""
    items = {"nvidia-smi-topo.txt": run(fixture("nvidia_smi/h100-x8-8nic-sglang.topo.txt"))}
    assert acceptance.rail_gpus(items, RAILS) == {"mlx5_0": 0, "mlx5_1": 1, "mlx5_4": 4, "mlx5_5": 5, "mlx5_6": 6,
                                                  "mlx5_7": 7}  # fmt: skip
    assert acceptance.rail_gpus({"nvidia-smi-topo.txt": run("GPU0 X\n")}, RAILS) == {}
    assert acceptance.rail_gpus({"nvidia-smi-topo.txt": {"skipped": "no GPU query"}}, RAILS) == {}


@pytest.mark.parametrize(("path", "gpu"), [("PIX", 1), ("PXB", 1), ("PHB", None), ("NODE", None), ("SYS", None)])
def test_a_gpu_is_near_a_rail_through_pcie_switches_only(path, gpu):
    """GPU0 is across the host bridge from mlx5_0; GPU1 is at the path under test: the nearer of PIX and PXB wins,
    never a path through the host bridge or the CPUs."""
    topo = ("        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity\n"
            "GPU0     X      NV18    PHB     0-47    0\n"
            f"GPU1    NV18     X      {path}     0-47    0\n"
            f"NIC0    PHB     {path}      X\n\nNIC Legend:\n\n  NIC0: mlx5_0\n")  # fmt: skip
    found = acceptance.rail_gpus({"nvidia-smi-topo.txt": run(topo)}, ["mlx5_0"])
    assert found == ({"mlx5_0": gpu} if gpu is not None else {})


def test_a_run_from_gpu_memory_says_so():
    record = bandwidth_record(nodes=2)
    for entry in record["entries"]:
        for ends in entry["rails"].values():
            for end in ends.values():
                end["gpudirect"] = True
    found = check(judge(bandwidth=record), "fabric.bandwidth")
    assert found["reason"] == ("8 port(s) at or above the gate, the slowest 392.34 Gb/s; from GPU memory (GPUDirect "
                               "RDMA) on mlx5_0, mlx5_1, mlx5_4, mlx5_5, mlx5_6, mlx5_7, mlx5_8, mlx5_9")  # fmt: skip
    assert found["value"]["mlx5_0"][0]["gpudirect"] is True


@pytest.mark.parametrize(("bad", "partner"), [("n1", "n2"), ("n2", "n1")])
def test_a_half_rate_port_fails_its_node_and_not_its_partner(bad, partner):
    """n1 is the client of the first test, n2 its server: either end's own report shows the slow port."""
    slow = {(bad, "mlx5_4")}
    found = bandwidth_check(node=bad, slow=slow)
    assert (found["status"], found["fault"]) == ("FAIL", "port_bandwidth_low")
    assert found["reason"].startswith(f"below the gate with a node that passed: mlx5_4 ({partner} 196.17 Gb/s, n")
    assert found["action"].startswith("Pull out, clean and reinsert")
    # Its first partner, re-paired with a node that passed, passes.
    assert bandwidth_check(node=partner, slow=slow)["status"] == "PASS"


def test_the_gate_boundary_of_ib_write_bw():
    """380 Gb/s: a port measuring 392.34 passes; with the gate just above it, it fails."""
    record = bandwidth_record()
    for member in record["members"]:
        member["gate_gbps"] = 392.34
    assert check(judge(bandwidth=record), "fabric.bandwidth")["status"] == "PASS"
    for member in record["members"]:
        member["gate_gbps"] = 392.35
    found = check(judge(bandwidth=record), "fabric.bandwidth")
    assert (found["status"], found["fault"]) == ("FAIL", "bandwidth_unisolated")
    assert found["reason"].startswith("below the gate, with no partner that passed to tell which node is at fault")


def test_a_port_not_active_on_the_node_fails_as_down():
    rails = {"n1": [r for r in RAILS if r != "mlx5_4"]}
    found = bandwidth_check(rails=rails)
    assert (found["status"], found["fault"]) == ("FAIL", "port_down")
    assert found["reason"] == "not active here: mlx5_4"
    assert bandwidth_check(node="n2", rails=rails)["status"] == "PASS"


def test_a_pair_that_fails_only_with_each_other_warns_both():
    record = bandwidth_record()
    first = record["entries"][0]
    first["rails"]["mlx5_0"]["client"] = {**first["rails"]["mlx5_0"]["client"], "average_gbps": 100.0}
    # Re-plan: the pair n1-n2 failed on mlx5_0, both pass with others in the next pass.
    members, entries = record["members"], record["entries"][:2]
    for number in (2, 3):
        for roles in acceptance_pairs.plan(members, entries, number)["rounds"]:
            for client, role in roles.items():
                if role["role"] == "client":
                    entries.append({"pass": number, "client": client, "server": role["partner"], "rails": {
                        r["device"]: {"client": bw_run(NDR["client"]), "server": bw_run(NDR["server"])}
                        for r in role["rails"]}})  # fmt: skip
    found = check(judge(bandwidth={**record, "entries": entries}), "fabric.bandwidth")
    assert found["status"] == "WARN"
    assert found["reason"] == "mlx5_0: below the gate with n2, which passed with others"


@pytest.mark.parametrize(
    ("record", "status", "reason"),
    [
        (None, "SKIPPED", "ib_write_bw did not run between pairs"),
        ({"skipped": "no other node with InfiniBand ports in this run"}, "SKIPPED",
         "no other node with InfiniBand ports in this run"),
        ({"node": "n1", "members": [{"node": "n1", "rack": "r1", "rails": [], "gate_gbps": 380}], "entries": []},
         "ERROR", "no active InfiniBand port to measure"),
        ({"node": "n1"}, "ERROR", "the bandwidth record is unreadable"),
    ],
)  # fmt: skip
def test_bandwidth_that_could_not_be_judged(record, status, reason):
    item = {"path": "x", "missing": True} if record is None else run(json.dumps(record))
    items = evidence()
    items["ib-write-bw.json"] = item
    found = check(acceptance.node_results("n1", H100, items, optional=("nccl.single_node",)), "fabric.bandwidth")
    assert found["status"] == status
    assert found["reason"].startswith(reason)


def test_a_test_that_could_not_run_is_an_error_not_a_failure():
    record = bandwidth_record(passes=1)
    for entry in record["entries"]:
        for ends in entry["rails"].values():
            ends["server"] = None
    found = check(judge(bandwidth=record), "fabric.bandwidth")
    assert (found["status"], found["fault"]) == ("ERROR", "tool_failed")
    assert found["reason"].startswith("ib_write_bw did not measure mlx5_0, mlx5_1")


def k8s(node, check_id):
    return check(judge(node=node), check_id)


def test_a_ready_node_with_the_stages_labels_and_every_gpu_for_pods():
    assert [k8s(None, i)["status"] for i in ("kubernetes.ready", "kubernetes.labels", "kubernetes.gpus")] == [
        "PASS"
    ] * 3
    assert k8s(None, "kubernetes.ready")["reason"] == "the Node is Ready (kubelet v1.31.4)"
    assert k8s(None, "kubernetes.gpus")["reason"] == "the Node offers 8 nvidia.com/gpu to pods"


def with_status(**changes):
    return {**NODE, "status": {**NODE["status"], **changes}}


@pytest.mark.parametrize(
    ("node", "check_id", "status", "fault", "reason"),
    [
        (with_status(conditions=[{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                  "message": "container runtime network not ready"}]),
         "kubernetes.ready", "FAIL", "k8s_not_ready",
         "the Node is not Ready: Ready is False (KubeletNotReady: container runtime network not ready)"),
        (with_status(conditions=[]), "kubernetes.ready", "FAIL", "k8s_not_ready",
         "the Node is not Ready: it reports no Ready condition yet"),
        ({**NODE, "spec": {"unschedulable": True}}, "kubernetes.ready", "WARN", None,
         "the Node is Ready but cordoned (unschedulable)"),
        ({**NODE, "metadata": {"name": "n1", "labels": {"gpuops.io/gpu.count": "7"}}}, "kubernetes.labels", "FAIL",
         "k8s_labels", "the Node's labels do not say what the node is: gpuops.io/hardware-profile is missing, "
         "gpuops.io/gpu.count is '7'"),
        (with_status(allocatable={"cpu": "224", "nvidia.com/gpu": "7"}), "kubernetes.gpus", "FAIL", "k8s_gpus_missing",
         "the Node offers 7 nvidia.com/gpu to pods (capacity 8), the profile has 8"),
        (with_status(allocatable={"cpu": "224", "nvidia.com/gpu": "9"}), "kubernetes.gpus", "PASS", None,
         "the Node offers 9 nvidia.com/gpu to pods"),
        (with_status(allocatable={"cpu": "224"}, capacity={"cpu": "224"}), "kubernetes.gpus", "SKIPPED", None,
         "not applicable: no device plugin advertises nvidia.com/gpu on the Node"),
        ({"rc": 1, "stdout": "", "stderr": "Failed to load kubeconfig"}, "kubernetes.ready", "ERROR", "tool_failed",
         "the Kubernetes API was not read: k8s_info exited with 1: Failed to load kubeconfig"),
        ({**run("[]")}, "kubernetes.gpus", "FAIL", "k8s_node_missing",
         "the cluster has no Node object of this node: it has not joined"),
        ({**run("{x")}, "kubernetes.labels", "ERROR", "tool_failed", "the Node object read is unreadable"),
    ],
)  # fmt: skip
def test_kubernetes_checks(node, check_id, status, fault, reason):
    found = k8s(node, check_id)
    assert (found["status"], found["fault"]) == (status, fault)
    assert found["reason"].startswith(reason)


def test_without_a_device_plugin_the_gpus_for_pods_are_not_required():
    result = judge(node=with_status(allocatable={"cpu": "224"}, capacity={"cpu": "224"}))
    assert (check(result, "kubernetes.gpus")["required"], result["verdict"]) == (False, "accepted")


def test_a_node_that_joins_no_cluster_is_not_judged_on_kubernetes():
    result = judge(node=NOT_JOINING)
    for check_id in ("kubernetes.ready", "kubernetes.labels", "kubernetes.gpus"):
        found = check(result, check_id)
        assert (found["status"], found["required"]) == ("SKIPPED", False)
    assert result["verdict"] == "accepted"


def test_bandwidth_gate_from_the_profile_else_the_port_rate():
    assert acceptance.bandwidth_gate(H100) == (380, "gate")
    assert acceptance.bandwidth_gate(L40S) == (acceptance.bandwidth_gate(L40S)[0], "90 % of the port rate")
    assert acceptance.bandwidth_gate({"gpu": {}, "infiniband": {"rate_gbps": 200}}) == (180.0, "90 % of the port rate")
    assert acceptance.bandwidth_gate({**H100, "gates": {"ib_write_bw_gbps": 390}}) == (390, "gate")


def _node_evidence(labels=None, taints=None):
    node = {"metadata": {"name": "n1", "labels": labels or {}}, "spec": {"taints": taints} if taints else {}}
    return {"rc": 0, "stderr": "", "stdout": json.dumps([node])}


USER_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
MARK = "acceptance.gpuops.io/verdict"


@pytest.mark.parametrize("verdict", ["rejected", "incomplete"])
def test_a_node_not_accepted_is_labelled_and_tainted_and_its_other_taints_kept(verdict):
    patch = acceptance.kubernetes_mark(_node_evidence(taints=[USER_TAINT]), verdict, "gpuops.io")
    assert patch == {
        "metadata": {"labels": {MARK: verdict}},
        "spec": {"taints": [USER_TAINT, {"key": MARK, "value": verdict, "effect": "NoSchedule"}]},
    }


def test_an_accepted_node_is_labelled_and_its_mark_taint_taken_off():
    taint = {"key": MARK, "value": "rejected", "effect": "NoSchedule"}
    patch = acceptance.kubernetes_mark(_node_evidence({MARK: "rejected"}, [taint, USER_TAINT]), "accepted", "gpuops.io")
    assert patch == {"metadata": {"labels": {MARK: "accepted"}}, "spec": {"taints": [USER_TAINT]}}
    # Accepted before: the label alone, no taint to change.
    assert acceptance.kubernetes_mark(_node_evidence(), "accepted", "gpuops.io") == {
        "metadata": {"labels": {MARK: "accepted"}}
    }  # fmt: skip


def test_a_node_marked_so_already_gets_no_patch():
    taint = {"key": MARK, "value": "rejected", "effect": "NoSchedule"}
    # The order the API keeps the taints in is not a difference.
    assert acceptance.kubernetes_mark(_node_evidence({MARK: "rejected"}, [taint, USER_TAINT]), "rejected",
                                      "gpuops.io") == {}  # fmt: skip
    assert acceptance.kubernetes_mark(_node_evidence({MARK: "accepted"}, [USER_TAINT]), "accepted", "gpuops.io") == {}
    # From rejected to incomplete: the taint's value follows the label.
    assert acceptance.kubernetes_mark(_node_evidence({MARK: "rejected"}, [taint]), "incomplete", "gpuops.io") == {
        "metadata": {"labels": {MARK: "incomplete"}},
        "spec": {"taints": [{"key": MARK, "value": "incomplete", "effect": "NoSchedule"}]},
    }  # fmt: skip


def test_the_mark_lives_under_a_domain_of_its_own():
    """Not under the label prefix, whose labels the Kubernetes stage removes when the node does not earn them."""
    patch = acceptance.kubernetes_mark(_node_evidence(), "rejected", "example.com")
    assert list(patch["metadata"]["labels"]) == ["acceptance.example.com/verdict"]
    stage4 = kubernetes_node.node_patch(
        {"metadata": {"labels": {"example.com/gpu.count": "8", "acceptance.example.com/verdict": "rejected"}}},
        {"example.com/gpu.count": "8"}, [], "example.com")  # fmt: skip
    assert stage4 == {}


@pytest.mark.parametrize(
    "evidence",
    [
        {"skipped": "gpuops_kubernetes_join is false: the node joins no cluster", "not_applicable": True},
        {"rc": 1, "stdout": "", "stderr": "Failed to get client"},
        {"rc": 0, "stdout": "[]", "stderr": ""},
        {"rc": 0, "stdout": "not json", "stderr": ""},
        {"rc": 0, "stdout": '{"metadata": {}}', "stderr": ""},
        {"rc": 0, "stdout": '["node"]', "stderr": ""},
        None,
    ],
)
def test_no_node_to_mark_gives_no_patch(evidence):
    assert acceptance.kubernetes_mark(evidence, "rejected", "gpuops.io") == {}


def test_a_taint_that_is_not_a_mapping_is_not_read():
    evidence = {"rc": 0, "stderr": "", "stdout": json.dumps([{"spec": {"taints": ["junk", USER_TAINT]}}])}
    assert acceptance.kubernetes_mark(evidence, "rejected", "gpuops.io")["spec"] == {
        "taints": [USER_TAINT, {"key": MARK, "value": "rejected", "effect": "NoSchedule"}]
    }  # fmt: skip


def test_a_nodes_kubernetes_evidence_comes_from_one_read_of_its_cluster():
    """k8s_info's loop results, one read of every Node per kubeconfig: each node picks its own Node."""
    nodes = [{"metadata": {"name": "n1"}}, {"metadata": {"name": "n2"}}, "junk", {"metadata": None}]
    reads = [
        {"item": "", "resources": nodes},
        {"item": "/etc/b.conf", "failed": False, "msg": "Failed to get client due to HTTPSConnectionPool"},
        {"item": "/etc/c.conf", "skipped": True},
    ]
    found = acceptance.kubernetes_evidence(True, reads, "", "n2", "gpuops.io")
    assert found == {"rc": 0, "stderr": "", "stdout": json.dumps([nodes[1]]), "label_prefix": "gpuops.io"}
    # A cluster without that Node: an empty list, as a read by name gives.
    assert json.loads(acceptance.kubernetes_evidence(True, reads, "", "n9", "x")["stdout"]) == []
    failed = acceptance.kubernetes_evidence(True, reads, "/etc/b.conf", "n1", "x")
    assert failed == {"rc": 1, "stdout": "", "stderr": "Failed to get client due to HTTPSConnectionPool"}
    assert acceptance.kubernetes_evidence(True, reads, "/etc/c.conf", "n1", "x")["stderr"] == (
        "the Kubernetes API was not read"
    )
    assert acceptance.kubernetes_evidence(True, [], "/etc/d.conf", "n1", "x")["rc"] == 1
    assert acceptance.kubernetes_evidence(True, [{"item": ""}], "", "n1", "x")["stderr"] == (
        "the Kubernetes API gave no Nodes"
    )
    assert acceptance.kubernetes_evidence(False, reads, "", "n1", "x") == {
        "skipped": "gpuops_kubernetes_join is false: the node joins no cluster", "not_applicable": True
    }  # fmt: skip
    # Judged as before: the healthy H100's Node, read once for the rack, passes.
    evidence = acceptance.kubernetes_evidence(True, [{"item": "", "resources": [NODE]}], "", NODE["metadata"]["name"],
                                              "gpuops.io")  # fmt: skip
    assert check(judge(node=evidence), "kubernetes.ready")["status"] == "PASS"
