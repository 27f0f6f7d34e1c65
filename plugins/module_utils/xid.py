# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find NVIDIA GPU error events in kernel log text: pure functions, no I/O.

scan(text) reads any of the kernel log formats below, line by line (a log
may mix them, as syslog files embedding dmesg timestamps do):

    dmesg            [  123.456789] NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.
    dmesg_ctime      [Mon Jan  8 10:11:12 2024] NVRM: ...            (dmesg -T, dmesg --ctime)
    dmesg_iso        2025-01-21T04:41:44,285060+00:00 NVRM: ...     (dmesg --time-format iso, with -x levels too)
    journal          Jan 08 10:11:12 host kernel: NVRM: ...          (journalctl -o short, syslog files)
    journal_iso      2025-01-17T17:10:43+0000 host kernel: NVRM: ... (journalctl -o short-iso)
    kmsg             6,1234,5678901,-;NVRM: ...                      (/dev/kmsg records)
    unknown          anything else holding "NVRM:" (a pasted "kernel: NVRM: ..." line)

A line starting with white space continues the record above it (dmesg and
journalctl indent the further lines of a multi-line message that way), so a
message split over lines is matched as one.

Events (one per log record):

- event "xid": an "NVRM: Xid (PCI:<bdf>): <code>, ..." record;
- event "fallen_off_bus": "fallen off the bus" in a record that is not an Xid
  (the driver prints one next to Xid 79, and some drivers only that);
- event "gsp_rpc_timeout": the driver timing out on the GSP firmware in a
  record that is not an Xid ("Timeout waiting for RPC from GSP",
  _kgspRpcRecvPoll, _kgspLogRpcTimeout, _kgspIsHeartbeatTimedOut,
  "waiting for RPC response from GPUn GSP", "GSP RPC timeout").

PCI bus ids are normalised to lspci -D's form, lower case with the function:
0000:3b:00.0 (the driver prints PCI:0000:3b:00, nvidia-smi 00000000:3B:00.0).

driver_messages(text) reads the same logs for the driver's own version lines:
"NVRM: loading NVIDIA UNIX ... Kernel Module <version>" (each load of the
module) and "NVRM: API mismatch: the client has the version <X>, but this
kernel module has the version <Y>" (a userland newer or older than the
loaded module: an upgrade without a reboot).
"""

from __future__ import annotations

import bisect
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing, xid_catalog

# re.ASCII throughout: \d is 0-9 only (Unicode digits such as '٣' are no timestamp), \s ASCII white space only.
# Counted repeats ({1,20}) bound the numbers a line can make the parser convert.
_LEVEL = r"(?:[a-z]+\s*:\s*[a-z]+\s*: )?"  # dmesg -x: "kern  :warn  : "
_PREFIXES = (
    ("kmsg", re.compile(r"(?P<prio>\d{1,20}),(?P<seq>\d{1,20}),(?P<usec>\d{1,20}),[^;]*;", re.ASCII)),
    ("dmesg", re.compile(_LEVEL + r"(?:<\d{1,4}>)?\[\s*(?P<uptime>\d{1,20}\.\d{1,9})\]\s?", re.ASCII)),
    (
        "dmesg_ctime",
        re.compile(_LEVEL + r"\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?", re.ASCII),
    ),
    ("dmesg_iso", re.compile(_LEVEL + r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{1,9}[+-]\d\d:?\d\d) ", re.ASCII)),
    (
        "journal_iso",
        re.compile(
            r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:[+-]\d\d:?\d\d|Z)) (?:\S+ )?kernel: ", re.ASCII
        ),
    ),
    ("journal", re.compile(r"(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})?) (?:\S+ )?kernel: ", re.ASCII)),
)
# A syslog or journal line may carry the kernel's own timestamp after "kernel: ".
_EMBEDDED_UPTIME = re.compile(r"\[\s*(\d{1,20}\.\d{1,9})\]\s?", re.ASCII)
# The device in the parentheses is short (PCI:0000:3b:00); an unbounded [^)]* made every "NVRM: Xid (" of a long
# line scan to its end (quadratic on a line repeating it).
_XID = re.compile(r"NVRM: Xid \(([^)]{0,64})\): (\d{1,6})(?:,\s*|\s*$)", re.ASCII)
_PID = re.compile(r"pid=('?)([^,']*)\1(?:,\s*|$)")
_NAME = re.compile(r"name=([^,]*)(?:,\s*|$)")
_BDF = re.compile(r"\b(?:PCI:)?([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?\b", re.ASCII)
_GSP_TIMEOUT = re.compile(
    r"Timeout waiting for RPC from GSP|_kgspRpcRecvPoll|_kgspLogRpcTimeout|_kgspIsHeartbeatTimedOut"
    r"|waiting for RPC response from GPU[0-9]{0,4} GSP|GSP RPC timeout",
    re.IGNORECASE,
)
_FALLEN = "fallen off the bus"
_VERSION = r"([0-9]{1,4}(?:\.[0-9]{1,4}){1,3})"
_LOADING = re.compile(
    r"NVRM: loading NVIDIA UNIX (Open )?.{0,40}?Kernel Module(?: for \S{1,20})?\s{1,10}" + _VERSION, re.ASCII
)
# The message is wrapped over several lines (each may carry its own prefix and "NVRM:"); it is matched on the
# records' text joined with single spaces, and the client is named in newer drivers: "the client 'kwin' (pid 1005)".
_API_MISMATCH = re.compile(
    r"API mismatch: the client (?:'([^']{0,64})' \(pid [0-9]{1,10}\) )?has the version "
    + _VERSION
    + r", but this kernel module has the version "
    + _VERSION,
    re.ASCII,
)
_NVLINK5_XIDS = frozenset(range(144, 151))
# Xid 154 names the recovery the GPU now needs: "... changed from 0x0 (None) to 0x1 (GPU Reset Required)" (0x1 reads
# "PF FLR" on some drivers, 0x2 "Node Reboot Required" or "OS Reboot", 0x4 "Drain and Reset"). Anything but 0x0 means
# the GPU cannot be used until it is done.
_RECOVERY_ACTION = re.compile(r"\bto\s+0x([0-9a-fA-F]{1,8})\b")
_JOURNAL_MARKER = "-- "


def normalize_pci(text):
    """The first PCI address in text as 0000:3b:00.0, or None."""
    match = _BDF.search(text or "")
    if match is None:
        return None
    domain, bus, device, function = match.groups()
    return f"{int(domain, 16):04x}:{bus.lower()}:{device.lower()}.{function or '0'}"


# Why a kernel-log reader falls back from the journal to dmesg when the journal answered with nothing.
NO_KERNEL_MESSAGES = "journalctl returned no kernel messages (a container, or a journal that keeps none)"


def journal_args(since_boot):
    """journalctl's arguments for the kernel's messages (of the current boot only, with since_boot), ISO times."""
    return ["-k", *(["-b"] if since_boot else []), "--no-pager", "-o", "short-iso"]


def journal_has_entries(text):
    """Whether journalctl printed any entry, not only its "-- No entries --" style markers."""
    return any(line.strip() and not line.startswith(_JOURNAL_MARKER) for line in text.splitlines())


def _records(lines):
    """(line number, [lines]) for every record holding "NVRM", continuation lines joined."""
    records = []
    last = -2
    for index, line in enumerate(lines):
        if line[:1] in (" ", "\t"):
            if last == index - 1 and line.strip():
                records[-1][1].append(line)
                last = index
            continue
        if "NVRM" in line:
            records.append((index + 1, [line]))
            last = index
    return records


def line_prefix(first_line):
    """(format, timestamp, uptime seconds, rest of the line) for a record's first line."""
    for name, pattern in _PREFIXES:
        match = pattern.match(first_line)
        if match is None:
            continue
        rest = first_line[match.end() :]
        groups = match.groupdict()
        if name == "kmsg":
            return name, groups["usec"], int(groups["usec"]) / 1e6, rest
        if name == "dmesg":
            return name, groups["uptime"], float(groups["uptime"]), rest
        uptime = None
        if name.startswith("journal"):
            embedded = _EMBEDDED_UPTIME.match(rest)
            if embedded is not None:
                uptime = float(embedded.group(1))
                rest = rest[embedded.end() :]
        return name, groups["ts"], uptime, rest
    return "unknown", None, None, first_line


def _from_catalog(entry):
    return {
        "mnemonic": entry["mnemonic"],
        "meaning": entry["meaning"],
        "category": entry["category"],
        "severity": entry["severity"],
        "action": entry["action"],
        "nvidia_action": dict(entry["nvidia_action"]),
        "documented": entry["documented"],
    }


def _xid_event(code, bus, rest):
    pid = process = None
    match = _PID.match(rest)
    if match is not None:
        pid = int(match.group(2)) if parsing.is_digits(match.group(2)) and len(match.group(2)) <= 20 else None
        rest = rest[match.end() :]
    match = _NAME.match(rest)
    if match is not None:
        name = match.group(1).strip()
        process = None if name in ("", "<unknown>") else name
        rest = rest[match.end() :]
    entry = xid_catalog.lookup(code)
    event = {
        "event": "xid",
        "xid": code,
        "pci_bus_id": normalize_pci(bus),
        "pid": pid,
        "process": process,
        "message": rest.strip(),
        "in_catalog": code in xid_catalog.XIDS,
        **_from_catalog(entry),
    }
    # The NVLink5 Xids say in the message whether this occurrence is fatal ("... Nonfatal XC0 i0 Link 13 (...)").
    if code in _NVLINK5_XIDS and re.search(r"\bNon-?fatal\b", rest, re.IGNORECASE):
        event["severity"] = "warning"
    if code == 154:
        action = _RECOVERY_ACTION.search(rest)
        needed = int(action.group(1), 16) != 0 if action else re.search(r"Reset|Reboot|Drain", rest, re.IGNORECASE)
        if needed:
            event["severity"] = "critical"
    return event


def _other_event(kind, text):
    entry = xid_catalog.EVENTS[kind]
    body = text[text.find("NVRM:") + len("NVRM:") :] if "NVRM:" in text else text
    return {
        "event": kind,
        "xid": None,
        "pci_bus_id": normalize_pci(body),
        "pid": None,
        "process": None,
        "message": body.strip(),
        "in_catalog": True,
        **_from_catalog(entry),
    }


def _continuation(line):
    text = line.strip()
    return text[len("NVRM: ") :] if text.startswith("NVRM: ") else text


def parse_events(text):
    """Every GPU error event in the kernel log text, in log order (see the module docstring for the fields)."""
    return _parse(parsing.bounded(text)[0].splitlines())


def _parse(all_lines):
    events = []
    for number, lines in _records(all_lines):
        log_format, timestamp, uptime, rest = line_prefix(lines[0])
        joined = " ".join([rest.strip()] + [_continuation(line) for line in lines[1:]])
        match = _XID.search(joined)
        if match is not None:
            event = _xid_event(int(match.group(2)), match.group(1), joined[match.end() :])
        elif _FALLEN in joined:
            event = _other_event("fallen_off_bus", joined)
        elif _GSP_TIMEOUT.search(joined):
            event = _other_event("gsp_rpc_timeout", joined)
        else:
            continue
        event.update(
            {
                "timestamp": timestamp,
                "uptime_seconds": uptime,
                "format": log_format,
                "line_number": number,
                "line": "\n".join(lines),
            }
        )
        events.append(event)
    return events


def driver_messages(text):
    """{"loaded": [...], "api_mismatch": [...]} from a kernel log, each in log order.

    loaded: every load of the NVIDIA module, {version, flavor (open or proprietary), line_number}; the last is the
    module loaded now, when the log covers the current boot. api_mismatch: every refusal of a userland component
    whose version differs from the module's, {client_version, module_version, client (the process, when named),
    line_number}.
    """
    lines = parsing.bounded(text)[0].splitlines()
    loaded, bodies = [], []
    for number, record in _records(lines):
        rest = line_prefix(record[0])[3]
        joined = " ".join([rest.strip()] + [_continuation(line) for line in record[1:]])
        match = _LOADING.search(joined)
        if match is not None:
            loaded.append({"version": match.group(2), "flavor": "open" if match.group(1) else "proprietary",
                           "line_number": number})  # fmt: skip
        # syslog files write a message's line breaks as #012.
        bodies.append((number, " ".join(joined.replace("#012", " ").replace("NVRM:", " ").split())))
    mismatches = []
    # A dmesg paste repeats the prefix on every line of the message: each is a record of its own, so the records'
    # text is read as one stream, each match attributed to the record it starts in.
    offsets, numbers, length = [], [], 0
    for number, body in bodies:
        offsets.append(length)
        numbers.append(number)
        length += len(body) + 1
    stream = " ".join(body for _number, body in bodies)
    for match in _API_MISMATCH.finditer(stream):
        number = numbers[bisect.bisect_right(offsets, match.start()) - 1]
        mismatches.append({"client_version": match.group(2), "module_version": match.group(3),
                           "client": match.group(1), "line_number": number})  # fmt: skip
    return {"loaded": loaded, "api_mismatch": mismatches}


def _worst(severities):
    known = [s for s in severities if xid_catalog.severity_rank(s) >= 0]
    if known:
        return max(known, key=xid_catalog.severity_rank)
    return xid_catalog.UNKNOWN if severities else "none"


def summarise(events):
    """Counts per Xid and event kind, the worst severity, and one entry per GPU (by PCI bus id)."""
    xid_counts = {}
    event_counts = {"xid": 0, "fallen_off_bus": 0, "gsp_rpc_timeout": 0}
    gpus = {}
    for event in events:
        event_counts[event["event"]] += 1
        if event["xid"] is not None:
            key = str(event["xid"])
            xid_counts[key] = xid_counts.get(key, 0) + 1
        gpu = gpus.setdefault(
            event["pci_bus_id"] or "unattributed",
            {"events": 0, "xids": [], "event_kinds": [], "severities": [], "actions": [], "first": None, "last": None},
        )
        gpu["events"] += 1
        if event["xid"] is not None and event["xid"] not in gpu["xids"]:
            gpu["xids"].append(event["xid"])
        if event["event"] not in gpu["event_kinds"]:
            gpu["event_kinds"].append(event["event"])
        gpu["severities"].append(event["severity"])
        gpu["actions"].append((event["severity"], event["action"]))
        gpu["first"] = gpu["first"] or event["timestamp"]
        gpu["last"] = event["timestamp"] or gpu["last"]
    per_gpu = {}
    for bus_id, gpu in gpus.items():
        # Worst first; a stable sort keeps log order among equals.
        ranked = sorted(gpu["actions"], key=lambda pair: -xid_catalog.severity_rank(pair[0]))
        per_gpu[bus_id] = {
            "events": gpu["events"],
            "xids": sorted(gpu["xids"]),
            "event_kinds": gpu["event_kinds"],
            "worst_severity": _worst(gpu["severities"]),
            "actions": list(dict.fromkeys(action for _severity, action in ranked)),
            "first_seen": gpu["first"],
            "last_seen": gpu["last"],
        }
    return {
        "events": len(events),
        "event_counts": event_counts,
        "xid_counts": dict(sorted(xid_counts.items(), key=lambda item: int(item[0]))),
        "worst_severity": _worst([e["severity"] for e in events]),
        "unknown_xids": sorted({e["xid"] for e in events if e["xid"] is not None and not e["in_catalog"]}),
        "undocumented_xids": sorted({e["xid"] for e in events if e["in_catalog"] and not e["documented"]}),
        "gpus": per_gpu,
    }


def scan(text):
    """Events, their summary, the line count of a kernel log, and skipped_chars: how much of the log's beginning was
    left unread (a log longer than parsing.MAX_TEXT is read from its end, where the current boot is)."""
    text = parsing.clean(text or "")
    length = len(text)
    if length > parsing.MAX_TEXT:
        # From the first whole line of the last MAX_TEXT characters.
        start = text.find("\n", length - parsing.MAX_TEXT)
        text = text[start + 1 :] if start >= 0 else ""
    skipped = length - len(text)
    lines = text.splitlines()
    events = _parse(lines)
    return {"events": events, "summary": summarise(events), "lines": len(lines), "skipped_chars": skipped}
