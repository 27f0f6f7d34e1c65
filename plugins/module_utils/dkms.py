# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for the NVIDIA kernel driver's state: DKMS, its build logs, the loaded module.

Text in, data out, no I/O, so the unit tests feed them outputs captured on
real machines (tests/fixtures/dkms). Python 3.8 compatible: shipped to nodes
with nvidia_driver_facts.
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

DKMS_TREE = "/var/lib/dkms"
# Where DKMS installs the modules it builds, under /lib/modules/<kernel>. dkms 3 picks the directory by distribution
# (its override_dest_module_location: updates/dkms on Debian and Ubuntu, extra on Fedora and RHEL, as seen on the
# bench: Debian's dkms 3.0.10 under RHEL's os-release installs to extra) and keeps the package's own
# DEST_MODULE_LOCATION on one it has no rule for (kernel/drivers/video in NVIDIA's dkms.conf). Top levels only.
DKMS_MODULE_DIRS = ("updates/dkms", "extra", "kernel/drivers/video")
# Each NVIDIA DKMS package builds these modules; Debian installs them as <dkms module><suffix>.ko[.xz]
# (nvidia-tesla-535.ko.xz, nvidia-tesla-535-uvm.ko.xz...), from its dkms.conf DEST_MODULE_NAME entries.
NVIDIA_MODULE_SUFFIXES = ("", "-modeset", "-drm", "-uvm", "-peermem")
# DKMS modules whose files are not named after them: NVIDIA's RHEL kmod-nvidia-open-dkms registers DKMS module
# nvidia-open (NVIDIA/open-gpu-kernel-modules PR #567) and builds nvidia.ko, nvidia-uvm.ko... as the source names them.
MODULE_FILE_PREFIXES = {"nvidia-open": "nvidia"}
MODULE_EXTENSIONS = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
INSTALLED_STATES = ("installed", "installed-weak")

# dkms 3.x: "nvidia-tesla-535/535.274.02, 6.12.117+deb13-amd64, x86_64: installed" and "nvidia-current-open/550.163.01:
# added"; dkms 2.x: "nvidia, 470.57.02, 5.4.0-80-generic, x86_64: installed". A note may follow the state
# ("(WARNING! Diff between built and installed module!)").
_STATUS = re.compile(
    r"^(?P<module>[^/,:\s]+)(?:/|,\s*)(?P<version>[^,:\s]+)"
    r"(?:,\s*(?P<kernel>[^,:\s]+)(?:,\s*(?P<arch>[^,:\s]+))?)?"
    r":\s*(?P<state>[A-Za-z-]+)(?P<note>.*)$"
)
# The first line of a DKMS make.log: "DKMS (dkms-3.2.2) make.log for nvidia-current-open/550.163.01 for kernel
# 6.12.117+deb13-amd64 (x86_64)"; dkms 2.x wrote "DKMS make.log for nvidia-535.54.03 for kernel 5.15.0 (x86_64)".
_MAKE_LOG_HEADER = re.compile(
    r"^DKMS\b.*\bmake\.log for (?P<what>\S+) for kernel (?P<kernel>\S+)(?: \((?P<arch>[^)]+)\))?"
)
_EXIT_CODE = re.compile(r"^# exit code: (?P<code>-?[0-9]{1,9})\s*$")
# dkms before 3.0.11 writes no exit code: the top-level make's last error line says it ("make: *** [...] Error 2";
# a sub-make's is "make[1]: ***").
_MAKE_ERROR = re.compile(r"^make: \*\*\* .* Error (?P<code>[0-9]{1,9})\s*$")
# gcc quotes names with ' under the C locale, with U+2018/U+2019 under a UTF-8 one.
_IN_FUNCTION = re.compile(r": In function ['\u2018][^'\u2019]*['\u2019]:\s*$")
# What a compiler or linker prints for a failure that does not say ": error: " (modpost, make itself).
_OTHER_ERROR = re.compile(r"(^ERROR: |\bError \d+\s*$|undefined reference|\*\*\* )")
# /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.274.02  <date>" (proprietary)
# or "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.163.01  Release Build  (...)  <date>" (open).
_NVRM = re.compile(
    r"^NVRM version: NVIDIA UNIX (?P<open>Open )?.*?Kernel Module(?: for \S+)?\s+(?P<version>\d+(?:\.\d+)+)"
)
_LINE_LIMIT = 300


def parse_dkms_status(text):
    """Records {module, version, kernel, arch, state, note} from `dkms status`; kernel and arch null for "added"."""
    records = []
    for line in parsing.bounded(text)[0].splitlines():
        match = _STATUS.match(line.strip())
        if match is None:
            continue
        records.append(
            {
                "module": match.group("module"),
                "version": match.group("version"),
                "kernel": match.group("kernel"),
                "arch": match.group("arch"),
                "state": match.group("state"),
                "note": match.group("note").strip(),
            }
        )
    return records


def build_state(records, module, version, kernel):
    """The DKMS state of module/version for kernel: installed, built, added (registered, not built) or absent."""
    for record in records:
        if (record["module"], record["version"], record["kernel"]) == (module, version, kernel):
            return record["state"]
    if any((r["module"], r["version"]) == (module, version) for r in records):
        return "added"
    return "absent"


def module_files(names, dkms_module):
    """Which of a DKMS module's NVIDIA modules are among file names (listings of DKMS_MODULE_DIRS).

    Returns (present, missing): present the file names found, missing the module names (without extension) absent.
    """
    present, missing = [], []
    prefix = MODULE_FILE_PREFIXES.get(dkms_module, dkms_module)
    for suffix in NVIDIA_MODULE_SUFFIXES:
        stem = prefix + suffix
        found = [stem + ext for ext in MODULE_EXTENSIONS if stem + ext in names]
        if found:
            present.extend(found)
        else:
            missing.append(stem)
    return present, missing


def parse_make_log(text, build_dir=None, limit=8, context=2):
    """What a DKMS make.log says about its build: {kernel, arch, exit_code, errors, error_count, summary}.

    errors: each compiler error (a line with ": error: ") with the "In function" line before it and up to context
    diagnostic lines after it (the source line and the caret), paths shortened by build_dir, long lines cut; at most
    limit of them, error_count says how many there were. A log without such lines (a link or modpost failure) gives
    its last lines that look like errors instead. summary: the errors on one line for a message, each error's lines
    joined by " | " with their runs of spaces collapsed and the caret line left out, errors joined by " || ".
    """
    lines = parsing.bounded(text)[0].splitlines()
    kernel = arch = None
    if lines:
        header = _MAKE_LOG_HEADER.match(lines[0])
        if header:
            kernel, arch = header.group("kernel"), header.group("arch")
    exit_code = None
    for pattern in (_EXIT_CODE, _MAKE_ERROR):
        match = next((m for m in map(pattern.match, reversed(lines)) if m), None)
        if match:
            exit_code = int(match.group("code"))
            break

    def clean(line):
        # gcc quotes with typographic quotes under a UTF-8 locale: report them as ASCII, whatever the node's locale.
        line = line.replace("\u2018", "'").replace("\u2019", "'")
        if build_dir:
            line = line.replace(build_dir.rstrip("/") + "/", "")
        line = line.rstrip()
        return line if len(line) <= _LINE_LIMIT else line[: _LINE_LIMIT - 3] + "..."

    blocks, seen = [], set()
    for index, line in enumerate(lines):
        if ": error: " not in line:
            continue
        key = clean(line)
        if key in seen:
            continue
        seen.add(key)
        block = []
        if index > 0 and _IN_FUNCTION.search(lines[index - 1]):
            block.append(clean(lines[index - 1]))
        block.append(key)
        for follow in lines[index + 1 : index + 1 + context]:
            # gcc's excerpt of the source: " 237 |     r = pci_resize_resource(...)" and the caret line under it.
            if not re.match(r"^\s+(\d+\s*)?\|", follow):
                break
            block.append(clean(follow))
        blocks.append("\n".join(block))
    count = len(blocks)
    if not blocks:
        blocks = [clean(line) for line in lines if _OTHER_ERROR.search(line)][-limit:]
    errors = blocks[:limit]
    # One line per error for a message: the caret line under the source excerpt says nothing there.
    summary = " || ".join(
        " | ".join(" ".join(part.split()) for part in e.splitlines() if not re.fullmatch(r"[\s|^~]*", part))
        for e in errors
    )
    return {
        "kernel": kernel,
        "arch": arch,
        "exit_code": exit_code,
        "errors": errors,
        "error_count": count,
        "summary": summary,
    }


def parse_nvrm_version(text):
    """{version, flavor} from /proc/driver/nvidia/version (flavor open or proprietary); None when not a driver's."""
    for line in parsing.bounded(text)[0].splitlines():
        match = _NVRM.match(line.strip())
        if match:
            return {"version": match.group("version"), "flavor": "open" if match.group("open") else "proprietary"}
    return None


def loaded_nvidia_modules(proc_modules):
    """Names of the loaded NVIDIA kernel modules (nvidia, nvidia_uvm, ...) from /proc/modules."""
    names = [line.split()[0] for line in parsing.bounded(proc_modules)[0].splitlines() if line.strip()]
    return sorted(n for n in names if n == "nvidia" or n.startswith("nvidia_"))
