# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA driver role's decisions, as pure functions over facts and the role's package tables.

choose_flavor() picks the kernel module flavour (open or proprietary) from the
GPUs on the PCI bus, choose_packages() the package set and exact versions of a
branch, kernel_targets() the kernels DKMS must build for and the headers that
takes, install_problems() what already installed stands in the way. Each
returns a problem message (naming the variable, the value and the fix) instead
of raising, so that preflight (module_utils driver_preflight, through the
filters in plugins/filter/nvidia_driver.py) reports it with the node's other
problems.

A branch table (the role's vars/<OS>.yml) maps a branch ("535") to its
default flavour and its tracks: package sets a source carries for that branch
(Debian 12 has two for 535: the nvidia-graphics-drivers packages and the
Tesla ones). Each track has kernel_modules (flavour -> {package, dkms_module, and on RHEL the module stream}),
firmware, and userland (packages versioned with the kernel module package).
"""

from __future__ import annotations

import functools
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, dkms, gpu_catalog, rpm

FLAVORS = ("open", "proprietary")
# NVIDIA's default kernel module flavour is open from the R560 driver on (gpu_catalog cites the source).
OPEN_DEFAULT_BRANCH = 560
OPEN_MODULE_VALUES = (gpu_catalog.REQUIRED, gpu_catalog.SUPPORTED, gpu_catalog.UNSUPPORTED)
# Each package manager's versions (upstream_version, compare_versions, newest) and how it names an exact version in
# an install request: apt's name=version, dnf's name-[epoch:]version-release.
VERSIONS = {"apt": apt, "dnf": rpm}
SPEC_JOINS = {"apt": "=", "dnf": "-"}


def describe_gpus(gpus):
    """ "2x Tesla V100S-PCIE-32GB (volta) at 0000:5e:00.0, 0000:d8:00.0" for a list of pci_facts GPUs."""
    groups = {}
    for gpu in gpus:
        label = gpu.get("product") or gpu.get("name") or f"PCI device {gpu.get('device_id')}"
        if gpu.get("architecture"):
            label += f" ({gpu['architecture']})"
        elif not gpu.get("product"):
            label += f" ({gpu.get('device_id')}, not in the GPU catalog)"
        groups.setdefault(label, []).append(gpu.get("address", "?"))
    return "; ".join(f"{len(addresses)}x {label} at {', '.join(addresses)}" for label, addresses in groups.items())


def offered_flavors(branch_entry):
    """The flavours any track of a branch carries, open first."""
    offered = set()
    for track in branch_entry.get("tracks", []):
        offered.update(track.get("kernel_modules", {}))
    return [f for f in FLAVORS if f in offered]


def branches_with(table, flavor):
    return sorted((b for b, entry in table.items() if flavor in offered_flavors(entry)), key=int)


def choose_flavor(pci, requested, branch, table, where):
    """{flavor, reason, problem} for nvidia_driver_flavor (auto, open, proprietary) on a node with pci_facts pci.

    table: the source's branches for this OS; where: how messages name the source ("Debian 13's own packages").
    """
    gpus = pci.get("gpus") or []
    aggregate = pci.get("open_modules") or "none"
    entry = table.get(branch, {})
    offered = offered_flavors(entry)
    by_support = {value: [g for g in gpus if g.get("open_modules") == value] for value in OPEN_MODULE_VALUES}
    unknown = [g for g in gpus if g.get("open_modules") not in OPEN_MODULE_VALUES]
    result = {"flavor": None, "reason": "", "problem": None}

    retired = []
    for gpu in gpus:
        last = (gpu_catalog.lookup(pci_device_id=gpu.get("device_id")) or {}).get("last_driver_branch")
        if last and int(branch) > int(last):
            retired.append((gpu, last))
    if retired:
        result["problem"] = (
            f'nvidia_driver_branch is "{branch}" but {describe_gpus([g for g, _l in retired])} are supported only '
            f'up to driver branch {retired[0][1]}. Fix: nvidia_driver_branch: "{retired[0][1]}" or older.'
        )
        return result

    if requested == "auto":
        if aggregate == "mixed":
            result["problem"] = (
                f"nvidia_driver_flavor is auto but no kernel module flavour drives every GPU of this node: "
                f"{describe_gpus(by_support[gpu_catalog.REQUIRED])} need the open modules, and "
                f"{describe_gpus(by_support[gpu_catalog.UNSUPPORTED])} cannot use them. Fix: one GPU generation per "
                f"node (move the GPUs), since one driver serves them all."
            )
            return result
        if aggregate == "unknown":
            result["problem"] = (
                f"nvidia_driver_flavor is auto but the GPUs {describe_gpus(unknown)} are not in the collection's GPU "
                f"catalog, so the role cannot tell whether they need the open or the proprietary kernel modules. "
                f"Fix: set nvidia_driver_flavor: open or proprietary for this host (NVIDIA's table: the Compatible "
                f"GPUs of NVIDIA/open-gpu-kernel-modules README.md), or add the GPU to "
                f"plugins/module_utils/gpu_catalog.py."
            )
            return result
        if aggregate == gpu_catalog.REQUIRED:
            flavor = "open"
            reason = f"{describe_gpus(by_support[gpu_catalog.REQUIRED])} run only on the open kernel modules"
        elif aggregate == gpu_catalog.UNSUPPORTED:
            flavor = "proprietary"
            reason = f"{describe_gpus(by_support[gpu_catalog.UNSUPPORTED])} cannot use the open kernel modules"
        elif aggregate == gpu_catalog.SUPPORTED:
            flavor = "open" if int(branch) >= OPEN_DEFAULT_BRANCH else "proprietary"
            reason = (
                f"the GPUs ({describe_gpus(gpus)}) take either flavour, and NVIDIA's default for branch {branch} is "
                f"{flavor} (open from R{OPEN_DEFAULT_BRANCH} on)"
            )
        else:
            flavor = entry.get("default_flavor", "proprietary")
            reason = f"no NVIDIA GPU on the PCI bus: branch {branch}'s default"
    else:
        flavor = requested
        reason = f"nvidia_driver_flavor is {requested}"
        if requested == "open" and by_support[gpu_catalog.UNSUPPORTED]:
            result["problem"] = (
                f"nvidia_driver_flavor is open but {describe_gpus(by_support[gpu_catalog.UNSUPPORTED])} cannot use "
                f"NVIDIA's open kernel modules (Volta and older GPUs need the proprietary ones). "
                f"Fix: nvidia_driver_flavor: proprietary (or auto, which picks it)."
            )
            return result
        if requested == "proprietary" and by_support[gpu_catalog.REQUIRED]:
            result["problem"] = (
                f"nvidia_driver_flavor is proprietary but {describe_gpus(by_support[gpu_catalog.REQUIRED])} run only "
                f"on NVIDIA's open kernel modules (Blackwell, Grace Hopper). "
                f"Fix: nvidia_driver_flavor: open (or auto, which picks it)."
            )
            return result

    if flavor not in offered:
        alternatives = [b for b in branches_with(table, flavor) if b != branch]
        other = f'nvidia_driver_branch: "{alternatives[0]}" (which has them), or ' if alternatives else ""
        if requested == "auto":
            lead = f"nvidia_driver_flavor is auto and picks the {flavor} kernel modules ({reason}), but"
        else:
            lead = f"nvidia_driver_flavor is {flavor} but"
        result["problem"] = (
            f"{lead} {where} have no {flavor} kernel modules for branch {branch} (nvidia_driver_branch: "
            f'"{branch}" offers {", ".join(offered) or "none"}). Fix: {other}'
            f"nvidia_driver_source: cuda_repo for NVIDIA's own packages (Debian 12, Ubuntu)"
            f"{'' if requested == 'auto' else ', or nvidia_driver_flavor: auto'}."
        )
        return result
    result.update(flavor=flavor, reason=reason)
    return result


def _track_names(track, flavor):
    """A track's packages for a flavour: the kernel module package, its firmware (where the track names one) and the
    userland."""
    names = [track["kernel_modules"][flavor]["package"], track.get("firmware"), *track.get("userland", [])]
    return [n for n in names if n]


def _track_versions(track, flavor, info, branch, versions_of):
    """Package versions of the branch every package of a track's set (kernel modules, firmware, userland) has, newest
    first. NVIDIA's repositories carry every branch under the same names (Debian 12's nvidia-kernel-dkms at 535, 550,
    580...): only the branch's versions count. An installed version the source does not carry (installed_elsewhere:
    see repository_info) is no candidate."""
    names = _track_names(track, flavor)
    common = None
    for name in names:
        entry = info.get(name) or {}
        versions = set(entry.get("available") or [])
        if entry.get("installed") and not entry.get("installed_elsewhere"):
            versions.add(entry["installed"])
        versions = {v for v in versions if versions_of.upstream_version(v).split(".")[0] == branch}
        common = versions if common is None else common & versions
    ordered = []
    while common:
        best = versions_of.newest(common)
        ordered.append(best)
        common.discard(best)
    return names, ordered


def _repository_lacks_branch(branch_entry, flavor, info, where, branch, versions_of):
    """The problem for a vendor repository (a branch entry with `repository`: how messages name its copy) that
    carries no version of the branch: the branches it does carry, read from its kernel module packages."""
    kmods = [t["kernel_modules"][flavor]["package"] for t in branch_entry["tracks"] if flavor in t["kernel_modules"]]
    others = set()
    for name in kmods:
        others.update(
            versions_of.upstream_version(v).split(".")[0] for v in (info.get(name) or {}).get("available") or []
        )
    offered = sorted(others, key=int)
    instead = f'nvidia_driver_branch: "{offered[-1]}" (it carries {", ".join(offered)}), or ' if offered else ""
    return (
        f"{where} carry no version of {', '.join(kmods)} of branch {branch} ({flavor} kernel modules). Fix: "
        f"{instead}bring branch {branch} into {branch_entry['repository']} (an offline mirror: copy it from NVIDIA's "
        f"repository), and run again."
    )


def choose_packages(branch_entry, flavor, pin, info, companions, where, branch, manager="apt"):
    """The package plan for a branch and flavour, or a problem.

    info: package_info's packages; companions: packages the driver needs but Debian versions separately
    (nvidia-persistenced), pinned to the installed version, else the candidate; manager: apt or dnf, whose versions
    these are. Returns {track, version (upstream), package_version, kmod_package, dkms_module, packages (name ->
    the package manager's version), steps (exact-version install specs, apt's name=version or dnf's name-EVR:
    kernel_modules, the kernel module and firmware packages, then userland), stream (the dnf module stream of
    NVIDIA's RHEL repository that carries the flavour's packages, from the table; None elsewhere), problem}.
    """
    result = {
        "track": None,
        "version": None,
        "package_version": None,
        "kmod_package": None,
        "dkms_module": None,
        "stream": None,
        "packages": {},
        "steps": {"kernel_modules": [], "userland": []},
        "problem": None,
    }
    versions_of = VERSIONS[manager]
    options = []
    carried = []
    missing = []
    for track in branch_entry.get("tracks", []):
        if flavor not in track.get("kernel_modules", {}):
            continue
        names, versions = _track_versions(track, flavor, info, branch, versions_of)
        missing.extend(n for n in names if not (info.get(n) or {}).get("available") and n not in missing)
        carried.extend(f"{versions_of.upstream_version(v)} ({track['name']})" for v in versions)
        if pin:
            versions = [v for v in versions if versions_of.upstream_version(v) == pin]
        if versions:
            kmod = track["kernel_modules"][flavor]["package"]
            installed = (info.get(kmod) or {}).get("installed")
            chosen = installed if installed in versions and not (info.get(kmod) or {}).get("broken") else versions[0]
            options.append((installed in versions, chosen, track, names))
    if not options:
        if not carried and branch_entry.get("repository"):
            result["problem"] = _repository_lacks_branch(branch_entry, flavor, info, where, branch, versions_of)
        elif missing and not carried:
            tracks = [t for t in branch_entry["tracks"] if flavor in t["kernel_modules"]]
            kmods = [t["kernel_modules"][flavor]["package"] for t in tracks]
            named = [n for n in missing if n in kmods] or missing
            extra = len(missing) - len(named)
            more = f" (nor of {extra} more packages of the set)" if extra else ""
            result["problem"] = (
                f"{where} carry no version of {', '.join(named)}{more} (branch {branch}, {flavor} kernel modules): "
                f"the OS sources lack Debian's contrib, non-free and non-free-firmware components, or the package "
                f"index is out of date. Fix: let os_baseline (stage 1) write the OS sources "
                f"(os_baseline_manage_os_sources: true, the default), or add those components to the sources "
                f"yourself, and run again."
            )
        elif pin:
            result["problem"] = (
                f"nvidia_driver_version is {pin}, which {where} do not carry for branch {branch} with the {flavor} "
                f"kernel modules (they carry {', '.join(carried) or 'nothing'}). Fix: one of those, or "
                f'nvidia_driver_version: "" for the newest.'
            )
        else:
            result["problem"] = (
                f"{where} carry no version common to every package of branch {branch} ({flavor} kernel modules): "
                f"the sources are half updated (a mirror in the middle of a sync?). Fix: run again once the sources "
                f"are consistent."
            )
        return result
    # The installed track and version first (resolved once, then held), else the newest version of any track.
    options.sort(key=lambda o: o[0], reverse=True)
    if not options[0][0]:
        best = versions_of.newest([o[1] for o in options])
        options = [o for o in options if o[1] == best]
    _installed, chosen, track, names = options[0]
    packages = dict.fromkeys(names, chosen)
    for name in companions:
        entry = info.get(name) or {}
        version = entry.get("installed") if not entry.get("broken") else None
        version = version or entry.get("candidate")
        if not version:
            result["problem"] = (
                f"{where} carry no version of {name}, which the driver needs. Fix: add Debian's contrib component to "
                f"the OS sources (os_baseline writes it), or set nvidia_driver_persistenced: false."
            )
            return result
        packages[name] = version
    kmod = track["kernel_modules"][flavor]
    first = [n for n in (kmod["package"], track.get("firmware")) if n]
    join = SPEC_JOINS[manager]
    result["steps"] = {
        "kernel_modules": [f"{n}{join}{packages[n]}" for n in first],
        "userland": [f"{n}{join}{v}" for n, v in packages.items() if n not in first],
    }
    result.update(
        track=track["name"],
        version=versions_of.upstream_version(chosen),
        package_version=chosen,
        kmod_package=kmod["package"],
        dkms_module=kmod["dkms_module"],
        stream=kmod.get("stream"),
        packages=packages,
    )
    return result


def repository_info(info, index, manager="apt"):
    """package_info's packages, with each package of index (repository_index's packages: the versions NVIDIA's CUDA
    repository carries) available at those versions only, so a plan resolved from it never takes the distribution's
    version of the same name (Debian 12 carries nvidia-kernel-dkms too). An installed version the repository does not
    carry is marked installed_elsewhere: it stays what is installed (the upgrade path replaces it), but no candidate.
    """
    merged = {name: dict(entry or {}) for name, entry in info.items()}
    for name, versions in index.items():
        entry = merged.setdefault(name, {})
        entry["available"] = list(versions or [])
        entry["candidate"] = VERSIONS[manager].newest(entry["available"]) if entry["available"] else None
        if entry.get("installed") and entry["installed"] not in entry["available"]:
            entry["installed_elsewhere"] = True
    return merged


# How each package manager names a kernel's headers (DKMS builds against them) and where messages send the
# operator for them.
HEADERS = {
    "apt": {
        "prefix": "linux-headers-",
        "sources": "the configured sources",
        "fix_none": "install the distribution kernel and its headers (Debian: linux-image-amd64 and "
        "linux-headers-amd64) from the configured sources",
        "fix_newest": "add the archive that carries {package} (Debian: the -security and -updates suites), or remove "
        "that kernel",
    },
    "dnf": {
        "prefix": "kernel-devel-",
        "sources": "the configured repositories",
        "fix_none": "install the distribution kernel (kernel-core) and dnf install kernel-devel-$(uname -r) from the "
        "OS's repositories (BaseOS, AppStream)",
        "fix_newest": "enable the repository that carries {package} (RHEL: AppStream; a mirror: sync it to the "
        "kernel's update), or remove that kernel",
    },
}
_RPM_ARCH = (".x86_64", ".aarch64")


def _headers_carried(manager, version, info):
    """Whether the sources carry the headers of kernel version (apt: linux-headers-<version>, a package of its own;
    dnf: kernel-devel at the kernel's version-release, uname -r without the architecture)."""
    if manager == "apt":
        entry = info.get(HEADERS["apt"]["prefix"] + version) or {}
        return bool(entry.get("installed") or entry.get("candidate"))
    entry = info.get("kernel-devel") or {}
    evr = next((version[: -len(arch)] for arch in _RPM_ARCH if version.endswith(arch)), version)
    return evr in (entry.get("available") or []) or entry.get("installed") == evr


def kernel_targets(os_state, info, kernels, manager="apt"):
    """The kernels DKMS builds for, the headers packages that takes, and the kernels it cannot build for.

    os_state: os_facts' gpuops_os; info: package_info's packages (apt: linux-headers-<k> for each kernel, and the
    linux-image-<flavour> / linux-headers-<flavour> meta-packages; dnf: kernel-devel, every version carried);
    kernels: nvidia_driver_facts' kernels. Returns {targets, headers (install specs: apt's name, or name=version for
    a meta-package; dnf's kernel-devel-<k>), skipped ([{kernel, reason, note}], note a sentence for a report),
    problem}.
    A kernel with a build tree already (/lib/modules/<k>/build) needs no package; on apt the headers meta-package
    follows the installed image meta-package's version, so the next kernel update brings its headers along (rpm has
    no meta-packages: kernel-devel is install-only, one per kernel).
    """
    words = HEADERS[manager]
    kernel = os_state["kernel"]
    installed = list(kernel.get("installed") or [])
    running = kernel.get("running")
    targets, headers, skipped = [], [], []
    for version in installed + ([running] if running and running not in installed else []):
        package = words["prefix"] + version
        if (kernels.get(version) or {}).get("headers"):
            targets.append(version)
        elif _headers_carried(manager, version, info):
            targets.append(version)
            headers.append(package)
        elif version == running and version not in installed:
            skipped.append(
                {
                    "kernel": version,
                    "reason": "the running kernel: no installed package provides it (a container host's or a "
                    "hand-built kernel) and it has no build tree here",
                }
            )
        else:
            skipped.append({"kernel": version, "reason": f"installed, but {package} is in none of {words['sources']}"})
    for meta in (kernel.get("packages") or {}).get("meta", []) if manager == "apt" else []:
        if not meta.startswith("linux-image-"):
            continue
        image_version = (info.get(meta) or {}).get("installed")
        package = "linux-headers-" + meta[len("linux-image-") :]
        entry = info.get(package) or {}
        carried = image_version in (entry.get("available") or []) or entry.get("installed") == image_version
        if image_version and carried:
            headers.append(f"{package}={image_version}")
    problem = None
    newest = kernel.get("newest")
    if not targets:
        problem = (
            "this node has no kernel DKMS can build the driver for (installed: "
            f"{', '.join(installed) or 'none'}; running: {running}): "
            + "; ".join(f"{s['kernel']}: {s['reason']}" for s in skipped)
            + f". Fix: {words['fix_none']}."
        )
    elif newest and newest not in targets:
        package = words["prefix"] + newest
        problem = (
            f"kernel {newest}, the one this node boots next, has no headers in {words['sources']} "
            f"({package}), so DKMS cannot build the driver for it and the node would boot without one. "
            f"Fix: {words['fix_newest'].format(package=package)}."
        )
    for entry in skipped:
        entry["note"] = f"a DKMS build for kernel {entry['kernel']} ({entry['reason']})"
    return {"targets": targets, "headers": headers, "skipped": skipped, "problem": problem}


def packages_pending(plan, kernels, info, dkms_records, manager="apt", reinstall=False):
    """Whether the install's package steps have anything to do on the node as read.

    plan: choose_packages()' plan (fabric manager's and DCGM's steps joined); kernels: kernel_targets()' result; info:
    package_info's packages; dkms_records: nvidia_driver_facts' dkms (dkms status). True where a package of a step
    (the kernel headers, the kernel module, the userland, fabric manager, DCGM) is not installed at its planned
    version, or DKMS has not installed the plan's module for a target kernel. reinstall (an upgrade, or a failed
    run's leftovers to purge, whose purge takes other packages along): nothing read counts. On dnf always: dnf
    resolves each step against the node itself, and its installs report no change where nothing is to do.
    """
    if manager != "apt" or reinstall:
        return True
    specs = list(kernels["headers"]) + [spec for step in plan["steps"].values() for spec in step]
    if apt.pending(specs, info):
        return True
    return any(
        dkms.build_state(dkms_records, plan["dkms_module"], plan["version"], kernel) not in dkms.INSTALLED_STATES
        for kernel in kernels["targets"]
    )


def package_problems(wanted, info):
    """Sentences for the packages of wanted (name -> Debian version) not installed at that version, or not held."""
    problems = []
    for name, version in wanted.items():
        entry = info.get(name) or {}
        if entry.get("installed") != version:
            problems.append(f"{name} is {entry.get('installed') or 'not installed'}, not {version}")
        elif not entry.get("held"):
            problems.append(f"{name} is not held")
    return problems


def table_packages(table):
    """Every package name a branch table mentions: (kernel module packages, all packages)."""
    kmods, names = set(), set()
    for entry in table.values():
        for track in entry.get("tracks", []):
            for module in track.get("kernel_modules", {}).values():
                kmods.add(module["package"])
            if track.get("firmware"):
                names.add(track["firmware"])
            names.update(track.get("userland", []))
    return sorted(kmods), sorted(kmods | names)


def install_problems(table, info, plan, broken, companions, runfile, manager="apt"):
    """What stands in the way of installing plan: {purge, upgrade, problem}.

    broken: os_facts' packages.broken. A half-configured driver package is what a failed earlier run left behind
    (a DKMS build that failed inside its postinst): the install purges it (purge). Any other broken package, or a
    driver from NVIDIA's .run installer, is a problem. Another NVIDIA driver installed from the table's packages
    (another branch, version, track or flavour) is an upgrade: {from (a phrase for messages), remove (the installed
    packages of the table the plan does not keep, to purge before the install: another track or flavour conflicts
    with the plan's)}; None when the plan's driver is the installed one or none is, and when there is no plan (None:
    none could be resolved, and what is in the way is still told).
    """
    kmods, known = table_packages(table)
    known = set(known) | set(companions)
    purge = sorted(n for n in broken if n in known)
    foreign = sorted(n for n in broken if n not in known)
    result = {"purge": purge, "upgrade": None, "problem": None}
    if foreign:
        result["problem"] = (
            f"dpkg has left {', '.join(foreign)} half-installed or half-configured, and apt refuses to install "
            f"anything until that is fixed. Fix: repair them by hand (dpkg --configure -a, or apt-get purge "
            f"{' '.join(foreign)}), then run again."
        )
        return result
    if runfile:
        result["problem"] = (
            "a driver installed with NVIDIA's .run installer is on this node (/usr/bin/nvidia-uninstall): it "
            "conflicts with packaged drivers. Fix: remove it with nvidia-uninstall, reboot, then run again."
        )
        return result
    if plan is None:
        return result
    others = []
    for name in kmods:
        entry = info.get(name) or {}
        if not entry.get("installed") or entry.get("broken"):
            continue
        if name != plan["kmod_package"] or entry["installed"] != plan["package_version"]:
            others.append(
                f"{name} {entry['installed']} (driver {VERSIONS[manager].upstream_version(entry['installed'])})"
            )
    if others:
        installed = [n for n in sorted(set(known) - set(companions)) if (info.get(n) or {}).get("installed")]
        result["upgrade"] = {
            "from": ", ".join(others),
            "remove": [n for n in installed if n not in plan["packages"]],
        }
    return result


# What kmod's modprobe --remove and the kernel say when a module is still referenced (a process holding /dev/nvidia*,
# a module stacked on it): "modprobe: FATAL: Module nvidia is in use." (and "... is in use by: nvidia_uvm" from rmmod),
# "could not remove 'nvidia': Resource temporarily unavailable" or "Device or resource busy" from delete_module
# (kmod's modprobe quotes the name; its rmmod writes "could not remove module nvidia: ...").
_IN_USE = re.compile(
    r"Module \S+ is in use|could not remove (?:module )?'?[^':\s]+'?: "
    r"(?:Resource temporarily unavailable|Device or resource busy)"
)


def unload_outcome(rc, stderr):
    """What modprobe --remove of the old modules came to: "unloaded", "in_use" (a reference no stop of the GPU services
    removed: a reboot loads the new driver instead) or "error" (any other failure - a module not found, no permission,
    no modprobe - which no reboot mends); None when it did not run (skipped, check mode)."""
    if rc is None:
        return None
    if rc == 0:
        return "unloaded"
    return "in_use" if _IN_USE.search(stderr or "") else "error"


def reboot_plan(os_state, pci_facts, loaded, plan, flavor, targets):
    """Whether the new driver comes up live or needs a reboot: {live, required, reasons}.

    Only a node that runs its own kernel (os_facts capabilities.own_kernel) and has GPUs loads the driver. It needs
    a reboot when nouveau holds the GPUs, another NVIDIA module (version or flavour) is loaded, the running kernel
    is not one DKMS builds for (targets), or the node may not load modules now; otherwise the driver is loaded live
    (live), or is already. loaded: nvidia_driver_facts' loaded.
    """
    caps = os_state.get("capabilities") or {}
    kernel = os_state.get("kernel") or {}
    if not caps.get("own_kernel") or not (pci_facts.get("gpus") or []):
        return {"live": False, "required": False, "reasons": [], "unload": None}
    reasons = []
    if (os_state.get("kernel_modules") or {}).get("nouveau") == "loaded":
        reasons.append("nouveau is loaded and holds the GPUs")
    version = loaded.get("version")
    # Another NVIDIA module loaded: the upgrade path unloads it once the GPU services are stopped, and reboots
    # only when that fails (something still holds the GPUs).
    unload = None
    if version and (version != plan["version"] or loaded.get("flavor") not in (None, flavor)):
        unload = f"{version} ({loaded.get('flavor') or 'flavour unknown'})"
    if kernel.get("running") not in targets:
        reasons.append(
            f"the running kernel {kernel.get('running')} is not one DKMS builds for ({', '.join(targets) or 'none'})"
        )
    if not caps.get("modules_loadable") and (unload or not version):
        reasons.append("this node may not load kernel modules now (no CAP_SYS_MODULE)")
    return {"live": not reasons, "required": bool(reasons), "reasons": reasons, "unload": unload}


def daemon_steps(units, wanted, persistenced_unit, live, reread):
    """What configure does to the driver's daemons (nvidia-persistenced, fabric manager, DCGM), from preflight's read
    of their units: {enable, reset_failed, disable_persistenced, act}.

    units: os_facts' units ({unit: {exists, active, enabled, failed}}). wanted: the units of the daemons this node
    runs, each enabled, and started where the driver runs now (live). reread: whether the run installs packages or
    upgrades the driver first: their maintainer scripts may add, enable, start or fail units after the read, so
    every wanted unit is put right (enable: all of them) and their failed state is read again (reset_failed: None).
    Otherwise the read is their state: enable lists the wanted units not enabled, or not active where live;
    reset_failed the failed ones where the driver is not live (they cannot run without it: a container's restart
    leaves them failed). disable_persistenced: nvidia-persistenced not wanted, there, and enabled or active (after an
    install, whatever the read said of those). act: whether any of that is to be done (configure skips the daemons'
    steps as one where not).
    """

    def state(unit):
        return units.get(unit) or {}

    persistenced = state(persistenced_unit)
    disable = (
        persistenced_unit not in wanted
        and bool(persistenced.get("exists"))
        and (reread or bool(persistenced.get("enabled") or persistenced.get("active")))
    )
    if reread:
        return {"enable": list(wanted), "reset_failed": None, "disable_persistenced": disable, "act": True}
    enable = [u for u in wanted if not state(u).get("enabled") or (live and not state(u).get("active"))]
    reset_failed = [] if live else [u for u in wanted if state(u).get("failed")]
    return {
        "enable": enable,
        "reset_failed": reset_failed,
        "disable_persistenced": disable,
        "act": bool(enable or reset_failed or disable),
    }


# Fabric manager's Debian package: one package per branch up to R575 (nvidia-fabricmanager-535, NVIDIA's
# apt-packaging-fabric-manager debian/templates/control.in); from R580 one package, nvidia-fabricmanager, which
# provides nvidia-fabricmanager-<branch> (NVIDIA/gpu-driver-container PR #451: "nvidia-fabricmanager-580 is a
# virtual package provided by nvidia-fabricmanager 580.65.06-1"). Its rpm: nvidia-fabric-manager up to R575, every
# branch under that one name, and nvidia-fabricmanager from R580 (NVIDIA/gpu-driver-container's RHEL install
# scripts, which install nvidia-fabric-manager-<version>-1 before 580 and nvidia-fabricmanager-<version>-1 from it).
FABRICMANAGER_UNVERSIONED_FROM = 580


def fabricmanager_package(branch, manager="apt"):
    """The package that carries fabric manager for a driver branch (apt: Debian and Ubuntu; dnf: RHEL)."""
    if int(branch) >= FABRICMANAGER_UNVERSIONED_FROM:
        return "nvidia-fabricmanager"
    return f"nvidia-fabricmanager-{branch}" if manager == "apt" else "nvidia-fabric-manager"


def choose_fabricmanager(index, info, plan, branch, where, manager="apt"):
    """Fabric manager's package at exactly the driver's upstream version: {package, version, problem}.

    index: {package: [Debian versions]} the CUDA repository carries (repository_index's packages); info:
    package_info's packages (the installed version is kept when it is of the driver's version: resolved once, then
    held); plan: choose_packages' plan; where: how messages name the repository.
    """
    versions_of = VERSIONS[manager]
    package = fabricmanager_package(branch, manager)
    installed = (info.get(package) or {}).get("installed")
    carried = list(index.get(package) or [])
    matching = [v for v in carried if versions_of.upstream_version(v) == plan["version"]]
    result = {"package": package, "version": None, "problem": None}
    if installed and installed in matching:
        result["version"] = installed
    elif matching:
        result["version"] = versions_of.newest(matching)
    else:
        upstream = sorted(
            {versions_of.upstream_version(v) for v in carried}, key=functools.cmp_to_key(versions_of.compare_versions)
        )
        offered = ", ".join(upstream) or "no version"
        result["problem"] = (
            f"fabric manager must run at exactly the driver's version, {plan['version']} ({plan['kmod_package']} "
            f"{plan['package_version']}), but {where} carries {package} only at {offered}: fabric manager refuses "
            f"to start against another driver version, and the GPUs never leave fabric state In Progress. Fix: a "
            f"driver version the repository has fabric manager for (nvidia_driver_version, with "
            f'nvidia_driver_branch: "{branch}"), or bring {package} {plan["version"]} into the repository (the '
            f"mirror: copy it from NVIDIA's), or nvidia_driver_fabricmanager: false to install the driver alone on "
            f"purpose."
        )
    return result


# gpu_facts finding codes fabric_problems() reports in one sentence instead of one per GPU.
FABRIC_CODES = ("fabric_not_completed", "fabric_status_error")


def gpu_problems(gpu, fabric):
    """Sentences for what gpu_facts' answer shows wrong: its error findings, and on a node that needs fabric
    manager (fabric true), every GPU's NVSwitch fabric state Completed with status Success, grouped by state.

    gpu: gpu_facts' ansible_facts.gpu. A GPU that reports no fabric state at all on such a node is a problem too:
    NVSwitch-attached GPUs (SXM) always report one.
    """
    findings = gpu.get("findings") or []
    codes = FABRIC_CODES if fabric else ()
    problems = [f["message"] for f in findings if f.get("severity") == "error" and f.get("code") not in codes]
    if not fabric:
        return problems
    groups = {}
    for device in gpu.get("devices") or []:
        state = device.get("fabric") or {}
        if state.get("state") == "Completed" and state.get("status") in (None, "Success"):
            continue
        label = (
            f"state {state.get('state')}" + (f", status {state['status']}" if state.get("status") else "")
            if state
            else "no NVSwitch fabric state"
        )
        groups.setdefault(label, []).append(device.get("pci_bus_id") or f"GPU {device.get('index')}")
    for label, addresses in groups.items():
        problems.append(
            f"NVSwitch fabric registration not complete on {len(addresses)} of {len(gpu.get('devices') or [])} "
            f"GPU(s) ({label}: {', '.join(addresses)}); the GPUs stay unusable (CUDA error 802) until "
            f"nvidia-fabricmanager, at the driver's version, has registered them with the NVSwitch fabric"
        )
    return problems


# DCGM 4's packages (NVIDIA's DCGM installation guide; the same names in its apt and rpm repositories): the
# CUDA-agnostic core (dcgmi, nv-hostengine, the nvidia-dcgm unit) and proprietary parts, and per CUDA major version
# of the driver the diagnostic plugins built for it. NVIDIA: install the packages "targeting the major version of the
# CUDA user-mode driver" (the driver's CUDA major: gpu_catalog.MINOR_COMPATIBILITY_DRIVERS). CUDA 13 dropped the
# Maxwell, Pascal and Volta GPUs (its release notes), so there NVIDIA's guide takes the CUDA 12 packages; Azure's HPC
# images install both on such nodes (Azure/azhpc-images install_dcgm.sh, citing NVIDIA/DCGM#254: DCGM wants both),
# and so does this. Every package at one version: their dependencies on each other are exact (=).
DCGM_CORE = ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary")
DCGM_PER_CUDA = ("datacenter-gpu-manager-4-cuda{}", "datacenter-gpu-manager-4-proprietary-cuda{}")
DCGM_CUDA_MAJORS = tuple(sorted(gpu_catalog.MINOR_COMPATIBILITY_DRIVERS))
CUDA13_DROPPED = ("maxwell", "pascal", "volta")


def dcgm_cuda_majors(driver_version, architectures):
    """The CUDA major versions whose DCGM plugins a node needs: its driver's (the newest major whose minor-version
    compatibility minimum the driver meets), and 12 beside 13 where a GPU is one CUDA 13 dropped."""
    majors = [m for m in DCGM_CUDA_MAJORS
              if gpu_catalog.driver_at_least(driver_version, gpu_catalog.MINOR_COMPATIBILITY_DRIVERS[m])]  # fmt: skip
    if not majors:
        return []
    major = majors[-1]
    if major >= 13 and any(arch in CUDA13_DROPPED for arch in architectures):
        return [12, major]
    return [major]


def choose_dcgm(index, info, plan, version, architectures, where, manager="apt"):
    """DCGM's packages at the pinned version for the planned driver: {packages: {name: version}, cuda, problem}.

    index: {package: [versions]} the CUDA repository carries; info: package_info's packages (an installed version of
    the pinned one is kept: resolved once, then held); plan: choose_packages' plan (its driver version); version:
    nvidia_driver_dcgm_version (DCGM's upstream version, e.g. 4.4.1, its grammar checked by module_utils variables);
    architectures: the GPUs' (pci_facts).
    """
    versions_of = VERSIONS[manager]
    result = {"packages": {}, "cuda": [], "problem": None}
    cuda = dcgm_cuda_majors(plan["version"], architectures)
    result["cuda"] = cuda
    if not cuda:
        result["problem"] = (
            f"DCGM 4 has packages for the CUDA {', '.join(map(str, DCGM_CUDA_MAJORS))} drivers; driver "
            f"{plan['version']} is older than any (CUDA 11 needs 450.80.02). Fix: a newer driver "
            f"(nvidia_driver_branch), or nvidia_driver_dcgm: false."
        )
        return result
    names = list(DCGM_CORE) + [name.format(major) for major in cuda for name in DCGM_PER_CUDA]
    upstream = versions_of.upstream_version
    matching = {name: {v for v in index.get(name) or [] if upstream(v) == version} for name in names}
    common = set.intersection(*matching.values())
    installed = {(info.get(name) or {}).get("installed") for name in names}
    if len(installed) == 1 and installed <= common:
        chosen = installed.pop()
    elif common:
        chosen = versions_of.newest(sorted(common))
    else:
        lacking = [name for name in names if not matching[name]]
        carried = sorted({upstream(v) for v in index.get(DCGM_CORE[0]) or []},
                         key=functools.cmp_to_key(versions_of.compare_versions))  # fmt: skip
        why = (f"{where} carries {', '.join(lacking)} at no version {version}" if lacking else
               f"{where} carries no one build of {version} for all of {', '.join(names)}")  # fmt: skip
        result["problem"] = (
            f"nvidia_driver_dcgm_version is {version}, for driver {plan['version']} (CUDA "
            f"{' and '.join(map(str, cuda))} plugins), but {why}; it carries {DCGM_CORE[0]} at "
            f"{', '.join(carried) or 'no version'}. Fix: one of those versions in nvidia_driver_dcgm_version, or bring "
            f"DCGM {version} into the repository (the mirror: copy it from NVIDIA's), or nvidia_driver_dcgm: false."
        )
        return result
    result["packages"] = dict.fromkeys(names, chosen)
    return result
