# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_tests role's decisions (module_utils/nccl_tests_plan, nccl_tests_pairs) as filters."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    acceptance,
    acceptance_results,
    nccl_tests_pairs,
    nccl_tests_plan,
)
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import facts_of, mapping, plain


def _fields(value, what, keys):
    """The mapping's keys, each given: a missing one would otherwise be read as an empty table or read."""
    found = plain(mapping(value, what, "nccl_tests_preflight"))
    missing = [key for key in keys if key not in found]
    if missing:
        raise AnsibleFilterError(f"gpuops.bringup.nccl_tests_preflight needs {what} with {', '.join(missing)}")
    return {key: found[key] for key in keys}


def _preflight(params, host, inventory, tables, reads):
    """The node's preflight: {problems}, every one at once (module_utils nccl_tests_plan.preflight)."""
    inventory = _fields(
        inventory, "the inventory's values", ("hardware", "published", "profiles", "groups", "play_hosts")
    )
    tables = _fields(tables, "the role's tables", ("supported", "nccl_packages", "mpi_packages"))
    reads = _fields(reads, "the node's reads", ("account", "os", "sources", "gpu"))
    return nccl_tests_plan.preflight(
        host=str(host),
        params=plain(mapping(params, "the role's variables", "nccl_tests_preflight")),
        hardware=inventory["hardware"] or {},
        published=inventory["published"] or {},
        profiles=list(inventory["profiles"] or []),
        groups=inventory["groups"] or {},
        play_hosts=list(inventory["play_hosts"] or []),
        account=reads["account"],
        release=mapping(reads["os"], "os_facts' gpuops_os.os", "nccl_tests_preflight"),
        sources=reads["sources"],
        gpu_read=mapping(reads["gpu"], "gpu_facts' registered result", "nccl_tests_preflight"),
        **tables,
    )


def _fabric_env(state, infiniband, hardware, overrides):
    return nccl_tests_plan.fabric_env(state or None, infiniband or None, hardware or {}, overrides or {})


def _report(runs, name, kind, profile, simulated, fabric, hosts=None, pairs=None):
    return nccl_tests_plan.report(name, kind, profile, simulated, fabric, list(runs or []), hosts, plain(pairs) or None)


def _plan_runs(stored, benchmarks, rerun, node_inputs, group_inputs=None, group=""):
    return nccl_tests_plan.plan_runs(stored or {}, list(benchmarks), rerun, node_inputs, group_inputs or None, group)


def _records(runs, results, measured_at, gate, metric, gdr_mode, gdr_expected=None):
    return nccl_tests_plan.records(list(runs), list(results or []), measured_at, gate, metric, gdr_mode, gdr_expected)


def _pair_member(node, pairs, group_names, address, hardware):
    """This node as the pairs know it (its rack: its first rack_* group; its gate: the profile's
    nccl_pair_busbw_gbps, else the one published for its GPUs), or None where nccl_tests_pairs is false (also given
    as a string). Each node makes its own, as play and extra variables do not reach another node's hostvars."""
    if not boolean(plain(pairs), strict=False):
        return None
    hardware = plain(hardware or {})
    return nccl_tests_pairs.member(
        str(node), acceptance_results.rack_of(plain(group_names)), str(address), hardware["gpu"]["count"],
        acceptance.gates(hardware)[0].get("nccl_pair_busbw_gbps"), hardware.get("profile"),
    )  # fmt: skip


def _pair_members(hosts, hostvars):
    """The members of the pairs (their __nccl_tests_pair_member), in play order."""
    return facts_of(hosts, hostvars, "__nccl_tests_pair_member")


def _pair_inputs(members, args, env, versions):
    return nccl_tests_pairs.inputs(plain(list(members)), plain(list(args)), plain(env), plain(versions))


def _pair_kept(wanted, hostvars, rerun):
    wanted = plain(wanted)
    stored = {m["node"]: plain(hostvars[m["node"]].get("__nccl_tests_stored") or {}) for m in wanted["members"]}
    return nccl_tests_pairs.kept(stored, wanted, rerun)


def _pair_plan(members, entries, pass_number, config_dir):
    return nccl_tests_pairs.plan(plain(list(members)), plain(list(entries or [])), int(pass_number), str(config_dir))


def _pair_report(node, record):
    """The node's part of the pairs from the run's record (members and entries), None without one."""
    measured = (plain(record) or {}).get("measurement") or {}
    if not measured.get("entries"):
        return None
    return nccl_tests_pairs.report(str(node), measured["members"], measured["entries"])


def _pair_entries(round_pairs, results, pass_number, measured_at):
    return nccl_tests_pairs.entries_of(plain(list(round_pairs)), plain(list(results or [])), int(pass_number),
                                       str(measured_at))  # fmt: skip


class FilterModule:
    def filters(self):
        return {
            "nccl_tests_preflight": _preflight,
            "nccl_tests_fabric_env": _fabric_env,
            "nccl_tests_report": _report,
            "nccl_tests_plan_runs": _plan_runs,
            "nccl_tests_records": _records,
            "nccl_tests_pair_member": _pair_member,
            "nccl_tests_pair_members": _pair_members,
            "nccl_tests_pair_inputs": _pair_inputs,
            "nccl_tests_pair_kept": _pair_kept,
            "nccl_tests_pair_plan": _pair_plan,
            "nccl_tests_pair_entries": _pair_entries,
            "nccl_tests_pair_report": _pair_report,
        }
