"""Bench stand-in of NVIDIA's nvidia-ctk: the command surface gpuops.bringup's roles call, nothing more.

- `nvidia-ctk --version`: the real two-line format.
- `nvidia-ctk cdi generate [--output=FILE]`: a CDI spec for the GPUs the driver reports. The real command asks
  NVML; this one asks `nvidia-smi -q -x` (on a bench node, the simulated-hardware stand-in replaying a capture), and
  fails the way the real one does when no driver answers. Log lines go to stderr in logrus' text format.
- `nvidia-ctk cdi list`: the devices of the specs under /etc/cdi and /var/run/cdi.

Anything else fails with status 2 and says it is not implemented.
"""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

VERSION = "@UPSTREAM@"
SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
KIND = "nvidia.com/gpu"
LIBDIR = "/usr/lib/x86_64-linux-gnu"
CONTROL_DEVICES = ("/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl")


def log(level, msg):
    sys.stderr.write(f"{level}[0000] {msg}\n")


class NvmlError(Exception):
    pass


def query_gpus():
    """(driver version, [(index, uuid)]) from nvidia-smi, standing in for NVML."""
    try:
        proc = subprocess.run(["nvidia-smi", "-q", "-x"], capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise NvmlError("ERROR_LIBRARY_NOT_FOUND") from exc
    if proc.returncode != 0:
        raise NvmlError("Driver Not Loaded")
    root = ET.fromstring(proc.stdout)
    gpus = [(int(gpu.findtext("minor_number")), gpu.findtext("uuid")) for gpu in root.iter("gpu")]
    return root.findtext("driver_version"), sorted(gpus)


def spec_yaml(driver, gpus):
    """The spec in the layout nvidia-ctk writes (fields sorted), for the devices and the driver's libraries."""
    lines = ["---", "cdiVersion: 0.5.0", "containerEdits:", "  deviceNodes:"]
    lines += [f"  - path: {path}" for path in CONTROL_DEVICES]
    lines += ["  env:", "  - NVIDIA_VISIBLE_DEVICES=void", "  hooks:"]
    lines += [
        "  - args:",
        "    - nvidia-cdi-hook",
        "    - update-ldcache",
        "    - --folder",
        f"    - {LIBDIR}",
        "    hookName: createContainer",
        "    path: /usr/bin/nvidia-cdi-hook",
        "  mounts:",
    ]
    for lib in ("libcuda.so", "libnvidia-ml.so"):
        path = f"{LIBDIR}/{lib}.{driver}"
        lines += [f"  - containerPath: {path}", f"    hostPath: {path}", "    options:"]
        lines += [f"    - {opt}" for opt in ("ro", "nosuid", "nodev", "bind")]
    lines.append("devices:")
    for name, minors in [*((str(i), [i]) for i, _u in gpus), *((u, [i]) for i, u in gpus),
                         ("all", [i for i, _u in gpus])]:  # fmt: skip
        lines += ["- containerEdits:", "    deviceNodes:"]
        lines += [f"    - path: /dev/nvidia{minor}" for minor in minors]
        lines.append(f'  name: "{name}"' if name.isdigit() else f"  name: {name}")
    lines.append(f"kind: {KIND}")
    return "\n".join(lines) + "\n"


def cdi_generate(args):
    output = None
    for i, arg in enumerate(args):
        if arg.startswith("--output="):
            output = arg.split("=", 1)[1]
        elif arg == "--output" and i + 1 < len(args):
            output = args[i + 1]
    log("INFO", "Auto-detected mode as 'nvml'")
    try:
        driver, gpus = query_gpus()
    except NvmlError as exc:
        log("ERRO", f"failed to generate CDI spec: failed to create device CDI specs: failed to initialize NVML: {exc}")
        return 1
    for minor, _uuid in gpus:
        log("INFO", f"Selecting /dev/nvidia{minor} as /dev/nvidia{minor}")
    log("INFO", f"Using driver version {driver}")
    spec = spec_yaml(driver, gpus)
    if output is None:
        sys.stdout.write(spec)
    else:
        os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
        tmp = f"{output}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(spec)
        os.chmod(tmp, 0o644)
        os.replace(tmp, output)
    log("INFO", "Generated CDI spec with version 0.5.0")
    return 0


def spec_devices(path):
    """Device names of one spec written by cdi generate (kind, then each `name:` under devices)."""
    kind, names, in_devices = None, [], False
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("kind:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("devices:"):
                in_devices = True
            elif in_devices and line.startswith("  name:"):
                names.append(line.split(":", 1)[1].strip().strip('"'))
            elif line[:1] not in (" ", "-"):
                in_devices = False
    return [f"{kind}={name}" for name in names]


def cdi_list():
    devices = []
    for directory in SPEC_DIRS:
        if os.path.isdir(directory):
            for name in sorted(os.listdir(directory)):
                if name.endswith((".yaml", ".json")):
                    devices += spec_devices(os.path.join(directory, name))
    log("INFO", f"Found {len(devices)} CDI devices")
    for device in sorted(devices):
        print(device)
    return 0


def main(argv):
    if argv[:1] in (["--version"], ["-v"]):
        print(f"NVIDIA Container Toolkit CLI version {VERSION}\ncommit: gpuops-bench-stand-in")
        return 0
    if argv[:2] == ["cdi", "generate"]:
        return cdi_generate(argv[2:])
    if argv[:2] == ["cdi", "list"]:
        return cdi_list()
    sys.stderr.write(f"nvidia-ctk (gpuops bench stand-in): {' '.join(argv)!r} is not implemented\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
