#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: perftest_bw
short_description: Measure RDMA write bandwidth between two hosts with perftest's ib_write_bw
version_added: 0.1.0
description:
  - Runs C(ib_write_bw) as the server (without O(server)) or as the client of a server (with O(server)), always with
    C(--report_gbits), and returns the results table and the average bandwidth of the run.
  - Uses GPU memory (GPUDirect RDMA, C(--use_cuda)) when O(gpu) is set and this perftest was built with CUDA; the
    result says whether it did. Debian's perftest is built without. With O(require_gpudirect), a perftest without
    CUDA does not run at all (host memory would measure something else), and the result says why.
  - A run that cannot start (no RDMA device, no server listening) is returned with its messages, not failed, so the
    caller can say what it means; the module fails only when ib_write_bw is not installed.
  - With O(rails), one ib_write_bw per rail runs at once (every port of a node loaded together, as a job loads
    them), each on its own device and TCP port; a client rail that finds its server not listening yet retries for
    O(connect_wait) seconds. The result lists every rail's run.
  - Changes nothing on the host but sends traffic over the fabric, so it does not run in check mode.
author: gpuops.bringup developers (@gpuops)
options:
  device:
    description: The RDMA device (C(mlx5_0)); or O(rails).
    type: str
  rails:
    description: Several runs at once, each C(device), C(port) (its own TCP port) and optionally C(gpu).
    type: list
    elements: dict
  connect_wait:
    description: With O(rails), the seconds a client rail retries a server that is not listening yet.
    type: int
    default: 20
  server:
    description: The server's address; unset - run as the server and wait for one client.
    type: str
  port:
    description: The TCP port the two sides exchange their parameters on.
    type: int
    default: 18515
  duration:
    description: Seconds of traffic.
    type: int
    default: 5
  size:
    description: Message size in bytes.
    type: int
    default: 65536
  gid_index:
    description: The GID index (RoCE); unset for InfiniBand.
    type: int
  gpu:
    description: The CUDA device whose memory to use, when this perftest supports CUDA.
    type: int
  require_gpudirect:
    description: Run only with GPU memory; needs O(gpu).
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: gpuops.bringup.ib_facts
"""

EXAMPLES = r"""
- name: Serve one ib_write_bw run on the peer
  gpuops.bringup.perftest_bw:
    device: mlx5_0
  delegate_to: gpu-node-02
  async: 120
  poll: 0
  register: server

- name: Measure from this node
  gpuops.bringup.perftest_bw:
    device: mlx5_0
    server: 10.10.0.12
  register: client
"""

RETURN = r"""
ok:
  description: ib_write_bw exited 0 and printed a results table.
  returned: always
  type: bool
exit_code:
  description: ib_write_bw's exit status (not C(rc), which Ansible would read as this module failing); null when it
    was not run (O(require_gpudirect) without CUDA).
  returned: always
  type: int
cmd:
  description: The command run; empty when none was.
  returned: always
  type: list
  elements: str
average_gbps:
  description: Average bandwidth of the largest message size, in Gb/s; null without a table.
  returned: always
  type: float
rows:
  description: The results table - C(bytes), C(iterations), C(peak_gbps), C(average_gbps), C(msg_rate_mpps).
  returned: always
  type: list
  elements: dict
link_type:
  description: The link type ib_write_bw reports (C(IB), C(Ethernet)).
  returned: always
  type: str
messages:
  description: What ib_write_bw printed on stderr (why it could not run).
  returned: always
  type: list
  elements: str
output:
  description: What ib_write_bw printed on stdout, as printed (its last 8000 characters), the run's raw evidence.
  returned: always
  type: str
gpudirect:
  description: Whether GPU memory was used (O(gpu) set and this perftest supports CUDA).
  returned: always
  type: bool
cuda_support:
  description: Whether this perftest was built with CUDA (its C(--help) offers C(--use_cuda)); null without O(gpu).
  returned: always
  type: bool
rails:
  description: With O(rails), each rail's run - C(device), C(port) and the fields above; RV(ok) is then every rail's.
  returned: with O(rails)
  type: list
  elements: dict
"""

import re
import time
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import perftest
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner
from ansible_collections.gpuops.bringup.plugins.module_utils.infiniband import AnyReturnCode

# A run prints a few kilobytes; a hostile or broken binary could print without end.
OUTPUT_LIMIT = 8000
NO_CUDA = "this perftest was built without CUDA (ib_write_bw --help offers no --use_cuda): it cannot use GPU memory"


def cuda_support(tool):
    """Whether this perftest was built with CUDA, from its --help."""
    _rc, out, err = tool(["--help"], ok_rc=AnyReturnCode())
    return perftest.supports_cuda(out + err)


def run(tool, params, cuda=None):
    """One ib_write_bw run; cuda: whether this perftest has CUDA, where the caller asked already (None: ask here when
    a GPU is wanted)."""
    if params["gpu"] is None:
        cuda = None
    elif cuda is None:
        cuda = cuda_support(tool)
    gpudirect = bool(cuda)
    if params["require_gpudirect"] and not gpudirect:
        # Not run: host memory would measure something else. Reported as a run that could not start.
        argv, rc, out, err = [], None, "", NO_CUDA
    else:
        argv = perftest.write_bw_argv(
            params["device"],
            params["duration"],
            params["size"],
            params["port"],
            gid_index=params["gid_index"],
            use_cuda=params["gpu"] if gpudirect else None,
            server=params["server"],
        )
        rc, out, err = tool(argv[1:], ok_rc=AnyReturnCode())
    parsed = perftest.parse_write_bw(out, err)
    return {
        "ok": rc == 0 and bool(parsed["rows"]),
        "exit_code": rc,
        "cmd": argv,
        "average_gbps": parsed["average_gbps"],
        "rows": parsed["rows"],
        "link_type": parsed["link_type"],
        "messages": parsed["messages"],
        "output": (out or "")[-OUTPUT_LIMIT:],
        "gpudirect": gpudirect,
        "cuda_support": cuda,
    }


_NOT_LISTENING = re.compile(r"(?i)couldn't connect")


def run_rails(tool, params, sleep=time.sleep, clock=time.monotonic):
    """Every rail at once, each a run() of its own; a client rail whose server is not listening yet retries. The
    binary's CUDA support is asked once for all rails that want a GPU."""
    cuda = cuda_support(tool) if any(rail.get("gpu") is not None for rail in params["rails"]) else None

    def one(rail):
        rail_params = {**params, "device": rail["device"], "port": rail["port"], "gpu": rail.get("gpu")}
        deadline = clock() + params["connect_wait"]
        while True:
            result = run(tool, rail_params, cuda)
            waiting = params["server"] and any(_NOT_LISTENING.search(m) for m in result["messages"])
            if result["ok"] or not waiting or clock() >= deadline:
                return {"device": rail["device"], "port": rail["port"], **result}
            sleep(1)

    with ThreadPoolExecutor(max_workers=len(params["rails"])) as pool:
        runs = list(pool.map(one, params["rails"]))
    return {"ok": all(r["ok"] for r in runs), "rails": runs}


def rails_problems(rails):
    """What is wrong with the rails option, each naming the rail."""
    problems = []
    for index, rail in enumerate(rails or []):
        if not isinstance(rail.get("device"), str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", rail["device"]):
            problems.append(f"rails[{index}].device is {rail.get('device')!r}: an RDMA device name such as mlx5_0")
        port = rail.get("port")
        if not isinstance(port, int) or isinstance(port, bool) or not 1024 <= port <= 65535:
            problems.append(f"rails[{index}].port is {port!r}: a TCP port from 1024 to 65535")
        gpu = rail.get("gpu")
        if gpu is not None and (not isinstance(gpu, int) or isinstance(gpu, bool) or gpu < 0):
            problems.append(f"rails[{index}].gpu is {gpu!r}: a CUDA device index")
    ports = [r.get("port") for r in rails or []]
    if len(ports) != len(set(ports)):
        problems.append(f"rails use a TCP port twice ({ports}): each rail needs its own")
    return problems


def main():
    module = AnsibleModule(
        argument_spec={
            "device": {"type": "str"},
            "rails": {"type": "list", "elements": "dict"},
            "connect_wait": {"type": "int", "default": 20},
            "server": {"type": "str"},
            "port": {"type": "int", "default": 18515},
            "duration": {"type": "int", "default": 5},
            "size": {"type": "int", "default": 65536},
            "gid_index": {"type": "int"},
            "gpu": {"type": "int"},
            "require_gpudirect": {"type": "bool", "default": False},
        },
        required_if=[("require_gpudirect", True, ("gpu",))],
        required_one_of=[("device", "rails")],
        mutually_exclusive=[("device", "rails")],
        supports_check_mode=False,
    )
    problems = rails_problems(module.params["rails"])
    if problems:
        module.fail_json(msg="; ".join(problems))
    tool = ToolRunner(module, "ib_write_bw")
    result = run_rails(tool, module.params) if module.params["rails"] else run(tool, module.params)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
