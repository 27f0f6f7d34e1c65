# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance stage's input check (a node's profile and the role's check lists, before anything is read), its
gates by profile name for the nccl_tests stage, and the plans and records of its bandwidth passes."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance, acceptance_pairs, acceptance_results
from ansible_collections.gpuops.bringup.plugins.module_utils.acceptance import input_problems, nccl_gates_by_profile
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import facts_of, mapping, plain


def _acceptance_input_problems(hardware, required=None, optional=None, system_serial=None):
    return input_problems(plain(hardware), plain(required), plain(optional), plain(system_serial))


def _acceptance_nccl_gates(profiles):
    return nccl_gates_by_profile(plain(list(profiles or [])))


def _acceptance_bandwidth_member(node, read, hardware, group_names):
    """This node as the bandwidth passes plan with it, or None where it does not take part (not read, or its profile
    has no RDMA ports). Each node makes its own, with its own view of its variables: play variables (a
    gpuops_hardware given there) do not reach another node's hostvars."""
    read, hardware = plain(read or {}), plain(hardware or {})
    if not isinstance(read.get("evidence"), dict) or acceptance.CHECKS["fabric.bandwidth"][1](hardware):
        return None
    rack = acceptance_results.rack_of(plain(group_names))
    return acceptance.bandwidth_member(str(node), rack, read["evidence"], hardware)


def _acceptance_bandwidth_members(hosts, hostvars):
    """The play's nodes that take part in the bandwidth passes: their __acceptance_bw_member, in play order."""
    return facts_of(hosts, hostvars, "__acceptance_bw_member")


def _acceptance_bandwidth_plan(members, entries, pass_number):
    return acceptance_pairs.plan(plain(list(members or [])), plain(list(entries or [])), int(pass_number))


def _acceptance_bandwidth_entries(roles, hostvars, pass_number):
    roles = plain(mapping(roles, "a round's roles", "acceptance_bandwidth_entries"))
    clients = {h: plain(hostvars[h].get("__acceptance_bw_measured")) for h, r in roles.items() if r["role"] == "client"}
    servers = {h: plain(hostvars[h].get("__acceptance_bw_served")) for h, r in roles.items() if r["role"] == "server"}
    return acceptance_pairs.entries_of(roles, clients, servers, int(pass_number))


def _acceptance_bandwidth_record(node, members, entries, why_not=None):
    return acceptance_pairs.record(str(node), plain(list(members or [])), plain(list(entries or [])),
                                   plain(why_not) or None)  # fmt: skip


def _acceptance_kubernetes_evidence(reads, joins, kubeconfig, name, label_prefix):
    return acceptance.kubernetes_evidence(bool(joins), plain(list(reads or [])), str(kubeconfig or ""), str(name),
                                          str(label_prefix))  # fmt: skip


def _acceptance_kubernetes_mark_patch(evidence, verdict, label_prefix):
    return acceptance.kubernetes_mark(plain(evidence), str(verdict), str(label_prefix))


class FilterModule:
    def filters(self):
        return {
            "acceptance_input_problems": _acceptance_input_problems,
            "acceptance_nccl_gates": _acceptance_nccl_gates,
            "acceptance_bandwidth_member": _acceptance_bandwidth_member,
            "acceptance_bandwidth_members": _acceptance_bandwidth_members,
            "acceptance_bandwidth_plan": _acceptance_bandwidth_plan,
            "acceptance_bandwidth_entries": _acceptance_bandwidth_entries,
            "acceptance_bandwidth_record": _acceptance_bandwidth_record,
            "acceptance_kubernetes_evidence": _acceptance_kubernetes_evidence,
            "acceptance_kubernetes_mark_patch": _acceptance_kubernetes_mark_patch,
        }
