# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia-smi: one runner, and pure parsers for its XML query, topology matrix and NVLink status.

The parsers take text and return plain data (dicts, lists, ints), so the
unit tests feed them outputs captured on real machines. findings() turns
parsed data into health problems, each with a stable code. Nothing here
changes a GPU's state.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpuops.bringup.plugins.module_utils import gpu_catalog, parsing
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner

QUERY_ARGS = ("-q", "-x")
TOPOLOGY_ARGS = ("topo", "-m")
NVLINK_ARGS = ("nvlink", "-s")

SEVERITIES = ("error", "warning", "info")

# What nvidia-smi prints (and exits non-zero with) when it runs but finds no usable GPU.
# Each maps to a finding code; the GPU count is then 0 rather than a failed task.
NODE_FAILURES = (
    ("communicate with the nvidia driver", "driver_unreachable"),
    ("driver/library version mismatch", "driver_library_mismatch"),
    ("no devices were found", "no_devices"),
    ("no supported gpus were found", "no_devices"),
)

# Clock event ("throttle" before driver 535) reasons that mean the GPU is slowed by a fault or
# its environment. Idle, application clocks, the power cap and sync boost are normal operation.
SLOWDOWN_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")

_LINK_TYPE = re.compile(r"(X|SYS|SOC|NODE|PHB|PXB|PIX|PSB|NV[0-9]{1,4}|N/A)")
# Older drivers head NIC columns with the device name (mlx5_0, mlx5_bond_0) instead of NICn.
_DEVICE_COLUMN = re.compile(r"(GPU[0-9]{1,4}|NIC[0-9]{1,4}|[A-Za-z]+[0-9]*_[A-Za-z0-9_]+)")
_NIC_LEGEND = re.compile(r"\s*(NIC[0-9]{1,4})\s*:\s*(\S+)\s*")
# Each is matched from a line's start and ends in (.*): the rest is stripped in Python, so no two greedy runs meet
# over white space (a lazy group before \s*$ is quadratic on a long run of spaces).
_NVLINK_GPU = re.compile(r"GPU ([0-9]{1,6}): (.*)")
_NVLINK_LINK = re.compile(r"\s*Link ([0-9]{1,6}): (.*)")
_UUID_NOTE = " (UUID: "
_NUMBER = re.compile(rf"-?[0-9]{{1,{parsing.MAX_DIGITS}}}(?:\.[0-9]{{1,{parsing.MAX_DIGITS}}})?(?![0-9])")


class NvidiaSmiParseError(parsing.ParseError):
    """The text is not what the nvidia-smi command prints; the message says what is wrong."""


class NvidiaSmi:
    """The nvidia-smi runner: the commands gpu_facts needs, with the C locale, nothing that changes state."""

    def __init__(self, module):
        self.module = module
        self.tool = ToolRunner(module, "nvidia-smi")

    def _run(self, args):
        return self.tool(list(args), ok_rc=tuple(range(256)))

    def query(self):
        """(xml_text, None) from nvidia-smi -q -x, or (None, failure) when nvidia-smi reports no usable GPU.

        failure is {"code", "rc", "message"}. Any other non-zero exit ends the module with the command,
        its return code and both streams.
        """
        rc, out, err = self._run(QUERY_ARGS)
        if rc == 0:
            return out, None
        failure = classify_failure(rc, out, err)
        if failure is None:
            self.module.fail_json(
                msg=f"nvidia-smi -q -x failed with return code {rc}: {(err or out).strip()[-500:]}",
                cmd=[self.tool.path, *QUERY_ARGS],
                rc=rc,
                stdout=out,
                stderr=err,
            )
        return None, failure

    def optional(self, args):
        """The output of a command older drivers or PCIe-only systems may not answer; None when it fails."""
        rc, out, _err = self._run(args)
        return out if rc == 0 else None


def classify_failure(rc, stdout, stderr):
    """A node-level failure nvidia-smi reported ({"code", "rc", "message"}), or None for any other output."""
    text = f"{stdout or ''}\n{stderr or ''}"
    lowered = text.lower()
    for marker, code in NODE_FAILURES:
        if marker in lowered:
            message = next((line.strip() for line in text.splitlines() if marker in line.lower()), marker)
            return {"code": code, "rc": rc, "message": parsing.clean(message[:500])}
    return None


# ---------------------------------------------------------------------------------------------------------------
# nvidia-smi -q -x


def _text(elem, path):
    """Stripped text at path; None when absent, empty or a 'not available' marker."""
    node = elem.find(path)
    if node is None or node.text is None:
        return None
    value = " ".join(node.text.split())
    if value in ("", "N/A", "None", "Not Supported", "Unknown", "[N/A]", "[Not Supported]"):
        return None
    return value


def _first(elem, *paths):
    for path in paths:
        value = _text(elem, path)
        if value is not None:
            return value
    return None


def _number(value, kind=int):
    """'81920 MiB' -> 81920, '500.00 W' -> 500.0, '16x' -> 16; 'N/A', None, a number of more digits than any
    counter has -> None."""
    if value is None:
        return None
    match = _NUMBER.match(value)
    if match is None:
        return None
    number = float(match.group(0))
    return int(number) if kind is int else number


def _int(elem, *paths):
    return _number(_first(elem, *paths), int)


def _float(elem, *paths):
    return _number(_first(elem, *paths), float)


def _yes(value):
    """'Yes'/'Enabled'/'Active' -> True, 'No'/'Disabled'/'Not Active' -> False, else None."""
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ("yes", "enabled", "active", "true"):
        return True
    if lowered in ("no", "disabled", "not active", "false"):
        return False
    return None


def _sum(values):
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _ecc_counts(node):
    """(correctable, uncorrectable) of a <volatile> or <aggregate> block, in any of the driver's layouts."""
    if node is None:
        return None, None
    if node.find("single_bit") is not None or node.find("double_bit") is not None:
        # Drivers before 470 (and Volta/Pascal boards): per-bit-type blocks with a total.
        return _int(node, "single_bit/total"), _int(node, "double_bit/total")
    correctable = _sum([_int(node, "sram_correctable"), _int(node, "dram_correctable")])
    uncorrectable = _sum(
        [
            _int(node, "sram_uncorrectable"),
            _int(node, "sram_uncorrectable_parity"),
            _int(node, "sram_uncorrectable_secded"),
            _int(node, "dram_uncorrectable"),
        ]
    )
    return correctable, uncorrectable


def _architecture(name):
    """'Ada Lovelace' -> 'ada', 'Hopper' -> 'hopper': the names gpu_catalog uses."""
    if not name:
        return None
    return name.split()[0].lower()


def _catalog(product_name, pci_device_id):
    entry = gpu_catalog.lookup(pci_device_id=pci_device_id) if pci_device_id else None
    if entry is None and product_name:
        entry = gpu_catalog.lookup(product_name=product_name)
    return entry


def _throttle_reasons(gpu):
    block = gpu.find("clocks_event_reasons")
    prefix = "clocks_event_reason_"
    if block is None:
        block = gpu.find("clocks_throttle_reasons")
        prefix = "clocks_throttle_reason_"
    if block is None:
        return []
    active = []
    for child in block:
        if child.tag.startswith(prefix) and _yes(" ".join((child.text or "").split())) is True:
            active.append(child.tag[len(prefix) :])
    return active


def _mig_devices(gpu):
    devices = []
    for mig in gpu.findall("mig_devices/mig_device"):
        devices.append(
            {
                "index": _int(mig, "index"),
                "gpu_instance_id": _int(mig, "gpu_instance_id"),
                "compute_instance_id": _int(mig, "compute_instance_id"),
                "multiprocessor_count": _int(mig, "device_attributes/shared/multiprocessor_count"),
                "memory_total_mib": _int(mig, "fb_memory_usage/total"),
            }
        )
    return devices


def _fabric(gpu):
    state = _text(gpu, "fabric/state")
    if state is None:
        return None
    return {
        "state": state,
        "status": _text(gpu, "fabric/status"),
        "clique_id": _first(gpu, "fabric/cliqueId", "fabric/clique_id"),
        "cluster_uuid": _first(gpu, "fabric/clusterUuid", "fabric/cluster_uuid"),
    }


def _device(index, gpu):
    name = _text(gpu, "product_name")
    pci_device_id = _text(gpu, "pci/pci_device_id")
    entry = _catalog(name, pci_device_id)
    architecture = _architecture(_text(gpu, "product_architecture")) or (entry or {}).get("architecture")
    compute_capability = _text(gpu, "compute_cap") or (entry or {}).get("compute_capability")
    volatile = _ecc_counts(gpu.find("ecc_errors/volatile"))
    aggregate = _ecc_counts(gpu.find("ecc_errors/aggregate"))
    return {
        "index": index,
        "name": name,
        "uuid": _text(gpu, "uuid"),
        "serial": _text(gpu, "serial"),
        "pci_bus_id": _text(gpu, "pci/pci_bus_id") or gpu.get("id"),
        "pci_device_id": pci_device_id,
        "minor_number": _int(gpu, "minor_number"),
        "architecture": architecture,
        "compute_capability": compute_capability,
        "vbios_version": _text(gpu, "vbios_version"),
        "memory_total_mib": _int(gpu, "fb_memory_usage/total"),
        "pcie": {
            "gen_current": _int(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
            "gen_max": _int(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
            "width_current": _int(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width"),
            "width_max": _int(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width"),
            "replays": _int(gpu, "pci/replay_counter"),
        },
        "persistence_mode": _yes(_text(gpu, "persistence_mode")),
        "mig_mode": {
            "current": _text(gpu, "mig_mode/current_mig"),
            "pending": _text(gpu, "mig_mode/pending_mig"),
        },
        "mig_devices": _mig_devices(gpu),
        "ecc": {
            "mode": _text(gpu, "ecc_mode/current_ecc"),
            "mode_pending": _text(gpu, "ecc_mode/pending_ecc"),
            "volatile": {"correctable": volatile[0], "uncorrectable": volatile[1]},
            "aggregate": {"correctable": aggregate[0], "uncorrectable": aggregate[1]},
        },
        "retired_pages": {
            "single_bit": _int(gpu, "retired_pages/multiple_single_bit_retirement/retired_count"),
            "double_bit": _int(gpu, "retired_pages/double_bit_retirement/retired_count"),
            "pending": _yes(_first(gpu, "retired_pages/pending_retirement", "retired_pages/pending_blacklist")),
        },
        "remapped_rows": {
            "correctable": _int(gpu, "remapped_rows/remapped_row_corr"),
            "uncorrectable": _int(gpu, "remapped_rows/remapped_row_unc"),
            "pending": _yes(_text(gpu, "remapped_rows/remapped_row_pending")),
            "failure": _yes(_text(gpu, "remapped_rows/remapped_row_failure")),
        },
        "power": {
            "draw_w": _float(
                gpu,
                "gpu_power_readings/power_draw",
                "gpu_power_readings/instant_power_draw",
                "power_readings/power_draw",
            ),
            "limit_w": _float(
                gpu,
                "gpu_power_readings/current_power_limit",
                "power_readings/power_limit",
                "power_readings/enforced_power_limit",
            ),
            "default_limit_w": _float(
                gpu, "gpu_power_readings/default_power_limit", "power_readings/default_power_limit"
            ),
            "max_limit_w": _float(gpu, "gpu_power_readings/max_power_limit", "power_readings/max_power_limit"),
        },
        "temperature": {
            "gpu_c": _int(gpu, "temperature/gpu_temp"),
            "memory_c": _int(gpu, "temperature/memory_temp"),
            # Where the driver slows the GPU down, and where it shuts it down (N/A on some boards: None).
            "slowdown_c": _int(gpu, "temperature/gpu_temp_slow_threshold"),
            "shutdown_c": _int(gpu, "temperature/gpu_temp_max_threshold"),
        },
        "clock_event_reasons": _throttle_reasons(gpu),
        "reset_required": _yes(_text(gpu, "gpu_reset_status/reset_required")),
        "recovery_action": _text(gpu, "gpu_recovery_action"),
        "fabric": _fabric(gpu),
    }


def _without_doctype(text):
    """text without its first DOCTYPE declaration (an internal subset in [...] included), found by plain string
    search: a regular expression for it backtracks over every later "]" when the declaration is left open."""
    start = text.find("<!DOCTYPE")
    if start < 0:
        return text
    end = text.find(">", start)
    subset = text.find("[", start, end if end >= 0 else len(text))
    if subset >= 0:
        close = text.find("]", subset)
        end = text.find(">", close) if close >= 0 else -1
    if end < 0:
        raise NvidiaSmiParseError("nvidia-smi -q -x output has a DOCTYPE declaration that never ends")
    return text[:start] + text[end + 1 :]


def parse_query_xml(text):
    """Parse nvidia-smi -q -x into {driver_version, cuda_version, attached_gpus, devices: [...]}.

    The DOCTYPE line nvidia-smi writes (a SYSTEM reference to nvsmi_device_vNN.dtd) is removed
    before parsing, so no DTD is read; a document declaring entities is refused outright.
    Raises NvidiaSmiParseError on empty, truncated or foreign input.
    """
    if text is None or not text.strip():
        raise NvidiaSmiParseError("nvidia-smi -q -x printed nothing")
    text, cut = parsing.bounded(text)
    if cut:
        raise NvidiaSmiParseError(f"nvidia-smi -q -x printed more than {parsing.MAX_TEXT} characters; no driver does")
    if "<!ENTITY" in text:
        raise NvidiaSmiParseError("nvidia-smi -q -x output declares XML entities; refusing to expand them")
    try:
        root = ET.fromstring(_without_doctype(text).strip())
    except ET.ParseError as exc:
        raise NvidiaSmiParseError(f"nvidia-smi -q -x output is not well-formed XML ({exc})") from None
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiParseError(f"nvidia-smi -q -x output has root element <{root.tag[:60]}>, not <nvidia_smi_log>")
    devices = [_device(index, gpu) for index, gpu in enumerate(root.findall("gpu"))]
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": _int(root, "attached_gpus"),
        "devices": devices,
    }


# ---------------------------------------------------------------------------------------------------------------
# nvidia-smi topo -m


def _split_header(line):
    """Device columns, then the named columns (CPU Affinity, NUMA Affinity, GPU NUMA ID) present."""
    tokens = line.split()
    devices = []
    for token in tokens:
        if not _DEVICE_COLUMN.fullmatch(token):
            break
        devices.append(token)
    rest = " ".join(tokens[len(devices) :])
    named = [name for name in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") if name in rest]
    return devices, named


def parse_topology(text):
    """Parse the nvidia-smi topo -m matrix.

    Returns {gpus, nics ({"NIC0": "mlx5_0"} from the NIC Legend, the name itself when the
    driver labels columns with it), pairs ({"GPU0-GPU1": "NV18"} for every GPU pair),
    nic_affinity ({"GPU0": {"mlx5_0": "PIX"}}), cpu_affinity, numa_affinity}.
    Raises NvidiaSmiParseError when there is no matrix.
    """
    if text is None or not text.strip():
        raise NvidiaSmiParseError("nvidia-smi topo -m printed nothing")
    lines = parsing.bounded(text)[0].splitlines()
    # The header is the first line starting with GPU0 whose next cell is not the "X" of GPU0's own row.
    header_at = next(
        (i for i, line in enumerate(lines) if line.split()[:1] == ["GPU0"] and line.split()[1:2] != ["X"]), None
    )
    if header_at is None:
        raise NvidiaSmiParseError("nvidia-smi topo -m output has no matrix header (GPU0 ...)")
    columns, named = _split_header(lines[header_at])
    legend = {}
    for line in lines[header_at + 1 :]:
        match = _NIC_LEGEND.fullmatch(line)
        if match:
            legend[match.group(1)] = match.group(2)
    rows = {}
    extra = {}
    for line in lines[header_at + 1 :]:
        tokens = line.split()
        if not tokens or not (tokens[0] in columns or _DEVICE_COLUMN.fullmatch(tokens[0])):
            continue
        links = tokens[1 : 1 + len(columns)]
        if len(links) < len(columns) or not all(_LINK_TYPE.fullmatch(t) for t in links):
            raise NvidiaSmiParseError(
                f"nvidia-smi topo -m row for {tokens[0][:40]} does not match its header: {parsing.excerpt(line)}"
            )
        rows[tokens[0]] = dict(zip(columns, links))
        extra[tokens[0]] = dict(zip(named, tokens[1 + len(columns) :]))
    gpus = [c for c in columns if c.startswith("GPU")]
    if not gpus or any(g not in rows for g in gpus):
        raise NvidiaSmiParseError("nvidia-smi topo -m output lacks a row for every GPU column")
    # NICs are columns, rows, or both (pastes sometimes lose the columns); the matrix is symmetric.
    nic_names = [c for c in columns if not c.startswith("GPU")]
    nic_names += [r for r in rows if not r.startswith("GPU") and r not in nic_names]
    nics = {n: legend.get(n, n) for n in nic_names}

    def link(gpu, nic):
        return rows[gpu][nic] if nic in rows[gpu] else rows[nic][gpu]

    pairs = {}
    for i, first in enumerate(gpus):
        for second in gpus[i + 1 :]:
            pairs[f"{first}-{second}"] = rows[first][second]
    return {
        "gpus": gpus,
        "nics": nics,
        "pairs": pairs,
        "nic_affinity": {g: {nics[n]: link(g, n) for n in nic_names} for g in gpus},
        "cpu_affinity": {g: _none_if_na(extra[g].get("CPU Affinity")) for g in gpus},
        "numa_affinity": {g: _none_if_na(extra[g].get("NUMA Affinity")) for g in gpus},
    }


def _none_if_na(value):
    return None if value in (None, "N/A") else value


# ---------------------------------------------------------------------------------------------------------------
# nvidia-smi nvlink -s


def parse_nvlink_status(text):
    """Parse nvidia-smi nvlink -s into a list of GPUs, each {index, name, uuid, links, active, inactive}.

    links is a list of {link, speed_gbps (None when the link is <inactive>), active}. Lines the
    command does not print (an ellipsis in a pasted excerpt, NVML notes) are ignored.
    """
    if text is None:
        raise NvidiaSmiParseError("nvidia-smi nvlink -s printed nothing")
    gpus = []
    current = None
    for line in parsing.bounded(text)[0].splitlines():
        match = _NVLINK_GPU.match(line.strip())
        if match:
            name, uuid = match.group(2).rstrip(), None
            if name.endswith(")") and _UUID_NOTE in name:
                name, _sep, uuid = name[:-1].rpartition(_UUID_NOTE)
            current = {"index": int(match.group(1)), "name": name.strip(), "uuid": uuid, "links": []}
            gpus.append(current)
            continue
        match = _NVLINK_LINK.match(line)
        if match and current is not None:
            state = match.group(2).strip()
            speed = None if "inactive" in state.lower() else _number(state, float)
            current["links"].append({"link": int(match.group(1)), "speed_gbps": speed, "active": bool(speed)})
    for gpu in gpus:
        gpu["active"] = sum(1 for link in gpu["links"] if link["active"])
        gpu["inactive"] = len(gpu["links"]) - gpu["active"]
    return gpus


# ---------------------------------------------------------------------------------------------------------------
# nvidia-smi -L

_LIST_GPU = re.compile(r"GPU ([0-9]{1,4}): (.{0,200}?)(?: \(UUID: ([^)\s]{1,100})\))?$")
_LIST_MIG = re.compile(r"MIG (\S{1,40})\s+Device\s+([0-9]{1,4}): \(UUID: ([^)\s]{1,100})\)$")


def parse_gpu_list(text):
    """{gpus, mig, other} from nvidia-smi -L: gpus [{index, name, uuid}], mig [{gpu, profile, device, uuid}] (under
    the GPU listed before them), other: the lines that are neither, stripped (NVML's errors: "Failed to initialize
    NVML: Unknown Error", "No devices were found")."""
    gpus, mig, other = [], [], []
    for line in parsing.bounded(text)[0].splitlines():
        stripped = line.strip()
        gpu = _LIST_GPU.match(stripped)
        instance = _LIST_MIG.match(stripped)
        if gpu:
            gpus.append({"index": int(gpu.group(1)), "name": gpu.group(2).strip(), "uuid": gpu.group(3)})
        elif instance and gpus:
            mig.append({"gpu": gpus[-1]["index"], "profile": instance.group(1), "device": int(instance.group(2)),
                        "uuid": instance.group(3)})  # fmt: skip
        elif stripped:
            other.append(stripped)
    return {"gpus": gpus, "mig": mig, "other": other}


# ---------------------------------------------------------------------------------------------------------------
# health findings


def _finding(severity, device, code, message):
    return {"severity": severity, "device": device, "code": code, "message": message}


def _device_findings(device):
    where = device["pci_bus_id"] or str(device["index"])
    label = f"GPU {device['index']} ({where})"
    found = []
    pcie = device["pcie"]
    if (
        pcie["width_current"] is not None
        and pcie["width_max"] is not None
        and pcie["width_current"] < pcie["width_max"]
    ):
        found.append(
            _finding(
                "warning",
                where,
                "pcie_link_degraded",
                f"{label} PCIe link runs at x{pcie['width_current']} of x{pcie['width_max']}",
            )
        )
    if pcie["gen_current"] is not None and pcie["gen_max"] is not None and pcie["gen_current"] < pcie["gen_max"]:
        found.append(
            _finding(
                "info",
                where,
                "pcie_gen_below_max",
                f"{label} PCIe link runs at gen {pcie['gen_current']} of {pcie['gen_max']}"
                " (normal while the GPU idles; a fault only if it stays there under load)",
            )
        )
    rows = device["remapped_rows"]
    if rows["failure"]:
        found.append(_finding("error", where, "remap_failure", f"{label} failed to remap a memory row"))
    if rows["pending"]:
        found.append(
            _finding("warning", where, "remap_pending", f"{label} has row remapping pending; reset the GPU to apply it")
        )
    if device["retired_pages"]["pending"]:
        found.append(
            _finding("warning", where, "retired_pages_pending", f"{label} has page retirement pending; reset the GPU")
        )
    ecc = device["ecc"]
    if ecc["volatile"]["uncorrectable"]:
        found.append(
            _finding(
                "error",
                where,
                "ecc_uncorrectable",
                f"{label} reported {ecc['volatile']['uncorrectable']} uncorrectable ECC errors since the driver loaded",
            )
        )
    elif ecc["aggregate"]["uncorrectable"]:
        found.append(
            _finding(
                "warning",
                where,
                "ecc_uncorrectable",
                f"{label} has {ecc['aggregate']['uncorrectable']} uncorrectable ECC errors in its lifetime record",
            )
        )
    if ecc["mode"] == "Disabled" and ecc["mode_pending"] != "Enabled":
        found.append(_finding("info", where, "ecc_disabled", f"{label} runs with ECC disabled"))
    if ecc["mode"] and ecc["mode_pending"] and ecc["mode"] != ecc["mode_pending"]:
        found.append(
            _finding(
                "info",
                where,
                "ecc_mode_pending",
                f"{label} ECC goes from {ecc['mode']} to {ecc['mode_pending']} on reset",
            )
        )
    mig = device["mig_mode"]
    if mig["current"] and mig["pending"] and mig["current"] != mig["pending"]:
        found.append(
            _finding(
                "info",
                where,
                "mig_mode_pending",
                f"{label} MIG goes from {mig['current']} to {mig['pending']} on reset",
            )
        )
    fabric = device["fabric"]
    if fabric is not None and fabric["state"] != "Completed":
        found.append(
            _finding(
                "error",
                where,
                "fabric_not_completed",
                f"{label} NVSwitch fabric registration is {fabric['state']}, not Completed"
                " (is nvidia-fabricmanager running?)",
            )
        )
    elif fabric is not None and fabric["status"] not in (None, "Success"):
        found.append(
            _finding(
                "error",
                where,
                "fabric_status_error",
                f"{label} NVSwitch fabric completed with status {fabric['status']}",
            )
        )
    slowdown = [r for r in device["clock_event_reasons"] if r in SLOWDOWN_REASONS]
    if slowdown:
        found.append(
            _finding("warning", where, "clock_slowdown", f"{label} clocks are held down by: {', '.join(slowdown)}")
        )
    if device["reset_required"]:
        found.append(_finding("warning", where, "gpu_reset_required", f"{label} reports that it needs a reset"))
    if device["recovery_action"]:
        found.append(
            _finding(
                "error", where, "gpu_recovery_action", f"{label} asks for recovery action {device['recovery_action']}"
            )
        )
    return found


def _nvlink_findings(devices, nvlink):
    """A link down where links are up: every GPU listing an inactive link, once any GPU has an active one.

    GPUs without NVLink (PCIe boards) list every link inactive or none at all; that is no fault.
    """
    if not nvlink or not any(gpu["active"] for gpu in nvlink):
        return []
    by_index = {d["index"]: d for d in devices}
    found = []
    for gpu in nvlink:
        down = [str(link["link"]) for link in gpu["links"] if not link["active"]]
        if not down:
            continue
        where = (by_index.get(gpu["index"]) or {}).get("pci_bus_id") or str(gpu["index"])
        found.append(
            _finding(
                "error",
                where,
                "nvlink_down",
                f"GPU {gpu['index']} ({where}) has {gpu['active']} of {len(gpu['links'])} NVLinks up;"
                f" inactive: link {', '.join(down)}",
            )
        )
    return found


def findings(query, failure=None, nvlink=None, expected_count=None, expected_model=None):
    """Health problems in parsed data, most severe first, each {severity, device, code, message}.

    query is parse_query_xml's result (None when nvidia-smi reported a node failure, given as
    failure), nvlink parse_nvlink_status's, expected_count the GPU count this node should have,
    expected_model the product name every GPU should report.
    """
    found = []
    if failure is not None:
        found.append(_finding("error", "node", failure["code"], failure["message"]))
    devices = (query or {}).get("devices", [])
    attached = (query or {}).get("attached_gpus")
    if attached is not None and attached > len(devices):
        found.append(
            _finding(
                "error",
                "node",
                "gpus_not_listed",
                f"nvidia-smi says {attached} GPUs are attached but describes {len(devices)}",
            )
        )
    if expected_count is not None and len(devices) < expected_count:
        found.append(
            _finding(
                "error",
                "node",
                "gpu_count_low",
                f"nvidia-smi sees {len(devices)} GPUs; this node should have {expected_count}",
            )
        )
    for device in devices:
        if expected_model is not None and device["name"] != expected_model:
            where = device["pci_bus_id"] or str(device["index"])
            found.append(
                _finding(
                    "error",
                    where,
                    "gpu_model_mismatch",
                    f"GPU {device['index']} ({where}) is a {device['name']}; this node should have {expected_model}",
                )
            )
        found.extend(_device_findings(device))
    found.extend(_nvlink_findings(devices, nvlink))
    return sorted(found, key=lambda f: SEVERITIES.index(f["severity"]))
