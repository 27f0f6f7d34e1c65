# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ib_write_bw (perftest): its command line and what it printed, as pure functions.

The role always asks for --report_gbits, so the results table reads "BW peak[Gb/sec]" and "BW average[Gb/sec]"
(10^9 bits per second). A run that could not start (no RDMA device, no server to connect to) prints no table and
says why on stderr.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*#bytes\s+#iterations\s+BW peak\[Gb/sec\]\s+BW average\[Gb/sec\]", re.MULTILINE)
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
_FIELD = re.compile(r"\b(Device|Link type|GID index)\s*:\s*(\S+)")


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
    fields = dict(_FIELD.findall(stdout or ""))
    rows = []
    header = _HEADER.search(stdout or "")
    if header:
        for line in stdout[header.end() :].splitlines()[1:]:
            match = _ROW.match(line)
            if not match:
                break
            size, iterations, peak, average, rate = match.groups()
            rows.append(
                {
                    "bytes": int(size),
                    "iterations": int(iterations),
                    "peak_gbps": float(peak),
                    "average_gbps": float(average),
                    "msg_rate_mpps": float(rate),
                }
            )
    largest = max(rows, key=lambda r: r["bytes"]) if rows else None
    return {
        "rows": rows,
        "average_gbps": largest["average_gbps"] if largest else None,
        "device": fields.get("Device"),
        "link_type": fields.get("Link type"),
        "gid_index": int(fields["GID index"]) if fields.get("GID index", "").isdigit() else None,
        "messages": [line.strip() for line in (stderr or "").splitlines() if line.strip()],
    }
