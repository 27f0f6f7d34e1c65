# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""all_reduce_perf between pairs of the play's nodes, pass after pass, a failed pair's failure put on its node.

A run across the whole rack says that something is slow, not what. The nccl_tests role runs all_reduce_perf on two
nodes at a time over all their GPUs (mpirun from one launcher, several pairs at once where no node is in two); the
pairs of a pass and the isolation of a failed pair's node are module_utils/acceptance_pairs' (one rail: the whole
fabric). Every node keeps the run's whole record, so the acceptance stage judges a node alone: its outcome depends on
whether its partners passed with others. Pure functions; the role calls them through its filters.
"""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance_pairs, nccl_tests_plan

BENCHMARK = "all_reduce_perf"
KEY = f"pairs/{BENCHMARK}"
RAIL = "all"


def member(node, rack, address, gpus, gate, profile):
    """One node of the pairs as the plan and the record know it."""
    return {"node": node, "rack": rack, "address": address, "gpus": int(gpus), "gate_gbps": gate, "profile": profile}


def inputs(members, args, env, versions):
    """What a kept record must match to stand: the same nodes (racks, addresses, GPUs, gates), arguments,
    environment and versions. A changed gate plans other passes, so it is an input too."""
    return {"benchmark": BENCHMARK, "members": members, "args": list(args), "env": env, "versions": versions}


def kept(stored, wanted, rerun):
    """The kept record's entries when every member keeps one of these inputs, else None (the passes run).

    stored: {node: that node's results.json content}."""
    if rerun:
        return None
    records = [(stored.get(m["node"]) or {}).get(KEY) for m in wanted["members"]]
    if not records or any(not isinstance(r, dict) or r.get("inputs") != wanted for r in records):
        return None
    entries = [r["measurement"].get("entries") if isinstance(r.get("measurement"), dict) else None for r in records]
    if any(not isinstance(e, list) for e in entries) or any(e != entries[0] for e in entries):
        return None
    return entries[0]


def gate_of(members, a, b):
    """The lower of the two nodes' gates (either may have none), None when neither has one."""
    by_node = {m["node"]: m for m in members}
    found = [by_node[n]["gate_gbps"] for n in (a, b) if by_node[n]["gate_gbps"] is not None]
    return min(found) if found else None


def judge(entry, gate, metric="largest"):
    """(passed, reasons) of one entry: None where the benchmark could not run at all (neither node is judged by it)."""
    if not isinstance(entry.get("measurement"), dict):
        return None, [entry.get("why") or "the benchmark did not run"]
    return nccl_tests_plan.judge(entry["measurement"], gate, metric)


def tests(members, entries, metric="largest"):
    """[(a, b, passed)] of the entries between two members, for acceptance_pairs."""
    names = {m["node"] for m in members}
    found = []
    for entry in entries:
        a, b = entry["nodes"]
        if a in names and b in names:
            found.append((a, b, judge(entry, gate_of(members, a, b), metric)[0]))
    return found


def _kinds(members):
    """The members by hardware (profile and GPU count), in the order they come: only nodes of one kind pair, as a
    pair's gate and mpirun's ranks per node are one kind's."""
    kinds = {}
    for m in members:
        kinds.setdefault((m["profile"], m["gpus"]), []).append(m)
    return list(kinds.values())


def plan(members, entries, pass_number, config_dir):
    """The pairs of this pass in rounds: per round [{nodes, np, npernode, hosts, ssh_config}], no node in two pairs
    of a round, each node paired with nodes of its own profile only.

    hosts is mpirun's --host list (each node's address with its GPUs as slots), so one launcher starts any pair,
    itself in it or not; npernode keeps one rank per GPU on each (and Open MPI's mapping by node, not by core)."""
    found = []
    for kind in _kinds(members):
        racks = [(m["node"], m["rack"]) for m in kind]
        if pass_number == 1:
            found += acceptance_pairs.first_pass(racks)
        else:
            found += acceptance_pairs.next_pass(racks, {RAIL: tests(kind, entries)})
    by_node = {m["node"]: m for m in members}
    rounds = []
    for pairs in acceptance_pairs.schedule(found):
        rounds.append([
            {
                "nodes": [a, b],
                "np": 2 * by_node[a]["gpus"],
                "npernode": by_node[a]["gpus"],
                "hosts": f"{by_node[a]['address']}:{by_node[a]['gpus']},{by_node[b]['address']}:{by_node[b]['gpus']}",
                "ssh_config": f"{config_dir}/ssh_config",
            }
            for a, b in pairs
        ])  # fmt: skip
    return {"pairs": [list(p) for p in found], "rounds": rounds}


def entries_of(round_pairs, results, pass_number, measured_at):
    """The round's tests as the record keeps them: {pass, nodes, measurement} (the nccl_test result's kept part),
    measurement None with why where the module failed or gave nothing (the binary missing, the task cut short).

    results: the launcher's async_status results of the round, each with its start's result (whose loop item is the
    pair) under __nccl_tests_started."""
    by_pair = {}
    for result in results or []:
        started = result.get("__nccl_tests_started") if isinstance(result, dict) else None
        pair = started.get("__nccl_tests_pair") if isinstance(started, dict) else None
        if isinstance(pair, dict):
            by_pair[tuple(pair["nodes"])] = result
    entries = []
    for pair in round_pairs:
        result = by_pair.get(tuple(pair["nodes"]))
        entry = {"pass": pass_number, "nodes": list(pair["nodes"]), "measurement": None}
        if not isinstance(result, dict) or not result.get("finished", True):
            entry["why"] = "the launcher gave no result for this pair"
        elif result.get("failed") or "rc" not in result:
            entry["why"] = f"nccl_test failed: {result.get('msg') or 'no message'}"
        else:
            entry["measurement"] = nccl_tests_plan.measurement(result, measured_at)
        entries.append(entry)
    return entries


def node_outcome(node, members, entries, gate=None, metric="largest"):
    """This node's outcome from the whole run's pairs, each judged at the node's gate where given (acceptance's),
    else at the lower of the pair's: {outcome, failed_with (partners that passed elsewhere), runs: [{pass, partner,
    passed, busbw_gbps, reasons}]}; None when the node is no member."""
    names = [m["node"] for m in members]
    if node not in names:
        return None
    found, runs = [], []
    for entry in entries:
        a, b = entry["nodes"]
        if a not in names or b not in names:
            continue
        passed, reasons = judge(entry, gate_of(members, a, b) if gate is None else gate, metric)
        found.append((a, b, passed))
        if node in (a, b):
            measured = entry.get("measurement") or {}
            runs.append({"pass": entry.get("pass"), "partner": b if node == a else a, "passed": passed,
                         "busbw_gbps": measured.get(f"{metric}_busbw_gbps"), "reasons": reasons})  # fmt: skip
    outcome, failed_with = acceptance_pairs.outcomes(names, found)[node]
    return {"outcome": outcome, "failed_with": failed_with, "runs": runs}


def report(node, members, entries, metric="largest"):
    """The node's part of its nccl_tests report: node_outcome with a sentence (summary) and, where the pairs put a
    fault on this node (FAIL), the reason the role fails it for (failed); None when the node is no member."""
    found = node_outcome(node, members, entries, None, metric)
    if found is None:
        return None
    outcome, failed_with = found["outcome"], ", ".join(found["failed_with"])
    partners = ", ".join(sorted({r["partner"] for r in found["runs"]}))
    words = {
        acceptance_pairs.PASS: f"passed with {partners}",
        acceptance_pairs.WARN: f"passed, but failed with {failed_with}, which passed with others (that pair's fault)",
        acceptance_pairs.ERROR: "no pair with this node could run",
        acceptance_pairs.UNTESTED: "in no pair",
    }
    if outcome == acceptance_pairs.FAIL:
        reasons = "; ".join(r for run in found["runs"] for r in run["reasons"])
        words[outcome] = (f"failed with {failed_with}, which passed with others: the fault is this node's ({reasons})"
                          if failed_with else
                          f"every pair failed ({partners}), none with a node that passed: the fault is not isolated "
                          f"({reasons}); rerun with nodes known good")  # fmt: skip
    summary = f"all_reduce_perf pairs {outcome}: {words[outcome]}"
    return {**found, "summary": summary, "failed": summary if outcome == acceptance_pairs.FAIL else None}
