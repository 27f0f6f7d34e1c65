# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA driver role's verdict on the node read again after converge: what failed, what this node cannot show
(and why), and the line a passed node reports.

A container's kernel belongs to its host, so there the module is built but not loaded, and nvidia-smi (where it
answers at all: simulated hardware) speaks for another machine's driver: those checks are not applicable, with the
reason, rather than passed.
"""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import dkms, driver_plan, parsing

# gpu_facts' finding codes that say nvidia-smi reached no driver at all.
_UNREACHED = ("driver_unreachable", "driver_library_mismatch", "no_devices")
_DEGRADED = "is failed (the system reports itself degraded)"


def _unit_failures(name, unit, live):
    """A daemon's failures (unit: os_facts' state of its unit): not enabled; not running where the driver runs; failed
    where it cannot run yet."""
    found = []
    if not unit.get("enabled"):
        found.append(f"{name} is not enabled")
    if live and not unit.get("active"):
        found.append(f"{name} is not running")
    if not live and unit.get("failed"):
        found.append(f"{name} {_DEGRADED}")
    return found


def _daemons(names):
    """ "a, b and c" of the daemons' names."""
    return ", ".join(names[:-1]) + (" and " if names[1:] else "") + names[-1]


def verify(*, host, plan, flavor, kernels, live, fabricmanager, dcgm, persistenced, services, reads):
    """{failures, not_applicable, passed} of a node read again after converge.

    plan: the preflight's plan (version, track, dkms_module, packages); flavor: the kernel module flavour; kernels:
    kernel_targets()' result (targets, skipped); live: whether the driver runs on this node now. fabricmanager
    ({package, version}) and dcgm ({version, cuda}): None where the node needs none. persistenced: {wanted, unit};
    services: the units of fabric manager and DCGM where the node runs them. reads: driver (nvidia_driver_facts), os
    (os_facts' gpuops_os, with the state of those units), packages (package_info's), gpu (gpu_facts' gpu), audit (dpkg
    --audit's output, "" on rpm) and pci_gpus (pci_facts' GPUs).
    """
    driver, node, gpu = reads["driver"], reads["os"], reads["gpu"]
    units = node.get("units") or {}
    version, module = plan["version"], plan["dkms_module"]
    not_built = [
        kernel
        for kernel in kernels["targets"]
        if dkms.build_state(driver.get("dkms") or [], module, version, kernel) not in dkms.INSTALLED_STATES
    ]
    # The target kernels only: preflight's read, which stands in for a second one where the run changed nothing,
    # covers every installed kernel.
    missing = [kernel for kernel, state in (driver.get("kernels") or {}).items()
               if kernel in kernels["targets"]
               and (((state.get("dkms_modules") or {}).get(module)) or {}).get("missing")]  # fmt: skip
    codes = [finding.get("code") for finding in gpu.get("findings") or []]
    devices = gpu.get("devices") or []
    answered = bool(devices) or not set(_UNREACHED) & set(codes)
    gpu_errors = driver_plan.gpu_problems(gpu, fabricmanager is not None)
    loaded = driver.get("loaded") or {}
    audit = reads["audit"].strip()
    broken = (node.get("packages") or {}).get("broken") or []

    failures = []
    if not_built:
        failures.append(f"DKMS has not installed {module} {version} for kernel(s) {', '.join(not_built)}")
    if missing:
        failures.append(
            "module files missing under /lib/modules/<kernel> (DKMS's directory: updates/dkms, or extra on RHEL) for "
            f"kernel(s) {', '.join(missing)}"
        )
    failures += driver_plan.package_problems(plan["packages"], reads["packages"])
    if broken:
        failures.append(f"packages left half-installed: {', '.join(broken)}")
    if audit:
        failures.append(f"dpkg --audit reports: {parsing.truncated(audit, 300, leeway=5)}")
    if persistenced["wanted"]:
        failures += _unit_failures("nvidia-persistenced", units.get(persistenced["unit"]) or {}, live)
    for service in services:
        failures += _unit_failures(service.replace(".service", ""), units.get(service) or {}, live)
    if live and (loaded.get("version") != version or loaded.get("flavor") != flavor):
        failures.append(
            f"the loaded NVIDIA module is {loaded.get('version') or 'none'} ({loaded.get('flavor') or 'unknown'}), "
            f"not {version} ({flavor})"
        )
    if live and "/dev/nvidiactl" not in (driver.get("devices") or []):
        failures.append("no /dev/nvidiactl although the driver is loaded")
    if (live or answered) and gpu_errors:
        failures.append(f"nvidia-smi: {'; '.join(gpu_errors)}")
    if live and gpu.get("driver_version") != version:
        failures.append(f"nvidia-smi reports driver {gpu.get('driver_version') or 'none'}, not {version}")

    daemons = ["nvidia-persistenced"] + [service.replace(".service", "") for service in services]
    own_kernel = (node.get("capabilities") or {}).get("own_kernel")
    not_applicable = [skipped["note"] for skipped in kernels.get("skipped") or []]
    if not own_kernel:
        not_applicable.append(
            f"loading the module and running {_daemons(daemons)} (this node's kernel belongs to its container host)"
        )
    if own_kernel and not reads["pci_gpus"]:
        not_applicable.append("loading the module (no NVIDIA GPU on the PCI bus)")
    if not live and not answered:
        not_applicable.append("the GPU check (nvidia-smi cannot reach a driver on this node)")
    if not live and answered:
        replayed = ", replayed from another machine's capture" if gpu.get("simulated") else ""
        not_applicable.append(
            f"the driver version nvidia-smi reports ({gpu.get('driver_version') or 'none'}{replayed}): the module it "
            "talks to is not this install's"
        )

    running = " and running" if live else ""
    passed = (
        f"{host} passed nvidia_driver verification: driver {version} ({plan['track']}, {flavor} kernel modules), DKMS "
        f"module {module} installed for kernel(s) {', '.join(kernels['targets'])}, {len(plan['packages'])} packages "
        "held at their versions"
    )
    if fabricmanager is not None:
        passed += f", fabric manager {fabricmanager['package']} {fabricmanager['version']} enabled{running}"
    if dcgm is not None:
        cuda = " and ".join(str(major) for major in dcgm["cuda"])
        passed += f", DCGM {dcgm['version']} (CUDA {cuda} plugins) enabled{running}"
    if answered:
        names = list(dict.fromkeys(device.get("name") for device in devices))
        passed += f", {len(devices)} GPU(s) {', '.join(str(name) for name in names)}"
        if gpu.get("simulated"):
            passed += f" [SIMULATED {gpu['simulated'].get('profile')}]"
        if fabricmanager is not None:
            passed += ", NVSwitch fabric Completed on every GPU"
    if not_applicable:
        passed += f" (not applicable: {'; '.join(not_applicable)})"
    return {"failures": failures, "not_applicable": not_applicable, "passed": passed}
