"""The acceptance stage on simulated nodes: every check's status on every node, the verdicts, the documents against
their schemas, the evidence against its manifest, and the playbook's gate."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
from pathlib import Path

import jsonschema
import pytest

REPORTS = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"
ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
CHECKS = (
    "gpu.count", "gpu.model", "gpu.pcie", "gpu.ecc", "gpu.memory", "gpu.recovery", "gpu.nvlink", "gpu.fabric",
    "gpu.clocks", "gpu.xid", "gpu.dcgm", "driver.version", "driver.persistence", "driver.fabric_manager",
    "fabric.ports", "fabric.counters", "fabric.bandwidth", "inventory.vbios", "inventory.hca_firmware",
    "inventory.system_serial", "nccl.single_node", "nccl.pairs", "cuda.runtime", "container.gpus", "kubernetes.ready",
    "kubernetes.labels", "kubernetes.gpus",
)  # fmt: skip
# A container's kernel is its host's: the CUDA check and the GPU container do not apply to a simulated node; the nodes
# join no cluster here (gpuops_kubernetes_join: false), and the inventory gives them no gpuops_system_serial.
NOT_APPLICABLE = ("cuda.runtime", "container.gpus", "kubernetes.ready", "kubernetes.labels", "kubernetes.gpus",
                  "inventory.system_serial")  # fmt: skip
# A healthy simulated H100 node: fabric manager installed and enabled cannot start without an NVIDIA module in the
# container's kernel (WARN); no NCCL measurement (only group nccl_measured has one: prepare), no pairs (SKIPPED, not
# required by converge.yml); DCGM's level-1 diagnostic passes.
H100 = dict.fromkeys(CHECKS, "PASS") | dict.fromkeys(NOT_APPLICABLE, "SKIPPED") | {
    "driver.fabric_manager": "WARN", "nccl.single_node": "SKIPPED", "nccl.pairs": "SKIPPED"
}  # fmt: skip
# The same with the 8x H100 all_reduce_perf run kept (476.53 GB/s at the largest size, gate 460).
MEASURED = H100 | {"nccl.single_node": "PASS"}
# The nodes with a hardware fault have no driver installed (prepare): the capture's driver answers, none is installed;
# nor DCGM.
BARE = H100 | {"driver.version": "ERROR", "driver.fabric_manager": "FAIL", "gpu.dcgm": "SKIPPED"}
NO_NVML = dict.fromkeys(
    ("gpu.count", "gpu.model", "gpu.pcie", "gpu.ecc", "gpu.memory", "gpu.recovery", "gpu.nvlink", "gpu.fabric",
     "gpu.clocks", "driver.persistence", "inventory.vbios"),
    "ERROR",
)  # fmt: skip
# The 4x L40S capture holds no PCIe link, remap state or reset status (tests/fixtures/SOURCES.md): those checks
# cannot judge, so the node is incomplete rather than accepted.
L40S = (
    dict.fromkeys(CHECKS, "PASS")
    | {
        "gpu.pcie": "ERROR",
        "gpu.memory": "ERROR",
        "gpu.recovery": "ERROR",
        "gpu.nvlink": "SKIPPED",
        "gpu.fabric": "SKIPPED",
        "driver.fabric_manager": "SKIPPED",
        "nccl.single_node": "SKIPPED",
        "nccl.pairs": "SKIPPED",
    }
    | dict.fromkeys(NOT_APPLICABLE, "SKIPPED")
)
# Node -> (verdict, the status of every check).
EXPECTED = {
    "h100": ("accepted", MEASURED),
    "l40s": ("incomplete", L40S),
    # CRC and symbol errors rising on mlx5_3's interface (p1p2) between the two ethtool reads; no driver or DCGM
    # installed (prepare), as the H100 fault nodes.
    "l40s-roce-errors": (
        "rejected",
        L40S | {"fabric.counters": "FAIL", "driver.version": "ERROR", "gpu.dcgm": "SKIPPED"},
    ),
    "h100-gpu-missing": ("rejected", BARE | {"gpu.count": "FAIL"}),
    "h100-xid79": ("rejected", BARE | {"gpu.xid": "FAIL"}),
    "h100-pcie-degraded": ("rejected", BARE | {"gpu.pcie": "FAIL"}),
    "h100-remap-failure": ("rejected", BARE | {"gpu.memory": "FAIL"}),
    # Its down port's rail fails every test it is in; the partners, re-paired with nodes that passed, pass.
    "h100-ib-port-down": ("rejected", BARE | {"fabric.ports": "FAIL", "fabric.bandwidth": "FAIL"}),
    # mlx5_6 trained at HDR 200: its rate fails the ports check, and it moves what HDR moves.
    "h100-ib-rate-low": ("rejected", BARE | {"fabric.ports": "FAIL", "fabric.bandwidth": "FAIL"}),
    # mlx5_4 moves half its rate as client and as server: below the gate with a node that passed.
    "h100-ib-bw-low": ("rejected", BARE | {"fabric.bandwidth": "FAIL"}),
    # Symbol errors rising on mlx5_4 between the stage's two reads of its counters.
    "h100-ib-symbol-errors": ("rejected", BARE | {"fabric.counters": "FAIL"}),
    # DCGM's level-1 diagnostic fails GPU 3's row remap check: with the driver userland in place, its FAIL alone
    # rejects the node.
    "h100-dcgm-memory": ("rejected", H100 | {"gpu.dcgm": "FAIL"}),
    # A VBIOS mix is a warning in the shipped profile (firmware.vbios_drift: warn): accepted, with the finding.
    "h100-vbios-mix": ("accepted", MEASURED | {"inventory.vbios": "WARN"}),
    # Its all_reduce_perf peaks at half the gate: with the driver userland and DCGM in place, NCCL alone rejects it.
    "h100-nccl-below-gate": ("rejected", H100 | {"nccl.single_node": "FAIL"}),
    # Its all_reduce_perf died with "unhandled cuda error": no figure to judge.
    "h100-nccl-cuda-error": ("rejected", BARE | {"nccl.single_node": "FAIL"}),
    # Upgraded without a reboot: nvidia-smi refuses (no GPU check can judge), the kernel log names the module loaded.
    "h100-driver-mismatch": (
        "rejected",
        H100 | NO_NVML | {"driver.version": "FAIL", "driver.fabric_manager": "FAIL", "gpu.dcgm": "SKIPPED"},
    ),
    # Checked on arrival, before any driver: the GPU checks cannot run; fabric manager is not there.
    "h100-no-driver": (
        "rejected",
        H100 | NO_NVML | {"driver.version": "ERROR", "driver.fabric_manager": "FAIL", "gpu.dcgm": "SKIPPED"},
    ),
}


def runs() -> list[Path]:
    return sorted(p for p in REPORTS.iterdir() if (p / "run.json").is_file())


def node(name: str, run: Path | None = None) -> dict:
    return json.loads(((run or runs()[0]) / "nodes" / f"{name}.json").read_text())


def schema(name: str) -> dict:
    return json.loads((ROOT / "schemas" / f"acceptance-{name}.schema.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_check_of_every_node_ends_in_its_status(name: str) -> None:
    data = node(name)
    verdict, statuses = EXPECTED[name]
    assert {c["id"]: c["status"] for c in data["checks"]} == statuses
    assert data["verdict"] == verdict
    assert data["accepted"] is (verdict == "accepted")
    assert data["simulated"]["profile"].startswith(data["profile"])
    assert data["summary"].startswith(f"[SIMULATED {data['simulated']['profile']}] {name} ({data['profile']}): ")
    for check in data["checks"]:
        if check["status"] in ("FAIL", "ERROR"):
            assert check["severity"] in ("low", "medium", "high", "critical") and check["action"], check
        else:
            assert (check["severity"], check["action"], check["fault"]) == (None, None, None), check


def test_the_faults_carry_their_reasons_and_actions() -> None:
    checks = {n: {c["id"]: c for c in node(n)["checks"]} for n in EXPECTED}
    xid = checks["h100-xid79"]["gpu.xid"]
    assert xid["fault"] == "xid_79" and xid["severity"] == "critical"
    assert "xid_79 on 0000:a1:00.0: GPU has fallen off the bus" in xid["reason"]
    assert xid["action"].startswith("Drain the node")
    assert checks["h100-pcie-degraded"]["gpu.pcie"]["reason"] == "GPU 1 (00000000:2A:00.0) runs x8 of x16"
    assert checks["h100-remap-failure"]["gpu.memory"]["fault"] == "row_remap_failure"
    assert checks["h100-remap-failure"]["gpu.memory"]["severity"] == "critical"
    assert checks["h100-gpu-missing"]["gpu.count"]["reason"].startswith("nvidia-smi lists 7 GPU(s), the profile 8")
    assert checks["h100-ib-port-down"]["fabric.ports"]["action"].startswith("Pull out, clean and reinsert")
    symbol = checks["h100-ib-symbol-errors"]["fabric.counters"]
    assert (symbol["fault"], symbol["severity"]) == ("port_errors_rising", "high")
    assert re.fullmatch(
        r"error counters rose in [0-9.]+ s while the node was idle: mlx5_4/1 symbol_error \+37", symbol["reason"]
    ), symbol["reason"]
    assert symbol["value"] == {"rising": {"mlx5_4/1": {"symbol_error": 37}}, "nonzero": {}}
    crc = checks["l40s-roce-errors"]["fabric.counters"]
    assert (crc["fault"], crc["severity"], crc["evidence"]) == ("roce_errors_rising", "high", ["ethtool.json"])
    assert re.fullmatch(r"error counters rose in [0-9.]+ s while the node was idle: mlx5_3/1 rx_symbol_err_phy "
                        r"\+13115284, rx_crc_errors_phy \+13147323", crc["reason"]), crc["reason"]  # fmt: skip
    assert checks["l40s"]["fabric.counters"]["reason"].startswith("no error counter of 2 RoCE port(s) is above 0")
    slow = checks["h100-ib-bw-low"]["fabric.bandwidth"]
    assert (slow["fault"], slow["severity"]) == ("port_bandwidth_low", "high")
    # Its partners: each at 196.17 Gb/s with it, or the port-down node, whose mlx5_4 is not active.
    assert re.fullmatch(r"below the gate with a node that passed: mlx5_4 \([a-z0-9-]+ (196\.17 Gb/s|\(its port is not "
                        r"active\))(, [a-z0-9-]+ 196\.17 Gb/s)+\)", slow["reason"]), slow["reason"]  # fmt: skip
    hdr = checks["h100-ib-rate-low"]
    assert (hdr["fabric.ports"]["fault"], hdr["fabric.bandwidth"]["fault"]) == ("port_rate_low", "port_bandwidth_low")
    assert hdr["fabric.ports"]["reason"] == "mlx5_6 port 1 runs at 200 Gb/s, expected at least 400 Gb/s"
    assert hdr["fabric.bandwidth"]["reason"].startswith("below the gate with a node that passed: mlx5_6 ("), hdr
    down = checks["h100-ib-port-down"]["fabric.bandwidth"]
    assert (down["fault"], down["reason"]) == ("port_down", "not active here: mlx5_4")
    memory = checks["h100-dcgm-memory"]["gpu.dcgm"]
    assert (memory["fault"], memory["severity"], memory["required"]) == ("dcgm_memory", "critical", True)
    assert memory["reason"] == ("Deployment Page Retirement/Row Remap failed on GPU 3: GPU 3 has uncorrectable "
                                "memory errors and row remappings are pending")  # fmt: skip
    # l40s ran level 3 in the background (its profile replays a level-3 run for -r 3 only).
    assert checks["l40s"]["gpu.dcgm"]["reason"] == "DCGM 3.3.9: 15 test(s) passed, 1 skipped"
    below = checks["h100-nccl-below-gate"]["nccl.single_node"]
    assert (below["fault"], below["severity"], below["value"], below["gate"]) == (
        "nccl_below_gate",
        "high",
        235.26,
        460,
    )
    assert re.fullmatch(r"largest bus bandwidth 235\.26 GB/s is below min_busbw_gbps 460 \(measured "
                        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)", below["reason"]), below["reason"]  # fmt: skip
    assert checks["h100"]["nccl.single_node"]["reason"].startswith(
        "all_reduce_perf bus bandwidth 476.53 GB/s, gate 460"
    )
    died = checks["h100-nccl-cuda-error"]["nccl.single_node"]
    assert (died["fault"], died["value"]) == ("nccl_failed", None)
    assert died["reason"].startswith("the benchmark exited with return code 1; Test NCCL failure at all_reduce.cu:44: "
                                     "unhandled cuda error"), died["reason"]  # fmt: skip
    mismatch = checks["h100-driver-mismatch"]["driver.version"]
    assert mismatch["reason"] == ("the kernel refused a client at 570.148.08: its loaded module is 570.148.06; "
                                  "installed: 535.309.01")  # fmt: skip
    assert mismatch["action"].startswith("Reboot the node")
    assert checks["h100-vbios-mix"]["inventory.vbios"]["reason"] == (
        "the GPUs run 2 VBIOS versions: 96.00.74.00.01, 96.00.89.00.01"
    )
    for name in EXPECTED:
        for check_id in NOT_APPLICABLE:
            found = checks[name][check_id]
            assert found["required"] is False, found
            assert found["reason"].startswith("not applicable: "), found
    no_driver = checks["h100-no-driver"]["gpu.count"]["reason"]
    assert no_driver.startswith("nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA")
    assert checks["h100-no-driver"]["gpu.count"]["value"] == {"gpus_on_pci_bus": 8}


def test_the_simulation_presents_the_installed_driver() -> None:
    """nvidia-smi answers with the NVML library prepare installed, not the capture's 565.57.01."""
    h100, l40s = node("h100"), node("l40s")
    assert h100["inventory"]["driver"] == {
        "loaded": "535.309.01", "installed": {"nvml_library": ["535.309.01"]}, "cuda_version": "12.2"}  # fmt: skip
    assert l40s["inventory"]["driver"]["loaded"] == "550.163.01"
    assert len(h100["inventory"]["gpus"]) == 8 and h100["inventory"]["gpus"][0]["vbios"] == "96.00.74.00.01"
    # The adapters as ibstat names them (a container's sysfs is its host's): firmware, no PSID (sysfs's board_id).
    adapters = {a["name"]: (a["firmware"], a["psid"]) for a in h100["inventory"]["rdma_adapters"]}
    assert adapters == {**{f"mlx5_{n}": ("28.41.1000", None) for n in (0, 1, 4, 5, 6, 7, 8, 9)},
                        "mlx5_bond_0": ("32.38.3056", None)}  # fmt: skip


def test_roce_nodes_measure_with_each_other_on_their_gid_index() -> None:
    """The two RoCE nodes pair with each other, never with an InfiniBand node, and run ib_write_bw with the GID index
    the rdma_fabric stage recorded (prepare): 381.41 Gb/s on both rails, above 90 % of 400."""
    for name, partner in (("l40s", "l40s-roce-errors"), ("l40s-roce-errors", "l40s")):
        found = {c["id"]: c for c in node(name)["checks"]}["fabric.bandwidth"]
        assert found["reason"] == "2 port(s) at or above the gate, the slowest 381.41 Gb/s", found
        assert {run["partner"] for runs in found["value"].values() for run in runs} == {partner}
    record = json.loads((runs()[0] / "evidence" / "l40s" / "ib-write-bw.json").read_text())
    members = {m["node"]: m for m in record["members"]}
    assert (members["l40s"]["fabric"], members["l40s"]["gid_index"], members["l40s"]["rails"]) == (
        "Ethernet", 3, ["mlx5_0", "mlx5_3"])  # fmt: skip
    assert (members["h100"]["fabric"], members["h100"]["gid_index"]) == ("InfiniBand", None)
    roce = {"l40s", "l40s-roce-errors"}
    for entry in record["entries"]:
        assert ({entry["client"], entry["server"]} <= roce) or not ({entry["client"], entry["server"]} & roce), entry
        for rail in entry["rails"].values():
            for end in rail.values():
                if end and {entry["client"], entry["server"]} <= roce:
                    assert end["cmd"][end["cmd"].index("-x") + 1] == "3", end


def test_h100_rails_measure_from_the_gpu_on_their_pcie_switch() -> None:
    """The simulated H100s' perftest has CUDA (its --help offers --use_cuda): each rail whose NIC shares a PCIe switch
    with a GPU in topo -m (mlx5_0, 1 and 4 to 7 with GPUs 0, 1 and 4 to 7) runs from that GPU's memory at both ends;
    mlx5_8 and mlx5_9, on no GPU's switch, from host memory (h100's own ends: a partner's are its own)."""
    found = {c["id"]: c for c in node("h100")["checks"]}["fabric.bandwidth"]
    assert found["reason"] == ("8 port(s) at or above the gate, the slowest 392.34 Gb/s; from GPU memory (GPUDirect "
                               "RDMA) on mlx5_0, mlx5_1, mlx5_4, mlx5_5, mlx5_6, mlx5_7"), found  # fmt: skip
    record = json.loads((runs()[0] / "evidence" / "h100" / "ib-write-bw.json").read_text())
    ran = {}
    for entry in record["entries"]:
        if "h100" in (entry["client"], entry["server"]):
            for rail, ends in entry["rails"].items():
                end = ends.get("client" if entry["client"] == "h100" else "server")
                if end:
                    ran.setdefault(rail, set()).add(next((a for a in end["cmd"] if a.startswith("--use_cuda=")), None))
    assert ran == {**{f"mlx5_{n}": {f"--use_cuda={n}"} for n in (0, 1, 4, 5, 6, 7)}, "mlx5_8": {None}, "mlx5_9": {None}}


def test_the_documents_follow_their_schemas() -> None:
    run = runs()[0]
    node_schema, run_schema = schema("node"), schema("run")
    for name in EXPECTED:
        jsonschema.validate(node(name, run), node_schema)
    document = json.loads((run / "run.json").read_text())
    jsonschema.validate(document, run_schema)
    assert document["totals"] == {"accepted": 2, "rejected": 14, "incomplete": 1, "nodes": 17}
    assert document["racks"] == {"rack_molecule": {"accepted": 2, "rejected": 14, "incomplete": 1}}
    assert document["simulated"] is True
    assert document["collection"]["name"] == "gpuops.bringup"


def test_the_evidence_matches_its_manifest_and_is_private() -> None:
    run = runs()[0]
    for name in EXPECTED:
        directory = run / "evidence" / name
        sums = dict(reversed(line.split("  ", 1)) for line in (directory / "SHA256SUMS").read_text().splitlines())
        assert "nvidia-smi-query.xml" in sums and "kernel-log.txt" in sums
        for file, digest in sums.items():
            assert hashlib.sha256((directory / file).read_bytes()).hexdigest() == digest
            assert stat.S_IMODE((directory / file).stat().st_mode) == 0o640
        listed = {e["file"]: e["sha256"] for e in node(name, run)["evidence"] if "file" in e}
        assert listed == {f"evidence/{name}/{f}": d for f, d in sums.items() if not f.endswith(".stderr")}
    for directory in (run, run / "nodes", run / "evidence", run / "evidence" / "h100"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o750


def test_the_gate_fails_exactly_the_nodes_not_accepted() -> None:
    """The playbook with its default gate, adding to converge's run: every node not accepted fails, with what to do."""
    before = runs()
    first = before[0]
    proc = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(ROOT / "playbooks" / "acceptance.yml"),
         "-e", f"acceptance_results_dir={REPORTS}", "-e", f"acceptance_run_id={first.name}",
         "-e", '{"acceptance_optional": ["nccl.pairs"]}', "-e", "acceptance_counter_interval=1",
         "-e", "gpuops_kubernetes_join=false"],
        capture_output=True, text=True, check=False,
        # Molecule forces colour for its own output; the recap is parsed here.
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip
    failed = dict(re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=(\d)", proc.stdout, re.M))
    assert failed == {n: "0" if v == "accepted" else "1" for n, (v, _s) in EXPECTED.items()}, proc.stdout[-4000:]
    output = " ".join((proc.stdout + proc.stderr).split())
    assert "[SIMULATED hgx_h100_8gpu_pcie_degraded] h100-pcie-degraded (hgx_h100_8gpu): REJECTED" in output
    assert "gpu.pcie: Drain the node; measure the link again under load" in output
    # The same run: the attempt is added and the nodes' documents replaced; no new run directory.
    assert runs() == before
    document = json.loads((first / "run.json").read_text())
    assert len(document["attempts"]) == 2


def test_the_reports_show_every_node_and_what_to_do():
    """The stage's reports of converge's run, made from its results directory: JUnit with a suite per node and a
    failure per failed check, the HTML with each rejected node's reason and next action, the banner of a simulated
    run."""
    from junitparser import Failure, JUnitXml

    run = runs()[0]
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(run / "junit.xml"))}
    assert sorted(suites) == sorted(EXPECTED)
    for name, (_verdict, statuses) in EXPECTED.items():
        failed = sorted(i for i, s in statuses.items() if s == "FAIL")
        assert sorted(c.name for c in suites[name] if any(isinstance(r, Failure) for r in c.result)) == failed
    html = " ".join((run / "report.html").read_text().split())
    assert 'id="simulated-banner"' in html and "<script" not in html
    assert "GPU 1 (00000000:2A:00.0) runs x8 of x16" in html
    assert "Drain the node; measure the link again under load" in html
    # The healthy H100's GPUs from its kept nvidia-smi -q -x: eight bars, none slowed down.
    temperatures = re.search(r'<svg [^>]*aria-label="h100: GPU temperature and clock events".*?</svg>', html)
    assert temperatures and temperatures[0].count('class="bar"') == 8 and 'class="below"' not in temperatures[0]
    assert "| h100-pcie-degraded | rack\\_molecule | hgx\\_h100\\_8gpu | REJECTED | gpu.pcie FAIL" in (
        run / "summary.md").read_text()  # fmt: skip
