#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: xid_scan
short_description: Find NVIDIA GPU errors (Xid, fallen off the bus, GSP timeouts) in the kernel log
version_added: 0.1.0
description:
  - Reads the kernel log since boot (C(journalctl -k -b --no-pager -o short-iso), else C(dmesg)) or a saved log
    given as O(path), and returns every NVIDIA Xid event with its meaning, category, severity and the action an
    operator takes, from a catalog kept as data in the collection (NVIDIA's Xid catalog for Ampere and newer GPUs;
    sources are cited in C(plugins/module_utils/xid_catalog.py)).
  - Also reports two conditions the driver logs without an Xid code, C(fallen_off_bus) and C(gsp_rpc_timeout).
    The driver prints a fallen-off-the-bus line next to Xid 79 too; both are reported, as two events of the same
    GPU.
  - Reads the formats of C(dmesg), C(dmesg -T), C(dmesg --time-format iso), C(journalctl) (short and short-iso),
    syslog files and C(/dev/kmsg) records, mixed in one log if need be.
  - With O(source=auto), a journal that holds no kernel messages (a container, or a journal configured to keep
    none) falls back to C(dmesg); so does a C(journalctl) that is missing or fails. The result says which source
    was read and why it fell back.
  - Changes nothing. An empty log, a missing tool, a tool that fails and an unreadable O(path) fail with a message
    saying which; a scan that read nothing never reports a clean GPU.
author: gpuops.bringup developers (@gpuops)
options:
  path:
    description:
      - A saved kernel log to scan instead of this host's (C(dmesg) output, C(journalctl -k) output,
        C(/var/log/kern.log), a support bundle's log). A name ending in C(.gz) or gzip content is decompressed.
      - O(source) and O(since_boot) do not apply to a file.
    type: path
  source:
    description:
      - Where to read this host's kernel log. V(auto) reads the journal and falls back to C(dmesg) as described
        above; V(journal) and V(dmesg) read only that source and fail when it is missing, fails or is empty.
    type: str
    choices: [auto, journal, dmesg]
    default: auto
  since_boot:
    description:
      - Read the journal for the current boot only (C(journalctl -b)). V(false) reads every boot the journal
        keeps. C(dmesg) always reads the kernel's ring buffer, which holds the current boot only.
    type: bool
    default: true
  max_events:
    description:
      - Return at most this many events, the most recent; V(0) returns all. RV(summary) always counts every
        event found.
    type: int
    default: 500
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
notes:
  - Reading the kernel log needs root where C(kernel.dmesg_restrict) is set, which most distributions do.
  - Severity scale, from NVIDIA's immediate resolution bucket. V(info) nothing to do; V(warning) the GPU keeps
    working, act if it recurs; V(error) the application failed, the GPU needs no repair; V(critical) the GPU or
    node cannot be trusted until reset, rebooted or repaired; V(unknown) not in the catalog or not documented by
    NVIDIA.
  - Categories are V(application), V(driver), V(firmware), V(memory), V(engine), V(nvlink), V(bus), V(hardware)
    and V(unknown).
seealso:
  - name: NVIDIA Xid Errors
    description: NVIDIA's Xid catalog for Ampere and newer GPUs, the source of the catalog's meanings and actions.
    link: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
"""

EXAMPLES = r"""
- name: Scan this node's kernel log since boot
  gpuops.bringup.xid_scan:
  register: xid

- name: Stop when a GPU needs a reset, a reboot or a repair
  ansible.builtin.assert:
    that: xid.summary.worst_severity != 'critical'
    fail_msg: "{{ xid.summary.gpus | dict2items | selectattr('value.worst_severity', 'eq', 'critical') | list }}"

- name: Scan a kernel log saved in a support bundle
  gpuops.bringup.xid_scan:
    path: /srv/bundles/node17/kern.log.gz
  delegate_to: localhost
"""

RETURN = r"""
source:
  description: What was read, V(journal), V(dmesg) or V(file).
  returned: always
  type: str
  sample: dmesg
command:
  description: The command that produced the log, null for a file.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/dmesg]
log_file:
  description: The file scanned (O(path)), null when a command was read.
  returned: always
  type: str
fallback_reason:
  description: Why O(source=auto) read C(dmesg) instead of the journal; null when it did not fall back.
  returned: always
  type: str
  sample: journalctl returned no kernel messages (a container, or a journal that keeps none)
lines:
  description: Number of lines read.
  returned: always
  type: int
  sample: 1821
events:
  description: The events found, in log order (the most recent O(max_events)).
  returned: always
  type: list
  elements: dict
  contains:
    event:
      description: V(xid), V(fallen_off_bus) (no Xid code) or V(gsp_rpc_timeout) (no Xid code).
      type: str
    xid:
      description: The Xid code; null for the events without one.
      type: int
    pci_bus_id:
      description: The GPU's PCI address as C(lspci -D) writes it (V(0000:3b:00.0)); null when the line names none.
      type: str
    timestamp:
      description: The timestamp as the log wrote it (seconds since boot for C(dmesg), the date for C(dmesg -T)
        and the journal, microseconds since boot for C(/dev/kmsg)); null when the line has none.
      type: str
    uptime_seconds:
      description: Seconds since boot, when the format gives them.
      type: float
    pid:
      description: The process id the driver names, null when it names none or V(<unknown>).
      type: int
    process:
      description: The process name the driver names.
      type: str
    message:
      description: The driver's text after the Xid code, process id and name.
      type: str
    line:
      description: The log record as found, its continuation lines included.
      type: str
    line_number:
      description: The line the record starts on, counting from 1.
      type: int
    format:
      description: V(dmesg), V(dmesg_ctime), V(dmesg_iso), V(journal), V(journal_iso), V(kmsg) or V(unknown).
      type: str
    mnemonic:
      description: NVIDIA's name for the Xid.
      type: str
    meaning:
      description: NVIDIA's description, or V(not in this collection's catalog).
      type: str
    category:
      description: The catalog's category.
      type: str
    severity:
      description: V(info), V(warning), V(error), V(critical) or V(unknown). NVLink Xids 144 to 150 whose message
        says V(Nonfatal) are V(warning); Xid 154 naming a required reset, reboot or drain is V(critical).
      type: str
    action:
      description: What the operator does.
      type: str
    nvidia_action:
      description: NVIDIA's resolution buckets, C(immediate) and C(investigatory).
      type: dict
    documented:
      description: Whether NVIDIA documents the code for Ampere and newer GPUs.
      type: bool
    in_catalog:
      description: Whether the catalog holds the code.
      type: bool
events_total:
  description: Number of events found, returned or not.
  returned: always
  type: int
events_truncated:
  description: Whether O(max_events) left events out.
  returned: always
  type: bool
skipped_chars:
  description: >-
    How many characters at the start of the log were not scanned - 0 unless the log is longer than 32 Mi characters,
    which is read from its end.
  returned: always
  type: int
summary:
  description: Counts over every event found.
  returned: always
  type: dict
  contains:
    events:
      description: Number of events.
      type: int
    event_counts:
      description: Events per kind (C(xid), C(fallen_off_bus), C(gsp_rpc_timeout)).
      type: dict
    xid_counts:
      description: Events per Xid code (the keys are the codes as strings).
      type: dict
      sample: {"79": 1, "119": 5}
    worst_severity:
      description: The worst severity found; V(unknown) when every event is uncatalogued, V(none) without events.
      type: str
    unknown_xids:
      description: Codes found that the catalog does not hold.
      type: list
      elements: int
    undocumented_xids:
      description: Codes found that NVIDIA does not document for Ampere and newer GPUs.
      type: list
      elements: int
    gpus:
      description: >-
        Per PCI bus id (V(unattributed) for events naming no GPU): C(events), C(xids), C(event_kinds),
        C(worst_severity), C(actions) (worst first, without repeats), C(first_seen), C(last_seen) (timestamps as
        the log wrote them).
      type: dict
simulated:
  description: The simulated-hardware marker when this node's hardware is simulated by the test bench, else false.
  returned: always
  type: raw
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing, simulation, xid
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner

ANY_RC = range(-255, 256)


def _text(data):
    # Kernel logs can hold stray bytes; the scan and the result need text.
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return data.decode("utf-8", "replace")


def read_file(module, path):
    try:
        with open(path, "rb") as handle:
            compressed = path.endswith(".gz") or handle.read(2) == b"\x1f\x8b"
            size = handle.seek(0, 2)
            # A plain log longer than the scan reads is read from its end (xid.scan keeps the end too).
            handle.seek(0 if compressed else max(0, size - parsing.MAX_TEXT))
            data = handle.read(parsing.MAX_DECOMPRESSED + 1)
        if compressed:
            data = parsing.decompress(data)
    except OSError as exc:
        module.fail_json(msg=f"cannot read {path}: {exc.strerror or exc}", log_file=path)
    except parsing.ParseError as exc:
        module.fail_json(msg=f"cannot read {path} as a gzip-compressed kernel log: {exc}", log_file=path)
    return _text(data)


def read_journal(module, params, required):
    """(text, command, None) from the journal, or (None, command, why not) when auto mode should fall back."""
    journal = ToolRunner(module, "journalctl", required=required)
    if not journal.available:
        return None, None, "journalctl is not installed"
    args = xid.journal_args(params["since_boot"])
    command = [journal.path, *args]
    rc, out, err = journal(args, ok_rc=(0,) if required else ANY_RC)
    if rc != 0:
        return None, command, f"journalctl failed with return code {rc}: {(err or out).strip()[-300:]}"
    out = _text(out)
    if not xid.journal_has_entries(out):
        if required:
            module.fail_json(
                msg=f"{xid.NO_KERNEL_MESSAGES}: nothing was scanned. Use source=dmesg, or path= for a saved log.",
                cmd=command,
                rc=rc,
                stdout=out,
                stderr=err,
            )
        return None, command, xid.NO_KERNEL_MESSAGES
    return out, command, None


def read_dmesg(module, fallback_reason):
    dmesg = ToolRunner(module, "dmesg", required=False)
    if not dmesg.available:
        found = f"{fallback_reason}, and " if fallback_reason else ""
        module.fail_json(
            msg=f"cannot read the kernel log: {found}dmesg was not found on this host. Give path= to scan a saved log.",
            cmd="dmesg",
        )
    command = [dmesg.path]
    rc, out, err = dmesg([], ok_rc=ANY_RC)
    before = f" (read because {fallback_reason})" if fallback_reason else ""
    if rc != 0:
        module.fail_json(
            msg=f"dmesg failed with return code {rc}{before}: {(err or out).strip()[-500:]}",
            cmd=command,
            rc=rc,
            stdout=out,
            stderr=err,
        )
    return _text(out), command


def read_log(module, params):
    """(source, text, command, fallback reason)."""
    if params["path"]:
        return "file", read_file(module, params["path"]), None, None
    reason = None
    if params["source"] in ("auto", "journal"):
        text, command, reason = read_journal(module, params, required=params["source"] == "journal")
        if text is not None:
            return "journal", text, command, None
    text, command = read_dmesg(module, reason)
    return "dmesg", text, command, reason


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path"},
            "source": {"type": "str", "choices": ["auto", "journal", "dmesg"], "default": "auto"},
            "since_boot": {"type": "bool", "default": True},
            "max_events": {"type": "int", "default": 500},
        },
        supports_check_mode=True,
    )
    params = module.params
    if params["max_events"] < 0:
        module.fail_json(msg=f"max_events must be 0 (all) or more, got {params['max_events']}")
    source, text, command, reason = read_log(module, params)
    if not text.strip():
        what = params["path"] if source == "file" else " ".join(command)
        module.fail_json(msg=f"the kernel log read from {what} is empty: nothing was scanned", log_file=params["path"])
    result = xid.scan(text)
    events = result["events"]
    kept = events[-params["max_events"] :] if params["max_events"] else events
    module.exit_json(
        changed=False,
        source=source,
        command=command,
        log_file=params["path"],
        fallback_reason=reason,
        lines=result["lines"],
        events=kept,
        events_total=len(events),
        events_truncated=len(kept) < len(events),
        skipped_chars=result["skipped_chars"],
        summary=result["summary"],
        simulated=simulation.simulated(),
    )


if __name__ == "__main__":
    main()
