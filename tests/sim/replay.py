"""Replays a real captured tool output on a simulated-hardware bench node (see tests/sim/README.md).

Runs inside the node container as `replay.py TOOL ARGS...`, for the stand-in
the bench mounted as /usr/local/bin/TOOL. The node's profile.json maps each
argument string the collection's modules use to a capture (or a sequence of
captures, replayed in turn: counters that change between two reads) and its
exit status; any other invocation fails the way an unsupported option would.

nvidia-smi presents the driver the node has installed: where DKMS installed
an NVIDIA module (dkms status), or else the dynamic linker finds an NVML
library (libnvidia-ml.so.<version>), that version replaces the capture's
driver version, and the CUDA version the capture reports becomes the newest
that driver supports. A node with no NVIDIA driver installed answers with the
capture's own versions.
"""

import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys

STAGE = "/usr/share/gpuops-sim"
# Where a capture sequence keeps how often it was replayed (tmpfs: a restarted node starts over).
CALLS = "/run/gpuops-sim"


def _key(version):
    return tuple(int(p) for p in re.findall(r"[0-9]+", version))


def installed_driver():
    """The NVIDIA driver version installed on this node, or None."""
    try:
        status = subprocess.run(["dkms", "status"], capture_output=True, text=True, check=False).stdout
    except OSError:
        status = ""
    built = re.findall(r"^(nvidia[^/,\s]*)[/,]\s*([0-9]+(?:\.[0-9]+)+)[^:\n]*:\s*installed", status, re.M)
    if built:
        return max((version for _module, version in built), key=_key)
    try:
        cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return None
    for line in cache.splitlines():
        name, _sep, path = line.partition("=>")
        if name.strip().startswith("libnvidia-ml.so.1 "):
            match = re.search(r"libnvidia-ml\.so\.([0-9]+(?:\.[0-9]+)+)$", os.path.realpath(path.strip()))
            if match:
                return match.group(1)
    return None


def present_installed(data, profile):
    """The capture with the installed driver's version (and its CUDA version) in place of the captured ones."""
    captured = profile.get("captured_driver")
    installed = installed_driver() if captured else None
    if not installed or installed == captured:
        return data
    data = data.replace(captured.encode(), installed.encode())
    supported = [cuda for cuda, minimum in profile.get("cuda_drivers", []) if _key(minimum) <= _key(installed)]
    if profile.get("captured_cuda") and supported:
        newest = max(supported, key=_key)
        data = data.replace(
            f"<cuda_version>{profile['captured_cuda']}</cuda_version>".encode(),
            f"<cuda_version>{newest}</cuda_version>".encode(),
        )
    return data


def next_file(tool, args, files):
    """The capture of this call of a sequence: the files in turn, round robin."""
    os.makedirs(CALLS, exist_ok=True)
    path = os.path.join(CALLS, hashlib.sha256(f"{tool} {args}".encode()).hexdigest()[:16])
    try:
        with open(path, encoding="ascii") as handle:
            calls = int(handle.read() or 0)
    except (OSError, ValueError):
        calls = 0
    with open(path, "w", encoding="ascii") as handle:
        handle.write(str(calls + 1))
    return files[calls % len(files)]


def main(argv):
    tool, args = argv[0], " ".join(argv[1:])
    with open(f"{STAGE}/profile.json", encoding="utf-8") as handle:
        profile = json.load(handle)
    commands = profile["commands"].get(tool, {})
    entry = commands.get(args)
    if entry is None:
        # A key with * stands for the arguments that differ from node to node (ib_write_bw's server address, its
        # TCP port and duration); the first pattern that matches, in the profile's order.
        entry = next((e for pattern, e in commands.items() if "*" in pattern and fnmatch.fnmatchcase(args, pattern)),
                     None)  # fmt: skip
    if entry is None:
        known = ", ".join(repr(a) for a in sorted(commands)) or "none"
        sys.stderr.write(f"{tool} (simulated): no capture for arguments {args!r}; captured: {known}\n")
        return 2
    name = next_file(tool, args, entry["files"]) if "files" in entry else entry["file"]
    with open(f"{STAGE}/{name}", "rb") as handle:
        data = handle.read()
    if tool == "nvidia-smi":
        data = present_installed(data, profile)
    sys.stdout.buffer.write(data)
    return entry["rc"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
