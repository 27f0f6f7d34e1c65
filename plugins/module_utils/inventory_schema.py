# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rack inventory contract, checked before any host is touched.

Every host belongs to exactly one rack group (rack_*) and one hardware
profile group; the profile (hardware_profiles: one the collection ships, or
the site's) is the host's gpuops_hardware, the expectations later stages
verify against (GPU model and count, NVSwitch, InfiniBand ports, rate and link
layer).
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance, hardware_profiles

# The cluster's control plane, which stage 4's nodes join: in the inventory, but no rack node.
CONTROL_PLANE_GROUP = "kube_control_plane"
# Where a whole profile is shown, and the profiles a host may name.
FIX = hardware_profiles.FIX
_BUILTIN = ", ".join(hardware_profiles.BUILTIN)
_RACK_GROUP = re.compile(r"^rack_[a-z0-9_]+\Z")
# What SSH can connect to: a host name, an IPv4 address, or an IPv6 address (in brackets or not).
_HOST = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})|\[?[0-9A-Fa-f:.]{2,45}(%[A-Za-z0-9_.-]{1,15})?\]?")


def node_hosts(groups):
    """The host pattern of the plays that act on rack nodes: every host but the control plane's. The group is named
    only where the inventory has it: a pattern naming an unknown group makes Ansible warn on every play."""
    return f"all:!{CONTROL_PLANE_GROUP}" if CONTROL_PLANE_GROUP in groups else "all"


def check_hardware(where, hardware):
    """Problems in one gpuops_hardware mapping, each naming the key, the value and the fix."""
    if not isinstance(hardware, dict):
        return [
            f"{where}: gpuops_hardware is {hardware!r}, expected a mapping; "
            f"put the host in a profile group instead ({_BUILTIN}) or define the mapping whole ({FIX})"
        ]
    problems = [f"{where}: {p}" for p in hardware_profiles.field_problems(hardware)]
    # The acceptance stage's keys (gates, firmware, required checks): a wrong type fails every stage's inventory
    # check, before any node is touched.
    problems += [f"{where}: {p}" for p in acceptance.hardware_problems(hardware)]
    gpu = hardware.get("gpu") if isinstance(hardware.get("gpu"), dict) else {}
    if gpu.get("nvswitch") is True and gpu.get("count") in (0, 1):
        problems.append(
            f"{where}: gpuops_hardware.gpu.nvswitch is true with gpu.count {gpu.get('count')}; "
            "NVSwitch systems carry 4 or 8 GPUs: fix the count or set nvswitch: false"
        )
    return problems


def _endpoint(where, address, port, problems):
    """(ansible_host, ansible_port) when both are usable (None for unset), else None with the problem recorded."""
    if address is not None and not (isinstance(address, str) and _HOST.fullmatch(address)):
        problems.append(
            f"{where}: ansible_host is {address!r}, not a host name or address; give one name or address as a "
            "string, e.g. ansible_host: 10.0.0.11"
        )
        return None
    if isinstance(port, str) and port.isascii() and port.isdigit():
        port = int(port)
    if port is not None and not (hardware_profiles.is_int(port) and 1 <= port <= 65535):
        problems.append(f"{where}: ansible_port is {port!r}, not a port; give a number from 1 to 65535, e.g. 22")
        return None
    return address, port


def _check_host(host, data, profile_groups, problems, found):
    """The problems of one host (appended to problems); its rack, profile and endpoint recorded in found."""
    groups = data.get("group_names") or []
    where = f"host {host}"
    rack_groups = [g for g in groups if _RACK_GROUP.match(g)]
    if len(rack_groups) != 1:
        problems.append(
            f"{where} is in {len(rack_groups)} rack groups ({', '.join(rack_groups) or 'none'}); "
            "put it in exactly one group named rack_<id>"
        )
    else:
        found["racks"].setdefault(rack_groups[0], []).append(host)
    hardware = data.get("gpuops_hardware")
    # {}: hardware_profiles found no profile group for the host, or several (reported by the caller, not here).
    if hardware is None or hardware == {}:
        if len(set(groups) & profile_groups) <= 1:
            problems.append(
                f"{where} has no hardware profile: add it to one hardware profile group, a profile the collection "
                f"ships ({_BUILTIN}) or one of gpuops_hardware_profiles"
            )
        return
    wrong = check_hardware(where, hardware)
    problems += wrong
    if wrong:
        return
    profile = hardware["profile"]
    if profile not in groups:
        problems.append(
            f"{where}: gpuops_hardware.profile is {profile!r} but the host is not in group {profile!r}; "
            "assign hardware profiles through group membership, not host variables"
        )
    found["profiles"].setdefault(profile, []).append(host)
    endpoint = _endpoint(where, data.get("ansible_host"), data.get("ansible_port"), problems)
    if endpoint:
        found["endpoints"].setdefault((endpoint[0] or host, endpoint[1] or 22), []).append(host)


def check_play(hosts, profile_groups=(), play_hosts=None):
    """(problems, elsewhere, summary): the inventory's problems that concern a host of play_hosts (all of them when
    None), and those that concern only other hosts (a run limited to some nodes warns of them, and goes on).

    hosts maps each host name to {"group_names": [...], "gpuops_hardware": ...,
    "ansible_host": ..., "ansible_port": ...}. profile_groups names the groups
    that are profiles besides the collection's (the site's, and those whose
    group_vars define gpuops_hardware); any group that is some host's effective
    profile counts too.
    """
    owned = []
    found = {"racks": {}, "profiles": {}, "endpoints": {}}
    profile_groups = set(profile_groups) | set(hardware_profiles.BUILTIN)
    for host in sorted(hosts):
        problems = []
        _check_host(host, hosts[host], profile_groups, problems, found)
        owned += [((host,), problem) for problem in problems]
    known = set(found["profiles"]) | profile_groups
    for host in sorted(hosts):
        in_profiles = sorted(known & set(hosts[host].get("group_names") or []))
        if len(in_profiles) > 1:
            owned.append(((host,), f"host {host} is in several hardware profile groups ({', '.join(in_profiles)}); "
                                   "a host has exactly one profile: remove it from all but one"))  # fmt: skip
    for (address, port), names in sorted(found["endpoints"].items(), key=lambda item: str(item[0])):
        if len(names) > 1:
            owned.append((tuple(names), f"hosts {', '.join(names)} all connect to {address}:{port}; "
                                        "each host needs its own ansible_host (or ansible_port)"))  # fmt: skip
    summary = {
        "hosts": len(hosts),
        "racks": {name: sorted(members) for name, members in sorted(found["racks"].items())},
        "profiles": {name: sorted(members) for name, members in sorted(found["profiles"].items())},
    }
    play = set(hosts if play_hosts is None else play_hosts)
    problems = [problem for names, problem in owned if play & set(names)]
    elsewhere = [problem for names, problem in owned if not play & set(names)]
    return problems, elsewhere, summary


def check_inventory(hosts, profile_groups=()):
    """(problems, summary) of the whole inventory (check_play with every host in play)."""
    problems, _elsewhere, summary = check_play(hosts, profile_groups)
    return problems, summary
