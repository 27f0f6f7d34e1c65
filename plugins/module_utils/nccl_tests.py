# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the output of the nccl-tests benchmarks (all_reduce_perf, all_gather_perf...) and judge a run.

parse() is a pure function over the text a run printed (stdout and stderr
together, NCCL_DEBUG=INFO lines included). It knows the layouts nccl-tests
has printed over the years: the old one (type, [redop], [root], "error"
column), the current one (redop and root always there, "#wrong" count or
N/A without validation), the newest header ("# nccl-tests version ...",
"# Collective test starting/concluded") and lines prefixed by srun --label
(" 0: ") or Open MPI --tag-output ("[1,0]<stdout>:").
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing
from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE, ToolRunner

# re.ASCII everywhere: \d is 0-9 (int() refuses '²', which Unicode \d and str.isdigit() accept). Numbers are read
# through parsing.to_int and to_float, which refuse more digits than any counter has, inf and nan. No pattern
# puts two unbounded runs that can match the same characters next to each other (a lazy group before \s*$ is
# quadratic on a long run of spaces): such tails are (.*) and stripped in Python.
LABEL_PREFIX = re.compile(r"^\s*(?:\d+:(?: |$)|\[\d+,\d+\]<\w+>:)", re.ASCII)
PARAMS_LINE = re.compile(r"^#?\s*nThread\s+\d+\s+nGpus\s+\d+", re.ASCII)
PARAM_NUMBERS = re.compile(r"\b(nThread|nGpus|minBytes|maxBytes)\s+(\d+)", re.ASCII)
PARAM_FIELDS = re.compile(r"\b(warmup iters|agg iters|iters|validation|graph|unalign|step):\s*(\S+)")
PARAM_NAMES = {
    "nThread": "nthread",
    "nGpus": "ngpus",
    "minBytes": "min_bytes",
    "maxBytes": "max_bytes",
    "warmup iters": "warmup_iters",
    "agg iters": "agg_iters",
    "iters": "iters",
    "validation": "validation",
    "graph": "graph",
    "unalign": "unalign",
    "step": "step",
}
TESTS_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+).*?nccl-headers=(\d+)\s+nccl-library=(\d+)", re.ASCII)
COLLECTIVE = re.compile(r"^#\s*Collective test (starting|concluded):\s*(\S+)", re.ASCII)
DEVICE_LINE = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\](.*)$", re.ASCII
)
OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\w+)", re.ASCII)
AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)", re.ASCII)
NCCL_VERSION = re.compile(r"\bNCCL version\s+(\d{1,4}\.\d{1,4}\.\d{1,4})(?:\+cuda(\d{1,4}(?:\.\d{1,4})*))?", re.ASCII)
NCCL_WARN = re.compile(r"\bNCCL WARN\s+(.*)$", re.ASCII)
TEST_FAILURE = re.compile(r"Test (NCCL|CUDA) failure\s+(\S+)\s+'(.*)", re.ASCII)
NET_USING = re.compile(r"\bNET/(\w+)\s*:\s*Using\s+(.*)$", re.ASCII)
USING_NETWORK = re.compile(r"\bUsing network\s+(\S+)", re.ASCII)
HCA_GDR = re.compile(r"\bGPU Direct RDMA (Enabled|Disabled) for HCA\s+\d+\s+'?([^'\s]+)", re.ASCII)
# "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA comm 0x55d..": the path after the first "via", up to a
# "comm 0x..." note. Three patterns and plain slicing: one pattern for it all was cubic on white space.
CHANNEL = re.compile(r"\bChannel\s+\d+(?:/\d+)?\s*:", re.ASCII)
VIA = re.compile(r"\bvia\s+", re.ASCII)
COMM_NOTE = re.compile(r"\bcomm\s+0x[0-9a-f]+", re.ASCII)
RINGS = "Connected all rings"
GDR_FLAG = re.compile(r"\bGDR\s+([01])\b", re.ASCII)
MPI_FAILURE = re.compile(
    r"(mpirun detected that one or more processes exited with non-zero status"
    r"|Primary job\s+terminated normally, but \d+ process(?:es)? returned)",
    re.ASCII,
)
MPI_SIGNAL = re.compile(r"mpirun noticed that process rank \d+ ", re.ASCII)
MPI_EXIT_CODE = re.compile(r"^\s*Exit code:\s*(\d+)", re.ASCII)
SRUN_ERROR = re.compile(r"^srun: error:\s*(.*)$", re.ASCII)
KEY_COLUMNS = ("size", "count", "type", "redop", "root")


class AnyReturnCode:
    """ok_rc for ToolRunner: a benchmark's exit status is data, even a negative one (killed by a signal)."""

    def __contains__(self, rc):
        return True


def version_from_code(code):
    """NCCL_VERSION_CODE -> 'major.minor.patch' (22902 -> 2.29.2; codes before 2.9 were major*1000+minor*100)."""
    code = parsing.to_int(code)
    if code is None:
        return None
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _number(token):
    """A cell as a float; None for N/A and for what is no measurement: inf (printed for a time of 0), nan, 1e400."""
    return parsing.to_float(token)


def _count(token):
    """A #wrong cell: '0', '18134', '2.09715e+06' (printed %g beyond a million) -> int; 'N/A' -> None."""
    value = _number(token)
    return None if value is None else int(value)


def _columns(tokens):
    """The column names of a header line ('#  size  count  type  redop  root  time ...'), or None."""
    names = [t for t in tokens if t != "#"]
    if "size" not in names or "time" not in names:
        return None
    keys = names[: names.index("time")]
    rest = names[names.index("time") :]
    if len(rest) != 8 or any(k not in KEY_COLUMNS for k in keys):
        return None
    return keys, rest[3]


def _guess_columns(tokens):
    """Columns for a row seen without a header (output pasted from the middle of a run)."""
    if len(tokens) == 13:
        keys = ["size", "count", "type", "redop", "root"]
    elif len(tokens) == 12:
        keys = ["size", "count", "type", "root" if _number(tokens[3]) is not None else "redop"]
    elif len(tokens) == 11:
        keys = ["size", "count", "type"]
    else:
        return None
    check = tokens[len(keys) + 3]
    return keys, "error" if ("e" in check or "." in check) else "#wrong"


def _side(tokens, check):
    time, algbw, busbw, last = tokens
    side = {"time_us": _number(time), "algbw_gbps": _number(algbw), "busbw_gbps": _number(busbw)}
    side["wrong"] = _count(last) if check == "#wrong" else None
    side["error"] = _number(last) if check == "error" else None
    return side


def _row(tokens, columns):
    keys, check = columns
    if len(tokens) != len(keys) + 8 or not {"size", "count", "type"} <= set(keys):
        return None
    values = dict(zip(keys, tokens))
    row = {
        "size": parsing.to_int(values["size"]),
        "count": parsing.to_int(values["count"]),
        "type": values["type"],
        "redop": values.get("redop"),
        "root": parsing.to_int(values["root"]) if "root" in values else None,
    }
    if row["size"] is None or row["count"] is None or row["size"] < 0 or ("root" in values and row["root"] is None):
        return None
    n = len(keys)
    row["out_of_place"] = _side(tokens[n : n + 4], check)
    row["in_place"] = _side(tokens[n + 4 : n + 8], check)
    if row["out_of_place"]["busbw_gbps"] is None and row["in_place"]["busbw_gbps"] is None:
        return None
    return row


def _net_devices(using):
    """'[0]mlx5_1:1/IB/SHARP [1]mlx5_2:1/IB [RO]; OOB ...' -> ['mlx5_1:1/IB/SHARP', 'mlx5_2:1/IB']."""
    devices = []
    for token in using.split(";")[0].split():
        match = re.match(r"^\[\d+\](\S+?)(?:<\d+>)?$", token)
        if match:
            devices.append(match.group(1))
    return devices


def _unique_append(items, item, limit=20):
    if item not in items and len(items) < limit:
        items.append(item)


def empty_result():
    return {
        "test": None,
        "tests_version": None,
        "nccl_version": None,
        "cuda_version": None,
        "params": {},
        "devices": [],
        "results": [],
        "out_of_bounds": None,
        "out_of_bounds_ok": None,
        "avg_busbw_gbps": None,
        "max_busbw_gbps": None,
        "largest_busbw_gbps": None,
        "concluded": False,
        "warnings": [],
        "errors": [],
        "transport": {
            "network": None,
            "net_devices": [],
            "channels": {},
            "net_channels": 0,
            "gdr_channels": 0,
            "gpudirect_rdma": None,
            "gpudirect_rdma_evidence": None,
        },
    }


def parse(text):
    """Everything a run printed -> results, versions, devices, transport, warnings and errors."""
    result = empty_result()
    transport = result["transport"]
    columns = None
    failures, hca_gdr, ring_gdr = [], {}, []
    mpi_failed, mpi_exit, library_code = False, None, None
    seen_header = seen_summary = False
    for raw in parsing.bounded(text)[0].splitlines():
        line = LABEL_PREFIX.sub("", raw.rstrip("\r"), count=1)
        stripped = line.strip()
        tokens = stripped.split()
        if not tokens:
            continue

        if stripped.startswith("#") or PARAMS_LINE.match(stripped):
            if PARAMS_LINE.match(stripped):
                seen_header = True
                for key, value in PARAM_NUMBERS.findall(stripped):
                    result["params"][PARAM_NAMES[key]] = parsing.to_int(value)
                for key, value in PARAM_FIELDS.findall(stripped):
                    number = parsing.to_int(value) if parsing.is_digits(value) else None
                    result["params"][PARAM_NAMES[key]] = value if number is None else number
                continue
            match = TESTS_VERSION.match(stripped)
            if match:
                result["tests_version"] = match.group(1)
                library_code = match.group(3)
                continue
            match = COLLECTIVE.match(stripped)
            if match:
                result["test"] = match.group(2)
                result["concluded"] = result["concluded"] or match.group(1) == "concluded"
                continue
            match = DEVICE_LINE.match(stripped)
            if match:
                rank, pid, host, device, bus_id, name = match.groups()
                device_entry = {"rank": parsing.to_int(rank), "pid": parsing.to_int(pid), "host": host}
                device_entry.update(device=parsing.to_int(device), bus_id=bus_id, name=name.strip())
                result["devices"].append(device_entry)
                continue
            match = OUT_OF_BOUNDS.match(stripped)
            if match:
                result["out_of_bounds"] = parsing.to_int(match.group(1))
                result["out_of_bounds_ok"] = match.group(2) == "OK"
                continue
            match = AVG_BUSBW.match(stripped)
            if match:
                seen_summary = True
                result["avg_busbw_gbps"] = _number(match.group(1))
                continue
            found = _columns(tokens)
            if found:
                columns = found
            continue

        if parsing.is_digits(tokens[0]):
            found = columns or _guess_columns(tokens)
            row = _row(tokens, found) if found else None
            if row:
                result["results"].append(row)
                continue

        match = NCCL_VERSION.search(line)
        if match and result["nccl_version"] is None:
            result["nccl_version"], result["cuda_version"] = match.group(1), match.group(2)
        match = NCCL_WARN.search(line)
        if match:
            _unique_append(result["warnings"], match.group(1).strip()[:1000])
        match = TEST_FAILURE.search(line)
        if match:
            kind, where, message = match.groups()
            message = message.rstrip().rstrip("'").rstrip().rstrip("/").strip()
            _unique_append(failures, f"Test {kind} failure at {where[:200]}: {message[:1000]}")
        match = NET_USING.search(line)
        if match:
            transport["network"] = transport["network"] or match.group(1)
            for device in _net_devices(match.group(2)):
                _unique_append(transport["net_devices"], device, limit=64)
        match = USING_NETWORK.search(line)
        if match:
            transport["network"] = match.group(1)
        match = HCA_GDR.search(line)
        if match:
            hca_gdr[match.group(2)] = match.group(1) == "Enabled"
        via = _channel_path(line)
        if via:
            path = via.split("/")
            kind = "/".join(path[:2]).split()[0]
            transport["channels"][kind] = transport["channels"].get(kind, 0) + 1
            if path[0] == "NET":
                transport["net_channels"] += 1
                transport["gdr_channels"] += "GDRDMA" in path
        rings = line.find(RINGS)
        if rings >= 0:
            flags = GDR_FLAG.findall(line, rings)
            if flags:
                ring_gdr.append(flags[-1] == "1")
        if MPI_FAILURE.search(line):
            mpi_failed = True
        else:
            match = MPI_SIGNAL.search(line)
            mpi_failed = mpi_failed or bool(match and "exited on signal" in line[match.end() :])
        match = MPI_EXIT_CODE.match(line)
        if match:
            mpi_exit = parsing.to_int(match.group(1))
        match = SRUN_ERROR.match(stripped)
        if match:
            _unique_append(failures, f"srun: {match.group(1)[:1000]}")

    if result["nccl_version"] is None and library_code:
        result["nccl_version"] = version_from_code(library_code)
    _transport_verdict(transport, hca_gdr, ring_gdr)
    _metrics(result)
    result["errors"] = _errors(result, failures, mpi_failed, mpi_exit, seen_header, seen_summary, text)
    return result


def _channel_path(line):
    """The transport path of a "Channel NN : ... via PATH [comm 0x...]" line, or None."""
    channel = CHANNEL.search(line)
    via = VIA.search(line, channel.end()) if channel else None
    if via is None:
        return None
    path = line[via.end() :]
    note = COMM_NOTE.search(path, 1)
    return (path[: note.start()] if note else path).strip() or None


def _transport_verdict(transport, hca_gdr, ring_gdr):
    """Whether GPUDirect RDMA carried the network traffic, from the most direct evidence NCCL printed."""
    if transport["net_channels"]:
        transport["gpudirect_rdma"] = transport["gdr_channels"] == transport["net_channels"]
        transport["gpudirect_rdma_evidence"] = "channels"
    elif ring_gdr:
        transport["gpudirect_rdma"] = all(ring_gdr)
        transport["gpudirect_rdma_evidence"] = "rings"
    elif hca_gdr:
        transport["gpudirect_rdma"] = any(hca_gdr.values())
        transport["gpudirect_rdma_evidence"] = "hca"


def _metrics(result):
    values = [
        side["busbw_gbps"]
        for row in result["results"]
        for side in (row["out_of_place"], row["in_place"])
        if side["busbw_gbps"] is not None
    ]
    result["max_busbw_gbps"] = max(values) if values else None
    if result["results"]:
        largest = max(result["results"], key=lambda row: row["size"])
        # _row keeps no row without a bus bandwidth on either side.
        result["largest_busbw_gbps"] = max(
            s["busbw_gbps"] for s in (largest["out_of_place"], largest["in_place"]) if s["busbw_gbps"] is not None
        )


def _errors(result, failures, mpi_failed, mpi_exit, seen_header, seen_summary, text):
    errors = list(failures)
    wrong = [
        row
        for row in result["results"]
        if (row["out_of_place"]["wrong"] or 0) > 0 or (row["in_place"]["wrong"] or 0) > 0
    ]
    if wrong:
        errors.append(
            f"#wrong > 0: {len(wrong)} of {len(result['results'])} sizes returned wrong data, the first at "
            f"{wrong[0]['size']} bytes ({wrong[0]['out_of_place']['wrong']} out-of-place, "
            f"{wrong[0]['in_place']['wrong']} in-place)"
        )
    if result["out_of_bounds_ok"] is False or (result["out_of_bounds"] or 0) > 0:
        errors.append(f"Out of bounds values: {result['out_of_bounds']} FAILED")
    if mpi_failed:
        code = f" (exit code {mpi_exit})" if mpi_exit is not None else ""
        errors.append(f"mpirun: a process exited with non-zero status and the job was aborted{code}")
    if (seen_header or result["results"]) and not seen_summary:
        reached = f"; last size reached {result['results'][-1]['size']} bytes" if result["results"] else ""
        planned = result["params"].get("max_bytes")
        planned = f" (maxBytes {planned})" if planned and result["results"] else ""
        errors.append(f"the run ended before its summary ('# Avg bus bandwidth' missing){reached}{planned}")
    if not seen_header and not result["results"] and not seen_summary:
        errors.append(
            "no nccl-tests output found"
            + (" (empty output)" if not (text or "").strip() else ": no header, result rows or summary")
        )
    return errors


METRICS = {"max": "max_busbw_gbps", "avg": "avg_busbw_gbps", "largest": "largest_busbw_gbps"}


def verdict(parsed, rc=None, min_busbw_gbps=None, metric="max"):
    """(passed, reasons): a failed run is data, so every reason is a sentence for the report."""
    reasons = []
    if rc not in (None, 0):
        reasons.append(f"the benchmark exited with return code {rc}")
    reasons.extend(parsed["errors"])
    if not parsed["results"] and not any("no nccl-tests output" in r for r in reasons):
        reasons.append("no result rows in the output")
    if min_busbw_gbps is not None:
        value = parsed[METRICS[metric]]
        if value is None:
            reasons.append(f"no {metric} bus bandwidth to compare with min_busbw_gbps {min_busbw_gbps:g}")
        elif value < min_busbw_gbps:
            reasons.append(f"{metric} bus bandwidth {value:g} GB/s is below min_busbw_gbps {min_busbw_gbps:g}")
    return not reasons, reasons


def mpirun_args(mpirun, env_names):
    """Arguments for mpirun before the benchmark: hostfile, process count, extra arguments, -x for each env name."""
    args = ["--hostfile", mpirun["hostfile"]] if mpirun.get("hostfile") else []
    if mpirun.get("np") is not None:
        args += ["-np", str(mpirun["np"])]
    if mpirun.get("npernode") is not None:
        args += ["--npernode", str(mpirun["npernode"])]
    args += [str(a) for a in mpirun.get("extra_args") or []]
    for name in list(env_names) + [n for n in mpirun.get("export") or [] if n not in env_names]:
        args += ["-x", name]
    return args


class BenchmarkRunner(ToolRunner):
    """ToolRunner that adds the benchmark's environment (NCCL_DEBUG...) to the C locale."""

    def run(self, args, env):
        cmd = [self.path, *args]
        rc, out, err = self.module.run_command(cmd, environ_update={**env, **C_LOCALE})
        return cmd, rc, out, err
