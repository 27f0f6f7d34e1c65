"""ethtool -S over public captures of mlx5_core interfaces (tests/fixtures/ethtool; see SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.gpuops.bringup.plugins.module_utils import ethtool

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "ethtool"


def parse(name):
    return ethtool.parse_stats((FIXTURES / name).read_text())


def test_a_failing_optics_error_counters():
    """A ConnectX-6 Dx on a third-party LR4 optic, `ethtool -S eth5 | grep err | grep -v ' 0'`: no header."""
    found = parse("wirtee-cx6dx-eth5-grep-err.txt")
    assert found["counters"] == {
        "rx_crc_errors_phy": 13147323,
        "rx_symbol_err_phy": 13115284,
        "rx_err_lane_0_phy": 13115284,
        "rx_err_lane_1_phy": 13115284,
        "rx_err_lane_2_phy": 13115284,
        "rx_err_lane_3_phy": 13115284,
    }
    assert (found["header"], found["messages"]) == (False, [])


def test_a_full_listings_head():
    """The first lines of a ConnectX-4's listing on Ubuntu 18.04: the header, then software counters only."""
    found = parse("ethq8-cx4-ubuntu1804-head.txt")
    assert found["header"] is True
    assert len(found["counters"]) == 23
    assert found["counters"]["rx_bytes"] == 2195783498134
    assert found["counters"]["tx_queue_stopped"] == 0
    assert not any(name.endswith("_phy") for name in found["counters"])


def test_what_is_no_counter_is_a_message_and_never_a_value():
    found = ethtool.parse_stats(
        "no stats available\nNIC statistics:\n     rx_crc_errors_phy: -1\n     rx_symbol_err_phy: 1e3\n"
        "     tx_errors_phy: 7\n     tx_errors_phy: 9\n     rx_jabbers_phy: ٣\n"
    )
    assert found["counters"] == {"tx_errors_phy": 7}
    assert found["messages"] == ["no stats available", "rx_crc_errors_phy: -1", "rx_symbol_err_phy: 1e3",
                                 "rx_jabbers_phy: ٣"]  # fmt: skip


def test_messages_are_bounded():
    found = ethtool.parse_stats("x\n" * 100 + ("y" * 5000) + "\n")
    assert len(found["messages"]) == ethtool.MAX_MESSAGES
    assert ethtool.parse_stats("z" * 5000)["messages"] == ["z" * 1000]
