#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: acceptance_read
short_description: Collect a node's acceptance evidence in one round trip - raw tool output and sysfs snapshots
version_added: 0.2.0
description:
  - Runs every command the acceptance stage judges a node on and returns what each printed, with its exit status,
    unparsed - C(nvidia-smi -q -x), C(nvidia-smi topo -m) and C(nvidia-smi nvlink -s) (those two only where the
    query answered), C(lspci -Dnn), C(ibstat), the kernel log (C(journalctl -k), else C(dmesg)), C(dkms status),
    C(systemctl show) of the persistence daemon and fabric manager, the installed packages (C(dpkg-query -W) or
    C(rpm -qa)), C(dmidecode -t system -t bios) - and snapshots of the files the collection's sysfs parsers read
    (C(/sys/class/infiniband) with each port's error counters; C(/sys/bus/pci/devices) where lspci is not
    installed), the driver's version files, the NVML library the dynamic linker finds, and the nccl_tests stage's
    kept measurement.
  - A tool that is missing or fails is recorded as such; the module itself fails only on bad options. Judging is the
    controller's (C(gpuops.bringup.acceptance_results)), from this evidence alone.
  - Changes nothing.
author: gpuops.bringup developers (@gpuops)
options:
  since_boot:
    description: Read the kernel log of the current boot only (C(journalctl -b)); C(dmesg) holds only it anyway.
    type: bool
    default: true
  max_bytes:
    description:
      - The most bytes kept of one output. A longer kernel log keeps its end (the newest lines), any other output
        its beginning; the item says C(truncated).
    type: int
    default: 16777216
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
notes:
  - Commands run with C(LANG=C). Undecodable bytes become U+FFFD.
seealso:
  - module: gpuops.bringup.gpu_facts
    description: The GPUs alone, parsed on the node.
"""

EXAMPLES = r"""
- name: Collect the node's acceptance evidence
  gpuops.bringup.acceptance_read:
  register: evidence

- name: Show what nvidia-smi answered
  ansible.builtin.debug:
    msg: "{{ evidence.evidence['nvidia-smi-query.xml'].rc }}"
"""

RETURN = r"""
evidence:
  description: >-
    One item per evidence file name (C(nvidia-smi-query.xml), C(nvidia-smi-topo.txt), C(nvidia-smi-nvlink.txt),
    C(lspci.txt), C(sysfs-pci.json), C(ibstat.txt), C(sysfs-infiniband.json), C(kernel-log.txt), C(dkms-status.txt),
    C(driver-files.json), C(systemd-units.txt), C(packages.txt), C(dmidecode.txt), C(nccl-tests-results.json)). A
    command's item has C(cmd), C(rc), C(stdout), C(stderr) and C(truncated); a missing tool's C(tool) and
    C(missing=true); one not run C(skipped) (why). C(kernel-log.txt) also has C(source) (journal or dmesg) and
    C(fallback) (why the journal was not used). Snapshots are JSON text in C(stdout) with C(rc) 0.
  returned: always
  type: dict
simulated:
  description: The test bench's simulated-hardware marker, or false on real hardware.
  returned: always
  type: raw
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    acceptance_evidence,
    infiniband,
    osinfo,
    pci,
    simulation,
    xid,
)
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RecordingReader

ANY_RC = infiniband.AnyReturnCode()


class Collector:
    def __init__(self, module):
        self.module = module
        self.limit = module.params["max_bytes"]

    def _cap(self, text, keep_end=False):
        text = text or ""
        if len(text) <= self.limit:
            return text, False
        return (text[-self.limit :] if keep_end else text[: self.limit]), True

    def run(self, tool, args, keep_end=False):
        runner = ToolRunner(self.module, tool, required=False)
        if not runner.available:
            return {"tool": tool, "missing": True}
        rc, out, err = runner(list(args), ok_rc=ANY_RC)
        out, cut_out = self._cap(out, keep_end)
        err, cut_err = self._cap(err)
        return {"cmd": [runner.path, *args], "rc": rc, "stdout": out, "stderr": err, "truncated": cut_out or cut_err}

    def snapshot(self, data):
        return {"rc": 0, "stdout": json.dumps(data, sort_keys=True), "stderr": "", "truncated": False}

    def file(self, path):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text, cut = self._cap(handle.read(self.limit + 1))
        except OSError:
            return {"path": path, "rc": None, "stdout": None, "stderr": "", "missing": True}
        return {"path": path, "rc": 0, "stdout": text, "stderr": "", "truncated": cut}

    def kernel_log(self, since_boot):
        """xid_scan's source=auto, never failing: the journal's kernel messages, else dmesg's, and why."""
        journal = self.run("journalctl", xid.journal_args(since_boot), keep_end=True)
        if journal.get("rc") == 0 and xid.journal_has_entries(journal["stdout"]):
            return {**journal, "source": "journal", "fallback": None}
        why = ("journalctl is not installed" if journal.get("missing") else
               f"journalctl exited with {journal['rc']}" if journal["rc"] != 0 else xid.NO_KERNEL_MESSAGES)  # fmt: skip
        return {**self.run("dmesg", [], keep_end=True), "source": "dmesg", "fallback": why}


def infiniband_snapshot():
    """The files infiniband.read_sysfs reads, as it read them, and every port's error counters (evidence for now: no
    check judges them yet)."""
    reader = RecordingReader(infiniband.SysfsReader("/sys"))
    for device in infiniband.read_sysfs(reader):
        for port in device["ports"]:
            for name in acceptance_evidence.COUNTERS:
                reader.read(f"class/infiniband/{device['name']}/ports/{port['port']}/counters/{name}")
    return reader.snapshot()


def pci_snapshot():
    reader = RecordingReader(infiniband.SysfsReader("/sys"))
    pci.read_sysfs(reader)
    return reader.snapshot()


def nvml_libraries(collector):
    """Where the dynamic linker finds libnvidia-ml.so.1, each resolved to its versioned file."""
    found = collector.run("ldconfig", ["-p"])
    paths = []
    for line in (found.get("stdout") or "").splitlines():
        name, sep, path = line.partition("=>")
        if sep and name.strip().startswith("libnvidia-ml.so.1 "):
            paths.append(os.path.realpath(path.strip()))
    return sorted(set(paths))


def packages(collector):
    """os_facts' package query: dpkg-query's, else rpm's."""
    found = collector.run("dpkg-query", osinfo.DPKG_QUERY_ARGS)
    return collector.run("rpm", osinfo.RPM_QUERY_ARGS) if found.get("missing") else found


def gather(module):
    collector = Collector(module)
    evidence = {}
    query = collector.run("nvidia-smi", ["-q", "-x"])
    evidence["nvidia-smi-query.xml"] = query
    for name, args in (("nvidia-smi-topo.txt", ["topo", "-m"]), ("nvidia-smi-nvlink.txt", ["nvlink", "-s"])):
        evidence[name] = collector.run("nvidia-smi", args) if query.get("rc") == 0 else {"skipped": "no GPU query"}
    evidence["lspci.txt"] = collector.run("lspci", ["-Dnn"])
    if evidence["lspci.txt"].get("missing"):
        evidence["sysfs-pci.json"] = collector.snapshot(pci_snapshot())
    evidence["ibstat.txt"] = collector.run("ibstat", [])
    evidence["sysfs-infiniband.json"] = collector.snapshot(infiniband_snapshot())
    evidence["kernel-log.txt"] = collector.kernel_log(module.params["since_boot"])
    evidence["dkms-status.txt"] = collector.run("dkms", ["status"])
    files = {
        "proc_version": collector.file("/proc/driver/nvidia/version").get("stdout"),
        "sys_version": collector.file("/sys/module/nvidia/version").get("stdout"),
        "nvml_libraries": nvml_libraries(collector),
    }
    evidence["driver-files.json"] = collector.snapshot(files)
    evidence["systemd-units.txt"] = collector.run(
        "systemctl", ["show", osinfo.SYSTEMCTL_PROPERTIES, "--", *acceptance_evidence.UNITS]
    )
    evidence["packages.txt"] = packages(collector)
    evidence["dmidecode.txt"] = collector.run("dmidecode", ["-t", "system", "-t", "bios"])
    evidence["nccl-tests-results.json"] = collector.file(acceptance_evidence.NCCL_RESULTS)
    return evidence


def main():
    module = AnsibleModule(
        argument_spec={
            "since_boot": {"type": "bool", "default": True},
            "max_bytes": {"type": "int", "default": 16 * 1024 * 1024},
        },
        supports_check_mode=True,
    )
    if module.params["max_bytes"] < 4096:
        module.fail_json(msg=f"max_bytes must be 4096 or more, got {module.params['max_bytes']}")
    module.exit_json(changed=False, evidence=gather(module), simulated=simulation.simulated())


if __name__ == "__main__":
    main()
