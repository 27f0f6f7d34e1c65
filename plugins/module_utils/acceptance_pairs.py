# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which nodes of a rack measure with which, and which node a failed pair's failure belongs to.

A bandwidth test between two nodes that fails does not say which of them is at fault. The first pass pairs the
nodes of each rack with each other; a node that passed with anyone is good. A node that failed with a good node is
bad. A node whose every test failed, each with a partner that is not known good, is re-paired with a good node in a
second pass, and judged by that test alone (the two-pass isolation of Google's cluster health scanner); where no node
passed at all, the unresolved pair among themselves first to find one. Tests run in rounds where no node is in two
tests at once.

Everything is decided per rail (an RDMA port index: port i of one node talks to port i of the other), since a
node with one bad port is good on the others, and per fabric (link layer: InfiniBand nodes pair with InfiniBand
nodes, RoCE nodes with RoCE nodes). Pure functions; the controller calls them (acceptance_pairs filter).
"""

from __future__ import annotations

# A node's outcome on a rail, from the tests it was in.
PASS, WARN, FAIL, ERROR, UNTESTED = "PASS", "WARN", "FAIL", "ERROR", "UNTESTED"
OUTCOMES = (PASS, WARN, FAIL, ERROR, UNTESTED)


def _racks(members):
    """{rack: [nodes]} in the order the members come."""
    racks = {}
    for node, rack in members:
        racks.setdefault(rack, []).append(node)
    return racks


def schedule(pairs):
    """Rounds of the pairs, in their order, each pair in the first round where neither of its nodes is busy."""
    rounds, busy = [], []
    for a, b in pairs:
        for index, taken in enumerate(busy):
            if a not in taken and b not in taken:
                rounds[index].append((a, b))
                taken.update((a, b))
                break
        else:
            rounds.append([(a, b)])
            busy.append({a, b})
    return rounds


def first_pass(members):
    """Pairs (client, server) of the first pass: neighbours in each rack (1-2, 3-4, ...); the odd nodes out of the
    racks with each other; a last odd node out with the first node of its rack, else of the first other rack. A run
    of one node has no pair."""
    racks = _racks(members)
    pairs, left = [], []
    for rack, nodes in racks.items():
        pairs += [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
        if len(nodes) % 2:
            left.append((rack, nodes[-1]))
    while len(left) >= 2:
        (_r1, a), (_r2, b) = left.pop(0), left.pop(0)
        pairs.append((a, b))
    if left:
        rack, node = left[0]
        partners = [n for n in racks[rack] if n != node] or [n for r, ns in racks.items() if r != rack for n in ns]
        if partners:
            pairs.append((node, partners[0]))
    return pairs


def outcomes(nodes, tests):
    """{node: (outcome, [partners it failed with that are good])} on one rail, from tests [(a, b, passed)] where
    passed is True, False, or None (the test could not run: neither node is judged by it).

    PASS: passed a test, and failed only with nodes that passed none. WARN: passed a test, and failed with a node that
    passed one too (the pair failed, not either node). FAIL: passed none, with the good nodes it failed with (none:
    nothing isolated it; next_pass re-pairs such nodes). UNTESTED: no test; ERROR: no test it was in could
    run."""
    good = {n for a, b, passed in tests if passed for n in (a, b)}
    failed_with = {n: [] for n in nodes}
    ran = {n: [] for n in nodes}
    for a, b, passed in tests:
        for node, other in ((a, b), (b, a)):
            if node in ran:
                ran[node].append(passed)
                if passed is False:
                    failed_with[node].append(other)
    result = {}
    for node in nodes:
        seen = ran[node]
        blamed_on_good = [o for o in failed_with[node] if o in good]
        if not seen:
            result[node] = (UNTESTED, [])
        elif all(p is None for p in seen):
            result[node] = (ERROR, [])
        elif node in good:
            result[node] = (WARN if blamed_on_good else PASS, blamed_on_good)
        else:
            result[node] = (FAIL, blamed_on_good)
    return result


def unresolved(nodes, tests):
    """The nodes on one rail that passed no test and failed only with nodes not known good."""
    found = outcomes(nodes, tests)
    return [n for n in nodes if found[n][0] == FAIL and not found[n][1]]


def next_pass(members, tests_by_rail):
    """Pairs (client, server) of the next pass, [] when every node is resolved or nothing is left to try.

    A node unresolved on some rail pairs with a node good on every rail where it is unresolved and never yet tested
    with it: its own rack's first, spread over the good nodes in turn. Where no node is good yet (every first pair
    held a bad node), the unresolved nodes pair among themselves in pairs not yet tested, to find one."""
    nodes = [n for n, _rack in members]
    rack_of = dict(members)
    pending = {}
    for rail, tests in tests_by_rail.items():
        for node in unresolved(nodes, tests):
            pending.setdefault(node, set()).add(rail)
    good = {rail: {n for a, b, passed in tests if passed for n in (a, b)} for rail, tests in tests_by_rail.items()}
    tested = {frozenset((a, b)) for tests in tests_by_rail.values() for a, b, _passed in tests}
    load = dict.fromkeys(nodes, 0)
    pairs, searching = [], []
    for node in nodes:
        if node not in pending:
            continue
        candidates = [
            n for n in nodes
            if n not in pending and n != node and frozenset((node, n)) not in tested
            and all(n in good[rail] for rail in pending[node])
        ]  # fmt: skip
        if candidates:
            partner = min(candidates, key=lambda n: (rack_of[n] != rack_of[node], load[n], nodes.index(n)))
            load[partner] += 1
            pairs.append((node, partner))
        else:
            searching.append(node)
    chosen = set()
    for node in searching:
        if node in chosen:
            continue
        others = [n for n in searching if n != node and n not in chosen and frozenset((node, n)) not in tested]
        if others:
            partner = min(others, key=lambda n: (rack_of[n] != rack_of[node], nodes.index(n)))
            chosen.update((node, partner))
            pairs.append((node, partner))
    return pairs


# ---------------------------------------------------------------------------------------------------------------
# ib_write_bw between pairs, rail by rail

# The TCP port of the first rail's ib_write_bw; rail i listens on BASE_PORT + i.
BASE_PORT = 18515


def rails_of(devices, link_layer="InfiniBand"):
    """A node's rails: the adapters of its active ports on the fabric's link layer (port 1: a ConnectX adapter is one
    port per device), sorted, from infiniband.merge's devices."""
    return sorted(
        d["name"]
        for d in devices or []
        for p in d.get("ports") or []
        if p.get("port") == 1 and p.get("state") == "active" and p.get("link_layer") == link_layer
    )


def _member_map(members):
    return {m["node"]: m for m in members}


def _fabric(member):
    return member.get("fabric") or "InfiniBand"


def _same_fabric(members, node):
    """The members on the node's fabric (its link layer): an InfiniBand port never measures with a RoCE one."""
    mine = next((_fabric(m) for m in members if m["node"] == node), None)
    return [m for m in members if _fabric(m) == mine]


def _all_rails(members):
    return sorted({r for m in members for r in m["rails"]})


def _passed(client, server, entry, rail):
    """One pair's test on one rail: True where both ends measured at least the lower of their two gates (each end's
    own report: a slow port shows on either side), False where either did not or either node lacks the rail, None
    where ib_write_bw did not run at all (the tool missing, the task failed)."""
    if rail not in client["rails"] or rail not in server["rails"]:
        return False
    ends = entry["rails"].get(rail) or {}
    runs = [ends.get("client"), ends.get("server")]
    if any(not isinstance(r, dict) for r in runs):
        return None
    gate = min(client["gate_gbps"], server["gate_gbps"])
    return all(bool(r.get("ok")) and (r.get("average_gbps") or 0) >= gate for r in runs)


def rail_tests(members, entries):
    """{rail: [(client, server, passed)]} of every entry between two of the members (see _passed)."""
    by_node = _member_map(members)
    tests = {rail: [] for rail in _all_rails(members)}
    for entry in entries:
        client, server = by_node.get(entry["client"]), by_node.get(entry["server"])
        if client is None or server is None:
            continue
        for rail, found in tests.items():
            found.append((entry["client"], entry["server"], _passed(client, server, entry, rail)))
    return tests


def plan(members, entries, pass_number):
    """The pairs of this pass and their rounds: [{host: {role (client or server), partner, rails [{device, port,
    gpu (where the node has one near the rail)}]}}] per round, where rails are those both nodes have, each on its own
    TCP port."""
    testable = [m for m in members if m["rails"]]
    found = []
    # Each fabric pairs on its own; their nodes differ, so their tests share the rounds.
    for fabric in dict.fromkeys(_fabric(m) for m in testable):
        group = [m for m in testable if _fabric(m) == fabric]
        racks = [(m["node"], m["rack"]) for m in group]
        found += first_pass(racks) if pass_number == 1 else next_pass(racks, rail_tests(group, entries))
    by_node = _member_map(members)
    ports = {rail: BASE_PORT + i for i, rail in enumerate(_all_rails(members))}
    rounds = []
    for pairs in schedule(found):
        roles = {}
        for client, server in pairs:
            both = [r for r in by_node[client]["rails"] if r in by_node[server]["rails"]]
            for node, role, partner in ((client, "client", server), (server, "server", client)):
                # Each end from its own GPU near the rail, where it has one.
                gpus = by_node[node].get("gpus") or {}
                rails = [{"device": r, "port": ports[r], **({"gpu": gpus[r]} if r in gpus else {})} for r in both]
                roles[node] = {"role": role, "partner": partner, "rails": rails}
        rounds.append(roles)
    return {"pairs": [list(p) for p in found], "rounds": rounds}


def node_outcome(node, members, entries):
    """This node's bandwidth on each rail of the run, from the whole run's tests: {rail: {outcome, failed_with (good
    nodes it failed with), has_rail, runs: [{partner, partner_has_rail, role, client_gbps, server_gbps, gpudirect,
    passed}]}}, among the nodes of its fabric; {} for a node with no rail."""
    members = _same_fabric(members, node)
    by_node = _member_map(members)
    if not by_node.get(node, {}).get("rails"):
        return {}
    testable = [m for m in members if m["rails"]]
    nodes = [m["node"] for m in testable]
    tests = rail_tests(testable, entries)
    mine = [e for e in entries if node in (e["client"], e["server"]) and e["client"] in nodes and e["server"] in nodes]
    found = {}
    for rail, rail_found in tests.items():
        outcome, failed_with = outcomes(nodes, rail_found)[node]
        runs = []
        for entry in mine:
            ends = entry["rails"].get(rail) or {}
            client = entry["client"] == node
            partner = entry["server"] if client else entry["client"]
            runs.append({
                "partner": partner,
                "partner_has_rail": rail in by_node[partner]["rails"],
                "role": "client" if client else "server",
                "client_gbps": (ends.get("client") or {}).get("average_gbps"),
                "server_gbps": (ends.get("server") or {}).get("average_gbps"),
                # Both ends from GPU memory: what the perftest_bw results say ran.
                "gpudirect": all(bool((ends.get(end) or {}).get("gpudirect")) for end in ("client", "server")),
                "passed": _passed(by_node[entry["client"]], by_node[entry["server"]], entry, rail),
            })  # fmt: skip
        found[rail] = {"outcome": outcome, "failed_with": failed_with, "has_rail": rail in by_node[node]["rails"],
                       "runs": runs}  # fmt: skip
    return found


def entries_of(roles, clients, servers, pass_number):
    """The round's tests as the record keeps them: {pass, client, server, rails: {rail: {client, server}}}, each end
    its perftest_bw rail result, or None where that end's task failed or did not run (no result: ERROR)."""
    entries = []
    for client, role in roles.items():
        if role["role"] != "client":
            continue
        server = role["partner"]
        ends = {}
        for end, result in (("client", clients.get(client)), ("server", servers.get(server))):
            usable = isinstance(result, dict) and not result.get("failed") and isinstance(result.get("rails"), list)
            ends[end] = {r.get("device"): r for r in result["rails"] if isinstance(r, dict)} if usable else {}
        rails = {r["device"]: {end: ends[end].get(r["device"]) for end in ends} for r in role["rails"]}
        entries.append({"pass": pass_number, "client": client, "server": server, "rails": rails})
    return entries


def record(node, members, entries, why_not=None):
    """One node's evidence of the run's bandwidth passes (every node keeps the whole run's: its outcome depends on
    whether its partners passed with others): {node, members, entries}, or {skipped: why} where no test could run."""
    testable = [m for m in _same_fabric(members, node) if m["rails"]]
    if why_not is None and node in [m["node"] for m in testable] and len(testable) < 2:
        why_not = ("no other node with an active port on its fabric in this run: run the stage on two nodes or more "
                   "of one fabric")  # fmt: skip
    if why_not:
        return {"skipped": why_not}
    return {"node": node, "members": members, "entries": entries}
