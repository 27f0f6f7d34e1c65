"""Pairing a rack's nodes for bandwidth tests and the two-pass isolation of a failed pair: every shape of rack and
every way a pair's test ends."""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance_pairs as pairs


def rack(count, name="r1", prefix="n"):
    return [(f"{prefix}{i}", name) for i in range(1, count + 1)]


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ([], []),
        (rack(1), []),
        (rack(2), [("n1", "n2")]),
        # The odd node out pairs with the first node of its rack.
        (rack(3), [("n1", "n2"), ("n3", "n1")]),
        (rack(4), [("n1", "n2"), ("n3", "n4")]),
        (rack(5), [("n1", "n2"), ("n3", "n4"), ("n5", "n1")]),
        # Two racks' odd nodes out pair with each other.
        (rack(3) + rack(3, "r2", "m"), [("n1", "n2"), ("m1", "m2"), ("n3", "m3")]),
        # A rack of one node pairs with the first node of another rack.
        (rack(2) + rack(1, "r2", "m"), [("n1", "n2"), ("m1", "n1")]),
        (rack(1) + rack(1, "r2", "m") + rack(1, "r3", "k"), [("n1", "m1"), ("k1", "n1")]),
    ],
)
def test_first_pass_pairs_neighbours_of_a_rack(members, expected):
    assert pairs.first_pass(members) == expected


@pytest.mark.parametrize("count", range(2, 12))
def test_first_pass_tests_every_node_of_a_rack_once_or_twice(count):
    found = pairs.first_pass(rack(count))
    seen = [n for pair in found for n in pair]
    assert set(seen) == {n for n, _r in rack(count)}
    assert all(a != b for a, b in found)
    assert max(seen.count(n) for n in set(seen)) == (2 if count % 2 else 1)


def test_schedule_keeps_each_node_in_one_test_per_round():
    rounds = pairs.schedule([("n1", "n2"), ("n3", "n4"), ("n5", "n1"), ("n5", "n3"), ("n2", "n4")])
    assert rounds == [[("n1", "n2"), ("n3", "n4")], [("n5", "n1"), ("n2", "n4")], [("n5", "n3")]]
    for found in rounds:
        nodes = [n for pair in found for n in pair]
        assert len(nodes) == len(set(nodes))


NODES = ["n1", "n2", "n3", "n4"]


@pytest.mark.parametrize(
    ("tests", "expected"),
    [
        # Both pairs pass.
        ([("n1", "n2", True), ("n3", "n4", True)], dict.fromkeys(NODES, ("PASS", []))),
        # A pair fails: neither node is known good yet, nothing isolates them.
        ([("n1", "n2", True), ("n3", "n4", False)],
         {"n1": ("PASS", []), "n2": ("PASS", []), "n3": ("FAIL", []), "n4": ("FAIL", [])}),
        # Second pass: n3 fails with good n1, n4 passes with good n2: n3 is the bad one.
        ([("n1", "n2", True), ("n3", "n4", False), ("n3", "n1", False), ("n4", "n2", True)],
         {"n1": ("PASS", []), "n2": ("PASS", []), "n3": ("FAIL", ["n4", "n1"]), "n4": ("PASS", [])}),
        # Both pass with good nodes: the pair failed, not either node.
        ([("n1", "n2", True), ("n3", "n4", False), ("n3", "n1", True), ("n4", "n2", True)],
         {"n1": ("PASS", []), "n2": ("PASS", []), "n3": ("WARN", ["n4"]), "n4": ("WARN", ["n3"])}),
        # Both fail with good nodes.
        ([("n1", "n2", True), ("n3", "n4", False), ("n3", "n1", False), ("n4", "n2", False)],
         {"n1": ("PASS", []), "n2": ("PASS", []), "n3": ("FAIL", ["n1"]), "n4": ("FAIL", ["n2"])}),
        # A test that could not run judges no one.
        ([("n1", "n2", None), ("n3", "n4", True)],
         {"n1": ("ERROR", []), "n2": ("ERROR", []), "n3": ("PASS", []), "n4": ("PASS", [])}),
        ([("n1", "n2", None), ("n1", "n3", True)],
         {"n1": ("PASS", []), "n2": ("ERROR", []), "n3": ("PASS", []), "n4": ("UNTESTED", [])}),
        ([], dict.fromkeys(NODES, ("UNTESTED", []))),
    ],
)  # fmt: skip
def test_outcomes_on_one_rail(tests, expected):
    assert pairs.outcomes(NODES, tests) == expected


def test_next_pass_repairs_the_unresolved_with_good_nodes_of_their_rack_first():
    members = rack(4) + rack(2, "r2", "m")
    first = [("n1", "n2", True), ("n3", "n4", False), ("m1", "m2", True)]
    assert pairs.next_pass(members, {1: first}) == [("n3", "n1"), ("n4", "n2")]


def test_next_pass_crosses_racks_when_a_rack_has_no_good_node():
    members = rack(2) + rack(2, "r2", "m")
    first = [("n1", "n2", False), ("m1", "m2", True)]
    assert pairs.next_pass(members, {1: first}) == [("n1", "m1"), ("n2", "m2")]


def test_next_pass_needs_a_partner_good_on_every_rail_the_node_is_unresolved_on():
    members = rack(6)
    by_rail = {
        1: [("n1", "n2", True), ("n3", "n4", False), ("n5", "n6", True)],
        2: [("n1", "n2", False), ("n3", "n4", False), ("n5", "n6", True)],
    }
    # n3 and n4 are unresolved on rails 1 and 2: only n5 and n6 are good on both; n1 and n2 are unresolved on 2.
    assert pairs.next_pass(members, by_rail) == [("n1", "n5"), ("n2", "n6"), ("n3", "n5"), ("n4", "n6")]


def test_next_pass_searches_among_the_unresolved_where_no_node_is_good():
    first = [("n1", "n2", False), ("n3", "n4", False)]
    assert pairs.next_pass(rack(4), {1: first}) == [("n1", "n3"), ("n2", "n4")]
    # Nothing left to try: two nodes that failed with each other.
    assert pairs.next_pass(rack(2), {1: [("n1", "n2", False)]}) == []
    assert pairs.next_pass(rack(2), {}) == []


def test_next_pass_never_repeats_a_pair():
    members = rack(3)
    first = [("n1", "n2", False), ("n3", "n1", True)]
    # n2 is unresolved; n1 is good but n2 already failed with it... n1 is good, so n2 is not unresolved at all.
    assert pairs.next_pass(members, {1: first}) == []
    assert pairs.outcomes(["n1", "n2", "n3"], first)["n2"] == ("FAIL", ["n1"])


def isolate(members, is_bad, passes=10):
    """Every pass until nothing is left to try (at most passes): the outcomes and how many passes ran."""
    nodes = [n for n, _r in members]
    tests = [(a, b, not (is_bad(a) or is_bad(b))) for a, b in pairs.first_pass(members)]
    count = 1
    while count < passes:
        more = pairs.next_pass(members, {1: tests})
        if not more:
            break
        tests += [(a, b, not (is_bad(a) or is_bad(b))) for a, b in more]
        count += 1
    return pairs.outcomes(nodes, tests), count


@pytest.mark.parametrize("bad", ["n1", "n2", "n3", "n4", "n5", "n6"])
def test_two_passes_find_the_one_bad_node_of_a_rack(bad):
    """Whatever node is bad, the first pass and the second find it and only it."""
    found, count = isolate(rack(6), lambda n: n == bad)
    assert {n for n, (status, _w) in found.items() if status == "FAIL"} == {bad}
    assert all(status == "PASS" for n, (status, _w) in found.items() if n != bad)
    assert count == 2


@pytest.mark.parametrize(("size", "bad"), [
    (size, bad) for size in (3, 4, 5, 6, 7) for k in (1, 2) for bad in itertools.combinations(range(1, size + 1), k)
    if size - k >= 2
])  # fmt: skip
def test_the_passes_find_every_bad_node_while_two_nodes_are_good(size, bad):
    names = {f"n{i}" for i in bad}
    found, count = isolate(rack(size), lambda n: n in names)
    assert {n for n, (status, _w) in found.items() if status == "FAIL"} == names
    assert all(found[n][0] == "PASS" for n in found if n not in names)
    assert count <= 4


@pytest.mark.parametrize(("size", "bad"), [(4, {"n1", "n2", "n3", "n4"}), (3, {"n1", "n2"}), (2, {"n1"})])
def test_without_two_good_nodes_no_test_passes_and_every_node_fails(size, bad):
    """A passing test needs two good nodes: short of them, nothing isolates anyone."""
    found, _count = isolate(rack(size), lambda n: n in bad)
    assert {status for status, _w in found.values()} == {"FAIL"}


def test_rails_are_the_active_infiniband_ports():
    devices = [
        {"name": "mlx5_1", "ports": [{"port": 1, "state": "active", "link_layer": "InfiniBand"}]},
        {"name": "mlx5_0", "ports": [{"port": 1, "state": "active", "link_layer": "InfiniBand"}]},
        {"name": "mlx5_2", "ports": [{"port": 1, "state": "down", "link_layer": "InfiniBand"}]},
        {"name": "mlx5_bond_0", "ports": [{"port": 1, "state": "active", "link_layer": "Ethernet"}]},
        {"name": "mlx5_3", "ports": [{"port": 2, "state": "active", "link_layer": "InfiniBand"}]},
    ]
    assert pairs.rails_of(devices) == ["mlx5_0", "mlx5_1"]
    assert pairs.rails_of(None) == []


def member(node, rails=("mlx5_0", "mlx5_1"), rack="r1"):
    return {"node": node, "rack": rack, "rails": list(rails), "gate_gbps": 380}


def test_plan_gives_each_node_its_role_partner_and_rails_on_their_own_ports():
    members = [member("n1"), member("n2", rails=("mlx5_1",)), member("n3"), member("n4", rails=())]
    found = pairs.plan(members, [], 1)
    # n4 has no rail: it takes no part; n3 is the odd node out and pairs with n1 in a second round.
    assert found["pairs"] == [["n1", "n2"], ["n3", "n1"]]
    one = [{"device": "mlx5_1", "port": 18516}]
    both = [{"device": "mlx5_0", "port": 18515}, {"device": "mlx5_1", "port": 18516}]
    assert found["rounds"] == [
        {
            "n1": {"role": "client", "partner": "n2", "rails": one},
            "n2": {"role": "server", "partner": "n1", "rails": one},
        },
        {
            "n3": {"role": "client", "partner": "n1", "rails": both},
            "n1": {"role": "server", "partner": "n3", "rails": both},
        },
    ]


def run(ok=True, gbps=392.34):
    return {"ok": ok, "average_gbps": gbps}


def test_rail_tests_need_both_ends_at_the_lower_gate():
    members = [member("n1"), {**member("n2"), "gate_gbps": 390}, member("n3", rails=("mlx5_0",))]
    entries = [
        {"client": "n1", "server": "n2", "rails": {"mlx5_0": {"client": run(), "server": run(gbps=379.99)},
                                                   "mlx5_1": {"client": run(), "server": run(gbps=380)}}},
        {"client": "n1", "server": "n3", "rails": {"mlx5_0": {"client": run(ok=False), "server": None}}},
        {"client": "n9", "server": "n3", "rails": {}},
    ]  # fmt: skip
    assert pairs.rail_tests(members, entries) == {
        "mlx5_0": [("n1", "n2", False), ("n1", "n3", None)],
        # n3 has no mlx5_1: its pair's test on it fails.
        "mlx5_1": [("n1", "n2", True), ("n1", "n3", False)],
    }


def test_roce_rails_are_the_active_ethernet_ports():
    devices = [
        {"name": "mlx5_3", "ports": [{"port": 1, "state": "active", "link_layer": "Ethernet"}]},
        {"name": "mlx5_0", "ports": [{"port": 1, "state": "active", "link_layer": "Ethernet"}]},
        {"name": "mlx5_1", "ports": [{"port": 1, "state": "active", "link_layer": "InfiniBand"}]},
        {"name": "mlx5_2", "ports": [{"port": 1, "state": "polling", "link_layer": "Ethernet"}]},
    ]
    assert pairs.rails_of(devices, "Ethernet") == ["mlx5_0", "mlx5_3"]


def roce(node, rack="r1"):
    return {**member(node, rack=rack), "fabric": "Ethernet", "gid_index": 3}


def test_each_fabric_pairs_on_its_own_and_shares_the_rounds():
    """An InfiniBand rail never measures with a RoCE one of the same name: the fabrics pair apart, their pairs in the
    same rounds (their nodes differ); a member without a fabric is an InfiniBand one (records of earlier runs)."""
    members = [member("n1"), roce("r1"), member("n2"), roce("r2"), roce("r3")]
    found = pairs.plan(members, [], 1)
    assert found["pairs"] == [["n1", "n2"], ["r1", "r2"], ["r3", "r1"]]
    assert [sorted(r) for r in found["rounds"]] == [["n1", "n2", "r1", "r2"], ["r1", "r3"]]


def test_a_nodes_outcome_and_record_count_its_fabric_only():
    members = [member("n1"), member("n2"), roce("r1")]
    entries = [{"client": "n1", "server": "n2", "rails": {r: {"client": run(), "server": run()}
                                                          for r in ("mlx5_0", "mlx5_1")}}]  # fmt: skip
    assert {r: f["outcome"] for r, f in pairs.node_outcome("n1", members, entries).items()} == dict.fromkeys(
        ("mlx5_0", "mlx5_1"), "PASS")  # fmt: skip
    # The RoCE node is alone on its fabric: the InfiniBand nodes are no partners for it.
    assert pairs.record("r1", members, entries) == {
        "skipped": "no other node with an active port on its fabric in this run: run the stage on two nodes or more "
        "of one fabric"
    }
    assert pairs.record("n1", members, entries)["node"] == "n1"


def test_each_end_of_a_rail_uses_its_own_nearest_gpu():
    members = [{**member("n1"), "gpus": {"mlx5_0": 0, "mlx5_1": 1}}, {**member("n2"), "gpus": {"mlx5_1": 5}}]
    rounds = pairs.plan(members, [], 1)["rounds"]
    client = [{"device": "mlx5_0", "port": 18515, "gpu": 0}, {"device": "mlx5_1", "port": 18516, "gpu": 1}]
    server = [{"device": "mlx5_0", "port": 18515}, {"device": "mlx5_1", "port": 18516, "gpu": 5}]
    assert rounds == [{
        "n1": {"role": "client", "partner": "n2", "rails": client},
        "n2": {"role": "server", "partner": "n1", "rails": server},
    }]  # fmt: skip


def test_a_run_is_from_gpu_memory_where_both_ends_were():
    members = [member("n1"), member("n2")]
    gpu, host = {**run(), "gpudirect": True}, run()
    entries = [{"client": "n1", "server": "n2", "rails": {"mlx5_0": {"client": gpu, "server": gpu},
                                                          "mlx5_1": {"client": gpu, "server": host}}}]  # fmt: skip
    found = pairs.node_outcome("n1", members, entries)
    assert [(r, f["runs"][0]["gpudirect"]) for r, f in found.items()] == [("mlx5_0", True), ("mlx5_1", False)]


def test_a_rounds_entries_keep_each_ends_rail_results():
    """Each client's test with its server, rail by rail: an end whose task failed, returned no rails or skipped a rail
    has None there (the check reads ERROR), a server's result is its own, and servers are not entries of their own."""
    roles = {
        "n1": {"role": "client", "partner": "n2", "rails": [{"device": "mlx5_0"}, {"device": "mlx5_1"}]},
        "n2": {"role": "server", "partner": "n1", "rails": [{"device": "mlx5_0"}, {"device": "mlx5_1"}]},
        "n3": {"role": "client", "partner": "n4", "rails": [{"device": "mlx5_0"}]},
        "n4": {"role": "server", "partner": "n3", "rails": [{"device": "mlx5_0"}]},
        "n5": {"role": "client", "partner": "n6", "rails": [{"device": "mlx5_0"}]},
        "n6": {"role": "server", "partner": "n5", "rails": [{"device": "mlx5_0"}]},
    }
    a, b, c = ({"device": "mlx5_0", "gbps": g} for g in (392.3, 391.9, 390.1))
    clients = {"n1": {"rails": [a, "noise"]}, "n3": {"failed": True, "rails": [b]}, "n5": {"rails": "not a list"}}
    servers = {"n2": {"rails": [c]}, "n4": {"rails": [a]}, "n6": None}
    assert pairs.entries_of(roles, clients, servers, 2) == [
        {"pass": 2, "client": "n1", "server": "n2",
         "rails": {"mlx5_0": {"client": a, "server": c}, "mlx5_1": {"client": None, "server": None}}},
        {"pass": 2, "client": "n3", "server": "n4", "rails": {"mlx5_0": {"client": None, "server": a}}},
        {"pass": 2, "client": "n5", "server": "n6", "rails": {"mlx5_0": {"client": None, "server": None}}},
    ]  # fmt: skip
