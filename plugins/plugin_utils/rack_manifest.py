# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A rack manifest, as a datacenter team hands it over, read into the rack inventory contract.

A manifest is a CSV file (a header row, then a row per server) or a YAML file (nodes: a list of mappings) with, per
server: its host name, the address the controller reaches it at, its rack, its U position, its hardware profile, its
system serial and its BMC's address. The plugin gpuops.bringup.rack_manifest turns the nodes into hosts in one
rack_<rack> group and one profile group each (inventory_schema's contract); everything here is the reading and the
checking, every problem with the line it is on and the fix, all of them at once, so a manifest is corrected in one
round.
"""

from __future__ import annotations

import csv
import ipaddress
import os
import re

import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils.acceptance import SYSTEM_SERIAL

# The manifest's fields: (name, required, what it becomes).
FIELDS = (
    ("hostname", True, "the inventory host name (and the Kubernetes node name)"),
    ("address", True, "ansible_host: the address or DNS name the controller reaches the node at"),
    ("rack", True, "the group rack_<rack>"),
    ("u", False, "gpuops_rack_unit: the lowest U the server occupies"),
    ("profile", True, "the hardware profile group"),
    ("serial", False, "gpuops_system_serial: the system serial number"),
    ("bmc", False, "gpuops_bmc_address: the BMC's address or DNS name"),
)
FIELD_NAMES = tuple(field[0] for field in FIELDS)
REQUIRED = tuple(field[0] for field in FIELDS if field[1])
# Racks hold at most 58U today (OCP racks 44 OU, tall EIA racks 52U to 58U).
MAX_UNIT = 60
# Bounds that keep a hostile manifest from costing more than a real one: the largest sites hand over tens of
# thousands of servers per manifest at most.
MAX_ROWS = 100_000
MAX_VALUE = 253
# The file's size, checked before it is read: MAX_ROWS rows of about 670 bytes each, several times a real row of these
# seven fields with a spreadsheet's extra columns; a larger file would be read whole into memory only to be refused.
MAX_BYTES = 64 * 1024 * 1024
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")
_ANY_CASE_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")


def _shown(value):
    """A value as a message shows it: quoted and cut, so a hostile cell cannot flood or forge a message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _dns_name(value, lower):
    label = _LABEL if lower else _ANY_CASE_LABEL
    return 0 < len(value) <= MAX_VALUE and all(label.match(part) for part in value.split("."))


def address_problem(value):
    """Why a value is not an address or DNS name the controller can reach (None when it is one)."""
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    if re.fullmatch(r"[0-9.]+", value):
        return "is neither an IPv4 address nor a DNS name"
    if ":" in value:
        return "is not an IPv6 address"
    if not _dns_name(value, lower=False):
        return "is not an IP address or DNS name"
    return None


def rack_group(rack):
    """The group a rack's nodes go in: rack_ and the rack's name in lower case, other characters as underscores."""
    return "rack_" + "_".join(part for part in re.split(r"[^a-z0-9]+", rack.lower()) if part)


def _cell(value):
    """A manifest cell as text, None for an empty one."""
    value = value.strip()
    return value or None


def read_csv(text, columns=None, delimiter=","):
    """([(line, {field: cell})], problems) from a CSV manifest; columns maps a field to the header it has there.

    Blank lines and lines starting with # are skipped; headers match without regard to case or surrounding space;
    columns the manifest has beyond the fields are left alone (datacenter manifests carry many).
    """
    columns = columns or {}
    wanted = {(columns.get(name) or name).strip().lower(): name for name in FIELD_NAMES}
    kept = [(number, line) for number, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")]  # fmt: skip
    reader = csv.reader([pair[1] for pair in kept], delimiter=delimiter, strict=True)
    rows, positions, consumed = [], None, 0
    try:
        for cells in reader:
            # A quoted cell may span lines: the row starts at the first line the reader took for it.
            line, consumed = kept[consumed][0], reader.line_num
            if positions is None:
                positions = {}
                for index, title in enumerate(cells):
                    positions.setdefault(wanted.get(title.strip().lower()), index)
                positions.pop(None, None)
                missing = [name for name in REQUIRED if name not in positions]
                if missing:
                    named = ", ".join(f"{name} (header {(columns.get(name) or name)!r})" for name in missing)
                    return [], [
                        f"line {line}: the header row has no column for {named}; name the columns in the header, "
                        "or map the manifest's own headers with the plugin's columns option"
                    ]
                continue
            rows.append((line, {field: _cell(cells[i]) if i < len(cells) else None for field, i in positions.items()}))
    except csv.Error as err:
        line = kept[min(reader.line_num, len(kept)) - 1][0]
        return [], [f"line {line}: not CSV with {delimiter!r} between the columns ({err}); save the manifest as CSV"]
    if positions is None:
        return [], ["the manifest has no header row; its first line names the columns: " + delimiter.join(FIELD_NAMES)]
    return rows, []


def read_yaml(text, columns=None):
    """([(line, {field: cell})], problems) from a YAML manifest: a mapping with nodes:, a list of mappings."""
    columns = columns or {}
    wanted = {(columns.get(name) or name): name for name in FIELD_NAMES}
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        return [], [f"the manifest is not YAML: {str(err)[:300]}"]
    nodes = None
    if isinstance(root, yaml.MappingNode):
        nodes = next((value for key, value in root.value if key.value == "nodes"), None)
    if not isinstance(nodes, yaml.SequenceNode):
        return [], ["the manifest has no list of nodes; write `nodes:` and a list with a mapping per server"]
    rows, problems = [], []
    for item in nodes.value:
        line = item.start_mark.line + 1
        if not isinstance(item, yaml.MappingNode):
            problems.append(f"line {line}: a node is a mapping of {', '.join(FIELD_NAMES)}; this entry is not one")
            continue
        row = {}
        for key, value in item.value:
            field = wanted.get(key.value) if isinstance(key, yaml.ScalarNode) else None
            if field is None:
                continue
            if not isinstance(value, yaml.ScalarNode):
                problems.append(f"line {value.start_mark.line + 1}: {field} is a list or mapping; give one value")
            elif not value.tag.endswith(":null"):
                # Cells are kept as written: YAML 1.1 would read a serial 0123 as octal, 1e5 as a float, no as false.
                row[field] = _cell(value.value)
        rows.append((line, row))
    return rows, problems


def _check_row(where, row, profiles, rejected):
    """The problems of one node's cells (rejected: fields already refused, not also reported as empty)."""
    problems = []
    for field in REQUIRED:
        if row.get(field) is None and field not in rejected:
            problems.append(f"{where}: {field} is empty; every node needs its {field}")
    hostname, address, rack = row.get("hostname"), row.get("address"), row.get("rack")
    unit, profile, serial, bmc = row.get("u"), row.get("profile"), row.get("serial"), row.get("bmc")
    if hostname is not None and not _dns_name(hostname, lower=True):
        problems.append(
            f"{where}: hostname {_shown(hostname)} is not a lower-case DNS name (letters, digits and '-' between "
            "dots, as Kubernetes node names are); write it in lower case without spaces or underscores"
        )
    for field, value in (("address", address), ("bmc", bmc)):
        reason = address_problem(value) if isinstance(value, str) else None
        if reason:
            problems.append(f"{where}: {field} {_shown(value)} {reason}; give an IPv4 or IPv6 address or a DNS name")
    if rack is not None and rack_group(rack) == "rack_":
        problems.append(f"{where}: rack {_shown(rack)} has no letter or digit to name its group rack_<rack> by")
    if unit is not None and not (unit.isascii() and unit.isdigit() and 1 <= int(unit) <= MAX_UNIT):
        problems.append(f"{where}: u {_shown(unit)} is not a rack unit; give the lowest U it occupies, 1 to {MAX_UNIT}")
    if profile is not None and profile not in profiles:
        known = ", ".join(sorted(profiles))
        hint = " (profile names are lower case)" if profile.lower() in profiles else ""
        problems.append(
            f"{where}: profile {_shown(profile)} is not a hardware profile{hint}; use one of {known}, or define the "
            "site's own in gpuops_hardware_profiles and name it in the plugin's profiles option"
        )
    if serial is not None and not SYSTEM_SERIAL.fullmatch(serial):
        problems.append(
            f"{where}: serial {_shown(serial)} is not a serial number (letters, digits, '.', '_', '/', '-'; at most "
            "64); copy it as the system's label shows it"
        )
    return problems


def _duplicates(nodes, key, what):
    """Problems for a value two nodes share, with the lines of both (compared without regard to case)."""
    seen, problems = {}, []
    for node in nodes:
        value = key(node)
        if value is None:
            continue
        if value.lower() in seen:
            problems.append(f"line {node['line']}: {what} {_shown(value)} is also on line {seen[value.lower()]}")
        else:
            seen[value.lower()] = node["line"]
    return problems


def _line_of(problem):
    match = re.match(r"line (\d+):", problem)
    return int(match.group(1)) if match else 0


def check(rows, profiles):
    """(nodes, problems) from a manifest's rows: every problem of every row and between rows, each with its line.

    A node is the row's cells with its line, rack_group and u (an int, or None). Nodes are returned only when there
    is no problem at all: a manifest with one is not half used.
    """
    if len(rows) > MAX_ROWS:
        return [], [f"the manifest has {len(rows)} nodes, more than {MAX_ROWS}; split it into one manifest per hall"]
    profiles, problems, nodes = set(profiles), [], []
    for line, row in rows:
        if not any(value is not None for value in row.values()):
            continue
        where, cells, rejected = f"line {line}", {}, set()
        for field in FIELD_NAMES:
            value = row.get(field)
            if value is not None and len(value) > MAX_VALUE:
                problems.append(f"{where}: {field} is {len(value)} characters long, more than {MAX_VALUE}")
            elif value is not None and any(ord(c) < 32 or c == "\x7f" for c in value):
                problems.append(f"{where}: {field} {_shown(value)} holds control codes; give it as plain text")
            else:
                cells[field] = value
                continue
            cells[field] = None
            rejected.add(field)
        problems += _check_row(where, cells, profiles, rejected)
        nodes.append({**cells, "line": line, "rack_group": rack_group(cells["rack"]) if cells["rack"] else None})
    if not nodes and not problems:
        problems.append("the manifest lists no node; add a row per server")
    problems += _duplicates(nodes, lambda node: node["hostname"], "hostname")
    problems += _duplicates(nodes, lambda node: node["address"], "address")
    problems += _duplicates(nodes, lambda node: node["serial"], "serial")
    problems += _duplicates(nodes, lambda node: node["bmc"], "bmc")
    problems += _duplicates(
        nodes,
        lambda node: f"{node['rack_group']} U{node['u']}" if node["rack_group"] and node["u"] else None,
        "rack and unit",
    )
    hosts = {node["address"].lower(): node for node in nodes if node["address"]}
    for node in nodes:
        host = hosts.get(node["bmc"].lower()) if node["bmc"] else None
        if host is not None:
            problems.append(
                f"line {node['line']}: bmc {_shown(node['bmc'])} is the address of {host['hostname']} (line "
                f"{host['line']}); a BMC has an address of its own, on the management network"
            )
    if problems:
        # By line, as the operator corrects the manifest; the checks' own order within a line.
        return [], sorted(problems, key=_line_of)
    for node in nodes:
        node["u"] = int(node["u"]) if node["u"] else None
    return nodes, []


def read(path):
    """(the manifest file's bytes, None), or (None, why it cannot be read): its size is checked before it is read, and
    the read stops past the bound too (a pipe or a device reports no size, a file may grow in between)."""
    fix = f"split it into one manifest per hall, each at most {MAX_BYTES} bytes"
    try:
        size = os.stat(path).st_size
        if size > MAX_BYTES:
            return None, f"the manifest {path} is {size} bytes, more than {MAX_BYTES}; {fix}"
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as err:
        return None, f"the manifest {path} cannot be read: {err}"
    if len(data) > MAX_BYTES:
        return None, f"the manifest {path} holds more than {MAX_BYTES} bytes; {fix}"
    return data, None


def load(data, name, profiles, columns=None, delimiter=","):
    """(nodes, problems) from a manifest file's bytes; name (its path) says its format: .csv or .yml/.yaml."""
    try:
        # Spreadsheets save CSV with a byte order mark.
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        return [], [f"line {line}: the manifest is not UTF-8 (byte {err.start}); save it as UTF-8"]
    lower = name.lower()
    if lower.endswith(".csv"):
        rows, problems = read_csv(text, columns, delimiter)
    elif lower.endswith((".yml", ".yaml")):
        rows, problems = read_yaml(text, columns)
    else:
        return [], [f"{name} is neither .csv nor .yml/.yaml; name the manifest by its format"]
    if problems:
        return [], problems
    return check(rows, profiles)
