# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand and RoCE adapters from /sys/class/infiniband and ibstat, and what they say against expectations.

Pure functions over text and over a reader (path -> text), so tests feed
them captured trees and outputs. sysfs is what the kernel reports now and is
authoritative; ibstat only fills what sysfs could not give (a partial tree,
a file the driver refused to read).
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RootedReader

# Port states as the kernel's sysfs (4: ACTIVE) and ibstat (Active, Initializing) spell them.
STATES = {
    "nop": "nop",
    "down": "down",
    "init": "init",
    "initializing": "init",
    "armed": "armed",
    "active": "active",
    "activedefer": "active_defer",
}
# Physical states: sysfs "5: LinkUp", "7: Phy Test"; ibstat "LinkUp", "PhyTest".
PHYSICAL_STATES = {
    "nostatechange": "no_state_change",
    "sleep": "sleep",
    "polling": "polling",
    "disabled": "disabled",
    "portconfigurationtraining": "port_configuration_training",
    "linkup": "link_up",
    "linkerrorrecovery": "link_error_recovery",
    "phytest": "phy_test",
}
LINK_LAYERS = {"infiniband": "InfiniBand", "ethernet": "Ethernet"}
PORT_FIELDS = ("state", "physical_state", "rate_gbps", "link_layer", "netdev", "lid", "sm_lid", "port_guid")
DEVICE_FIELDS = ("ca_type", "fw_version", "node_guid", "board_id")


class AnyReturnCode:
    """ok_rc for ToolRunner when every exit status is data (negative ones too: killed by a signal)."""

    def __contains__(self, rc):
        return True


class SysfsReader(RootedReader):
    """Reads files and directory listings under a sysfs root (default /sys); missing or unreadable -> None / []."""

    def __init__(self, root="/sys"):
        super().__init__(root)


def _key(text):
    return re.sub(r"[^a-z]", "", text.lower())


def _snake(text):
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")


def _named(text, names):
    """'4: ACTIVE' or 'Active' -> the name's entry in names; an unknown name is kept, snake-cased; empty -> None."""
    if text is None:
        return None
    name = text.strip().partition(":")[2] if re.match(r"^\s*\d+\s*:", text, re.ASCII) else text
    name = name.strip()
    if not name:
        return None
    return names.get(_key(name), _snake(name))


def parse_state(text):
    """'4: ACTIVE' (sysfs) or 'Active', 'Initializing' (ibstat) -> 'active', 'init'."""
    return _named(text, STATES)


def parse_physical_state(text):
    """'5: LinkUp', 'LinkUp' or '7: Phy Test' -> 'link_up' / 'phy_test'."""
    return _named(text, PHYSICAL_STATES)


def parse_rate(text):
    """Gb/s as a float from sysfs ('400 Gb/sec (4X NDR)', '2.5 Gb/sec (1X SDR)') or ibstat ('400'); else None."""
    if text is None:
        return None
    match = re.match(r"^\s*(\d{1,9}(?:\.\d{1,9})?)(?:\s*Gb/sec\b.*)?\s*$", text.strip(), re.DOTALL | re.ASCII)
    return float(match.group(1)) if match else None


def parse_link_layer(text):
    if text is None:
        return None
    value = text.strip()
    if not value:
        return None
    return LINK_LAYERS.get(value.lower(), value)


def normalize_guid(text):
    """'a088:c203:00ad:eab8' (sysfs) or '0xa088c20300adeab8' (ibstat) -> '0xa088c20300adeab8'."""
    if text is None:
        return None
    digits = text.strip().lower()
    digits = digits[2:] if digits.startswith("0x") else digits.replace(":", "")
    if not re.match(r"^[0-9a-f]{1,16}$", digits):
        return None
    return "0x" + digits.rjust(16, "0")


def _int(text):
    """'1', '0x1a' (sysfs lids) -> int; anything else, Unicode digits and endless ones included -> None."""
    if not isinstance(text, str):
        return None
    value = text.strip()
    return parsing.to_int(value, 16) if value[:2].lower() == "0x" else parsing.to_int(value)


def _text(value):
    if value is None:
        return None
    value = value.strip()
    return value or None


def _sort_key(name):
    """mlx5_2 before mlx5_10: split digits so names sort as people read them."""
    return [int(part) if parsing.is_digits(part) else part for part in re.split(r"([0-9]{1,20})", name)]


def empty_port(number):
    port = {"port": number}
    port.update(dict.fromkeys(PORT_FIELDS))
    return port


def _port_netdev(reader, base, number, netdevs):
    """The network interface of a port: its GID table's first netdev, else the device's one (or matching) netdev."""
    ndev = _text(reader.read(f"{base}/ports/{number}/gid_attrs/ndevs/0"))
    if ndev:
        return ndev
    if len(netdevs) == 1:
        return netdevs[0]
    # Several netdevs on a multi-port adapter: dev_port counts ports from 0.
    for netdev in netdevs:
        if _int(reader.read(f"{base}/device/net/{netdev}/dev_port")) == number - 1:
            return netdev
    return None


def read_sysfs(reader):
    """Adapters under <root>/class/infiniband: name, ca_type, fw_version, node_guid, board_id, ports (sorted)."""
    devices = []
    for name in sorted(reader.listdir("class/infiniband"), key=_sort_key):
        base = f"class/infiniband/{name}"
        netdevs = reader.listdir(f"{base}/device/net")
        ports = []
        for entry in reader.listdir(f"{base}/ports"):
            number = _int(entry)
            if number is None:
                continue
            path = f"{base}/ports/{entry}"
            port = empty_port(number)
            port.update(
                {
                    "state": parse_state(reader.read(f"{path}/state")),
                    "physical_state": parse_physical_state(reader.read(f"{path}/phys_state")),
                    "rate_gbps": parse_rate(reader.read(f"{path}/rate")),
                    "link_layer": parse_link_layer(reader.read(f"{path}/link_layer")),
                    "netdev": _port_netdev(reader, base, number, netdevs),
                    "lid": _int(reader.read(f"{path}/lid")),
                    "sm_lid": _int(reader.read(f"{path}/sm_lid")),
                }
            )
            ports.append(port)
        devices.append(
            {
                "name": name,
                "ca_type": _text(reader.read(f"{base}/hca_type")),
                "fw_version": _text(reader.read(f"{base}/fw_ver")),
                "node_guid": normalize_guid(reader.read(f"{base}/node_guid")),
                "board_id": _text(reader.read(f"{base}/board_id")),
                "ports": sorted(ports, key=lambda p: p["port"]),
                "sources": ["sysfs"],
            }
        )
    return devices


CA_LINE = re.compile(r"^\s*CA\s+'([^']+)'\s*$")
PORT_LINE = re.compile(r"^\s*Port\s+([0-9]{1,6}):\s*$")
# "Key: value": the key's trailing blanks and the value's are stripped in Python; a lazy key and value before \s*$
# were quadratic on a line of blanks.
FIELD_LINE = re.compile(r"\s*([A-Za-z][A-Za-z ]*):(.*)")
DEVICE_KEYS = {
    "CA type": ("ca_type", _text),
    "Firmware version": ("fw_version", _text),
    "Node GUID": ("node_guid", normalize_guid),
}
PORT_KEYS = {
    "State": ("state", parse_state),
    "Physical state": ("physical_state", parse_physical_state),
    "Rate": ("rate_gbps", parse_rate),
    "Link layer": ("link_layer", parse_link_layer),
    "Base lid": ("lid", _int),
    "SM lid": ("sm_lid", _int),
    "Port GUID": ("port_guid", normalize_guid),
}


def parse_ibstat(text):
    """Parse `ibstat` output -> {"devices": [...], "messages": [ibpanic/ibwarn/iberror lines]}.

    Keys are read by name, not by indentation: ibstat indents with tabs,
    copies of it carry spaces or none at all. A line ibstat would not print
    is ignored, so garbage yields no devices rather than an exception.
    """
    devices, messages = [], []
    device = port = None
    for line in parsing.bounded(text)[0].splitlines():
        if re.match(r"^\s*ib(panic|warn|error):", line):
            messages.append(line.strip()[:1000])
            continue
        match = CA_LINE.match(line)
        if match:
            device = {"name": match.group(1), "ports": [], "sources": ["ibstat"]}
            device.update(dict.fromkeys(DEVICE_FIELDS))
            devices.append(device)
            port = None
            continue
        if device is None:
            continue
        match = PORT_LINE.match(line)
        if match:
            port = empty_port(int(match.group(1)))
            device["ports"].append(port)
            continue
        match = FIELD_LINE.match(line)
        if not match:
            continue
        key, value = match.group(1).rstrip(), match.group(2).strip()
        if port is not None and key in PORT_KEYS:
            field, parse = PORT_KEYS[key]
            port[field] = parse(value)
        elif key in DEVICE_KEYS:
            field, parse = DEVICE_KEYS[key]
            device[field] = parse(value)
    return {"devices": devices, "messages": messages}


def merge(sysfs_devices, ibstat_devices):
    """sysfs first; ibstat fills fields sysfs left empty and adds devices or ports sysfs did not show."""
    by_name = {d["name"]: d for d in ibstat_devices}
    merged = []
    for device in sysfs_devices:
        other = by_name.pop(device["name"], None)
        if other is None:
            merged.append(device)
            continue
        result = dict(device)
        for field in DEVICE_FIELDS:
            if result.get(field) is None:
                result[field] = other.get(field)
        other_ports = {p["port"]: p for p in other["ports"]}
        ports = []
        for port in device["ports"]:
            filled = dict(port)
            for field in PORT_FIELDS:
                if filled.get(field) is None:
                    filled[field] = other_ports.get(port["port"], {}).get(field)
            other_ports.pop(port["port"], None)
            ports.append(filled)
        ports.extend(other_ports.values())
        result["ports"] = sorted(ports, key=lambda p: p["port"])
        result["sources"] = ["sysfs", "ibstat"]
        merged.append(result)
    merged.extend(by_name.values())
    return sorted(merged, key=lambda d: _sort_key(d["name"]))


def _finding(severity, code, message, device=None, port=None):
    return {"severity": severity, "code": code, "device": device, "port": port, "message": message}


def _where(device, port):
    return f"{device['name']} port {port['port']}"


def findings(devices, expected_active_ports=None, expected_rate_gbps=None, expected_link_layer=None):
    """What the ports say, against the expectations given.

    Severities: error (an expectation is not met), warning (a port that
    should probably work does not), info (a port switched off, or one of
    another link layer than expected_link_layer: it belongs to another
    network, and is reported, not counted).
    """
    result = []
    counted = []
    for device in devices:
        for port in device["ports"]:
            where = _where(device, port)
            state, physical = port["state"], port["physical_state"]
            if state == "active":
                if expected_link_layer and port["link_layer"] and port["link_layer"] != expected_link_layer:
                    # An HGX node's front-end or storage NIC (a BlueField in
                    # Ethernet mode) sits beside its InfiniBand compute ports.
                    result.append(
                        _finding(
                            "info",
                            "link_layer_mismatch",
                            f"{where} is active on {port['link_layer']}, expected {expected_link_layer}; not counted",
                            device["name"],
                            port["port"],
                        )
                    )
                    continue
                counted.append((device, port))
            elif physical == "polling":
                result.append(
                    _finding(
                        "warning",
                        "port_polling",
                        f"{where} is {state or 'not active'} and polling: no link partner (cable, transceiver or "
                        "switch port)",
                        device["name"],
                        port["port"],
                    )
                )
            elif physical == "link_up":
                hint = "no subnet manager has brought it up" if port["link_layer"] == "InfiniBand" else "see its link"
                result.append(
                    _finding(
                        "warning",
                        "port_not_active",
                        f"{where} has a physical link but is {state or 'in an unknown state'}: {hint}",
                        device["name"],
                        port["port"],
                    )
                )
            elif physical == "disabled":
                result.append(_finding("info", "port_disabled", f"{where} is disabled", device["name"], port["port"]))
            else:
                result.append(
                    _finding(
                        "warning",
                        "port_down",
                        f"{where} is {state or 'in an unknown state'} (physical state {physical or 'unknown'})",
                        device["name"],
                        port["port"],
                    )
                )
    if expected_rate_gbps is not None:
        for device, port in counted:
            if port["rate_gbps"] is None or port["rate_gbps"] < expected_rate_gbps:
                rate = "reports no rate" if port["rate_gbps"] is None else f"runs at {port['rate_gbps']:g} Gb/s"
                result.append(
                    _finding(
                        "error",
                        "rate_low",
                        f"{_where(device, port)} {rate}, expected at least {expected_rate_gbps:g} Gb/s",
                        device["name"],
                        port["port"],
                    )
                )
    if expected_active_ports is not None and len(counted) < expected_active_ports:
        layer = f" {expected_link_layer}" if expected_link_layer else ""
        code = "no_devices" if not devices else "active_ports_low"
        seen = "no RDMA devices found" if not devices else f"{len(counted)} active{layer} port(s) found"
        result.append(
            _finding("error", code, f"{seen}, expected {expected_active_ports}: {_port_list(counted) or 'none'}")
        )
    return result


def _port_list(counted):
    return ", ".join(f"{d['name']}/{p['port']}" for d, p in counted)


def active_ports(devices, link_layer=None):
    return sum(
        1
        for device in devices
        for port in device["ports"]
        if port["state"] == "active" and (link_layer is None or port["link_layer"] == link_layer)
    )


# perfquery (infiniband-diags) prints one counter a line, "SymbolErrorCounter:..............0", after a header
# "# Port counters: Lid 7 port 1 (CapMask: 0x5A00)" ("# Port extended counters: ..." with -x).
PERFQUERY_HEADER = re.compile(r"#\s*Port (extended )?counters:\s*Lid\s+([0-9]{1,9})\s+port\s+([0-9]{1,9})\b")
PERFQUERY_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9]{0,63}):\.*[ \t]*(\S{1,64})[ \t]*")
# The counters' names as the kernel's sysfs spells them (/sys/class/infiniband/<ca>/ports/<n>/counters), with their
# width in PortCounters (InfiniBand Architecture Specification vol. 1, 16.1.3.5): a counter at its maximum stops
# there, so it can no longer show a rise.
PERFQUERY_COUNTERS = {
    "SymbolErrorCounter": ("symbol_error", 16),
    "LinkErrorRecoveryCounter": ("link_error_recovery", 8),
    "LinkDownedCounter": ("link_downed", 8),
    "PortRcvErrors": ("port_rcv_errors", 16),
    "PortRcvRemotePhysicalErrors": ("port_rcv_remote_physical_errors", 16),
    "PortRcvSwitchRelayErrors": ("port_rcv_switch_relay_errors", 16),
    "PortXmitDiscards": ("port_xmit_discards", 16),
    "PortXmitConstraintErrors": ("port_xmit_constraint_errors", 8),
    "PortRcvConstraintErrors": ("port_rcv_constraint_errors", 8),
    "LocalLinkIntegrityErrors": ("local_link_integrity_errors", 4),
    "ExcessiveBufferOverrunErrors": ("excessive_buffer_overrun_errors", 4),
    "VL15Dropped": ("vl15_dropped", 16),
    "QP1Dropped": ("qp1_dropped", 16),
    "PortXmitData": ("port_xmit_data", 32),
    "PortRcvData": ("port_rcv_data", 32),
    "PortXmitPkts": ("port_xmit_packets", 32),
    "PortRcvPkts": ("port_rcv_packets", 32),
    "PortXmitWait": ("port_xmit_wait", 32),
}


def parse_perfquery(text):
    """`perfquery [-x] -C <ca> -P <port>` -> {"lid", "port", "extended", "counters": {sysfs name: int},
    "saturated": [names at their PortCounters maximum], "messages": [ibwarn/iberror/ibpanic lines]}.

    Counters are read by name; a line perfquery would not print, or a value that is no number, is left out, so
    garbage yields no counters rather than an exception. Of several ports' blocks only the first is read. Extended
    counters (-x) are 64 bits wide and never saturate here."""
    result = {"lid": None, "port": None, "extended": False, "counters": {}, "saturated": [], "messages": []}
    for line in parsing.bounded(text)[0].splitlines():
        stripped = line.strip()
        if re.match(r"^ib(panic|warn|error):|^perfquery:", stripped):
            result["messages"].append(stripped[:1000])
            continue
        match = PERFQUERY_HEADER.match(stripped)
        if match:
            if result["port"] is not None:
                # Another port's block (perfquery of several ports): the first port is the one asked for.
                break
            result.update(extended=bool(match.group(1)), lid=int(match.group(2)), port=int(match.group(3)))
            continue
        match = PERFQUERY_FIELD.fullmatch(stripped)
        if not match or match.group(1) not in PERFQUERY_COUNTERS:
            continue
        value = parsing.to_int(match.group(2))
        if value is None or value < 0:
            continue
        name, width = PERFQUERY_COUNTERS[match.group(1)]
        result["counters"][name] = value
        if not result["extended"] and value >= 2**width - 1:
            result["saturated"].append(name)
    return result


# `rdma link show` (iproute2 5.x and later): "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1np0", an
# InfiniBand port's with its subnet prefix and LIDs and no netdev.
RDMA_LINK_LINE = re.compile(r"link[ \t]+([A-Za-z0-9_.\-]{1,64})/([0-9]{1,6})[ \t]+(.*)")
RDMA_LINK_KEYS = ("state", "physical_state", "netdev")


def parse_rdma_link(text):
    """`rdma link show` -> {"<adapter>/<port>": {"state", "physical_state", "netdev"}} (a key the line lacks is
    None: an InfiniBand port has no netdev). Lines of another form are ignored."""
    links = {}
    for line in parsing.bounded(text)[0].splitlines():
        match = RDMA_LINK_LINE.fullmatch(line.strip())
        if not match:
            continue
        words = match.group(3).split()
        pairs = dict(zip(words[::2], words[1::2]))
        links.setdefault(f"{match.group(1)}/{int(match.group(2))}", {key: pairs.get(key) for key in RDMA_LINK_KEYS})
    return links
