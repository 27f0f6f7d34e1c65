# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma_fabric role's decisions: its preflight of a node (every problem at once), whether nvidia-peermem is usable
for each kernel the node boots, and which GID index NCCL should use on a RoCE port.

Pure functions over what preflight and rdma_fabric_facts read, so unit tests give them node states as data tables.

GPUDirect RDMA needs nvidia-peermem built against the ib_core the node loads. The NVIDIA driver's DKMS build
compiles it against whatever ib_core it finds: the kernel's own (inbox rdma-core) or, once DOCA-OFED is installed,
OFED's (mlnx-ofed-kernel-dkms puts its ib_core under /lib/modules/<kernel>/updates/dkms). A driver built BEFORE OFED
links against the kernel's ib_core, and then either fails to load or loads without registering its peer-memory
client: GPUDirect RDMA is silently off and NCCL falls back to staging through host memory (NVIDIA/nccl#1676: a 2-node
all_reduce from about 180 GB/s to about 10 GB/s). Rebuilding the driver's DKMS module after OFED fixes it.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import posixpath
import re
import uuid

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, osinfo, repositories

PEERMEM_SUFFIX = "-peermem"
DOCA_KERNEL_PACKAGE = "mlnx-ofed-kernel-dkms"


def peermem_plan(stack, driver_module, kernels):
    """What to do about nvidia-peermem on each kernel.

    stack: "inbox" or "doca". driver_module: the driver's DKMS module name (nvidia-tesla-535, nvidia-current...),
    None when no driver is installed through DKMS. kernels: {kernel: {"peermem": {"path", "mtime"} or None,
    "ofed_ib_core": {"path", "mtime"} or None}} for each kernel the node may boot.

    Returns {"module": the loadable module name or None, "status": "ready", "no_driver", "rebuild" or "problem",
    "rebuild": [kernels whose driver build predates OFED], "problems": [sentences], "kernels": {kernel: status}}.
    """
    if not driver_module:
        return {
            "module": None,
            "status": "no_driver",
            "rebuild": [],
            "problems": [],
            "kernels": {},
        }
    per_kernel = {}
    rebuild = []
    problems = []
    for kernel in sorted(kernels):
        state = kernels[kernel]
        peermem = state.get("peermem")
        ofed = state.get("ofed_ib_core")
        if stack == "doca" and not ofed:
            per_kernel[kernel] = "ofed_missing"
            problems.append(
                f"kernel {kernel} has no ib_core from DOCA-OFED under /lib/modules/{kernel}/updates/dkms: "
                "its mlnx-ofed-kernel-dkms build is missing (dkms status names it)"
            )
        elif stack == "doca" and (not peermem or peermem["mtime"] < ofed["mtime"]):
            # A missing peermem counts too: a driver built against an OFED being replaced may have lost it.
            per_kernel[kernel] = "rebuild"
            rebuild.append(kernel)
        elif not peermem:
            per_kernel[kernel] = "peermem_missing"
            problems.append(
                f"kernel {kernel} has the driver's DKMS build without {driver_module}{PEERMEM_SUFFIX}: the driver "
                "found no ib_core when it was built"
            )
        else:
            per_kernel[kernel] = "ready"
    if problems:
        status = "problem"
    elif rebuild:
        status = "rebuild"
    else:
        status = "ready"
    return {
        "module": driver_module + PEERMEM_SUFFIX,
        "status": status,
        "rebuild": rebuild,
        "problems": problems,
        "kernels": per_kernel,
    }


def _ipv4_mapped(gid):
    """'0000:0000:0000:0000:0000:ffff:0a00:0001' (sysfs form) -> IPv4Address('10.0.0.1'), else None."""
    try:
        address = ipaddress.IPv6Address(gid.strip())
    except ValueError:
        return None
    return address.ipv4_mapped


def roce_gid_index(gids, netdev=None):
    """The GID index NCCL should use on a RoCE port: the lowest RoCE v2 entry holding an IPv4-mapped address (the
    one NCCL_IB_GID_INDEX names on a routed RoCE fabric), on the given netdev when one is named; None when there is
    none (no address configured yet, an InfiniBand port).

    gids: [{"index": int, "gid": str, "type": "RoCE v2" / "IB/RoCE v1", "ndev": str or None}] from
    /sys/class/infiniband/<hca>/ports/<port>/gids and gid_attrs.
    """
    for entry in sorted(gids, key=lambda e: e["index"]):
        if (entry.get("type") or "").strip().lower() != "roce v2":
            continue
        if netdev and entry.get("ndev") and entry["ndev"] != netdev:
            continue
        mapped = _ipv4_mapped(entry.get("gid") or "")
        if mapped is not None and not mapped.is_unspecified:
            return entry["index"]
    return None


def doca_plan(index, installed, profile, release, url, host):
    """The version of the DOCA profile to install from a release's repository, or why there is none.

    index: {name: [Debian versions]} the release's package index lists for the installation profiles (in the order
    to suggest them) and the kernel package;
    installed: the profile's installed Debian version or None. A release directory carries one version of each
    package; should it carry several, the installed one stays (no upgrade under a running fabric), else the newest.

    Returns {"version": str or None, "problem": a sentence or None}.
    """
    offered = list(index.get(profile) or [])
    where = f"the DOCA {release} repository ({url})"
    if not offered:
        carried = [name for name, versions in index.items() if versions and name != DOCA_KERNEL_PACKAGE]
        return {
            "version": None,
            "problem": f"{host}: rdma_fabric_doca_profile is {profile}, which {where} does not carry (it carries "
            f"{', '.join(carried) or 'no DOCA-Host profile'}). Nothing was changed. Fix: "
            + (f"rdma_fabric_doca_profile: {carried[0]}" if carried else "a DOCA release directory")
            + ", or copy that profile into the mirror.",
        }
    if not index.get(DOCA_KERNEL_PACKAGE):
        return {
            "version": None,
            "problem": f"{host}: {where} carries {profile} but not {DOCA_KERNEL_PACKAGE}, OFED's kernel modules: "
            "it is not a complete DOCA-Host repository. Nothing was changed. Fix: mirror the whole release "
            "directory.",
        }
    version = installed if installed in offered else apt.newest(offered)
    return {"version": version, "problem": None}


def doca_reboot_reason(ib_core, installed, planned, host):
    """Why installing the planned DOCA profile needs a reboot before OFED's modules are the ones running, or None.

    ib_core: rdma_fabric_facts' loaded ib_core (loaded, version, srcversion, installed_srcversion) on a node that
    boots its own kernel; installed, planned: the profile's installed and planned Debian versions. OFED's kernel
    modules replace loaded ones only at the next boot: the kernel's own ib_core (no version) on a first install;
    OFED's own on a change of release; and, after a change that was installed but not booted into (a run stopped
    before its reboot), OFED's ib_core on disk whose source differs from the loaded one's.
    """
    if not ib_core.get("loaded"):
        return None
    version = ib_core.get("version")
    if not version:
        return f"{host} runs its kernel's own ib_core: DOCA-OFED's kernel modules"
    if installed and planned and installed != planned:
        return (
            f"{host} runs DOCA-OFED's ib_core {version} and the DOCA profile moves from {installed} to {planned}: "
            "the new release's kernel modules"
        )
    loaded, on_disk = ib_core.get("srcversion"), ib_core.get("installed_srcversion")
    if loaded and on_disk and loaded != on_disk:
        return (
            f"{host} runs an ib_core ({version}) other than DOCA-OFED's installed for its kernel (an OFED change "
            "not yet booted into): those kernel modules"
        )
    return None


INTERFACE_KINDS = ("ipoib", "roce")
INTERFACE_KEYS = ("name", "kind", "address", "mtu", "ipoib_mode")
IPOIB_MODES = ("datagram", "connected")
# A network interface's name as the kernel takes it (IFNAMSIZ: 15 characters), and one that is no path component.
_NETDEV = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]{0,14}")


def _whole(value):
    """value as an int when it is one (an ASCII digit string from the command line too), else None."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 7:
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _interface_problems(index, interface):
    if not isinstance(interface, dict):
        return [f"rdma_fabric_interfaces[{index}] is {json.dumps(interface, default=str)}, not a mapping. Fix: "
                "{name: ibp26s0, kind: ipoib, address: 10.10.0.11/16}."]  # fmt: skip
    name = interface.get("name")
    what = f"rdma_fabric_interfaces[{index}] ({name if isinstance(name, str) and name else 'no name'})"
    problems = []
    unknown = sorted(str(key) for key in interface if key not in INTERFACE_KEYS)
    if unknown:
        problems.append(f"{what} has unknown key(s) {', '.join(unknown)}. Fix: only {', '.join(INTERFACE_KEYS)}.")
    if not isinstance(name, str) or not _NETDEV.fullmatch(name):
        problems.append(
            f"{what} has name {json.dumps(name, default=str)}, not a network interface name. Fix: the netdev as ip "
            "link shows it (ibp26s0, ens1np0), letters, digits, _ and . only."
        )
    kind = interface.get("kind")
    if kind not in INTERFACE_KINDS:
        problems.append(
            f"{what} has kind {json.dumps(kind, default=str)}. Fix: kind: ipoib (an InfiniBand port) or kind: roce "
            "(an Ethernet port)."
        )
    if "address" in interface:
        address = interface["address"]
        try:
            valid = isinstance(address, str) and "/" in address and bool(ipaddress.IPv4Interface(address))
        except ValueError:
            valid = False
        if not valid or not re.fullmatch(r"[0-9./]{9,18}", address):
            problems.append(
                f"{what} has address {json.dumps(address, default=str)}, not an IPv4 address with its prefix length. "
                "Fix: address: 10.10.0.11/16, or no address."
            )
    if "mtu" in interface:
        mtu = _whole(interface["mtu"])
        high = 65520 if kind == "ipoib" else 9216
        if mtu is None or not 1280 <= mtu <= high:
            limit = "65520 (IPoIB connected mode; 4092 in datagram mode)" if kind == "ipoib" else "9216"
            problems.append(
                f"{what} has mtu {json.dumps(interface['mtu'], default=str)}. Fix: 1280 to {limit}, or no mtu for the "
                "default."
            )
    if "ipoib_mode" in interface and (kind != "ipoib" or interface["ipoib_mode"] not in IPOIB_MODES):
        problems.append(
            f"{what} has ipoib_mode {json.dumps(interface['ipoib_mode'], default=str)}. Fix: datagram or connected, "
            "on a kind: ipoib interface only."
        )
    return problems


def _true(value):
    """A boolean variable as the command line may give it too ("true", "yes")."""
    return str(value).lower() in ("true", "yes", "on", "1")


def input_problems(v, doca_releases, ports):
    """Problems with rdma_fabric's variables (a mapping of them) that their grammar alone (module_utils variables)
    does not see: between variables, against the hardware profile's ports and the DOCA releases the role has a table
    for, and the interfaces' entries. Each names the variable, the value and the fix."""
    problems = []
    stack, peermem = v["rdma_fabric_stack"], _true(v["rdma_fabric_peermem"])
    if stack == "none" and peermem:
        problems.append(
            "rdma_fabric_peermem is true but rdma_fabric_stack is none: nvidia-peermem registers GPU memory with an "
            "RDMA stack, and there is none. Fix: rdma_fabric_stack: inbox (or doca), or rdma_fabric_peermem: false."
        )
    if stack == "none" and ports:
        problems.append(
            f"rdma_fabric_stack is none but the hardware profile {v['profile']} expects {ports} RDMA ports. Fix: "
            "rdma_fabric_stack: inbox (or doca)."
        )
    if stack == "doca" and v["rdma_fabric_doca_version"] not in doca_releases:
        problems.append(
            f'rdma_fabric_doca_version is "{v["rdma_fabric_doca_version"]}", a DOCA release this collection has no '
            f"table for. Fix: one of {', '.join(doca_releases)}."
        )
    if stack == "doca" and v["rdma_fabric_doca_key_fingerprint"] == "":
        problems.append(
            "rdma_fabric_stack is doca but rdma_fabric_doca_key_fingerprint is empty: the DOCA repository is never "
            "trusted without its signing key pinned. Fix: the fingerprint of GPG-KEY-Mellanox.pub as NVIDIA publishes "
            "it."
        )
    interfaces = v["rdma_fabric_interfaces"]
    if not isinstance(interfaces, list):
        return [*problems, f"rdma_fabric_interfaces is {json.dumps(interfaces, default=str)}, not a list. Fix: one "
                           "entry per interface, e.g. [{name: ibp26s0, kind: ipoib}]."]  # fmt: skip
    for index, interface in enumerate(interfaces):
        problems += _interface_problems(index, interface)
    names = [i.get("name") for i in interfaces if isinstance(i, dict) and isinstance(i.get("name"), str)]
    for name in dict.fromkeys(n for n in names if names.count(n) > 1):
        problems.append(f"rdma_fabric_interfaces names {name} more than once. Fix: one entry per interface.")
    return problems


def _get(data, *keys):
    """data[key][key]..., None where a level is missing or no mapping."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _ports(hardware):
    """The RDMA ports a hardware profile expects (gpuops_hardware.infiniband.ports; 0 when it names none)."""
    return _whole(_get(hardware, "infiniband", "ports")) or 0


def fabric_hcas(hardware, devices):
    """NCCL_IB_HCA: the RDMA devices (ib_facts' devices) with a port on the profile's link layer (not, say, a
    BlueField's Ethernet bond on an InfiniBand node); none on a profile without RDMA ports."""
    if not _ports(hardware):
        return []
    layer = _get(hardware, "infiniband", "link_layer")
    return [
        device["name"]
        for device in devices or []
        if any(port.get("link_layer") == layer for port in device.get("ports") or [])
    ]


def network_tool(chosen, lines):
    """The tool the fabric interfaces are written for: rdma_fabric_network_tool, or for auto NetworkManager where it
    runs, else netplan where /etc/netplan holds the node's configuration, else systemd-networkd.

    lines: what preflight's read of the node printed (networkmanager=<state>, netplan_configs=<count>, has=<command>).
    """
    if chosen != "auto":
        return chosen
    if "networkmanager=active" in lines:
        return "networkmanager"
    if "has=netplan" in lines and "netplan_configs=0" not in lines:
        return "netplan"
    return "systemd-networkd"


def _gpudirect_problem(host, peer_name, hardware, peer):
    """Both ends of a GPUDirect bandwidth check need GPU memory; the peer's end is judged where the inventory knows
    its profile (a peer outside it is the peer check's problem)."""
    without = []
    if not _whole(_get(hardware, "gpu", "count")):
        without.append(f"{host} ({hardware.get('profile')})")
    theirs = peer.get("hardware")
    if peer_name != host and isinstance(theirs, dict) and not _whole(_get(theirs, "gpu", "count")):
        without.append(f"{peer_name} ({theirs.get('profile')})")
    if not without:
        return None
    return (
        f"rdma_fabric_perftest_gpudirect is required but the hardware profile of {' and '.join(without)} has no GPU "
        "(gpuops_hardware.gpu.count is 0): there is no GPU memory to measure with. Nothing was changed. Fix: a peer "
        "and a node of GPU profiles, or rdma_fabric_perftest_gpudirect: auto (host memory there, named in the result)."
    )


def _peer_problem(host, peer_name, hardware, peer):
    """Why the bandwidth peer cannot serve this node's ib_write_bw run, or None."""
    layer, theirs = _get(hardware, "infiniband", "link_layer"), _get(peer.get("hardware"), "infiniband", "link_layer")
    if peer_name == host:
        return "that is this node itself"
    if not peer.get("in_play"):
        return "not a host of this play"
    if not _ports(hardware):
        return f"the hardware profile {hardware.get('profile')} expects no RDMA ports"
    if theirs != layer:
        return f"its fabric is {theirs}, this one {layer}: ib_write_bw needs both ends on one link layer"
    return None


def _os_problems(host, variables, node, tables):
    """The node's OS against the stack: apt for the inbox stack, a directory of the DOCA release for DOCA."""
    stack, release = variables["rdma_fabric_stack"], _get(node, "os") or {}
    name = release.get("name") or "an unknown OS"
    if stack == "inbox" and release.get("package_manager") != "apt":
        return [
            "rdma_fabric_stack is inbox, which this collection installs with apt (Debian, Ubuntu: rdma-core, "
            f"ibverbs-providers, ibverbs-utils, infiniband-diags, perftest); {host} runs {name} (package manager "
            f"{release.get('package_manager')}). Nothing was changed. Fix: an apt-based node, or install the RDMA "
            "stack with the OS's own tools and set rdma_fabric_stack: none."
        ]
    version = variables["rdma_fabric_doca_version"]
    # A release without a table is input_problems'; its OS directories are unknown.
    if stack == "doca" and version in tables["doca_releases"] and not tables["doca_dir"]:
        return [
            f"rdma_fabric_stack is doca with rdma_fabric_doca_version {version}, which NVIDIA publishes for "
            f"{', '.join(tables['doca_releases'][version])}; {host} runs {name} ({release.get('id')}"
            f"{release.get('version_id')}). Nothing was changed. Fix: rdma_fabric_stack: inbox (the OS's own "
            "rdma-core), or a DOCA release published for this OS."
        ]
    return []


def _peermem_problem(host, stack, peermem, kernels):
    """Whether nvidia-peermem can be loaded: with DOCA, OFED is installed next and the driver rebuilt after it
    (install), so only a driver must exist here."""
    status = peermem.get("status")
    if status == "ready" or (stack == "doca" and status != "no_driver"):
        return None
    if status == "no_driver":
        return (
            f"rdma_fabric_peermem is true but {host} has no NVIDIA driver built by DKMS for its kernels "
            f"({', '.join(kernels)}): nvidia-peermem comes with the driver's build. Nothing was changed. Fix: run "
            "playbooks/nvidia_driver.yml first (site.yml runs it before this stage), or rdma_fabric_peermem: false for "
            "a node without GPUDirect RDMA."
        )
    return (
        f"{host}: nvidia-peermem is not usable: {'; '.join(peermem.get('problems') or [])}. Nothing was changed. Fix: "
        "rebuild the driver (playbooks/nvidia_driver.yml) after the RDMA stack is installed."
    )


def _doca(host, variables, node, reads):
    """(problem or None, the DOCA profile's version to install, reboot reasons) from the release's repository as
    preflight read it: its key against the pins first, since an untrusted index says nothing about the profile."""
    index, installed = reads["doca_index"], reads.get("doca_installed")
    problem = repositories.key_problem(
        host=host,
        index=index,
        pins="rdma_fabric_doca_key",
        fingerprint=variables["rdma_fabric_doca_key_fingerprint"],
        sha256=variables.get("rdma_fabric_doca_key_sha256") or "",
        fix="point gpuops_mirror_url at a mirror holding NVIDIA's key, or correct the pins.",
    )
    if problem:
        return problem, None, []
    plan = doca_plan(
        index.get("packages") or {},
        installed,
        variables["rdma_fabric_doca_profile"],
        variables["rdma_fabric_doca_version"],
        index["index_url"].rsplit("/", 1)[0] + "/",
        host,
    )
    if plan["problem"]:
        return plan["problem"], None, []
    # Decided now, before the install changes what is on disk. A container's kernel is its host's: no reboot.
    reason = (
        doca_reboot_reason(_get(reads, "fabric", "ib_core") or {}, installed, plan["version"], host)
        if _get(node, "capabilities", "own_kernel")
        else None
    )
    return (
        None,
        plan["version"],
        [f"{reason} (and an nvidia-peermem built against them) load only at the next boot"] if reason else [],
    )


def preflight(*, host, variables, hardware, node, reads, peer, tables):
    """rdma_fabric's preflight of one node, every problem at once: {problems, reboot_reasons, doca_version,
    network_tool, hcas}. A check whose input another problem makes meaningless (DOCA's OS for a release without a
    table, the peer's HCAs when the peer itself is wrong) does not run then.

    variables: the role's rdma_fabric_*; hardware: gpuops_hardware; node: os_facts' gpuops_os; reads: what preflight
    read, none of it changing anything - fabric (rdma_fabric_facts' facts), network (the network tool read's lines;
    None without interfaces), doca_index and doca_installed (repository_index's result for the release and the
    profile's installed version; None where DOCA's repository was not read: not DOCA, or a release or OS without a
    directory, or no key pinned), devices (ib_facts' devices; None on a profile without RDMA ports); peer: the
    bandwidth peer as hostvars show it - in_play, hardware (None outside the inventory), devices; tables: doca_releases
    (release -> OS directories), doca_dir (the node's directory of the release, "" when none), network_tools (tool ->
    the command it needs).

    reboot_reasons: why DOCA-OFED's install needs a reboot (the reboot gate's); doca_version: the profile's version
    to install (None without DOCA); network_tool: the tool the interfaces are written for ("" without interfaces);
    hcas: the node's fabric HCAs (NCCL_IB_HCA).
    """
    stack, peer_name = variables["rdma_fabric_stack"], variables["rdma_fabric_perftest_peer"]
    interfaces = variables["rdma_fabric_interfaces"]
    problems = input_problems(
        {**variables, "profile": hardware.get("profile")}, list(tables["doca_releases"]), _ports(hardware)
    )
    peer_problem = None
    if peer_name:
        if variables["rdma_fabric_perftest_gpudirect"] == "required":
            problems.append(_gpudirect_problem(host, peer_name, hardware, peer))
        peer_problem = _peer_problem(host, peer_name, hardware, peer)
        if peer_problem:
            problems.append(
                f'rdma_fabric_perftest_peer is "{peer_name}": {peer_problem}. Nothing was changed. Fix: an inventory '
                'host of the same hardware profile in this play, or rdma_fabric_perftest_peer: "".'
            )
    problems += _os_problems(host, variables, node, tables)
    tool = ""
    # An interfaces value that is no list is input_problems'; the read ran for any non-empty one.
    if isinstance(interfaces, list) and interfaces:
        chosen, lines = variables["rdma_fabric_network_tool"], reads.get("network") or []
        tool = network_tool(chosen, lines)
        command = tables["network_tools"][tool]
        if f"has={command}" not in lines:
            problems.append(
                f"rdma_fabric_interfaces names {len(interfaces)} interfaces for {tool} (rdma_fabric_network_tool: "
                f"{chosen}), but {host} has no {command}. Nothing was changed. Fix: rdma_fabric_network_tool set to "
                "the tool that owns this node's network (auto picks it), or install that tool."
            )
    # Without a stack, nvidia-peermem is input_problems' (nothing to register GPU memory with).
    if _true(variables["rdma_fabric_peermem"]) and stack != "none":
        kernels = _get(node, "kernel", "installed") or []
        problems.append(_peermem_problem(host, stack, _get(reads, "fabric", "peermem") or {}, kernels))
    doca_version, reboot_reasons = None, []
    if stack == "doca" and reads.get("doca_index") is not None:
        problem, doca_version, reboot_reasons = _doca(host, variables, node, reads)
        problems.append(problem)
    hcas = fabric_hcas(hardware, reads.get("devices"))
    if peer_name and not peer_problem:
        without = ([host] if not hcas else []) + (
            [peer_name] if not fabric_hcas(peer.get("hardware"), peer.get("devices")) else []
        )
        if without:
            problems.append(
                f'rdma_fabric_perftest_peer is "{peer_name}" but {" and ".join(without)} shows no RDMA device with a '
                f"port on {_get(hardware, 'infiniband', 'link_layer')}. Nothing was changed. Fix: bring the fabric up "
                '(verify without the bandwidth check names what is missing), or rdma_fabric_perftest_peer: "".'
            )
    return {
        # The checks give None for no problem.
        "problems": [p for p in problems if p],
        "reboot_reasons": reboot_reasons,
        "doca_version": doca_version,
        "network_tool": tool,
        "hcas": hcas,
    }


def package_steps(*, host, stack_packages, os_packages, packages):
    """What install does for the inbox stack, from preflight's package_info read of its packages and the OS tools':
    {problems, install, os_tools, hold, act}.

    install: the stack's packages as apt takes them (name=version: the installed version, else the candidate, so a
    converged node is never upgraded behind its hold) that are not installed at that version; os_tools: the OS tools
    (the configuration's commands) not installed, every one where the stack is installed first (its dependencies may
    bring some, and apt answers those without a change); hold: whether holding the stack changes anything (an
    install, or a package the read found not held); act: whether any step is to run. A package no source carries
    (neither installed nor a candidate) is a problem, before any change.
    """
    entry = {name: packages.get(name) or {} for name in (*stack_packages, *os_packages)}
    missing = [name for name, info in entry.items() if not info.get("installed") and not info.get("candidate")]
    if missing:
        problems = [
            f"{host}: no configured package source carries {', '.join(missing)}. Nothing was changed. Fix: Debian's "
            "main component in the package sources (stage 1 writes them), then run again."
        ]
        return {"problems": problems, "install": [], "os_tools": [], "hold": False, "act": False}
    pins = [f"{name}={entry[name].get('installed') or entry[name].get('candidate')}" for name in stack_packages]
    install = apt.pending(pins, packages)
    os_tools = list(os_packages) if install else apt.pending(list(os_packages), packages)
    hold = bool(install) or osinfo.unheld(list(stack_packages), packages) != []
    return {
        "problems": [],
        "install": install,
        "os_tools": os_tools,
        "hold": hold,
        "act": bool(install or os_tools or hold),
    }


def port_report(node, hardware, facts):
    """The node's RDMA ports (ib_facts' facts) against its profile: {summary, problems}, problems being the
    error and warning findings ({severity, code, message}), errors first."""
    expected = hardware.get("infiniband", {})
    layer = expected.get("link_layer")
    ports = [p for d in facts.get("devices", []) for p in d.get("ports", [])]
    active = [p for p in ports if p.get("state") == "active" and (layer is None or p.get("link_layer") == layer)]
    rank = {"error": 0, "warning": 1}
    problems = sorted(
        ({"severity": f["severity"], "code": f["code"], "message": f["message"]}
         for f in facts.get("findings", []) if f["severity"] in rank),
        key=lambda p: rank[p["severity"]],
    )  # fmt: skip
    rates = "/".join(f"{r:g}" for r in sorted({p["rate_gbps"] for p in active if p.get("rate_gbps") is not None}))
    simulated = facts.get("simulated")
    mark = f"[SIMULATED {simulated.get('profile', '')}] " if isinstance(simulated, dict) else ""
    summary = (f"{mark}{node} ({hardware.get('profile')}): {len(active)}/{expected.get('ports')} {layer or 'RDMA'} "
               f"ports active at {rates or '-'} Gb/s")  # fmt: skip
    return {"summary": summary, "problems": problems}


def _mtu(interface, settings):
    default = settings["ipoib_mtu"] if interface.get("kind") == "ipoib" else settings["roce_mtu"]
    return interface.get("mtu", default)


def _tool_problems(settings, seen):
    """How the network tool's own reading of the interface files (netplan get's ethernets, parsed, {} for none;
    nmcli's connection names) differs from the inventory; [] when the tool was not asked (None: networkd)."""
    problems = []
    tool = settings["tool"]
    for interface in settings["interfaces"]:
        name, mtu = interface["name"], _mtu(interface, settings)
        if tool == "netplan" and seen is not None:
            found = seen.get(name) if isinstance(seen, dict) else None
            if str(found.get("mtu") if isinstance(found, dict) else None) != str(mtu):
                problems.append(f"netplan reads {name} as {json.dumps(found)}, not with MTU {mtu}")
        elif tool == "networkmanager" and seen is not None and settings["nm_prefix"] + name not in seen:
            problems.append(f"NetworkManager has not loaded the connection {settings['nm_prefix']}{name}")
    return problems


def verify_problems(*, host, settings, node, reads):
    """rdma_fabric's verification of one node: {failures, not_applicable, summary} (summary: the passed message).

    settings: stack, peermem (bool), interfaces, ipoib_mtu, roce_mtu, tool (preflight's network tool), nm_prefix,
    held_packages, doca (release, profile and the version installed; None without DOCA), state_file, perftest_peer
    ("" without), perftest_min, profile_ports (gpuops_hardware's RDMA port count), qos_units (the RoCE QoS units
    wanted); node: os_facts' gpuops_os, read by preflight or, where the run changed the node, again (units: at least
    the tool's and the QoS units; a read of more is judged on those); reads: packages (package_info's, {} without a
    stack; judged on held_packages), peermem (rdma_fabric_facts' peermem, {} when off), ports
    (port_report's, None when not judged), state (what this run decided and managed_paths wrote to the state file:
    not read again), perftest_said and perftest_passed, tool (the network tool's reading: netplan's ethernets, {} for
    none, or nmcli's connection names; None when not read).
    """
    caps = _get(node, "capabilities") or {}
    own_kernel = bool(caps.get("own_kernel"))
    read = reads.get("packages") or {}
    packages = {name: read.get(name) or {} for name in settings["held_packages"]} if read else {}
    peermem = reads.get("peermem") or {}
    ports = reads.get("ports")
    failures = [f"not installed: {name}" for name, p in packages.items() if not p.get("installed")]
    failures += [f"not held: {name}" for name, p in packages.items() if p.get("installed") and not p.get("held")]
    failures += [p["message"] for p in (ports or {}).get("problems", [])]
    if settings["peermem"] and own_kernel and not peermem.get("loaded"):
        failures.append(
            f"nvidia-peermem ({peermem.get('module')}) is not loaded: GPUDirect RDMA is off and NCCL stages through "
            "host memory"
        )
    if settings["peermem"] and peermem.get("status") != "ready":
        failures.append(f"nvidia-peermem is {peermem.get('status')}: {'; '.join(peermem.get('problems') or [])}")
    memlock = _get(node, "limits", "systemd_default_memlock")
    if caps.get("memlock_raisable") and memlock != "infinity":
        failures.append(
            f"services do not get unlimited locked memory (DefaultLimitMEMLOCK={memlock}): RDMA memory registration "
            "fails. Fix: stage 1 with os_baseline_memlock_unlimited: true"
        )
    units = _get(node, "units") or {}
    tool_unit = "NetworkManager.service" if settings["tool"] == "networkmanager" else "systemd-networkd.service"
    wanted = ([tool_unit] if settings["interfaces"] else []) + list(settings["qos_units"])
    failures += [f"not enabled: {name}" for name in wanted if not (units.get(name) or {}).get("enabled")]
    said, peer = reads.get("perftest_said") or "", settings["perftest_peer"]
    if peer and not reads.get("perftest_passed"):
        minimum = settings["perftest_min"]
        failures.append(said + (f", expected at least {minimum} Gb/s" if "averaged" in said else ""))
    state = reads.get("state")
    failures += _tool_problems(settings, reads.get("tool"))
    not_applicable = []
    if not own_kernel:
        not_applicable += ["nvidia-peermem loaded"] if settings["peermem"] else []
        not_applicable += ["interfaces applied"] if settings["interfaces"] else []
        not_applicable += ["RoCE QoS applied"] if settings["qos_units"] else []
    not_applicable += [] if caps.get("memlock_raisable") else ["service memlock limit"]
    return {
        "failures": failures,
        "not_applicable": not_applicable,
        "summary": _summary(host, settings, own_kernel, peermem, ports, said, state, not_applicable),
    }


def _summary(host, settings, own_kernel, peermem, ports, said, state, not_applicable):
    stack = settings["stack"]
    held = ""
    if stack != "none":
        doca = settings.get("doca")
        held = f" ({len(settings['held_packages'])} packages held at their versions" + (
            f", DOCA {' '.join(str(part) for part in doca)})" if stack == "doca" and doca else ")"
        )
    if ports is not None:
        ports_said = ports.get("summary")
    else:
        ports_said = "no RDMA ports expected" if settings["profile_ports"] == 0 else "ports not checked"
    gpudirect = (
        f"nvidia-peermem ({peermem.get('module')}) at boot" + (", loaded" if own_kernel else "")
        if settings["peermem"]
        else "off (rdma_fabric_peermem: false)"
    )
    interfaces = settings["interfaces"]
    tool = f" for {settings['tool']}" if interfaces else ""
    perftest = f" {said} (at least {settings['perftest_min']});" if settings["perftest_peer"] else ""
    gid_index = json.dumps((state or {}).get("gid_index"))
    host_owned = (
        f"; not applicable: {', '.join(not_applicable)} (this node's kernel and network devices belong to its "
        "container host)"
        if not_applicable
        else ""
    )
    return (
        f"{host} passed rdma_fabric verification: stack {stack}{held}; {ports_said}; GPUDirect RDMA {gpudirect}; "
        f"{len(interfaces)} fabric interfaces{tool};{perftest} state in {settings['state_file']} "
        f"(gid_index {gid_index}){host_owned}"
    )


# The files the stage writes are rendered here whole, so that one managed_paths call lays them all out (and removes
# those no longer wanted), and what a run needs afterwards follows from what that call changed.
HEADER = "# Managed by gpuops.bringup (rdma_fabric): edit the inventory, not this file.\n"
NO_ROUTE = "# A fabric link carries RDMA and NCCL's bootstrap, not a default route"
# Ansible's to_uuid namespace: a connection's UUID stays what the role's template gave it.
UUID_NAMESPACE = uuid.UUID("361E6D51-FAEC-444A-9079-341386DA8E2E")
SYSTEMD_DIR = "/etc/systemd/system"


def _lines(lines):
    return "".join(line + "\n" for line in lines)


def _ipoib(interface):
    return interface.get("kind") == "ipoib"


def networkd_file(interface, settings):
    """A fabric interface as a systemd-networkd .network file."""
    lines = ["[Match]", f"Name={interface['name']}", "", "[Link]", f"MTUBytes={_mtu(interface, settings)}",
             "RequiredForOnline=no", "", "[Network]"]  # fmt: skip
    lines += [f"Address={interface['address']}"] if "address" in interface else []
    lines += [NO_ROUTE + ".", "LinkLocalAddressing=no", "IPv6AcceptRA=no"]
    lines += ["", "[IPoIB]", f"Mode={interface.get('ipoib_mode', 'datagram')}"] if _ipoib(interface) else []
    return HEADER + _lines(lines)


def nm_file(interface, host, settings):
    """A fabric interface as a NetworkManager keyfile connection, its UUID derived from the host and interface."""
    name = interface["name"]
    section = "infiniband" if _ipoib(interface) else "ethernet"
    connection = uuid.uuid5(UUID_NAMESPACE, f"{host} {name}")
    lines = ["[connection]", f"id={settings['nm_prefix']}{name}", f"uuid={connection}", f"type={section}",
             f"interface-name={name}", "autoconnect=true", "", f"[{section}]",
             f"mtu={_mtu(interface, settings)}"]  # fmt: skip
    lines += [f"transport-mode={interface.get('ipoib_mode', 'datagram')}"] if _ipoib(interface) else []
    lines += ["", NO_ROUTE + ".", "[ipv4]"]
    if "address" in interface:
        lines += ["method=manual", f"address1={interface['address']}", "never-default=true"]
    else:
        lines += ["method=disabled"]
    lines += ["", "[ipv6]", "method=disabled"]
    return HEADER + _lines(lines)


def netplan_file(interfaces, settings):
    """Every fabric interface in one netplan file (IPoIB ports are ethernets to netplan, with their mode)."""
    lines = ["# IPoIB ports are ethernets to netplan, with their infiniband-mode.", "network:", "  version: 2",
             "  ethernets:"]  # fmt: skip
    for interface in interfaces:
        lines += [f"    {interface['name']}:", "      renderer: networkd", f"      mtu: {_mtu(interface, settings)}"]
        lines += [f"      addresses: [{interface['address']}]"] if "address" in interface else []
        lines += ["      " + NO_ROUTE + ";", "      # boot does not wait for it.", "      link-local: []",
                  "      accept-ra: false", "      optional: true"]  # fmt: skip
        lines += [f"      infiniband-mode: {interface.get('ipoib_mode', 'datagram')}"] if _ipoib(interface) else []
    return HEADER + _lines(lines)


def qos_unit_name(interface, settings):
    return f"{settings['qos_prefix']}{interface['name']}.service"


def _device_unit(name):
    return f"sys-subsystem-net-devices-{name}.device"


def qos_unit_file(interface, settings):
    """The oneshot unit that applies RoCE QoS to an interface whenever its link appears."""
    name, dcb = interface["name"], settings["dcb"]
    dscp, priority, ecn = settings["roce_dscp"], settings["roce_priority"], settings["roce_ecn"]
    device = _device_unit(name)
    lines = [
        f"# RoCE QoS for {name}, applied whenever the link appears: DSCP",
        f"# {dscp} -> priority {priority} (mlx5 trusts DSCP once a DSCP mapping is set), PFC on",
        f"# priority {priority} only" + (", ECN (DCQCN) on it as notification and reaction point" if ecn else "") + ".",
        "[Unit]", f"Description=RoCE QoS for {name} (gpuops.bringup)", f"BindsTo={device}", f"After={device}", "",
        "[Service]", "Type=oneshot", "RemainAfterExit=yes",
        f"ExecStart={dcb} app replace dev {name} dscp-prio {dscp}:{priority}",
        f"ExecStart={dcb} pfc set dev {name} prio-pfc all:off {priority}:on",
    ]  # fmt: skip
    if ecn:
        lines.append(
            f"ExecStart=/bin/sh -c 'echo 1 > /sys/class/net/{name}/ecn/roce_np/enable/{priority} && "
            f"echo 1 > /sys/class/net/{name}/ecn/roce_rp/enable/{priority}'"
        )
    lines += ["", "[Install]", f"WantedBy={device}"]
    return HEADER + _lines(lines)


def _nm_path(interface, settings):
    return f"{settings['nm_dir']}/{settings['nm_prefix']}{interface['name']}.nmconnection"


def _qos_interfaces(settings):
    """The interfaces that get a RoCE QoS unit: the RoCE ones, with rdma_fabric_roce_qos."""
    return [i for i in settings["interfaces"] if i.get("kind") == "roce"] if settings["roce_qos"] else []


def _file(path, content, mode="0644"):
    return {"path": path, "state": "file", "mode": mode, "content": content}


def tool_of(path, settings):
    """Which network tool a file of settings' owned patterns belongs to ("qos" for a QoS unit), or None."""
    return next((tool for tool, pattern in settings["owned"].items() if fnmatch.fnmatchcase(path, pattern)), None)


def configuration_paths(*, host, settings, peermem_module, state, owned):
    """managed_paths entries of everything the stage leaves on a node: nvidia-peermem at boot, the fabric interfaces
    for the chosen network tool, a RoCE QoS unit per RoCE interface enabled at its link-up (the link systemctl enable
    makes), and the state file the nccl_tests role reads; files no longer wanted (owned: what rdma_fabric_facts
    found at settings' owned patterns) are removed, a QoS unit with its enablement.

    settings: tool ("" without interfaces), interfaces, ipoib_mtu, roce_mtu, peermem, roce_qos, roce_dscp,
    roce_priority, roce_ecn, dcb, modules_load, networkd_dir, networkd_prefix, netplan_file, nm_dir, nm_prefix,
    qos_prefix, state_file, owned (network tool or "qos" -> the glob its files match); state: what the state file
    records.
    """
    entries = [
        _file(
            settings["modules_load"],
            HEADER + "# GPUDirect RDMA: the NVIDIA driver's peer-memory client, loaded at boot by\n"
            "# systemd-modules-load (after the driver and the RDMA stack it was built for).\n"
            f"{peermem_module}\n",
        )
        if settings["peermem"]
        else {"path": settings["modules_load"], "state": "absent"}
    ]
    tool, interfaces = settings["tool"], settings["interfaces"]
    if tool == "systemd-networkd":
        entries += [
            _file(
                f"{settings['networkd_dir']}/{settings['networkd_prefix']}{i['name']}.network",
                networkd_file(i, settings),
            )
            for i in interfaces
        ]
    elif tool == "netplan":
        # netplan warns about (and newer releases refuse) files others can read.
        entries.append(_file(settings["netplan_file"], netplan_file(interfaces, settings), "0600"))
    elif tool == "networkmanager":
        # NetworkManager ignores keyfiles others can read.
        entries += [_file(_nm_path(i, settings), nm_file(i, host, settings), "0600") for i in interfaces]
    for interface in _qos_interfaces(settings):
        unit = f"{SYSTEMD_DIR}/{qos_unit_name(interface, settings)}"
        entries += [
            _file(unit, qos_unit_file(interface, settings)),
            {"path": f"{SYSTEMD_DIR}/{_device_unit(interface['name'])}.wants/{posixpath.basename(unit)}",
             "state": "link", "src": unit},
        ]  # fmt: skip
    wanted = {entry["path"] for entry in entries if entry["state"] != "absent"}
    for path in sorted(set(owned) - wanted):
        entries.append({"path": path, "state": "absent"})
        if tool_of(path, settings) == "qos":
            name = posixpath.basename(path)[len(settings["qos_prefix"]) : -len(".service")]
            entries.append({"path": f"{SYSTEMD_DIR}/{_device_unit(name)}.wants/{posixpath.basename(path)}",
                            "state": "absent"})  # fmt: skip
    entries += [
        {"path": posixpath.dirname(settings["state_file"]), "state": "directory", "mode": "0755"},
        _file(settings["state_file"], json.dumps(state, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"),
    ]
    return entries


def configuration_steps(*, settings, changed_paths, own_kernel, netdevs):
    """What the node needs after managed_paths laid out configuration_paths (changed_paths: its result).

    {networkd: "reloaded" (its files changed), "started" (it owns the interfaces) or None, netplan_generate,
    netplan_apply, nm_reload (bool each), nm_up (the connections written, to bring up), qos_reload (a unit file or its
    enablement changed: systemd reads the units again), qos_apply ([{unit, state: restarted|started}] of the RoCE
    interfaces the node has), apply (whether any of them is asked for: the role's apply.yml takes them)}. What takes
    effect now needs a node that owns its kernel and network devices; the configuration tools' own reads (netplan
    generate, nmcli connection reload) do not.
    """
    touched = {tool_of(path, settings) for path in changed_paths}
    tool = settings["tool"]
    networkd = None
    if own_kernel and (tool == "systemd-networkd" or "systemd-networkd" in touched):
        networkd = "reloaded" if "systemd-networkd" in touched else "started"
    nm_written = [i["name"] for i in settings["interfaces"] if _nm_path(i, settings) in changed_paths]
    enablement = f"{SYSTEMD_DIR}/{_device_unit('*')}.wants/{settings['qos_prefix']}*.service"
    qos_changed = "qos" in touched or any(fnmatch.fnmatchcase(path, enablement) for path in changed_paths)
    steps = {
        "networkd": networkd,
        "netplan_generate": "netplan" in touched,
        "netplan_apply": own_kernel and "netplan" in touched,
        "nm_reload": "networkmanager" in touched,
        "nm_up": nm_written if own_kernel and tool == "networkmanager" else [],
        "qos_reload": qos_changed,
        "qos_apply": [
            {
                "unit": qos_unit_name(i, settings),
                "state": "restarted" if f"{SYSTEMD_DIR}/{qos_unit_name(i, settings)}" in changed_paths else "started",
            }
            for i in _qos_interfaces(settings)
            if own_kernel and i["name"] in netdevs
        ],
    }
    return {**steps, "apply": any(steps.values())}
