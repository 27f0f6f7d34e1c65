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

import ipaddress
import json
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, repositories

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
