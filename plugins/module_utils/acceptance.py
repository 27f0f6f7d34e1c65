# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance stage's decisions: what one node's evidence says, each check's status, and the node's verdict.

The node side (module acceptance_read) only collects evidence: the raw output of nvidia-smi, lspci, ibstat, the
kernel log, dkms, systemctl, dmidecode and the package manager, and snapshots of the sysfs files the parsers read.
Everything is judged here, on the controller, from that evidence alone: the results can be made again from the
evidence files without reaching the node, and what a report shows is exactly what was judged.

read_state(evidence) parses the evidence with the collection's parsers; node_results() runs every check of CHECKS
against the node's hardware profile (gpuops_hardware) and returns the node's results document. Each check ends in
exactly one status:

- PASS: the check ran and the node meets it;
- WARN: the check ran and the node meets it, with a finding an operator should look at (never blocks acceptance);
- FAIL: the check ran and the node does not meet it (with a severity and the next action);
- ERROR: the check could not run or judge (a tool missing, a value not reported, output unreadable);
- SKIPPED: the check does not apply to this node's profile, or its input does not exist yet (with the reason).

A node is accepted when every check its profile requires passed (PASS or WARN); rejected when a required check
FAILed; otherwise (a required check ended ERROR or SKIPPED) incomplete: not run never counts as passed.
"""

from __future__ import annotations

import functools
import json
import os
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    acceptance_evidence,
    acceptance_faults,
    acceptance_pairs,
    container_toolkit,
    cuda_toolkit,
    dcgm,
    dkms,
    ethtool,
    hardware_profiles,
    infiniband,
    kubernetes_node,
    nccl_tests_pairs,
    nvidia_smi,
    osinfo,
    parsing,
    pci,
    xid,
    xid_catalog,
)
from ansible_collections.gpuops.bringup.plugins.module_utils.nccl_tests import verdict as nccl_verdict
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import SnapshotReader

SCHEMA_VERSION = 1
STATUSES = ("PASS", "WARN", "FAIL", "ERROR", "SKIPPED")
PASSING = ("PASS", "WARN")
VERDICTS = ("accepted", "rejected", "incomplete")
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Inventory host names become file names in the results directory.
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,252}")
# A system serial as the rack manifest's serial column and gpuops_system_serial give it (plugin_utils rack_manifest
# reads the manifest with it): as chassis labels print them, letters, digits and . _ / -, at most 64.
SYSTEM_SERIAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,63}")
# A version as drivers and firmware print them: 535.274.02, 28.39.1002, 96.00.74.00.01.
_VERSION_PART = re.compile(r"[0-9]{1,9}|[A-Za-z]{1,9}")

# Oracle's pair test of two nodes' all_reduce_perf (ncclscout.py, its GPU_SHAPES thresholds in GB/s busbw).
_OCI_PAIRS = (
    "Oracle's ncclscout.py, two-node all_reduce threshold (UncleMac66/nodenurse bin/ncclscout.py, commit 8b368a95):"
)
# Published gates by GPU model and count: a profile gets them by what its GPUs are, whatever its group is called;
# gpuops_hardware.gates overrides any of them.
PUBLISHED_GATES = (
    {
        "model": "NVIDIA H100 80GB HBM3",
        "count": 8,
        "gates": {"nccl_all_reduce_busbw_gbps": 460, "ib_write_bw_gbps": 380},
        "source": "Azure/azurehpc-health-checks conf/nd96isr_h100_v5.conf (commit 0e0a1ac2): check_nccl_allreduce "
        "460.0 1 16G, check_ib_bw_gdr 380",
    },
    {
        "model": "NVIDIA H200",
        "count": 8,
        "gates": {"nccl_all_reduce_busbw_gbps": 431, "ib_write_bw_gbps": 360},
        "source": "Azure/azurehpc-health-checks conf/nd96isr_h200_v5.conf (commit 0e0a1ac2): check_nccl_allreduce "
        "431.0 1 16G, check_ib_bw_gdr 360",
    },
    {
        "model": "NVIDIA A100-SXM4-80GB",
        "count": 8,
        "gates": {"nccl_all_reduce_busbw_gbps": 228, "ib_write_bw_gbps": 180},
        "source": "Azure/azurehpc-health-checks conf/nd96amsr_a100_v4.conf (commit 0e0a1ac2): check_nccl_allreduce "
        "228.0 1 16G, check_ib_bw_gdr 180.0",
    },
    # Two nodes together (nccl_tests_pairs).
    *(
        {
            "model": model,
            "count": 8,
            "gates": {"nccl_pair_busbw_gbps": value},
            "source": f"{_OCI_PAIRS} {shape} {value:.1f}",
        }
        for model, shape, value in (
            ("NVIDIA H100 80GB HBM3", "H100", 365),
            ("NVIDIA H200", "H200", 365),
            ("NVIDIA A100-SXM4-80GB", "A100", 185),
        )
    ),
)
# What a profile may set under gpuops_hardware.gates, each a number above 0.
GATE_KEYS = {
    "nccl_all_reduce_busbw_gbps": "single-node all_reduce_perf bus bandwidth (GB/s) at the largest message size",
    "ib_write_bw_gbps": "ib_write_bw per port (Gb/s)",
    "nccl_pair_busbw_gbps": "all_reduce_perf bus bandwidth (GB/s) of two nodes together (nccl_tests_pairs)",
}
# gpuops_hardware.firmware: the expected firmware, and how drift is judged.
FIRMWARE_KEYS = {
    "vbios": "a list of the VBIOS versions the node's GPUs may run",
    "vbios_drift": "warn or fail: GPUs of one node on different or unexpected VBIOS versions",
    "hca_min": "the lowest RDMA adapter firmware version, e.g. 28.39.1002",
    "hca_drift": "warn or fail: an adapter below hca_min",
}
DRIFT = ("warn", "fail")


# ---------------------------------------------------------------------------------------------------------------
# evidence -> state


def _item(evidence, name):
    """One evidence item ({ran, rc, stdout, stderr, missing, ...}) or {} when the node side did not collect it."""
    value = (evidence or {}).get(name)
    return value if isinstance(value, dict) else {}


def _text(item):
    value = item.get("stdout")
    return parsing.clean(value) if isinstance(value, str) else None


def _json(item):
    text = _text(item)
    if not text:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _why_not(item, what):
    """Why an evidence item gives nothing to judge: not installed, failed, or not collected."""
    if not item:
        return f"{what} was not collected"
    if item.get("missing"):
        return f"{item.get('tool', what)} is not installed on the node"
    if item.get("skipped"):
        return f"{what} was not run: {item['skipped']}"
    if item.get("rc") not in (0, None):
        err = " ".join(((item.get("stderr") or "") + " " + (item.get("stdout") or "")).split())[-300:]
        return f"{what} exited with {item.get('rc')}: {err or 'no message'}"
    return f"{what} printed nothing"


def _gpu_state(evidence):
    item = _item(evidence, "nvidia-smi-query.xml")
    state = {"query": None, "failure": None, "error": None, "nvlink": None, "nvlink_error": None}
    if not item or item.get("missing") or item.get("rc") is None:
        state["error"] = _why_not(item, "nvidia-smi -q -x")
        return state
    if item["rc"] != 0:
        state["failure"] = nvidia_smi.classify_failure(item["rc"], item.get("stdout"), item.get("stderr"))
        if state["failure"] is None:
            state["error"] = _why_not(item, "nvidia-smi -q -x")
        return state
    try:
        state["query"] = nvidia_smi.parse_query_xml(_text(item))
    except parsing.ParseError as exc:
        state["error"] = f"nvidia-smi -q -x printed what is no query: {exc}"
        return state
    nvlink = _item(evidence, "nvidia-smi-nvlink.txt")
    if nvlink.get("rc") == 0 and _text(nvlink):
        try:
            state["nvlink"] = nvidia_smi.parse_nvlink_status(_text(nvlink))
        except parsing.ParseError as exc:
            state["nvlink_error"] = f"nvidia-smi nvlink -s printed what is no NVLink status: {exc}"
    else:
        state["nvlink_error"] = _why_not(nvlink, "nvidia-smi nvlink -s")
    return state


def _pci_state(evidence):
    lspci = _item(evidence, "lspci.txt")
    if lspci.get("rc") == 0 and _text(lspci) is not None:
        try:
            return pci.inventory(pci.read_lspci_nn(_text(lspci))["devices"])
        except parsing.ParseError:
            return None
    snapshot = _json(_item(evidence, "sysfs-pci.json"))
    if snapshot is not None:
        return pci.inventory(pci.read_sysfs(SnapshotReader(snapshot)))
    return None


def _infiniband_state(evidence):
    snapshot = _json(_item(evidence, "sysfs-infiniband.json"))
    devices = infiniband.read_sysfs(SnapshotReader(snapshot)) if snapshot is not None else []
    ibstat = _item(evidence, "ibstat.txt")
    if _text(ibstat):
        devices = infiniband.merge(devices, infiniband.parse_ibstat(_text(ibstat))["devices"])
    return {"devices": devices}


# Error counters a fault of the port's own link drives (bad signal: cable, transceiver, connector): one rising while
# the node is idle FAILs the port. The others also rise from what happens elsewhere in the fabric (congestion, a
# remote port's errors, partition checks): a rise WARNs.
LINK_ERROR_COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "local_link_integrity_errors",
                       "port_rcv_errors", "excessive_buffer_overrun_errors")  # fmt: skip
FABRIC_ERROR_COUNTERS = ("port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
                         "port_xmit_constraint_errors", "port_rcv_constraint_errors", "vl15_dropped")  # fmt: skip
# A RoCE port's are its Ethernet interface's physical-layer counters (mlx5_core's ethtool names, the kernel's mlx5
# counters.rst): those of the link itself (symbol errors FEC did not correct, frames with a bad CRC, the link going
# down, a shorted module: a cable or transceiver) and those of what came over it (malformed frames from the peer,
# frames dropped for want of buffers, a pause storm: the fabric or its flow control). The bits FEC corrected
# (rx_corrected_bits_phy, rx_err_lane_*_phy) are left out: a 200G or 400G PAM4 link corrects bits all the time, so
# they rise on a healthy link too; the errors FEC could not correct are rx_pcs_symbol_err_phy.
ETHTOOL_LINK_COUNTERS = ("rx_symbol_err_phy", "rx_pcs_symbol_err_phy", "rx_crc_errors_phy", "link_down_events_phy",
                         "module_bad_shorted")  # fmt: skip
ETHTOOL_FABRIC_COUNTERS = ("rx_discards_phy", "tx_discards_phy", "tx_errors_phy", "rx_undersize_pkts_phy",
                           "rx_fragments_phy", "rx_jabbers_phy", "rx_oversize_pkts_phy", "rx_in_range_len_errors_phy",
                           "rx_out_of_range_len_phy", "tx_pause_storm_error_events")  # fmt: skip
# Per link layer: the kind of port, the evidence file, the tool and its parser, the counters (the link's, then the
# others), the counter that says the link went down, and what a read without the link's counters lacks.
PORT_COUNTERS = {
    "InfiniBand": {"kind": "InfiniBand", "file": "perfquery.json", "tool": "perfquery",
                   "parse": infiniband.parse_perfquery, "link": LINK_ERROR_COUNTERS, "other": FABRIC_ERROR_COUNTERS,
                   "down": "link_downed", "lacking": "no error counters"},
    "Ethernet": {"kind": "RoCE", "file": "ethtool.json", "tool": "ethtool -S", "parse": ethtool.parse_stats,
                 "link": ETHTOOL_LINK_COUNTERS, "other": ETHTOOL_FABRIC_COUNTERS, "down": "link_down_events_phy",
                 "lacking": "none of the physical-layer error counters read "
                            f"({', '.join(ETHTOOL_LINK_COUNTERS)}: mlx5_core's names)"},
}  # fmt: skip


def _counter_read(item, where, layer):
    """(counters parsed, None) from one read of a port's counters by its layer's tool, or (None, why there are
    none)."""
    kind = PORT_COUNTERS[layer]
    text = _text(item)
    if not text or item.get("rc") != 0:
        return None, _why_not(item, f"{kind['tool']} of {where}")
    parsed = kind["parse"](text)
    if not set(parsed["counters"]) & set(kind["link"]):
        return None, f"{kind['tool']} of {where} printed {kind['lacking']}: {parsing.excerpt(text)}"
    return parsed, None


def _counters_state(evidence):
    """The two reads of each port's error counters ({"interval_s", "ports": {"mlx5_0/1": {"reads": [first, second],
    "error", "layer"}}}; perfquery.json's InfiniBand ports, ethtool.json's RoCE ports), or None when the node side
    collected neither."""
    ports, intervals = {}, {}
    for layer, kind in PORT_COUNTERS.items():
        data = _json(_item(evidence, kind["file"]))
        samples = data.get("samples") if isinstance(data, dict) else None
        if not isinstance(samples, list) or len(samples) != 2 or not all(isinstance(s, dict) for s in samples):
            continue
        for where in sorted({str(k) for sample in samples for k in sample}):
            reads = [_counter_read(_item(sample, where), where, layer) for sample in samples]
            error = next((why for _parsed, why in reads if why), None)
            ports[where] = {"reads": [parsed for parsed, _why in reads], "error": error, "layer": layer}
        interval = data.get("interval_s")
        intervals[layer] = float(interval) if _number(interval) else None
    if not intervals:
        return None
    # The least time a counter had to rise in: the shorter interval of the files that read a port (perfquery.json
    # is written on a RoCE node too, with no port, and ends before the ethtool reads do).
    judged = [intervals[layer] for layer in intervals if any(p["layer"] == layer for p in ports.values())]
    judged = judged or list(intervals.values())
    return {"interval_s": min(judged) if None not in judged else None, "ports": ports}


def _dcgm_state(evidence):
    """{"item": the evidence item, "diag": parsed or None, "error": why there is no result or None}."""
    item = _item(evidence, "dcgm-diag.json")
    cmd = item.get("cmd") if isinstance(item.get("cmd"), list) else []
    # Run under coreutils timeout (acceptance_read): its status 124 says the time ran out, whatever was printed.
    if item.get("rc") == 124 and len(cmd) > 3 and str(cmd[0]).endswith("timeout"):
        return {
            "item": item,
            "diag": None,
            "error": f"dcgmi diag did not finish within {cmd[2]} s (acceptance_dcgm_timeout) and was stopped",
        }
    text = _text(item)
    if not text:
        return {"item": item, "diag": None, "error": _why_not(item, "dcgmi diag")}
    try:
        diag = dcgm.parse_diag(text)
    except parsing.ParseError as exc:
        return {"item": item, "diag": None, "error": f"dcgmi diag exited with {item.get('rc')}: {exc}"}
    if not diag["tests"]:
        why = "; ".join(diag["errors"]) or "no test result"
        return {"item": item, "diag": diag, "error": f"dcgmi diag exited with {item.get('rc')}: {why}"}
    return {"item": item, "diag": diag, "error": None}


def _kernel_log_state(evidence):
    item = _item(evidence, "kernel-log.txt")
    text = _text(item)
    if text is None or item.get("rc") not in (0, None):
        return {"source": None, "scan": None, "driver": None, "error": _why_not(item, "the kernel log")}
    return {
        "source": item.get("source"),
        "scan": xid.scan(text),
        "driver": xid.driver_messages(text),
        "error": None,
    }


def _library_version(path):
    """535.274.02 from /usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.535.274.02; None otherwise."""
    if not isinstance(path, str):
        return None
    match = re.search(r"libnvidia-ml\.so\.([0-9]{1,4}(?:\.[0-9]{1,4}){1,3})$", path)
    return match.group(1) if match else None


def _driver_state(evidence, kernel_log):
    files = _json(_item(evidence, "driver-files.json"))
    files = {k: v for k, v in files.items() if isinstance(v, (str, list))} if isinstance(files, dict) else {}
    nvrm = dkms.parse_nvrm_version(files["proc_version"]) if isinstance(files.get("proc_version"), str) else None
    sys_version = files["sys_version"].strip() if isinstance(files.get("sys_version"), str) else ""
    messages = (kernel_log or {}).get("driver") or {"loaded": [], "api_mismatch": []}
    records = dkms.parse_dkms_status(_text(_item(evidence, "dkms-status.txt")) or "")
    installed_dkms = sorted(
        {r["version"] for r in records if r["module"].startswith("nvidia") and r["state"] == "installed"},
        key=version_key,
    )
    libraries = files.get("nvml_libraries") if isinstance(files.get("nvml_libraries"), list) else []
    library_versions = sorted({v for v in (_library_version(p) for p in libraries) if v}, key=version_key)
    return {
        "module_version": sys_version or (nvrm or {}).get("version"),
        "kernel_log_loaded": [m["version"] for m in messages["loaded"]],
        "api_mismatch": messages["api_mismatch"],
        "dkms_installed": installed_dkms,
        "library_versions": library_versions,
    }


def _units_state(evidence):
    """{unit: {exists, active, enabled, state}} as os_facts reads them; None when systemctl could not be read."""
    item = _item(evidence, "systemd-units.txt")
    shown = osinfo.parse_systemctl_show(_text(item) or "")
    if item.get("rc") != 0 and not shown:
        return None
    return {unit: {**osinfo.unit_state(props), "state": props.get("ActiveState")} for unit, props in shown.items()}


def _packages_state(evidence):
    """{name: [versions]} of the installed packages, from os_facts' dpkg-query or rpm query."""
    item = _item(evidence, "packages.txt")
    text = _text(item) or ""
    if os.path.basename(str((item.get("cmd") or [""])[0])) == "rpm":
        return osinfo.parse_rpm_query(text)
    return {name: [p["version"]] for name, p in osinfo.parse_dpkg_query(text).items() if p["installed"]}


# What firmware writes where a vendor filled nothing in (dmidecode's own "Not Specified", AMI's and ASUS's templates).
DMI_PLACEHOLDERS = ("", "Not Specified", "Not Settable", "To Be Filled By O.E.M.", "Default string",
                    "System Serial Number", "System manufacturer", "System Product Name", "System Version",
                    "0123456789", "123456789")  # fmt: skip


_DMI_FIELDS = {
    ("System Information", "Manufacturer"): "manufacturer",
    ("System Information", "Product Name"): "product",
    ("System Information", "Serial Number"): "serial",
    ("System Information", "UUID"): "uuid",
    ("BIOS Information", "Vendor"): "bios_vendor",
    ("BIOS Information", "Version"): "bios_version",
    ("BIOS Information", "Release Date"): "bios_date",
}


def _dmi_values(text):
    """(name, value) of every field of _DMI_FIELDS in dmidecode's output, in order, each value as printed (without
    surrounding blanks), placeholders too."""
    section = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.strip()
            continue
        key, sep, value = line.strip().partition(":")
        name = _DMI_FIELDS.get((section, key.strip()))
        if sep and name:
            yield name, value.strip()


def _dmi_state(evidence):
    """System manufacturer, product, serial and BIOS version and date from dmidecode -t system -t bios."""
    found = dict.fromkeys(_DMI_FIELDS.values())
    for name, value in _dmi_values(_text(_item(evidence, "dmidecode.txt")) or ""):
        if found[name] is None and value not in DMI_PLACEHOLDERS:
            found[name] = value
    return found


def _rdma_fabric_state(evidence):
    """What the rdma_fabric stage recorded on the node (its state file): {"gid_index": the RoCE GID index, or None}
    and why there is none."""
    item = _item(evidence, "rdma-fabric-state.json")
    data = _json(item)
    if not isinstance(data, dict):
        why = "the rdma_fabric stage has not run here" if item.get("missing") or not item else "it is unreadable"
        return {"gid_index": None, "why": f"no rdma_fabric state ({acceptance_evidence.RDMA_FABRIC_STATE}): {why}"}
    gid = data.get("gid_index")
    if isinstance(gid, bool) or not isinstance(gid, int) or not 0 <= gid <= 255:
        return {"gid_index": None, "why": f"the rdma_fabric stage recorded no RoCE GID index (gid_index "
                f"{json.dumps(gid, default=str)[:40]}; rdma_fabric_gid_index sets one)"}  # fmt: skip
    return {"gid_index": gid, "why": None}


def read_state(evidence):
    """Everything the checks judge, parsed from a node's evidence (acceptance_read's result)."""
    evidence = evidence if isinstance(evidence, dict) else {}
    kernel_log = _kernel_log_state(evidence)
    return {
        "gpu": _gpu_state(evidence),
        "pci": _pci_state(evidence),
        "infiniband": _infiniband_state(evidence),
        "counters": _counters_state(evidence),
        "dcgm": _dcgm_state(evidence),
        "kernel_log": kernel_log,
        "driver": _driver_state(evidence, kernel_log),
        "units": _units_state(evidence),
        "packages": _packages_state(evidence),
        "system": _dmi_state(evidence),
        "dmidecode": _item(evidence, "dmidecode.txt"),
        "nccl": _json(_item(evidence, "nccl-tests-results.json")),
        "bandwidth": _json(_item(evidence, "ib-write-bw.json")),
        "rdma_fabric": _rdma_fabric_state(evidence),
        "kubernetes": _item(evidence, "kubernetes-node.json"),
        "cuda": _item(evidence, "cuda-check.txt"),
        "container": _item(evidence, "container-gpus.txt"),
    }


# ---------------------------------------------------------------------------------------------------------------
# versions and gates


def version_key(version):
    """A sort key for dotted versions (numbers compared as numbers, letters as text): 535.54.03 < 535.104.05.

    Total, unlike gpu_catalog.driver_version_key (which refuses what is no driver version): firmware and package
    versions come from the node in any shape, VBIOS with hex letters (96.00.A5.00.03)."""
    parts = _VERSION_PART.findall(str(version or ""))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def upstream_version(package_version):
    """535.274.02 from a package version: the epoch (3:), Debian or rpm revision (-1, -1.el9) dropped."""
    text = str(package_version or "")
    text = text.split(":", 1)[1] if ":" in text else text
    return text.split("-", 1)[0] or None


def gates(hardware):
    """(gates, sources): the published gates for the profile's GPU model and count, then the profile's own."""
    gpu = (hardware or {}).get("gpu")
    # A profile's shape is inventory_schema's to refuse; a gpu that is no mapping has no published gate.
    gpu = gpu if isinstance(gpu, dict) else {}
    found, sources = {}, {}
    for entry in PUBLISHED_GATES:
        if entry["model"] == gpu.get("model") and entry["count"] == gpu.get("count"):
            for key, value in entry["gates"].items():
                found[key], sources[key] = value, entry["source"]
    own = (hardware or {}).get("gates") or {}
    for key, value in own.items() if isinstance(own, dict) else ():
        found[key], sources[key] = value, f"gpuops_hardware.gates.{key} of profile {hardware.get('profile')}"
    return found, sources


# ---------------------------------------------------------------------------------------------------------------
# checks


def _outcome(status, reason, value=None, gate=None, fault=None, evidence=(), findings=None):
    return {"status": status, "reason": reason, "value": value, "gate": gate, "fault": fault,
            "evidence": list(evidence), "findings": findings or []}  # fmt: skip


def _label(device):
    return f"GPU {device.get('index')} ({device.get('pci_bus_id')})"


def _gpus_or_error(state, evidence):
    """(devices, None) when nvidia-smi answered, else (None, an ERROR outcome saying why)."""
    gpu = state["gpu"]
    if gpu["query"] is not None:
        return gpu["query"]["devices"], None
    pci_gpus = len((state["pci"] or {}).get("gpus") or [])
    on_bus = f"; lspci lists {pci_gpus} NVIDIA GPU(s)" if state["pci"] is not None else ""
    if gpu["failure"] is not None:
        fault = "driver_not_loaded" if gpu["failure"]["code"] == "driver_unreachable" else "tool_failed"
        if gpu["failure"]["code"] == "driver_library_mismatch":
            fault = "driver_mismatch"
        reason = f"nvidia-smi: {gpu['failure']['message']}{on_bus}"
    else:
        fault = "tool_missing" if "not installed" in (gpu["error"] or "") else "tool_failed"
        reason = f"{gpu['error']}{on_bus}"
    return None, _outcome("ERROR", reason, value={"gpus_on_pci_bus": pci_gpus} if on_bus else None, fault=fault,
                          evidence=(*evidence, "lspci.txt"))  # fmt: skip


def _needs_gpus(*evidence):
    """A check judged on the GPUs nvidia-smi lists: it ends ERROR, saying why, where nvidia-smi listed none (no tool,
    no driver, a mismatch); the judge gets the devices first."""
    names = evidence or ("nvidia-smi-query.xml",)

    def wrap(judge):
        @functools.wraps(judge)
        def check(state, hardware, gate_values):
            devices, error = _gpus_or_error(state, names)
            return error or judge(devices, state, hardware, gate_values)

        return check

    return wrap


def _per_gpu(devices, problem):
    """[(device, message)] for every GPU problem() finds something on (problem returns a message or None)."""
    found = []
    for device in devices:
        message = problem(device)
        if message:
            found.append((device, message))
    return found


def _bus_ids(devices):
    return {str(d.get("pci_bus_id") or "").lower()[-12:] for d in devices}


@_needs_gpus()
def check_gpu_count(devices, state, hardware, gate_values):
    expected = hardware["gpu"]["count"]
    listed = len(devices)
    attached = state["gpu"]["query"].get("attached_gpus")
    pci_gpus = (state["pci"] or {}).get("gpus") or []
    if listed < expected or (attached is not None and attached > listed):
        missing = sorted(
            g["address"] for g in pci_gpus if str(g.get("address", "")).lower()[-12:] not in _bus_ids(devices)
        )
        # Named only when lspci's addresses account for exactly the GPUs nvidia-smi lacks; otherwise the two
        # number the bus differently and only the counts say something.
        if missing and len(missing) == len(pci_gpus) - listed:
            where = f"; on the PCI bus but not in nvidia-smi: {', '.join(missing)}"
        else:
            where = f"; lspci lists {len(pci_gpus)} NVIDIA GPU(s)" if state["pci"] is not None else ""
        return _outcome("FAIL", f"nvidia-smi lists {listed} GPU(s), the profile {expected}{where}", listed, expected,
                        "gpu_missing", ("nvidia-smi-query.xml", "lspci.txt"))  # fmt: skip
    if listed > expected:
        return _outcome("WARN", f"nvidia-smi lists {listed} GPUs, more than the profile's {expected}", listed,
                        expected, "gpu_extra", ("nvidia-smi-query.xml",))  # fmt: skip
    return _outcome("PASS", f"{listed} GPUs, as the profile says", listed, expected, evidence=("nvidia-smi-query.xml",))


@_needs_gpus()
def check_gpu_model(devices, state, hardware, gate_values):
    expected = hardware["gpu"]["model"]
    models = sorted({d.get("name") or "unknown" for d in devices})
    wrong = _per_gpu(devices, lambda d: None if d.get("name") == expected else f"{_label(d)} is {d.get('name')}")
    if wrong:
        return _outcome("FAIL", "; ".join(m for _d, m in wrong), models, expected, "gpu_wrong_model",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    if not devices:
        return _outcome("ERROR", "nvidia-smi lists no GPU to compare", models, expected, "not_reported",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    return _outcome("PASS", f"every GPU is {expected}", models, expected, evidence=("nvidia-smi-query.xml",))


@_needs_gpus()
def check_gpu_pcie(devices, state, hardware, gate_values):
    unknown = [d for d in devices if (d.get("pcie") or {}).get("width_current") is None
               or (d.get("pcie") or {}).get("width_max") is None]  # fmt: skip
    narrow = _per_gpu(
        devices,
        lambda d: (
            f"{_label(d)} runs x{d['pcie']['width_current']} of x{d['pcie']['width_max']}"
            if d not in unknown and d["pcie"]["width_current"] < d["pcie"]["width_max"]
            else None
        ),
    )
    widths = {d.get("pci_bus_id"): (d.get("pcie") or {}).get("width_current") for d in devices}
    if narrow:
        return _outcome("FAIL", "; ".join(m for _d, m in narrow), widths, "maximum width", "pcie_degraded",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    if unknown or not devices:
        names = ", ".join(_label(d) for d in unknown) or "no GPU listed"
        return _outcome("ERROR", f"nvidia-smi reported no PCIe link width for {names}", widths, "maximum width",
                        "not_reported", ("nvidia-smi-query.xml",))  # fmt: skip
    slow = [d for d in devices if (d["pcie"].get("gen_current") or 0) < (d["pcie"].get("gen_max") or 0)]
    note = (f"; {len(slow)} GPU(s) below their maximum PCIe generation, which idle GPUs do to save power"
            if slow else "")  # fmt: skip
    return _outcome("PASS", f"every GPU's link runs at its maximum width{note}", widths, "maximum width",
                    evidence=("nvidia-smi-query.xml",))  # fmt: skip


def _count(device, kind):
    """A GPU's uncorrectable ECC count, volatile (since the driver loaded) or aggregate (its life); None unknown."""
    return (((device.get("ecc") or {}).get(kind)) or {}).get("uncorrectable")


@_needs_gpus()
def check_gpu_ecc(devices, state, hardware, gate_values):
    ecc = {d.get("pci_bus_id"): d.get("ecc") or {} for d in devices}
    if devices and all(e.get("mode") in (None, "N/A") for e in ecc.values()):
        return _outcome("SKIPPED", "these GPUs report no ECC mode (GPUs without ECC memory)",
                        evidence=("nvidia-smi-query.xml",))  # fmt: skip
    value = {bus: (e.get("volatile") or {}).get("uncorrectable") for bus, e in ecc.items()}
    uncorrectable = _per_gpu(devices, lambda d: f"{_label(d)} counts {_count(d, 'volatile')} uncorrectable error(s)"
                             if _count(d, "volatile") else None)  # fmt: skip
    if uncorrectable:
        return _outcome("FAIL", "; ".join(m for _d, m in uncorrectable) + " since the driver loaded", value, 0,
                        "ecc_uncorrectable", ("nvidia-smi-query.xml",))  # fmt: skip
    disabled = _per_gpu(
        devices,
        lambda d: (
            f"{_label(d)} has ECC {(d.get('ecc') or {}).get('mode')}"
            if (d.get("ecc") or {}).get("mode") not in ("Enabled", None, "N/A")
            else None
        ),
    )
    if disabled:
        return _outcome("FAIL", "; ".join(m for _d, m in disabled), value, 0, "ecc_disabled",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    unknown = [d for d in devices if _count(d, "volatile") is None]
    if unknown:
        return _outcome("ERROR", "nvidia-smi reported no volatile uncorrectable ECC count for "
                        + ", ".join(_label(d) for d in unknown), value, 0, "not_reported",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    notes = _per_gpu(
        devices,
        lambda d: (
            f"{_label(d)} counts {_count(d, 'aggregate')} uncorrectable error(s) over its life"
            if _count(d, "aggregate")
            else (
                f"{_label(d)} switches ECC to {d['ecc'].get('mode_pending')} at its next reset"
                if d["ecc"].get("mode_pending") not in (None, "N/A", d["ecc"].get("mode"))
                else None
            )
        ),
    )
    if notes:
        return _outcome("WARN", "; ".join(m for _d, m in notes), value, 0, evidence=("nvidia-smi-query.xml",))
    return _outcome("PASS", "no uncorrectable ECC error since the driver loaded", value, 0,
                    evidence=("nvidia-smi-query.xml",))  # fmt: skip


@_needs_gpus()
def check_gpu_memory(devices, state, hardware, gate_values):
    found = {"row_remap_failure": [], "row_remap_pending": [], "retired_pages_pending": []}
    unknown = []
    for device in devices:
        rows = device.get("remapped_rows") or {}
        pages = device.get("retired_pages") or {}
        if rows.get("failure"):
            found["row_remap_failure"].append(f"{_label(device)} failed to remap a memory row")
        if rows.get("pending"):
            found["row_remap_pending"].append(f"{_label(device)} has a row remapping pending")
        if pages.get("pending"):
            found["retired_pages_pending"].append(f"{_label(device)} has a page retirement pending")
        if None in (rows.get("failure"), rows.get("pending")) and pages.get("pending") is None:
            unknown.append(device)
    value = {d.get("pci_bus_id"): {"remapped_rows": d.get("remapped_rows"), "retired_pages": d.get("retired_pages")}
             for d in devices}  # fmt: skip
    for fault, messages in found.items():
        if messages:
            return _outcome("FAIL", "; ".join(messages), value, "none pending or failed", fault,
                            ("nvidia-smi-query.xml",))  # fmt: skip
    if unknown or not devices:
        names = ", ".join(_label(d) for d in unknown) or "no GPU listed"
        return _outcome("ERROR", f"nvidia-smi reported neither row remapping nor page retirement state for {names}",
                        value, "none pending or failed", "not_reported", ("nvidia-smi-query.xml",))  # fmt: skip
    return _outcome("PASS", "no row remapping or page retirement pending or failed", value, "none pending or failed",
                    evidence=("nvidia-smi-query.xml",))  # fmt: skip


@_needs_gpus()
def check_gpu_recovery(devices, state, hardware, gate_values):
    asks = _per_gpu(
        devices,
        lambda d: (
            f"{_label(d)} asks for recovery action {d['recovery_action']}"
            if d.get("recovery_action") not in (None, "None", "N/A")
            else f"{_label(d)} reports that it needs a reset"
            if d.get("reset_required")
            else None
        ),
    )
    value = {d.get("pci_bus_id"): d.get("recovery_action") or ("reset" if d.get("reset_required") else None)
             for d in devices}  # fmt: skip
    if asks:
        return _outcome("FAIL", "; ".join(m for _d, m in asks), value, "none", "gpu_reset_required",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    if not devices or all(d.get("reset_required") is None and d.get("recovery_action") is None for d in devices):
        return _outcome("ERROR", "nvidia-smi reported no GPU reset status", value,
                        "none", "not_reported", ("nvidia-smi-query.xml",))  # fmt: skip
    return _outcome("PASS", "no GPU asks for a reset or recovery", value, "none", evidence=("nvidia-smi-query.xml",))


@_needs_gpus("nvidia-smi-query.xml", "nvidia-smi-nvlink.txt")
def check_gpu_nvlink(devices, state, hardware, gate_values):
    expected = hardware["gpu"].get("nvlinks", 0)
    nvlink = state["gpu"]["nvlink"]
    if nvlink is None:
        return _outcome("ERROR", state["gpu"]["nvlink_error"], None, expected, "tool_failed",
                        ("nvidia-smi-nvlink.txt",))  # fmt: skip
    active = {g["index"]: g["active"] for g in nvlink}
    short = [
        f"GPU {g['index']} has {g['active']} of {expected} NVLinks active" for g in nvlink if g["active"] < expected
    ]
    unseen = [f"GPU {d['index']} is not in nvidia-smi nvlink -s" for d in devices if d["index"] not in active]
    if short or unseen:
        return _outcome("FAIL", "; ".join(short + unseen), active, expected, "nvlink_down",
                        ("nvidia-smi-nvlink.txt",))  # fmt: skip
    return _outcome("PASS", f"every GPU has at least {expected} NVLinks active", active, expected,
                    evidence=("nvidia-smi-nvlink.txt",))  # fmt: skip


@_needs_gpus()
def check_gpu_fabric(devices, state, hardware, gate_values):
    value = {d.get("pci_bus_id"): (d.get("fabric") or {}).get("state") for d in devices}
    unknown = [d for d in devices if d.get("fabric") is None]
    bad = _per_gpu(
        devices,
        lambda d: (
            None
            if d.get("fabric") is None
            or (d["fabric"].get("state") == "Completed" and d["fabric"].get("status") in (None, "Success"))
            else f"{_label(d)} fabric state {d['fabric'].get('state')}"
            + (f", status {d['fabric']['status']}" if d["fabric"].get("status") else "")
        ),
    )
    if bad:
        return _outcome("FAIL", "; ".join(m for _d, m in bad), value, "Completed", "fabric_not_ready",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    if unknown or not devices:
        names = ", ".join(_label(d) for d in unknown) or "no GPU listed"
        return _outcome("ERROR", f"nvidia-smi reported no NVLink fabric state for {names}", value, "Completed",
                        "not_reported", ("nvidia-smi-query.xml",))  # fmt: skip
    return _outcome("PASS", "every GPU is registered with the NVLink fabric (Completed)", value, "Completed",
                    evidence=("nvidia-smi-query.xml",))  # fmt: skip


HW_SLOWDOWN = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
SW_SLOWDOWN = ("sw_thermal_slowdown",)


@_needs_gpus()
def check_gpu_clocks(devices, state, hardware, gate_values):
    value = {d.get("pci_bus_id"): d.get("clock_event_reasons") for d in devices}
    unknown = [d for d in devices if d.get("clock_event_reasons") is None]
    for reasons, fault, status in ((HW_SLOWDOWN, "clock_hw_slowdown", "FAIL"),
                                   (SW_SLOWDOWN, "clock_sw_thermal", "WARN")):  # fmt: skip
        slowed = _per_gpu(devices, lambda d, r=reasons: (
            f"{_label(d)}: {', '.join(x for x in d['clock_event_reasons'] if x in r)}"
            if any(x in r for x in d.get("clock_event_reasons") or ()) else None))  # fmt: skip
        if slowed:
            return _outcome(status, "clocks held down at idle by " + "; ".join(m for _d, m in slowed), value,
                            "no thermal or power slowdown", fault if status == "FAIL" else None,
                            ("nvidia-smi-query.xml",), findings=[fault] if status == "WARN" else None)  # fmt: skip
    if unknown or not devices:
        names = ", ".join(_label(d) for d in unknown) or "no GPU listed"
        return _outcome("ERROR", f"nvidia-smi reported no clock event reasons for {names}", value,
                        "no thermal or power slowdown", "not_reported", ("nvidia-smi-query.xml",))  # fmt: skip
    return _outcome("PASS", "no thermal or power slowdown", value, "no thermal or power slowdown",
                    evidence=("nvidia-smi-query.xml",))  # fmt: skip


def check_gpu_xid(state, hardware, gate_values):
    log = state["kernel_log"]
    if log["scan"] is None:
        return _outcome("ERROR", log["error"], fault="kernel_log_unreadable", evidence=("kernel-log.txt",))
    scan = log["scan"]
    events = scan["events"]
    worst = scan["summary"]["worst_severity"]
    value = {"events": len(events), "xid_counts": scan["summary"]["xid_counts"], "worst_severity": worst,
             "source": log["source"]}  # fmt: skip
    bad = [e for e in events if e["severity"] in ("error", "critical")]
    if bad:
        # The Xid catalog's own action and severity: the first of the worst events.
        first = max(bad, key=lambda e: xid_catalog.severity_rank(e["severity"]))
        outcome = _outcome("FAIL", _event_lines(bad), value, "no error or critical event since boot",
                           _event_name(first), ("kernel-log.txt",))  # fmt: skip
        outcome["severity"] = "critical" if first["severity"] == "critical" else "high"
        outcome["action"] = first["action"]
        return outcome
    warn = [e for e in events if e["severity"] in ("warning", xid_catalog.UNKNOWN)]
    if warn:
        return _outcome("WARN", _event_lines(warn), value, "no error or critical event since boot",
                        evidence=("kernel-log.txt",))  # fmt: skip
    seen = f"{len(events)} informational event(s)" if events else "no GPU error event"
    return _outcome("PASS", f"{seen} in the kernel log ({log['source']}, {scan['lines']} lines)", value,
                    "no error or critical event since boot", evidence=("kernel-log.txt",))  # fmt: skip


def _event_lines(events):
    """The first 5 distinct events (name, GPU, meaning), each with how often it was logged, and how many more."""
    counted = {}
    for event in events:
        line = f"{_event_name(event)} on {event['pci_bus_id'] or 'the node'}: {event['meaning']}"
        counted[line] = counted.get(line, 0) + 1
    lines = [line + (f" ({n} times)" if n > 1 else "") for line, n in list(counted.items())[:5]]
    more = f" (and {len(counted) - 5} more)" if len(counted) > 5 else ""
    return "; ".join(lines) + more


def _event_name(event):
    return f"xid_{event['xid']}" if event.get("xid") is not None else event.get("event", "kernel_event")


def loaded_version(state):
    """(version, where it was read) of the NVIDIA kernel module loaded now, or (None, None)."""
    driver = state["driver"]
    if driver["module_version"]:
        return driver["module_version"], "the loaded module (/sys/module/nvidia/version, /proc/driver/nvidia/version)"
    query = state["gpu"]["query"]
    if query and query.get("driver_version"):
        return query["driver_version"], "nvidia-smi (NVML)"
    if driver["api_mismatch"]:
        return driver["api_mismatch"][-1]["module_version"], "the kernel log's API mismatch message"
    if driver["kernel_log_loaded"]:
        return driver["kernel_log_loaded"][-1], "the kernel log's last module load"
    return None, None


def installed_versions(state):
    """{where: [versions]} of the driver installed on the node: DKMS modules, the NVML library."""
    driver = state["driver"]
    found = {}
    if driver["dkms_installed"]:
        found["dkms"] = driver["dkms_installed"]
    if driver["library_versions"]:
        found["nvml_library"] = driver["library_versions"]
    return found


def check_driver_version(state, hardware, gate_values):
    loaded, where = loaded_version(state)
    installed = installed_versions(state)
    evidence = ("driver-files.json", "dkms-status.txt", "nvidia-smi-query.xml", "kernel-log.txt")
    value = {"loaded": loaded, "loaded_from": where, "installed": installed}
    mismatch = state["gpu"]["failure"] and state["gpu"]["failure"]["code"] == "driver_library_mismatch"
    versions = sorted({v for vs in installed.values() for v in vs}, key=version_key)
    if mismatch or state["driver"]["api_mismatch"]:
        seen = state["driver"]["api_mismatch"][-1] if state["driver"]["api_mismatch"] else None
        said = (f"the kernel refused a client at {seen['client_version']}: its loaded module is "
                f"{seen['module_version']}" if seen else "nvidia-smi: Driver/library version mismatch")  # fmt: skip
        return _outcome("FAIL", f"{said}; installed: {', '.join(versions) or 'unknown'}", value, "equal",
                        "driver_mismatch", evidence)  # fmt: skip
    if loaded is None:
        why = state["gpu"]["error"] or (state["gpu"]["failure"] or {}).get("message") or "no driver answers"
        return _outcome("ERROR", f"no loaded NVIDIA module could be read ({why})", value, "equal",
                        "driver_not_loaded", evidence)  # fmt: skip
    if not versions:
        return _outcome("ERROR", f"loaded {loaded}, but no installed driver was found (no DKMS module, no NVML "
                        "library that ldconfig knows)", value, "equal", "not_reported", evidence)  # fmt: skip
    others = [v for v in versions if v != loaded]
    if others:
        return _outcome("FAIL", f"loaded {loaded} (from {where}), installed {', '.join(versions)}: the installed "
                        "driver is not the one running", value, "equal", "driver_mismatch", evidence)  # fmt: skip
    return _outcome("PASS", f"loaded {loaded}, the installed driver", value, "equal", evidence=evidence)


@_needs_gpus()
def check_driver_persistence(devices, state, hardware, gate_values):
    value = {d.get("pci_bus_id"): d.get("persistence_mode") for d in devices}
    off = [d for d in devices if d.get("persistence_mode") is False]
    if off:
        return _outcome("FAIL", "persistence mode is off on " + ", ".join(_label(d) for d in off), value, True,
                        "persistence_off", ("nvidia-smi-query.xml", "systemd-units.txt"))  # fmt: skip
    if not devices or any(d.get("persistence_mode") is None for d in devices):
        return _outcome("ERROR", "nvidia-smi reported no persistence mode", value, True, "not_reported",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    return _outcome("PASS", "persistence mode is on on every GPU", value, True, evidence=("nvidia-smi-query.xml",))


_FABRICMANAGER_PACKAGE = re.compile(r"nvidia-fabric-?manager(?:-[0-9]{3})?")


def check_driver_fabric_manager(state, hardware, gate_values):
    evidence = ("systemd-units.txt", "packages.txt")
    packages = {n: v for n, v in state["packages"].items() if _FABRICMANAGER_PACKAGE.fullmatch(n)}
    versions = sorted({upstream_version(v) for vs in packages.values() for v in vs}, key=version_key)
    loaded, _where = loaded_version(state)
    units = state["units"]
    unit = (units or {}).get("nvidia-fabricmanager.service") or {}
    value = {"packages": packages, "unit": unit.get("state"), "driver": loaded}
    if units is None:
        return _outcome("ERROR", "systemctl could not be read", value, loaded, "tool_failed", evidence)
    if not packages and not unit.get("exists"):
        return _outcome("FAIL", "nvidia-fabricmanager is not installed", value, loaded, "fabricmanager_missing",
                        evidence)  # fmt: skip
    live = state["driver"]["module_version"] is not None
    if not unit.get("active") and (live or not unit.get("enabled")):
        return _outcome("FAIL", f"nvidia-fabricmanager.service is {unit.get('state') or 'not loaded'}"
                        f"{'' if unit.get('enabled') else ' and not enabled'}", value, loaded, "fabricmanager_stopped",
                        evidence)  # fmt: skip
    if loaded is None or not versions:
        return _outcome("ERROR", "the versions of fabric manager and of the loaded driver could not both be read "
                        f"(fabric manager {', '.join(versions) or 'unknown'}, driver {loaded or 'unknown'})", value,
                        loaded, "not_reported", evidence)  # fmt: skip
    if versions != [loaded]:
        return _outcome("FAIL", f"fabric manager {', '.join(versions)}, driver {loaded}", value, loaded,
                        "fabricmanager_version", evidence)  # fmt: skip
    if not unit.get("active"):
        # Only where no NVIDIA module is loaded in this node's kernel while its GPUs answer (a container whose
        # kernel is its host's, or simulated GPUs): fabric manager cannot start here, and nothing tells whether
        # it would.
        return _outcome("WARN", f"nvidia-fabricmanager {loaded} is installed at the driver's version and enabled, but "
                        "not running: no NVIDIA module is loaded in this node's kernel (its GPUs answer through a "
                        "container's host or a simulation), so fabric manager cannot start here", value, loaded,
                        evidence=evidence, findings=["fabricmanager_not_live"])  # fmt: skip
    return _outcome("PASS", f"nvidia-fabricmanager {loaded} runs, at the driver's version", value, loaded,
                    evidence=evidence)  # fmt: skip


# DCGM's tests by what a failure points at (names as DCGM 3 and 4 print them, lower case).
_DCGM_FAULTS = (
    (("page retirement/row remap", "gpu memory", "memory", "memory bandwidth", "memtest"), "dcgm_memory"),
    (("pcie",), "dcgm_pcie"),
    (("diagnostic", "targeted stress", "targeted power", "sm stress", "eud test", "eud"), "dcgm_stress"),
)


def _dcgm_fault(test):
    """The fault a failed DCGM test points at: by what its warnings say first (CUDA could not start the test; memory
    errors a deployment check found), else by the test."""
    said = " ".join(test["warnings"]).lower()
    if "error using cuda api" in said:
        return "dcgm_cuda"
    if any(word in said for word in ("row remap", "retire", "uncorrectable", "memory error")):
        return "dcgm_memory"
    name = test["name"].lower()
    if test["category"].lower() == "deployment" and name != "page retirement/row remap":
        return "dcgm_deployment"
    return next((fault for names, fault in _DCGM_FAULTS if name in names), "dcgm_failed")


def _dcgm_where(test):
    """ " on GPU 1, 3" / " on every GPU" / "" (an error row of a category names no GPU set)."""
    if test["name"] == "Error":
        return ""
    hit = sorted(gpu for gpu, status in test["gpus"].items() if status == test["status"])
    return " on every GPU" if test["all"] == test["status"] or not hit else " on GPU " + ", ".join(map(str, hit))


def check_gpu_dcgm(state, hardware, gate_values):
    found = state["dcgm"]
    evidence = ("dcgm-diag.json",)
    item = found["item"]
    if item.get("missing") or item.get("skipped") or not item:
        why = ("DCGM is not installed on the node (no dcgmi; the driver stage installs it unless nvidia_driver_dcgm "
               "is false)" if item.get("missing")
               else _why_not(item, "dcgmi diag"))  # fmt: skip
        return _outcome("SKIPPED", why, evidence=evidence)
    if found["error"]:
        return _outcome("ERROR", found["error"], None, None, "tool_failed", evidence)
    diag = found["diag"]
    tests = diag["tests"]
    value = {t["name"]: {"status": t["status"], "gpus": t["gpus"], "all": t["all"]} for t in tests}
    gate = "every test passes"
    for status in ("fail", "warn"):
        hit = [t for t in tests if t["status"] == status]
        if not hit:
            continue
        reason = "; ".join(f"{t['category']} {t['name']} {'failed' if status == 'fail' else 'warned'}"
                           f"{_dcgm_where(t)}" + (f": {t['warnings'][0]}" if t["warnings"] else "")
                           for t in hit)  # fmt: skip
        if status == "fail":
            return _outcome("FAIL", reason, value, gate, _dcgm_fault(hit[0]), evidence,
                            findings=[_dcgm_fault(t) for t in hit])  # fmt: skip
        return _outcome("WARN", reason, value, gate, evidence=evidence)
    counts = {s: sum(1 for t in tests if t["status"] == s) for s in ("pass", "skip", "not_run")}
    version = f"DCGM {diag['version']}" if diag["version"] else "DCGM"
    return _outcome("PASS", f"{version}: {counts['pass']} test(s) passed, {counts['skip'] + counts['not_run']} "
                    "skipped", value, gate, evidence=evidence)  # fmt: skip


# CUDA's error strings (cudaGetErrorString) and the fault each points at, first match wins. The NVIDIA CUDA Runtime
# API's cudaError documentation: 35 "the installed NVIDIA CUDA driver is older than the CUDA runtime library", 803 "a
# mismatch between the versions of the display driver and the CUDA driver", 802 "the system is not yet ready to start
# any CUDA work ... verify ... all required driver daemons are actively running" (fabric manager on NVSwitch
# systems), 100 no device, 214 an uncorrectable ECC error.
CUDA_ERROR_FAULTS = (
    (("insufficient for CUDA runtime version", "cudaErrorInsufficientDriver"), "cuda_driver_too_old"),
    (("unsupported display driver / cuda driver combination", "cudaErrorSystemDriverMismatch"), "driver_mismatch"),
    (("system not yet initialized", "cudaErrorSystemNotReady"), "fabricmanager_stopped"),
    (("no CUDA-capable device is detected", "cudaErrorNoDevice"), "cuda_no_device"),
    (("uncorrectable ECC error", "cudaErrorECCUncorrectable"), "ecc_uncorrectable"),
    (("busy or unavailable", "cudaErrorDevicesUnavailable"), "cuda_device_busy"),
)


def cuda_fault(error):
    """The fault a CUDA error string points at; cuda_failed for one the table does not know."""
    lowered = (error or "").lower()
    return next((fault for texts, fault in CUDA_ERROR_FAULTS if any(t.lower() in lowered for t in texts)),
                "cuda_failed")  # fmt: skip


def _not_run(item, what, evidence):
    """SKIPPED for a run the node did not make: not required where its kernel is its container host's (the item's
    container flag), else with the reason."""
    if item.get("container"):
        return {**_outcome("SKIPPED", f"not applicable: {item.get('skipped')}"), "not_applicable": True}
    if not item or item.get("skipped"):
        return _outcome("SKIPPED", _why_not(item, what), evidence=evidence)
    return None


def check_cuda_runtime(state, hardware, gate_values):
    item = state["cuda"]
    evidence = ("cuda-check.txt",)
    expected = hardware["gpu"]["count"]
    gate = f"a kernel round trip on each of {expected} GPU(s)"
    skipped = _not_run(item, "the CUDA check", evidence)
    if skipped:
        return skipped
    step = item.get("step")
    if step in ("nvcc", "nvcc --version"):
        return _outcome("ERROR", f"{item.get('message')}: the cuda_toolkit stage has not installed a toolkit here",
                        None, gate, "cuda_toolkit_missing", evidence)  # fmt: skip
    if step == "compiling and linking":
        return _outcome("FAIL", f"the toolkit could not build the CUDA check: {item.get('message')}", None, gate,
                        "cuda_toolkit_broken", evidence)  # fmt: skip
    found = cuda_toolkit.parse_check_output(_text(item) or "")
    value = {"devices": found["devices"], "runtime": found["runtime"], "driver": found["driver"],
             "failed": [f["device"] for f in found["failed"]]}  # fmt: skip
    if found["errors"] or item.get("rc") != 0:
        where = "; ".join(f"device {f['device']} ({f['pci']}): {f['error']}" for f in found["failed"])
        error = found["errors"][0] if found["errors"] else (item.get("message") or "no CUDA error printed")
        reason = f"CUDA failed: {where or error}"
        faults = sorted({cuda_fault(e) for e in found["errors"]} or {"cuda_failed"})
        return _outcome("FAIL", reason, value, gate, cuda_fault(error), evidence, findings=faults)
    if found["devices"] is None:
        return _outcome("ERROR", "the CUDA check printed no summary line", value, gate, "tool_failed", evidence)
    if found["devices"] < expected:
        return _outcome("FAIL", f"CUDA sees {found['devices']} GPU(s), the profile has {expected}", value, gate,
                        "gpu_missing", evidence)  # fmt: skip
    return _outcome("PASS", f"a kernel ran on each of {found['devices']} GPU(s) (CUDA runtime "
                    f"{_cuda_version(found['runtime'])}, driver {_cuda_version(found['driver'])})", value, gate,
                    evidence=evidence)  # fmt: skip


def _cuda_version(number):
    """12.4 from CUDA's 12040."""
    return f"{number // 1000}.{number % 1000 // 10}" if isinstance(number, int) else "unknown"


def check_container_gpus(state, hardware, gate_values):
    item = state["container"]
    evidence = ("container-gpus.txt",)
    expected = hardware["gpu"]["count"]
    gate = f"{expected} GPU(s) in a container through containerd's nvidia runtime"
    skipped = _not_run(item, "the GPU container", evidence)
    if skipped:
        return skipped
    if item.get("missing"):
        return _outcome("ERROR", "containerd's ctr is not installed on the node (the k8s_node stage installs "
                        "containerd)", None, gate, "tool_missing", evidence)  # fmt: skip
    if item.get("step") == "pull":
        why = _why_not(item, "pulling the container image")
        return _outcome("ERROR", why, None, gate, "container_image_unavailable", evidence)
    listed = nvidia_smi.parse_gpu_list(_text(item) or "")
    uuids = [g["uuid"] for g in listed["gpus"]]
    value = {"gpus": len(uuids), "uuids": uuids}
    if item.get("rc") != 0:
        said = container_toolkit.runtime_error(f"{item.get('stdout') or ''}\n{item.get('stderr') or ''}")
        reason = f"the GPU container exited with {item.get('rc')}: {said or 'no message'}"
        return _outcome("FAIL", reason, value, gate, "container_gpu_runtime", evidence)
    query = state["gpu"]["query"] or {}
    host = [d.get("uuid") for d in query.get("devices", []) if d.get("uuid")]
    unseen = [u for u in host if u not in uuids]
    if len(uuids) < expected or unseen:
        more = f" (missing {', '.join(unseen)})" if unseen else ""
        return _outcome("FAIL", f"a container saw {len(uuids)} GPU(s), the profile has {expected}{more}", value,
                        gate, "container_gpus_missing", evidence)  # fmt: skip
    return _outcome(
        "PASS", f"a container through the nvidia runtime saw {len(uuids)} GPU(s)", value, gate, evidence=evidence
    )


def _node_object(state):
    """(the Node object, None) or (None, the outcome when there is none to judge)."""
    item = state["kubernetes"]
    evidence = ("kubernetes-node.json",)
    if item.get("not_applicable"):
        return None, {**_outcome("SKIPPED", f"not applicable: {item.get('skipped')}"), "not_applicable": True}
    if not item or item.get("skipped"):
        return None, _outcome("SKIPPED", _why_not(item, "the Node object"), evidence=evidence)
    if item.get("rc") != 0:
        return None, _outcome("ERROR", f"the Kubernetes API was not read: {_why_not(item, 'k8s_info')}", None, None,
                              "tool_failed", evidence)  # fmt: skip
    nodes = _json(item)
    if not isinstance(nodes, list):
        return None, _outcome("ERROR", "the Node object read is unreadable", None, None, "tool_failed", evidence)
    if not nodes or not isinstance(nodes[0], dict):
        return None, _outcome("FAIL", "the cluster has no Node object of this node: it has not joined", None,
                              "joined", "k8s_node_missing", evidence)  # fmt: skip
    return nodes[0], None


def check_k8s_ready(state, hardware, gate_values):
    node, outcome = _node_object(state)
    if outcome:
        return outcome
    evidence = ("kubernetes-node.json",)
    info = (node.get("status") or {}).get("nodeInfo") or {}
    value = {"ready": kubernetes_node.ready(node), "kubelet": info.get("kubeletVersion")}
    if not value["ready"]:
        return _outcome("FAIL", f"the Node is not Ready: {kubernetes_node.ready(node, 'reason')}", value, "Ready",
                        "k8s_not_ready", evidence)  # fmt: skip
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return _outcome("WARN", "the Node is Ready but cordoned (unschedulable)", value, "Ready", evidence=evidence)
    return _outcome("PASS", f"the Node is Ready (kubelet {info.get('kubeletVersion', 'unknown')})", value, "Ready",
                    evidence=evidence)  # fmt: skip


def check_k8s_labels(state, hardware, gate_values):
    node, outcome = _node_object(state)
    if outcome:
        return outcome
    prefix = state["kubernetes"].get("label_prefix") or "gpuops.io"
    labels = (node.get("metadata") or {}).get("labels") or {}
    want = {f"{prefix}/hardware-profile": str(hardware.get("profile"))}
    if hardware["gpu"]["count"] > 0:
        want[f"{prefix}/gpu.count"] = str(hardware["gpu"]["count"])
    wrong = {k: labels.get(k) for k, v in want.items() if labels.get(k) != v}
    value = {k: labels.get(k) for k in want}
    gate = ", ".join(f"{k}={v}" for k, v in want.items())
    if wrong:
        said = ", ".join(f"{k} is {v!r}" if v is not None else f"{k} is missing" for k, v in wrong.items())
        return _outcome("FAIL", f"the Node's labels do not say what the node is: {said}", value, gate, "k8s_labels",
                        ("kubernetes-node.json",))  # fmt: skip
    return _outcome("PASS", f"the Node is labelled {gate}", value, gate, evidence=("kubernetes-node.json",))


def check_k8s_gpus(state, hardware, gate_values):
    node, outcome = _node_object(state)
    if outcome:
        return outcome
    evidence = ("kubernetes-node.json",)
    expected = hardware["gpu"]["count"]
    status = node.get("status") or {}
    allocatable = (status.get("allocatable") or {}).get("nvidia.com/gpu")
    capacity = (status.get("capacity") or {}).get("nvidia.com/gpu")
    if allocatable is None and capacity is None:
        # GPUs for pods come from a device plugin this collection does not deploy (the GPU operator's): without one
        # the check does not apply, rather than holding the node back.
        return {**_outcome("SKIPPED", "not applicable: no device plugin advertises nvidia.com/gpu on the Node (the "
                           "NVIDIA device plugin or GPU operator is not deployed)", evidence=evidence),
                "not_applicable": True}  # fmt: skip
    count = parsing.to_int(str(allocatable if allocatable is not None else "0"))
    value = {"allocatable": allocatable, "capacity": capacity}
    if count is None or count < expected:
        return _outcome("FAIL", f"the Node offers {allocatable} nvidia.com/gpu to pods (capacity {capacity}), the "
                        f"profile has {expected}", value, expected, "k8s_gpus_missing", evidence)  # fmt: skip
    return _outcome("PASS", f"the Node offers {count} nvidia.com/gpu to pods", value, expected, evidence=evidence)


_PORT_FAULTS = {
    "active_ports_low": "port_down",
    "port_down": "port_down",
    "port_polling": "port_down",
    "port_disabled": "port_down",
    "port_not_active": "port_down",
    "rate_low": "port_rate_low",
    "link_layer_mismatch": "port_link_layer",
    "no_devices": "port_down",
}


def check_fabric_ports(state, hardware, gate_values):
    expected = hardware["infiniband"]
    devices = state["infiniband"]["devices"]
    evidence = ("ibstat.txt", "sysfs-infiniband.json")
    found = infiniband.findings(devices, expected_active_ports=expected["ports"],
                                expected_rate_gbps=expected["rate_gbps"],
                                expected_link_layer=expected["link_layer"])  # fmt: skip
    active = infiniband.active_ports(devices, expected["link_layer"])
    gate = {"ports": expected["ports"], "rate_gbps": expected["rate_gbps"], "link_layer": expected["link_layer"]}
    errors = [f for f in found if f["severity"] == "error"]
    if errors:
        fault = _PORT_FAULTS.get(errors[0]["code"], "port_down")
        return _outcome("FAIL", "; ".join(f["message"] for f in errors), active, gate, fault, evidence,
                        findings=[f["code"] for f in found])  # fmt: skip
    warnings = [f for f in found if f["severity"] == "warning"]
    if warnings:
        return _outcome("WARN", "; ".join(f["message"] for f in warnings), active, gate, evidence=evidence,
                        findings=[f["code"] for f in found])  # fmt: skip
    return _outcome("PASS", f"{active} {expected['link_layer']} port(s) active at {expected['rate_gbps']:g} Gb/s",
                    active, gate, evidence=evidence)  # fmt: skip


def _counter_changes(reads, names):
    """({counter: rise}, {counter: value now, not rising}, [counters at their maximum]) of one port's two reads."""
    first, second = reads[0]["counters"], reads[1]["counters"]
    rising, nonzero = {}, {}
    for name in names:
        before, now = first.get(name), second.get(name)
        if before is not None and now is not None and now > before:
            rising[name] = now - before
        elif now:
            nonzero[name] = now
    # Only perfquery's 32-bit counters saturate; ethtool's are 64 bits wide.
    return rising, nonzero, sorted(set(reads[1].get("saturated", ())) & set(names))


def _counter_list(per_port, sign=""):
    return "; ".join(f"{port} " + ", ".join(f"{name} {sign}{value}" for name, value in values.items())
                     for port, values in per_port.items())  # fmt: skip


def bandwidth_gate(hardware):
    """(Gb/s, where it comes from) of ib_write_bw on one port: the profile's or the published gate, else 90 % of the
    profile's port rate (what perftest moves on a healthy link: about 392 of NDR's 400)."""
    value = gates(hardware)[0].get("ib_write_bw_gbps")
    if value is not None:
        return value, "gate"
    rate = ((hardware or {}).get("infiniband") or {}).get("rate_gbps") or 0
    return round(rate * 0.9, 2), "90 % of the port rate"


# A GPU that shares a PCIe switch with the NIC (topo -m: PIX, one switch; PXB, several): the only GPUs NCCL moves
# network data to directly by default (its GPUDirect RDMA level, NCCL_NET_GDR_LEVEL, is PXB). Further away the
# traffic crosses the host bridge or the CPUs, and GPU memory would measure that path, not the port.
GPUDIRECT_PATHS = ("PIX", "PXB")


def rail_gpus(evidence, rails):
    """{rail: the index of its nearest GPU} for the rails a GPU shares a PCIe switch with (nvidia-smi topo -m; the
    lowest index of equally near ones), where ib_write_bw measures from GPU memory if its perftest has CUDA. nvidia-smi
    numbers GPUs in PCI bus order, as CUDA does for a node's identical GPUs (perftest's --use_cuda takes CUDA's)."""
    text = _text(_item(evidence, "nvidia-smi-topo.txt"))
    try:
        topology = nvidia_smi.parse_topology(text) if text else None
    except nvidia_smi.NvidiaSmiParseError:
        topology = None
    found = {}
    for rail in rails:
        near = [
            (GPUDIRECT_PATHS.index(links[rail]), int(gpu[3:]))
            for gpu, links in ((topology or {}).get("nic_affinity") or {}).items()
            if links.get(rail) in GPUDIRECT_PATHS and gpu[3:].isdigit()
        ]
        if near:
            found[rail] = min(near)[1]
    return found


def bandwidth_member(node, rack, evidence, hardware):
    """What the bandwidth passes plan with for a node: {node, rack, fabric (the profile's link layer), rails (its
    active ports on it), gpus (rail_gpus), gate_gbps, gid_index (RoCE: the rdma_fabric stage's; None on InfiniBand),
    problem (why the node cannot take part, or None)}. A RoCE node whose GID index is unknown has no rails: perftest
    would pick a GID that may not route."""
    state = read_state(evidence)
    fabric = ((hardware or {}).get("infiniband") or {}).get("link_layer") or "InfiniBand"
    rails = acceptance_pairs.rails_of(state["infiniband"]["devices"], fabric)
    gid_index, problem = None, None
    if fabric == "Ethernet":
        gid_index, problem = state["rdma_fabric"]["gid_index"], state["rdma_fabric"]["why"]
        rails = rails if gid_index is not None else []
    return {"node": node, "rack": rack, "fabric": fabric, "rails": rails, "gpus": rail_gpus(evidence, rails),
            "gate_gbps": bandwidth_gate(hardware)[0], "gid_index": gid_index, "problem": problem}  # fmt: skip


def _rail_words(rail, found):
    measured = []
    for run in found["runs"]:
        values = [v for v in (run["client_gbps"], run["server_gbps"]) if v is not None]
        measured.append(f"{run['partner']} {min(values)} Gb/s" if values else f"{run['partner']} " + (
            "no result" if run["partner_has_rail"] else "(its port is not active)"))  # fmt: skip
    return f"{rail} ({', '.join(measured) or 'no test'})"


def check_fabric_bandwidth(state, hardware, gate_values):
    record = state["bandwidth"]
    evidence = ("ib-write-bw.json",)
    gate, basis = bandwidth_gate(hardware)
    gate_text = f"{gate} Gb/s per port ({basis}), both ends"
    if not isinstance(record, dict):
        return _outcome("SKIPPED", "ib_write_bw did not run between pairs (acceptance_bandwidth is false, or the stage "
                        "ran without its bandwidth passes)", evidence=evidence)  # fmt: skip
    if record.get("skipped"):
        return _outcome("SKIPPED", record["skipped"], evidence=evidence)
    try:
        found = acceptance_pairs.node_outcome(record["node"], record["members"], record["entries"])
    except (KeyError, TypeError, ValueError) as error:
        return _outcome("ERROR", f"the bandwidth record is unreadable: {error!r}", None, gate_text, "tool_failed",
                        evidence)  # fmt: skip
    if not found:
        mine = next((m for m in record["members"] if m.get("node") == record["node"]), {})
        if mine.get("problem"):
            return _outcome("ERROR", f"ib_write_bw cannot run on RoCE without the GID index: {mine['problem']}", None,
                            gate_text, "roce_gid_unknown", evidence)  # fmt: skip
        kind = _port_kind((hardware.get("infiniband") or {}).get("link_layer"))
        return _outcome("ERROR", f"no active {kind} port to measure", None, gate_text, "port_down", evidence)
    value = {rail: [{k: r[k] for k in ("partner", "role", "client_gbps", "server_gbps", "gpudirect")}
                    for r in f["runs"]] for rail, f in found.items()}  # fmt: skip
    by = {status: [r for r, f in found.items() if f["outcome"] == status] for status in acceptance_pairs.OUTCOMES}
    if by[acceptance_pairs.FAIL]:
        missing = [r for r in by[acceptance_pairs.FAIL] if not found[r]["has_rail"]]
        slow = [r for r in by[acceptance_pairs.FAIL] if found[r]["has_rail"]]
        isolated = [r for r in slow if found[r]["failed_with"]]
        unisolated = [r for r in slow if not found[r]["failed_with"]]
        parts = [f"not active here: {', '.join(missing)}"] if missing else []
        if isolated:
            words = "; ".join(_rail_words(r, found[r]) for r in isolated)
            parts.append(f"below the gate with a node that passed: {words}")
        if unisolated:
            parts.append("below the gate, with no partner that passed to tell which node is at fault: "
                         + "; ".join(_rail_words(r, found[r]) for r in unisolated))  # fmt: skip
        fault = "port_down" if missing else ("port_bandwidth_low" if isolated else "bandwidth_unisolated")
        return _outcome("FAIL", "; ".join(parts), value, gate_text, fault, evidence)
    if by[acceptance_pairs.UNTESTED] or (by[acceptance_pairs.ERROR] and not by[acceptance_pairs.PASS]):
        rails = by[acceptance_pairs.UNTESTED] + by[acceptance_pairs.ERROR]
        return _outcome("ERROR", f"ib_write_bw did not measure {', '.join(rails)}", value, gate_text, "tool_failed",
                        evidence)  # fmt: skip
    if by[acceptance_pairs.WARN] or by[acceptance_pairs.ERROR]:
        words = [f"{r}: below the gate with {', '.join(found[r]['failed_with'])}, which passed with others"
                 for r in by[acceptance_pairs.WARN]]  # fmt: skip
        words += [f"{r}: one test could not run" for r in by[acceptance_pairs.ERROR]]
        return _outcome("WARN", "; ".join(words), value, gate_text, evidence=evidence)
    best = {r: max(min(v for v in (x["client_gbps"], x["server_gbps"]) if v is not None)
                   for x in f["runs"] if x["passed"]) for r, f in found.items()}  # fmt: skip
    gpu = sorted(r for r, f in found.items() if any(x["passed"] and x["gpudirect"] for x in f["runs"]))
    memory = f"; from GPU memory (GPUDirect RDMA) on {', '.join(gpu)}" if gpu else ""
    return _outcome("PASS", f"{len(best)} port(s) at or above the gate, the slowest {min(best.values())} Gb/s{memory}",
                    value, gate_text, evidence=evidence)  # fmt: skip


def _port_words(layers):
    """The kinds of port among the link layers: InfiniBand, RoCE, or InfiniBand and RoCE."""
    return " and ".join(kind["kind"] for layer, kind in PORT_COUNTERS.items() if layer in layers)


def _port_kind(layer):
    """InfiniBand or RoCE for a profile's link layer; RDMA for one the profile does not name."""
    return PORT_COUNTERS.get(layer, {}).get("kind", "RDMA")


def check_fabric_counters(state, hardware, gate_values):
    counters = state["counters"]
    layer = (hardware.get("infiniband") or {}).get("link_layer")
    # Where no port was read, the file the profile's link layer is read into.
    expected = (PORT_COUNTERS.get(layer, PORT_COUNTERS["InfiniBand"])["file"],)
    if counters is None:
        return _outcome("ERROR", "the port counters were not collected", None, None, "not_reported", expected)
    ports = counters["ports"]
    layers = {port["layer"] for port in ports.values()}
    evidence = tuple(kind["file"] for name, kind in PORT_COUNTERS.items() if name in layers) or expected
    interval = counters["interval_s"]
    gate = {"rise": 0, "interval_s": interval}
    if not ports:
        return _outcome("ERROR", f"no active {_port_kind(layer)} port to read the counters of "
                        "(fabric.ports says which are down)", {}, gate, "not_reported", evidence)  # fmt: skip
    rising, nonzero, saturated, link = {}, {}, {}, {}
    for where, port in ports.items():
        if port["error"] is None:
            own, other = PORT_COUNTERS[port["layer"]]["link"], PORT_COUNTERS[port["layer"]]["other"]
            rising[where], nonzero[where], saturated[where] = _counter_changes(port["reads"], own + other)
            link[where] = {n: v for n, v in rising[where].items() if n in own}
    rising = {where: values for where, values in rising.items() if values}
    nonzero = {where: values for where, values in nonzero.items() if values}
    saturated = {where: names for where, names in saturated.items() if names}
    link = {where: values for where, values in link.items() if values}
    value = {"rising": rising, "nonzero": nonzero}
    during = f"in {interval:g} s" if interval is not None else "between the two reads"
    if link:
        flapping = any(PORT_COUNTERS[ports[where]["layer"]]["down"] in values for where, values in link.items())
        roce = all(ports[where]["layer"] == "Ethernet" for where in link)
        fault = ("roce_" if roce else "port_") + ("link_flapping" if flapping else "errors_rising")
        return _outcome("FAIL", f"error counters rose {during} while the node was idle: {_counter_list(link, '+')}",
                        value, gate, fault, evidence, findings=[fault])  # fmt: skip
    unread = {where: port["error"] for where, port in ports.items() if port["error"]}
    if unread:
        fault = "tool_missing" if any("not installed" in why for why in unread.values()) else "tool_failed"
        return _outcome("ERROR", "; ".join(unread.values()), value, gate, fault, evidence)
    warnings, findings = [], []
    if rising:
        warnings.append(f"fabric-side error counters rose {during}: {_counter_list(rising, '+')}")
        findings.append("port_errors_fabric")
    if saturated:
        warnings.append(
            "at their maximum, so a rise cannot show (clear them with perfquery -R and rerun): "
            + "; ".join(f"{where} {', '.join(names)}" for where, names in saturated.items())
        )
        findings.append("port_counters_saturated")
    if nonzero:
        warnings.append(f"non-zero since the counters were last cleared, not rising: {_counter_list(nonzero)}")
        findings.append("port_errors_history")
    if warnings:
        return _outcome("WARN", "; ".join(warnings), value, gate, evidence=evidence, findings=findings)
    return _outcome("PASS", f"no error counter of {len(ports)} {_port_words(layers)} port(s) is above 0, none rose "
                    f"{during}", value, gate, evidence=evidence)  # fmt: skip


def _drift_status(policy):
    return "FAIL" if policy == "fail" else "WARN"


@_needs_gpus()
def check_inventory_vbios(devices, state, hardware, gate_values):
    firmware = hardware.get("firmware") or {}
    allowed = firmware.get("vbios") or []
    status = _drift_status(firmware.get("vbios_drift", "warn"))
    versions = {d.get("pci_bus_id"): d.get("vbios_version") for d in devices}
    distinct = sorted({v for v in versions.values() if v})
    problems = []
    if len(distinct) > 1:
        problems.append(f"the GPUs run {len(distinct)} VBIOS versions: {', '.join(distinct)}")
    unexpected = [v for v in distinct if allowed and v not in allowed]
    if unexpected:
        problems.append(f"{', '.join(unexpected)} not in the profile's list ({', '.join(allowed)})")
    gate = allowed or "one version"
    if problems:
        return _outcome(status, "; ".join(problems), versions, gate, "vbios_drift" if status == "FAIL" else None,
                        ("nvidia-smi-query.xml",), findings=["vbios_drift"])  # fmt: skip
    if not distinct:
        return _outcome("ERROR", "nvidia-smi reported no VBIOS version", versions, gate, "not_reported",
                        ("nvidia-smi-query.xml",))  # fmt: skip
    return _outcome("PASS", f"every GPU runs VBIOS {distinct[0]}", versions, gate, evidence=("nvidia-smi-query.xml",))


def check_inventory_hca_firmware(state, hardware, gate_values):
    firmware = hardware.get("firmware") or {}
    minimum = firmware.get("hca_min")
    devices = state["infiniband"]["devices"]
    versions = {d["name"]: d.get("fw_version") for d in devices}
    evidence = ("ibstat.txt", "sysfs-infiniband.json")
    if not devices:
        return _outcome("ERROR", "no RDMA adapter was read (ibstat and sysfs list none)", versions, minimum,
                        "not_reported", evidence)  # fmt: skip
    unknown = sorted(name for name, v in versions.items() if not v)
    if minimum is None:
        distinct = sorted({v for v in versions.values() if v}, key=version_key)
        return _outcome("PASS", f"recorded: firmware {', '.join(distinct) or 'unknown'} (the profile sets no "
                        "minimum)", versions, None, evidence=evidence)  # fmt: skip
    old = sorted(n for n, v in versions.items() if v and version_key(v) < version_key(minimum))
    if old:
        status = _drift_status(firmware.get("hca_drift", "warn"))
        return _outcome(status, "below " + str(minimum) + ": " + ", ".join(f"{n} {versions[n]}" for n in old),
                        versions, minimum, "hca_firmware_old" if status == "FAIL" else None, evidence,
                        findings=["hca_firmware_old"])  # fmt: skip
    if unknown:
        return _outcome("ERROR", f"no firmware version for {', '.join(unknown)}", versions, minimum, "not_reported",
                        evidence)  # fmt: skip
    return _outcome("PASS", f"every adapter at or above {minimum}", versions, minimum, evidence=evidence)


# Serials are compared as people read a label: without the blanks around them and without regard to case (a manifest
# typed in lower case names the same machine), but only in ASCII: Unicode's case mapping would let a lookalike from
# the firmware (the Kelvin sign, U+212A, lowers to k) equal a manifest's serial, which SYSTEM_SERIAL keeps ASCII.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _serial_key(serial):
    return serial.strip().translate(_ASCII_LOWER)


def check_inventory_system_serial(state, hardware, gate_values):
    expected = state["system_serial"]
    if not expected:
        # Where the manifest gives no serial there is nothing to hold the node to: not required, as a check that
        # does not apply.
        return {**_outcome("SKIPPED", "not applicable: gpuops_system_serial is not set for this node (the rack "
                           "manifest's serial column sets it)"), "not_applicable": True}  # fmt: skip
    evidence = ("dmidecode.txt",)
    found = state["system"]["serial"]
    listed = parsing.excerpt(expected)
    if found is None:
        item = state["dmidecode"]
        why = f"cannot verify the rack manifest's serial {listed} (gpuops_system_serial)"
        if item.get("rc") != 0 or not _text(item):
            fault = "tool_missing" if item.get("missing") else "tool_failed"
            return _outcome("ERROR", f"{why}: {_why_not(item, 'dmidecode -t system -t bios')}", None, expected,
                            fault, evidence)  # fmt: skip
        printed = next((value for name, value in _dmi_values(_text(item)) if name == "serial"), None)
        said = "no System Information serial number" if printed is None else (
            f"the serial number {parsing.excerpt(printed)}, a vendor's placeholder")  # fmt: skip
        return _outcome("ERROR", f"{why}: dmidecode prints {said}", printed, expected, "system_serial_unreported",
                        evidence)  # fmt: skip
    if _serial_key(found) != _serial_key(expected):
        return _outcome("FAIL", f"dmidecode reports the system serial {parsing.excerpt(found)}, the rack manifest "
                        f"lists {listed} for this node (gpuops_system_serial): this is not the machine the manifest "
                        "names for its slot", found, expected, "system_serial_mismatch", evidence)  # fmt: skip
    return _outcome("PASS", f"dmidecode reports the system serial {parsing.excerpt(found)}, the rack manifest's "
                    f"{listed} (gpuops_system_serial; compared without regard to case or surrounding blanks)", found,
                    expected, evidence=evidence)  # fmt: skip


def _kept(state, key):
    """The measurement the nccl_tests stage kept under key in results.json, or None when the file holds none (any
    other shape is read as none: the node wrote it)."""
    kept = state["nccl"].get(key) if isinstance(state["nccl"], dict) else None
    measured = kept.get("measurement") if isinstance(kept, dict) else None
    return measured if isinstance(measured, dict) else None


def _measurement(measured):
    """The kept all_reduce_perf measurement in the shape nccl_tests.verdict reads, or None without one."""
    if measured is None:
        return None
    value = measured.get("largest_busbw_gbps")
    errors = measured.get("errors")
    return {
        "largest_busbw_gbps": float(value) if _number(value) else None,
        "errors": [str(e) for e in errors] if isinstance(errors, list) else [],
        "results": measured.get("results") if isinstance(measured.get("results"), list) else [],
        "rc": measured.get("rc") if isinstance(measured.get("rc"), int) else None,
        "measured_at": str(measured.get("measured_at") or "an unknown time"),
    }


def check_nccl_single_node(state, hardware, gate_values):
    gate = gate_values.get("nccl_all_reduce_busbw_gbps")
    evidence = ("nccl-tests-results.json",)
    measured = _measurement(_kept(state, "node/all_reduce_perf"))
    if measured is None:
        where = acceptance_evidence.NCCL_RESULTS
        return _outcome("SKIPPED", f"no all_reduce_perf measurement on the node ({where}): the nccl_tests stage has "
                        "not run here", None, gate, evidence=evidence)  # fmt: skip
    value = measured["largest_busbw_gbps"]
    if gate is None:
        return _outcome("ERROR", "no bus bandwidth gate for this profile (gpuops_hardware.gates."
                        "nccl_all_reduce_busbw_gbps)", value, None, "not_reported", evidence)  # fmt: skip
    passed, reasons = nccl_verdict(measured, measured["rc"], gate, "largest")
    when = f" (measured {measured['measured_at']})"
    if passed:
        return _outcome("PASS", f"all_reduce_perf bus bandwidth {value:g} GB/s, gate {gate:g}{when}", value, gate,
                        evidence=evidence)  # fmt: skip
    below = value is not None and value < gate and measured["rc"] == 0 and not measured["errors"]
    return _outcome("FAIL", "; ".join(reasons) + when, value, gate, "nccl_below_gate" if below else "nccl_failed",
                    evidence)  # fmt: skip


def check_nccl_pairs(state, hardware, gate_values):
    gate = gate_values.get("nccl_pair_busbw_gbps")
    evidence = ("nccl-tests-results.json",)
    measured = _kept(state, nccl_tests_pairs.KEY)
    if measured is None:
        return _outcome("SKIPPED", "no pair measurement on the node: the nccl_tests stage has not run here with "
                        "nccl_tests_pairs: true and another node", None, gate, evidence=evidence)  # fmt: skip
    if gate is None:
        return _outcome("ERROR", "no pair bus bandwidth gate for this profile (gpuops_hardware.gates."
                        "nccl_pair_busbw_gbps)", None, None, "not_reported", evidence)  # fmt: skip
    try:
        found = nccl_tests_pairs.node_outcome(state["node"], measured["members"], measured["entries"], gate)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        return _outcome("ERROR", f"the pairs' record is unreadable: {error!r}", None, gate, "tool_failed", evidence)
    if found is None:
        return _outcome("SKIPPED", "the kept pairs did not include this node: rerun the nccl_tests stage with it",
                        None, gate, evidence=evidence)  # fmt: skip
    runs = found["runs"]
    value = [{k: r[k] for k in ("pass", "partner", "busbw_gbps", "passed")} for r in runs]
    busbw = [r["busbw_gbps"] for r in runs if r["busbw_gbps"] is not None]
    with_whom = ", ".join(f"{r['partner']} {r['busbw_gbps']:g} GB/s" if r["busbw_gbps"] is not None
                          else f"{r['partner']} no figure" for r in runs)  # fmt: skip
    outcome, failed_with = found["outcome"], ", ".join(found["failed_with"])
    reasons = "; ".join(dict.fromkeys(x for r in runs for x in r["reasons"]))
    if outcome == acceptance_pairs.PASS:
        return _outcome("PASS", f"all_reduce_perf with {with_whom}, gate {gate:g}", value, gate, evidence=evidence)
    if outcome == acceptance_pairs.WARN:
        return _outcome("WARN", f"below the gate or failed with {failed_with}, which passed with others (that pair's "
                        f"fault, not this node's); {with_whom}", value, gate, evidence=evidence)  # fmt: skip
    if outcome == acceptance_pairs.FAIL:
        below = bool(busbw) and all(r["reasons"] and all("below" in x for x in r["reasons"]) for r in runs)
        if failed_with:
            return _outcome("FAIL", f"failed with {failed_with}, which passed with others: {reasons}", value, gate,
                            "nccl_pair_below_gate" if below else "nccl_pair_failed", evidence)  # fmt: skip
        return _outcome("FAIL", f"every pair failed ({with_whom}), none with a node that passed: {reasons}", value,
                        gate, "nccl_pair_unisolated", evidence)  # fmt: skip
    if outcome == acceptance_pairs.ERROR:
        return _outcome("ERROR", f"no pair with this node could run: {reasons}", value, gate, "tool_failed", evidence)
    return _outcome("SKIPPED", "the node was in no pair of the kept run", value, gate, evidence=evidence)


# ---------------------------------------------------------------------------------------------------------------
# the catalog


def _gpus(hardware):
    return None if hardware["gpu"]["count"] > 0 else "the profile has no GPUs"


def _nvlinks(hardware):
    return _gpus(hardware) or (None if hardware["gpu"].get("nvlinks", 0) > 0 else "the profile has no NVLink "
                               "(gpuops_hardware.gpu.nvlinks is 0)")  # fmt: skip


def _nvswitch(hardware):
    return _gpus(hardware) or (None if hardware["gpu"].get("nvswitch") else "the profile has no NVSwitch")


def _ports(hardware):
    return None if hardware["infiniband"]["ports"] > 0 else "the profile has no RDMA ports"


def _nccl(hardware):
    return None if hardware["gpu"]["count"] > 1 else "NCCL's single-node test needs two GPUs or more"


def _has_nccl_gate(hardware):
    return "nccl_all_reduce_busbw_gbps" in gates(hardware)[0]


def _nccl_pairs(hardware):
    return _gpus(hardware) or (None if _ports(hardware) is None else
                               "the profile has no RDMA port: NCCL between nodes would measure TCP")  # fmt: skip


def _has_pair_gate(hardware):
    return "nccl_pair_busbw_gbps" in gates(hardware)[0]


# id -> (title, applies (hardware -> None or why not), judge, required unless the profile says otherwise: True, or
# a function of the profile)
CHECKS = {
    "gpu.count": ("GPU count", _gpus, check_gpu_count, True),
    "gpu.model": ("GPU model", _gpus, check_gpu_model, True),
    "gpu.pcie": ("PCIe link width", _gpus, check_gpu_pcie, True),
    "gpu.ecc": ("ECC errors", _gpus, check_gpu_ecc, True),
    "gpu.memory": ("Row remapping and page retirement", _gpus, check_gpu_memory, True),
    "gpu.recovery": ("GPU reset and recovery", _gpus, check_gpu_recovery, True),
    "gpu.nvlink": ("NVLink links", _nvlinks, check_gpu_nvlink, True),
    "gpu.fabric": ("NVSwitch fabric registration", _nvswitch, check_gpu_fabric, True),
    "gpu.clocks": ("Clock slowdown at idle", _gpus, check_gpu_clocks, True),
    "gpu.xid": ("Xid and GPU events in the kernel log", _gpus, check_gpu_xid, True),
    # The driver stage installs DCGM unless told not to (nvidia_driver_dcgm); a site that leaves it out puts gpu.dcgm
    # in acceptance_optional.
    "gpu.dcgm": ("DCGM diagnostics", _gpus, check_gpu_dcgm, True),
    "driver.version": ("Loaded driver is the installed driver", _gpus, check_driver_version, True),
    "driver.persistence": ("Persistence mode", _gpus, check_driver_persistence, True),
    "driver.fabric_manager": ("Fabric manager at the driver's version", _nvswitch, check_driver_fabric_manager, True),
    "fabric.ports": ("RDMA ports active at rate", _ports, check_fabric_ports, True),
    "fabric.counters": ("RDMA port error counters", _ports, check_fabric_counters, True),
    "fabric.bandwidth": ("ib_write_bw per port between node pairs", _ports, check_fabric_bandwidth, True),
    "inventory.vbios": ("GPU VBIOS versions", _gpus, check_inventory_vbios, True),
    "inventory.hca_firmware": ("RDMA adapter firmware", _ports, check_inventory_hca_firmware, True),
    # Applies to every profile; a node without gpuops_system_serial ends SKIPPED and not required (its judge says).
    "inventory.system_serial": (
        "System serial matches the rack manifest",
        lambda hardware: None,
        check_inventory_system_serial,
        True,
    ),
    "nccl.single_node": ("NCCL all_reduce bus bandwidth, one node", _nccl, check_nccl_single_node, _has_nccl_gate),
    "nccl.pairs": ("NCCL all_reduce bus bandwidth, node pairs", _nccl_pairs, check_nccl_pairs, _has_pair_gate),
    "cuda.runtime": ("A CUDA kernel on every GPU", _gpus, check_cuda_runtime, True),
    "container.gpus": ("Every GPU in a container", _gpus, check_container_gpus, True),
    "kubernetes.ready": ("Kubernetes Node Ready", lambda hardware: None, check_k8s_ready, True),
    "kubernetes.labels": ("Kubernetes Node labels", lambda hardware: None, check_k8s_labels, True),
    "kubernetes.gpus": ("GPUs Kubernetes offers to pods", _gpus, check_k8s_gpus, True),
}


def _category(check_id):
    return check_id.split(".", 1)[0]


def _listed(hardware, required):
    """The check ids the operator (required) or else the profile (acceptance.required) lists, or None."""
    return required or ((hardware.get("acceptance") or {}).get("required") if isinstance(hardware, dict) else None)


def required_checks(hardware, required=None, optional=()):
    """The ids of the checks a node of this profile must pass: required (the operator's list) if given, else the
    profile's acceptance.required, else every check that applies and is required by default; minus optional."""
    listed = _listed(hardware, required)
    if listed:
        chosen = list(listed)
    else:
        chosen = [
            i
            for i, (_t, applies, _j, default) in CHECKS.items()
            if applies(hardware) is None and (default is True or (callable(default) and default(hardware)))
        ]
    return [i for i in chosen if i not in set(optional or ())]


def _judge(check_id, state, hardware, gate_values):
    _title, applies, judge, _default = CHECKS[check_id]
    why_not = applies(hardware)
    if why_not is not None:
        return _outcome("SKIPPED", why_not)
    return judge(state, hardware, gate_values)


def _finish(check_id, outcome, required):
    title = CHECKS[check_id][0]
    result = {"id": check_id, "title": title, "category": _category(check_id), "required": required, **outcome}
    fault = outcome.get("fault")
    if result["status"] in ("FAIL", "ERROR"):
        entry = acceptance_faults.FAULTS.get(fault) if fault else None
        # An Xid's severity and action come from the Xid catalog (set by its check).
        result.setdefault("severity", (entry or {}).get("severity", "low"))
        result.setdefault("action", (entry or {}).get("action", acceptance_faults.RERUN))
    else:
        result["severity"], result["action"], result["fault"] = None, None, None
    return result


def verdict(checks):
    """accepted, rejected or incomplete, from the checks' statuses and which are required."""
    required = [c for c in checks if c["required"]]
    if any(c["status"] == "FAIL" for c in required):
        return "rejected"
    if all(c["status"] in PASSING for c in required):
        return "accepted"
    return "incomplete"


def kubernetes_evidence(joins, reads, kubeconfig, name, label_prefix):
    """A node's kubernetes-node.json evidence from the play's reads of every Node of its clusters (k8s_info's
    results, one per kubeconfig, each with it as its item): its own Node (a list of one, or of none where the cluster
    has no Node of that name, as a read by name gives), the API's error where the read failed, not applicable where
    the node joins no cluster. One read per cluster, not one per node: a rack's run asks the API once."""
    if not joins:
        return {"skipped": "gpuops_kubernetes_join is false: the node joins no cluster", "not_applicable": True}
    read = next((r for r in reads or [] if isinstance(r, dict) and r.get("item", "") == kubeconfig), None)
    if read is None or read.get("skipped"):
        return {"rc": 1, "stdout": "", "stderr": "the Kubernetes API was not read"}
    if not isinstance(read.get("resources"), list):
        return {"rc": 1, "stdout": "", "stderr": str(read.get("msg") or "the Kubernetes API gave no Nodes")}
    mine = [n for n in read["resources"] if isinstance(n, dict) and (n.get("metadata") or {}).get("name") == name]
    return {"rc": 0, "stderr": "", "stdout": json.dumps(mine), "label_prefix": label_prefix}


def mark_key(label_prefix):
    """The label and taint key that carry a node's verdict on its Node: under a domain of its own, so that the
    Kubernetes stage, which owns the labels under label_prefix and removes those a node no longer earns, leaves it."""
    return f"acceptance.{label_prefix}/verdict"


def kubernetes_mark(evidence, verdict, label_prefix):
    """The JSON merge patch that marks the node's Node with its verdict, or {} where it is marked so already or there
    is no Node to mark (the node joins no cluster, the read failed, the cluster has no Node of its name).

    The label says the verdict (accepted, rejected, incomplete); a node not accepted also gets a NoSchedule taint of
    the same key, so that no new pod lands on it until a run accepts it, which takes the taint off. The Node's other
    taints are kept (the taints list is replaced whole by a merge patch)."""
    if not isinstance(evidence, dict) or evidence.get("rc") != 0:
        return {}
    try:
        nodes = json.loads(evidence.get("stdout") or "")
    except ValueError:
        return {}
    if not isinstance(nodes, list) or len(nodes) != 1 or not isinstance(nodes[0], dict):
        return {}
    node, key = nodes[0], mark_key(label_prefix)
    patch = {}
    if ((node.get("metadata") or {}).get("labels") or {}).get(key) != verdict:
        patch["metadata"] = {"labels": {key: verdict}}
    have = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
    want = [t for t in have if t.get("key") != key]
    if verdict != "accepted":
        want.append({"key": key, "value": verdict, "effect": "NoSchedule"})
    if sorted(map(kubernetes_node.taint_words, want)) != sorted(map(kubernetes_node.taint_words, have)):
        patch["spec"] = {"taints": want}
    return patch


def inventory(state):
    """What the node is: system, GPUs (serials, UUIDs, VBIOS), RDMA adapters (firmware, PSID), driver."""
    query = state["gpu"]["query"] or {}
    loaded, _where = loaded_version(state)
    return {
        "system": state["system"],
        "gpus": [
            {
                "index": d.get("index"),
                "name": d.get("name"),
                "uuid": d.get("uuid"),
                "serial": d.get("serial"),
                "pci_bus_id": d.get("pci_bus_id"),
                "vbios": d.get("vbios_version"),
                "memory_mib": d.get("memory_total_mib"),
            }
            for d in query.get("devices", [])
        ],
        "gpus_on_pci_bus": [g.get("address") for g in (state["pci"] or {}).get("gpus") or []],
        "rdma_adapters": [
            {
                "name": d["name"],
                "ca_type": d.get("ca_type"),
                "firmware": d.get("fw_version"),
                "psid": d.get("board_id"),
                "node_guid": d.get("node_guid"),
                "ports": [
                    {
                        "port": p["port"],
                        "state": p.get("state"),
                        "rate_gbps": p.get("rate_gbps"),
                        "link_layer": p.get("link_layer"),
                        "netdev": p.get("netdev"),
                    }
                    for p in d.get("ports", [])
                ],
            }
            for d in state["infiniband"]["devices"]
        ],
        "driver": {"loaded": loaded, "installed": installed_versions(state), "cuda_version": query.get("cuda_version")},
        "tools": tool_versions(state),
    }


def tool_versions(state):
    """The versions of the tools whose runs the checks judged, as the runs printed them (None where none ran): DCGM's
    diagnostic, and the NCCL and nccl-tests of the kept single-node measurement."""
    diag = state["dcgm"].get("diag") or {}
    measured = _kept(state, "node/all_reduce_perf") or {}
    return {
        "dcgm": diag.get("version") or None,
        "nccl": _text_or_none(measured.get("nccl_version")),
        "nccl_tests": _text_or_none(measured.get("tests_version")),
    }


def _text_or_none(value):
    return value if isinstance(value, str) and value else None


def node_results(
    node, hardware, evidence, required=None, optional=(), rack=None, simulated=False, run_id=None, system_serial=None
):
    """One node's results document (without the evidence file list, which the writer adds); system_serial: the
    node's gpuops_system_serial (None or "" where the inventory gives none)."""
    state = {**read_state(evidence), "node": node, "system_serial": system_serial or None}
    gate_values, gate_sources = gates(hardware)
    must = set(required_checks(hardware, required, optional))
    checks = []
    for check_id in CHECKS:
        outcome = _judge(check_id, state, hardware, gate_values)
        # A check that cannot apply to this node (its kernel is its container host's) is not required of it. The
        # marker is taken out of every outcome, required or not: it is no field of the document.
        not_applicable = outcome.pop("not_applicable", False)
        checks.append(_finish(check_id, outcome, check_id in must and not not_applicable))
    counts = {s: sum(1 for c in checks if c["status"] == s) for s in STATUSES}
    result = verdict(checks)
    return {
        "schema": "gpuops.bringup/acceptance-node",
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "node": node,
        "rack": rack,
        "profile": hardware.get("profile"),
        "simulated": simulated or False,
        "verdict": result,
        "accepted": result == "accepted",
        "counts": counts,
        "gates": {k: {"value": v, "source": gate_sources[k]} for k, v in sorted(gate_values.items())},
        "checks": checks,
        "inventory": inventory(state),
        "summary": summary(node, hardware.get("profile"), simulated, result, checks),
    }


def summary(node, profile, simulated, result, checks):
    """One line for a person: the node, its verdict and what stopped it."""
    mark = f"[SIMULATED {simulated.get('profile', '')}] " if isinstance(simulated, dict) else ""
    counts = ", ".join(f"{n} {s}" for s in STATUSES if (n := sum(1 for c in checks if c["status"] == s)))
    blocking = [c for c in checks if c["required"] and c["status"] not in PASSING]
    why = "; ".join(f"{c['id']} {c['status']}: {c['reason']}" for c in blocking[:3])
    more = f" (+{len(blocking) - 3} more)" if len(blocking) > 3 else ""
    return f"{mark}{node} ({profile}): {result.upper()} ({counts}){' - ' + why + more if why else ''}"


# ---------------------------------------------------------------------------------------------------------------
# input problems


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _ids_problems(where, ids):
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return [f"{where} is {ids!r}: expected a list of check ids, e.g. [gpu.count, driver.version]"]
    unknown = [i for i in ids if i not in CHECKS]
    if unknown:
        return [f"{where} names {', '.join(map(repr, unknown))}, no check of the acceptance stage; known: "
                f"{', '.join(CHECKS)}"]  # fmt: skip
    return []


def hardware_problems(hardware, where="gpuops_hardware"):
    """Problems in a profile's acceptance keys (gpu.nvlinks, gates, firmware, acceptance), each naming the key, the
    value and the fix; the profile's other keys are inventory_schema's."""
    if not isinstance(hardware, dict):
        return []
    problems = []
    nvlinks = (hardware.get("gpu") or {}).get("nvlinks", 0) if isinstance(hardware.get("gpu"), dict) else 0
    if not isinstance(nvlinks, int) or isinstance(nvlinks, bool) or not 0 <= nvlinks <= 18:
        problems.append(f"{where}.gpu.nvlinks is {nvlinks!r}: the NVLinks each GPU has, 0 to 18 (H100 and H200 SXM: "
                        "18, A100 SXM: 12, PCIe GPUs: 0)")  # fmt: skip
    gates_given = hardware.get("gates", {})
    if not isinstance(gates_given, dict):
        problems.append(f"{where}.gates is {gates_given!r}: expected a mapping of gate names to numbers, e.g. "
                        "{nccl_all_reduce_busbw_gbps: 460}")  # fmt: skip
        gates_given = {}
    for key, value in gates_given.items():
        if key not in GATE_KEYS:
            problems.append(f"{where}.gates.{key} is no gate; known: {', '.join(GATE_KEYS)}")
        elif not _number(value) or not 0 < value < 100000:
            problems.append(f"{where}.gates.{key} is {value!r}: expected a number above 0 ({GATE_KEYS[key]}), "
                            "unquoted")  # fmt: skip
    firmware = hardware.get("firmware", {})
    if not isinstance(firmware, dict):
        problems.append(f"{where}.firmware is {firmware!r}: expected a mapping ({', '.join(FIRMWARE_KEYS)})")
        firmware = {}
    for key, value in firmware.items():
        if key not in FIRMWARE_KEYS:
            problems.append(f"{where}.firmware.{key} is not a firmware setting; known: {', '.join(FIRMWARE_KEYS)}")
        elif key in ("vbios_drift", "hca_drift") and value not in DRIFT:
            problems.append(f"{where}.firmware.{key} is {value!r}: expected warn or fail")
        elif key == "vbios" and (not isinstance(value, list) or not all(isinstance(v, str) and v for v in value)):
            problems.append(f"{where}.firmware.vbios is {value!r}: expected a list of VBIOS versions as nvidia-smi "
                            "prints them, quoted (e.g. ['96.00.74.00.01'])")  # fmt: skip
        elif key == "hca_min" and not (
            isinstance(value, str) and re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,6}){1,3}", value)
        ):
            problems.append(f"{where}.firmware.hca_min is {value!r}: expected a firmware version, quoted (e.g. "
                            "'28.39.1002')")  # fmt: skip
    settings = hardware.get("acceptance", {})
    if not isinstance(settings, dict):
        problems.append(f"{where}.acceptance is {settings!r}: expected a mapping with required (a list of check ids) "
                        "or dcgm_level")  # fmt: skip
        settings = {}
    for key in settings:
        if key not in ("required", "dcgm_level"):
            problems.append(f"{where}.acceptance.{key} is not an acceptance setting; known: required, dcgm_level")
    if "required" in settings:
        problems += _ids_problems(f"{where}.acceptance.required", settings["required"])
    level = settings.get("dcgm_level", 1)
    if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 4:
        problems.append(f"{where}.acceptance.dcgm_level is {level!r}: the DCGM diagnostic level the profile's "
                        "acceptance runs, 0 to 4, unquoted (1 by default; 3 for a delivery acceptance)")  # fmt: skip
    return problems


def system_serial_problem(serial):
    """Why gpuops_system_serial is no system serial (a sentence naming the variable, the value and the fix), or None;
    None and "" are unset (inventory.system_serial is then not applicable)."""
    if serial is None or serial == "":
        return None
    if isinstance(serial, str) and SYSTEM_SERIAL.fullmatch(serial):
        return None
    unset = "or leave it unset to skip inventory.system_serial"
    if not isinstance(serial, str):
        # No type name: Ansible hands filters its own int and float subclasses.
        return (f"gpuops_system_serial is {repr(serial)[:80]}, not text. Fix: quote it as the chassis label shows it "
                f"(YAML reads an unquoted 0123 as the number 83), {unset}.")  # fmt: skip
    return (f"gpuops_system_serial is {parsing.excerpt(serial, 80)}: not a system serial (letters, digits, '.', '_', "
            "'/' or '-', starting with a letter or digit, at most 64). Fix: copy it as the chassis label shows it "
            f"(the rack manifest's serial column sets it), {unset}.")  # fmt: skip


def input_problems(hardware, required=None, optional=None, system_serial=None):
    """Problems with a node's acceptance inputs: its profile's acceptance keys, the role's acceptance_required and
    acceptance_optional, its gpuops_system_serial, and a required check that cannot be judged on this node."""
    # The keys every stage reads (the inventory check's, which a play may skip): the checks below read them.
    if not isinstance(hardware, dict):
        problems = [f"gpuops_hardware is {repr(hardware)[:80]}, expected a mapping; {hardware_profiles.FIX}"]
    else:
        problems = hardware_profiles.field_problems(hardware) + hardware_problems(hardware)
    problems += _ids_problems("acceptance_required", [] if required is None else required)
    problems += _ids_problems("acceptance_optional", [] if optional is None else optional)
    serial_problem = system_serial_problem(system_serial)
    problems += [serial_problem] if serial_problem else []
    if problems or not isinstance(hardware, dict):
        return problems
    gate_values, _sources = gates(hardware)
    chosen = required_checks(hardware, required, optional)
    for check_id in chosen:
        why_not = CHECKS[check_id][1](hardware)
        if why_not is not None:
            problems.append(f"{check_id} is required but does not apply to profile {hardware.get('profile')} "
                            f"({why_not}): it would never pass. Fix: take it out of the required checks.")  # fmt: skip
    # By default a node without a serial has the serial check not applicable, not required; a list that names it
    # asks for the comparison, which such a node could never give.
    if not system_serial and _listed(hardware, required) and "inventory.system_serial" in chosen:
        problems.append(
            "inventory.system_serial is required, but gpuops_system_serial is not set for this node: it "
            "would never be compared. Fix: give the node its serial (the rack manifest's serial column, "
            "or gpuops_system_serial), or take inventory.system_serial out of the required checks."
        )
    for check_id, key, what in (
        ("nccl.single_node", "nccl_all_reduce_busbw_gbps", "bus bandwidth gate"),
        ("nccl.pairs", "nccl_pair_busbw_gbps", "bus bandwidth gate for node pairs"),
    ):
        if check_id in chosen and key not in gate_values:
            problems.append(f"{check_id} is required, but profile {hardware.get('profile')} has no {what} (no "
                            f"published one for its GPU model and count). Fix: set gpuops_hardware.gates.{key}, or "
                            f"add {check_id} to acceptance_optional.")  # fmt: skip
    return problems


def nccl_gates_by_profile(profiles):
    """{profile name: single-node all_reduce gate (GB/s)} of the given gpuops_hardware mappings that have one (their
    own gates, else the published one for their GPU model and count): the nccl_tests stage gates by profile name."""
    found = {}
    for hardware in profiles or ():
        if isinstance(hardware, dict) and hardware.get("profile"):
            value = gates(hardware)[0].get("nccl_all_reduce_busbw_gbps")
            if value is not None:
                found[hardware["profile"]] = value
    return found
