# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ib_write_bw (perftest): its command line and what it printed, as pure functions.

The role always asks for --report_gbits, so the results table reads "BW peak[Gb/sec]" and "BW average[Gb/sec]"
(10^9 bits per second). A run that could not start (no RDMA device, no server to connect to) prints no table and
says why on stderr.
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

# Blanks, not \s, inside a line: with MULTILINE, a leading \s* ran over every following empty line at each line start.
_HEADER = re.compile(
    r"^[ \t]*#bytes[ \t]+#iterations[ \t]+BW peak\[Gb/sec\][ \t]+BW average\[Gb/sec\]", re.MULTILINE | re.ASCII
)
_ROW = re.compile(r"\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*", re.ASCII)
_FIELD = re.compile(r"\b(Device|Link type|GID index)\s*:\s*(\S+)", re.ASCII)


def write_bw_argv(device, duration, size, port, gid_index=None, use_cuda=None, server=None):
    """ib_write_bw's arguments: the server side without an address, the client side with the server's."""
    argv = ["ib_write_bw", "-d", device, "-D", str(duration), "-s", str(size), "-p", str(port), "-F", "--report_gbits"]
    if gid_index is not None:
        argv += ["-x", str(gid_index)]
    if use_cuda is not None:
        argv.append(f"--use_cuda={use_cuda}")
    if server:
        argv.append(server)
    return argv


def supports_cuda(help_text):
    """Whether this perftest was built with CUDA (GPUDirect RDMA through --use_cuda); Debian's is not."""
    return "--use_cuda" in (help_text or "")


def parse_write_bw(stdout, stderr=""):
    """{"rows": [{"bytes", "iterations", "peak_gbps", "average_gbps", "msg_rate_mpps"}], "average_gbps" (of the
    largest message size), "device", "link_type", "gid_index", "messages" (what stderr said, stripped)}."""
    stdout = parsing.bounded(stdout)[0]
    stderr = parsing.bounded(stderr)[0]
    fields = dict(_FIELD.findall(stdout))
    rows = []
    header = _HEADER.search(stdout)
    if header:
        for line in stdout[header.end() :].splitlines()[1:]:
            match = _ROW.fullmatch(line)
            if not match:
                # The table ends at its dashed line; other lines inside it are notes perftest printed on the way
                # ("Conflicting CPU frequency values detected: ...").
                if line.lstrip().startswith("---") or not line.strip():
                    break
                continue
            size, iterations = (parsing.to_int(v) for v in match.groups()[:2])
            peak, average, rate = (parsing.to_float(v) for v in match.groups()[2:])
            if None in (size, iterations, peak, average, rate):
                break
            rows.append(
                {
                    "bytes": size,
                    "iterations": iterations,
                    "peak_gbps": peak,
                    "average_gbps": average,
                    "msg_rate_mpps": rate,
                }
            )
    largest = max(rows, key=lambda r: r["bytes"]) if rows else None
    return {
        "rows": rows,
        "average_gbps": largest["average_gbps"] if largest else None,
        "device": fields.get("Device"),
        "link_type": fields.get("Link type"),
        "gid_index": parsing.to_int(fields["GID index"]) if parsing.is_digits(fields.get("GID index")) else None,
        "messages": [line.strip()[:1000] for line in stderr.splitlines() if line.strip()][:50],
    }
