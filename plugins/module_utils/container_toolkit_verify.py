# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container toolkit role's verdict on the node read again after converge: what failed, what this node cannot
show (and why), and the line a passed node reports.

A container's GPUs belong to its host, and nvidia-smi there (where it answers at all: simulated hardware) speaks for
another machine: the GPU container run is not applicable there, with the reason, rather than passed.
"""

from __future__ import annotations

import re

# nvidia-smi -L's line for a GPU, as the container run prints it.
_GPU_LINE = re.compile(r"GPU [0-9]+: ")


def _runtime_failures(runtimes, default_for, ctk_runtimes, runtime_path, units, unit_states):
    """Each runtime's effective configuration against the wanted one (the nvidia runtime, the default), and its unit
    running. A runtime container_toolkit_facts could not read (None) was reported among its errors."""
    found = []
    for name in runtimes:
        conf = ctk_runtimes.get(name)
        nvidia = ((conf or {}).get("runtimes") or {}).get("nvidia")
        if conf is not None and nvidia is None:
            found.append(f"{name}'s effective configuration has no nvidia runtime")
        elif conf is not None and nvidia.get("binary") != runtime_path:
            found.append(f"{name}'s nvidia runtime runs {nvidia.get('binary')}, not {runtime_path}")
        if conf is not None and (name in default_for) != (conf.get("default") == "nvidia"):
            found.append(
                f"{name}'s default runtime is {conf.get('default')}" + (", not nvidia" if name in default_for else "")
            )
        if not (unit_states.get(units[name]) or {}).get("active"):
            found.append(f"{units[name]} is not active")
    return found


def verify(*, host, settings, judged, reads):
    """{failures, not_applicable, passed} of a node read again after converge.

    settings: the role's version, runtimes, default_for, cdi and smoke_image. judged (preflight's and the role's):
    runtime_path (nvidia-container-runtime's), units (runtime name -> its systemd unit), own_kernel, gpu (gpu_facts'
    gpu, {} where unread), gpus_answer (whether nvidia-smi answered), live (whether a container can reach the GPUs
    here) and smoke_runtime (the runtime that runs the GPU container, "" for none). reads: packages (package_info's),
    ctk (container_toolkit_facts' container_toolkit), units (os_facts' units) and smoke (the GPU container's output
    lines; None where it did not run).
    """
    version, runtimes, default_for = settings["version"], settings["runtimes"], settings["default_for"]
    packages, ctk, smoke = reads["packages"], reads["ctk"], reads["smoke"]
    gpu, gpus_answer, live = judged["gpu"], judged["gpus_answer"], judged["live"]
    upstream = re.sub(r"-[^-]+$", "", version)
    gpus = [device.get("uuid") for device in gpu.get("devices") or []]
    seen = len([line for line in smoke or [] if _GPU_LINE.match(line)])
    cdi_missing = [
        device for device in [f"nvidia.com/gpu={uuid}" for uuid in gpus] + ["nvidia.com/gpu=all"]
        if device not in (ctk.get("cdi_devices") or [])
    ]  # fmt: skip

    failures = [f"{name} is not at {version}" for name, state in packages.items() if state.get("installed") != version]
    failures += [f"{name} is not held" for name, state in packages.items() if not state.get("held")]
    failures += list(ctk.get("errors") or [])
    if ctk.get("version") != upstream:
        failures.append(f"nvidia-ctk --version says {ctk.get('version') or 'nothing'}, not {upstream}")
    failures += _runtime_failures(runtimes, default_for, ctk.get("runtimes") or {}, judged["runtime_path"],
                                  judged["units"], reads["units"])  # fmt: skip
    if gpus_answer and cdi_missing:
        failures.append(f"nvidia-ctk cdi list lacks {', '.join(cdi_missing)}")
    if smoke is not None and seen != len(gpus):
        failures.append(f"a container through the nvidia runtime saw {seen} GPU(s), the driver reports {len(gpus)}")

    simulated = gpu.get("simulated")
    not_applicable = []
    if settings["cdi"] and not gpus_answer:
        not_applicable.append(
            "the CDI spec (no NVIDIA driver answers on this node, whose kernel belongs to its container host)"
        )
    if not judged["own_kernel"]:
        replays = "'s; nvidia-smi replays another machine's capture" if simulated else "'s"
        not_applicable.append(
            "a GPU container (this node's kernel belongs to its container host: its containers reach the host's GPUs, "
            f"not this install{replays})"
        )
    elif not live:
        not_applicable.append("a GPU container (the NVIDIA driver is not loaded)")
    if live and not settings["smoke_image"]:
        not_applicable.append("a GPU container (nvidia_container_toolkit_smoke_image is empty)")
    elif live and not judged["smoke_runtime"]:
        not_applicable.append("a GPU container (CRI-O runs pods only: run one with crictl)")

    passed = (
        f"{host} passed nvidia_container_toolkit verification: {len(packages)} packages held at {version} (nvidia-ctk "
        f"{ctk.get('version') or ''}), the nvidia runtime in {', '.join(runtimes)}"
    )
    if default_for:
        passed += f" (the default in {', '.join(default_for)})"
    if gpus_answer:
        passed += f", CDI spec with {len(gpus)} GPU(s)" + (
            f" [SIMULATED {simulated.get('profile')}]" if simulated else ""
        )
    if smoke is not None:
        passed += f", a container saw {seen} GPU(s)"
    if not_applicable:
        passed += f" (not applicable: {'; '.join(not_applicable)})"
    return {"failures": failures, "not_applicable": not_applicable, "passed": passed}
