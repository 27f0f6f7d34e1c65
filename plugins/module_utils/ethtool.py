# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ethtool -S <interface>`: a network interface's driver statistics, the error counters of a RoCE port.

A RoCE port's link is an Ethernet link: its symbol, CRC and link-down counters are the Ethernet interface's, which
the driver reports through ethtool (mlx5_core: the `_phy` counters, read from the port's physical layer), not
through perfquery's InfiniBand port counters.
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

HEADER = "NIC statistics:"
# "     rx_crc_errors_phy: 386": a name (drivers use letters, digits, '_', '-', '.', brackets and spaces), a colon,
# a count. Names are bounded: no driver's is near 128 characters.
STAT_LINE = re.compile(r"[ \t]*([A-Za-z0-9_][A-Za-z0-9_.\-\[\] ]{0,127}):[ \t]*(\S{1,64})[ \t]*")
MAX_MESSAGES = 5


def parse_stats(text):
    """`ethtool -S <interface>` -> {"counters": {name: int}, "header": whether "NIC statistics:" opened it,
    "messages": [the first lines that are no counter: ethtool's own errors, such as "no stats available"]}.

    A name printed twice keeps its first value; a value that is no non-negative integer is left out, so garbage
    yields no counters rather than an exception."""
    result = {"counters": {}, "header": False, "messages": []}
    for line in parsing.bounded(text)[0].splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == HEADER:
            result["header"] = True
            continue
        match = STAT_LINE.fullmatch(line)
        value = parsing.to_int(match.group(2)) if match else None
        if value is None or value < 0:
            if len(result["messages"]) < MAX_MESSAGES:
                result["messages"].append(stripped[:1000])
            continue
        result["counters"].setdefault(match.group(1).strip(), value)
    return result
