#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: acceptance_read
short_description: Collect a node's acceptance evidence in one round trip - raw tool output and sysfs snapshots
version_added: 0.2.0
description:
  - Runs every command the acceptance stage judges a node on and returns what each printed, with its exit status,
    unparsed - C(nvidia-smi -q -x), C(nvidia-smi topo -m) and C(nvidia-smi nvlink -s) (those two only where the
    query answered), C(lspci -Dnn), C(ibstat), the kernel log (C(journalctl -k), else C(dmesg)), C(dkms status),
    C(systemctl show) of the persistence daemon and fabric manager, the installed packages (C(dpkg-query -W) or
    C(rpm -qa)), C(dmidecode -t system -t bios) - and snapshots of the files the collection's sysfs parsers read
    (C(/sys/class/infiniband); C(/sys/bus/pci/devices) where lspci is not installed), the driver's version files, the
    NVML library the dynamic linker finds, the nccl_tests stage's kept measurement and the rdma_fabric stage's state
    (the RoCE GID index).
  - Where DCGM is installed, C(dcgmi diag -r <dcgm_level> -j) runs (level 1, its deployment checks, by default;
    about 10 seconds), stopped after O(dcgm_timeout) seconds.
  - Every active InfiniBand port's counters are read twice with C(perfquery -x -C <adapter> -P <port>) (64-bit
    extended counters, which do not saturate), and every active RoCE port's with C(ethtool -S <interface>) (its
    Ethernet interface, from sysfs, else from C(rdma link show)), before and after the kernel log, package and DCGM
    reads, at least O(counter_interval) seconds apart, so that a counter rising now can be told from one that rose
    before the counters were last cleared.
  - Where the node runs its own kernel, two checks run between the counter reads - the CUDA check program
    (O(cuda_source)) compiled with O(cuda_root)'s C(nvcc) in a temporary directory and run (a kernel round trip on
    every GPU), and a GPU container through containerd's nvidia runtime (O(container_image), pulled into containerd's
    C(gpuops) namespace where it is not there yet) that lists the GPUs it sees (C(nvidia-smi -L)). In a container,
    whose kernel and GPUs are its host's, neither runs and each item says why.
  - A tool that is missing or fails is recorded as such; the module itself fails only on bad options. Judging is the
    controller's (C(gpuops.bringup.acceptance_results)), from this evidence alone.
  - Changes nothing on the node but the GPU container's image, pulled into containerd's C(gpuops) namespace where
    it is not there yet (the container toolkit stage's check pulls the same image); in check mode nothing is pulled.
author: gpuops.bringup developers (@gpuops)
options:
  since_boot:
    description: Read the kernel log of the current boot only (C(journalctl -b)); C(dmesg) holds only it anyway.
    type: bool
    default: true
  max_bytes:
    description:
      - The most bytes kept of one output. A longer kernel log keeps its end (the newest lines), any other output
        its beginning; the item says C(truncated).
    type: int
    default: 16777216
  dcgm_level:
    description:
      - The DCGM diagnostic level run where C(dcgmi) is installed - 1 (deployment checks, seconds), 2 (also PCIe
        and GPU memory, minutes), 3 (also stress and power, about half an hour) or 4 (also the extended utility
        diagnostics, hours) - or 0 not to run it. Run levels 3 and 4 with C(async) (the acceptance role does).
    type: int
    choices: [0, 1, 2, 3, 4]
    default: 1
  dcgm_timeout:
    description:
      - The most seconds C(dcgmi diag) may run (coreutils C(timeout); exit status 124 when it ran out), 60 to 86400.
    type: int
    default: 7200
  counter_interval:
    description:
      - The least seconds between the two reads of the port counters, 1 to 600. The module waits out what its other
        reads did not take.
    type: int
    default: 10
  link_layer:
    description:
      - The link layer of the ports whose error counters are read - V(InfiniBand) (perfquery) or V(Ethernet) (RoCE,
        ethtool) - the fabric's (the hardware profile's C(infiniband.link_layer)); empty reads both. A port of
        another link layer belongs to another network (a BlueField's host bond beside InfiniBand rails).
    type: str
    choices: ["", InfiniBand, Ethernet]
    default: ""
  cuda_source:
    description: The CUDA check program's text (the collection's C(roles/_common/files/cuda_check.cu)); empty skips it.
    type: str
    default: ""
  cuda_root:
    description: The CUDA root whose C(bin/nvcc) compiles the check program.
    type: path
    default: /usr/local/cuda
  container_image:
    description:
      - The image the GPU container runs, with C(nvidia-smi) on its path (the NVIDIA CUDA base images); empty skips
        the container check. An air-gapped site names its mirror's copy.
    type: str
    default: ""
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
notes:
  - Commands run with C(LANG=C). Undecodable bytes become U+FFFD.
seealso:
  - module: gpuops.bringup.gpu_facts
    description: The GPUs alone, parsed on the node.
"""

EXAMPLES = r"""
- name: Collect the node's acceptance evidence
  gpuops.bringup.acceptance_read:
  register: evidence

- name: Show what nvidia-smi answered
  ansible.builtin.debug:
    msg: "{{ evidence.evidence['nvidia-smi-query.xml'].rc }}"
"""

RETURN = r"""
evidence:
  description: >-
    One item per evidence file name (C(nvidia-smi-query.xml), C(nvidia-smi-topo.txt), C(nvidia-smi-nvlink.txt),
    C(lspci.txt), C(sysfs-pci.json), C(ibstat.txt), C(sysfs-infiniband.json), C(kernel-log.txt), C(dkms-status.txt),
    C(driver-files.json), C(systemd-units.txt), C(packages.txt), C(dmidecode.txt), C(nccl-tests-results.json),
    C(rdma-fabric-state.json), C(perfquery.json), C(ethtool.json) and C(rdma-link.txt) (where the node has RoCE
    ports), C(dcgm-diag.json), C(cuda-check.txt), C(container-gpus.txt)). A
    command's item has C(cmd), C(rc), C(stdout), C(stderr) and C(truncated); a missing tool's C(tool) and
    C(missing=true); one not run C(skipped) (why). C(kernel-log.txt) also has C(source) (journal or dmesg) and
    C(fallback) (why the journal was not used). Snapshots are JSON text in C(stdout) with C(rc) 0;
    C(perfquery.json)'s and C(ethtool.json)'s are C(interval_s) (seconds between the reads) and C(samples), two
    mappings of C(<adapter>/<port>) to that read's command item. C(cuda-check.txt) also has C(step) (the step that
    failed, null when the program ran to its end); an item not run because the node's kernel is its container
    host's has C(container=true).
  returned: always
  type: dict
simulated:
  description: The test bench's simulated-hardware marker, or false on real hardware.
  returned: always
  type: raw
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    acceptance_evidence,
    cuda_program,
    infiniband,
    osinfo,
    pci,
    simulation,
    xid,
)
from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE, ToolRunner
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RecordingReader

ANY_RC = infiniband.AnyReturnCode()


class Collector:
    def __init__(self, module):
        self.module = module
        self.limit = module.params["max_bytes"]

    def cap(self, text, keep_end=False):
        text = text or ""
        if len(text) <= self.limit:
            return text, False
        return (text[-self.limit :] if keep_end else text[: self.limit]), True

    def run(self, tool, args, keep_end=False):
        runner = ToolRunner(self.module, tool, required=False)
        if not runner.available:
            return {"tool": tool, "missing": True}
        rc, out, err = runner(list(args), ok_rc=ANY_RC)
        out, cut_out = self.cap(out, keep_end)
        err, cut_err = self.cap(err)
        return {"cmd": [runner.path, *args], "rc": rc, "stdout": out, "stderr": err, "truncated": cut_out or cut_err}

    def snapshot(self, data):
        return {"rc": 0, "stdout": json.dumps(data, sort_keys=True), "stderr": "", "truncated": False}

    def file(self, path):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text, cut = self.cap(handle.read(self.limit + 1))
        except OSError:
            return {"path": path, "rc": None, "stdout": None, "stderr": "", "missing": True}
        return {"path": path, "rc": 0, "stdout": text, "stderr": "", "truncated": cut}

    def kernel_log(self, since_boot):
        """xid_scan's source=auto, never failing: the journal's kernel messages, else dmesg's, and why."""
        journal = self.run("journalctl", xid.journal_args(since_boot), keep_end=True)
        if journal.get("rc") == 0 and xid.journal_has_entries(journal["stdout"]):
            return {**journal, "source": "journal", "fallback": None}
        why = ("journalctl is not installed" if journal.get("missing") else
               f"journalctl exited with {journal['rc']}" if journal["rc"] != 0 else xid.NO_KERNEL_MESSAGES)  # fmt: skip
        return {**self.run("dmesg", [], keep_end=True), "source": "dmesg", "fallback": why}


def infiniband_snapshot():
    """The files infiniband.read_sysfs reads, as it read them, and the adapters it found."""
    reader = RecordingReader(infiniband.SysfsReader("/sys"))
    devices = infiniband.read_sysfs(reader)
    return reader.snapshot(), devices


def counter_ports(sysfs_devices, ibstat, link_layer):
    """The active ports of link_layer ("" for both) whose error counters are read, from sysfs or ibstat:
    ([(adapter, port)] of InfiniBand ports, which perfquery reads; {"<adapter>/<port>": netdev or None} of RoCE
    ports, whose counters are their Ethernet interface's (ethtool -S): an Ethernet port has no LID for perfquery to
    address)."""
    devices = infiniband.merge(sysfs_devices, infiniband.parse_ibstat(ibstat.get("stdout") or "")["devices"])
    active = [
        (device, port)
        for device in devices
        for port in device["ports"]
        if port["state"] == "active" and link_layer in ("", port["link_layer"])
    ]
    infiniband_ports = [(d["name"], p["port"]) for d, p in active if p["link_layer"] == "InfiniBand"]
    roce_ports = {f"{d['name']}/{p['port']}": p["netdev"] for d, p in active if p["link_layer"] == "Ethernet"}
    return infiniband_ports, roce_ports


def roce_netdevs(collector, roce_ports):
    """The RoCE ports with their interfaces, those sysfs did not name (ibstat names none) from `rdma link show`,
    and that command's item (None where it was not needed)."""
    if all(roce_ports.values()):
        return roce_ports, None
    links = collector.run("rdma", ["link", "show"])
    named = infiniband.parse_rdma_link(links.get("stdout") or "") if links.get("rc") == 0 else {}
    return {where: netdev or (named.get(where) or {}).get("netdev") for where, netdev in roce_ports.items()}, links


def port_counters(collector, ports):
    return {f"{name}/{port}": collector.run("perfquery", ["-x", "-C", name, "-P", str(port)]) for name, port in ports}


def interface_counters(collector, netdevs):
    return {
        where: collector.run("ethtool", ["-S", netdev]) if netdev else
        {"skipped": f"no network interface is known for {where} (sysfs gid_attrs/ndevs, rdma link show)"}
        for where, netdev in netdevs.items()
    }  # fmt: skip


def pci_snapshot():
    reader = RecordingReader(infiniband.SysfsReader("/sys"))
    pci.read_sysfs(reader)
    return reader.snapshot()


def nvml_libraries(collector):
    """Where the dynamic linker finds libnvidia-ml.so.1, each resolved to its versioned file."""
    found = collector.run("ldconfig", ["-p"])
    paths = []
    for line in (found.get("stdout") or "").splitlines():
        name, sep, path = line.partition("=>")
        if sep and name.strip().startswith("libnvidia-ml.so.1 "):
            paths.append(os.path.realpath(path.strip()))
    return sorted(set(paths))


def packages(collector):
    """os_facts' package query: dpkg-query's, else rpm's."""
    found = collector.run("dpkg-query", osinfo.DPKG_QUERY_ARGS)
    return collector.run("rpm", osinfo.RPM_QUERY_ARGS) if found.get("missing") else found


def own_kernel():
    """False in a container: it never shares its host's initial PID namespace (os_facts' test)."""
    try:
        return osinfo.in_initial_pid_namespace(os.readlink("/proc/self/ns/pid"))
    except OSError:
        return False


IN_CONTAINER = {
    "skipped": "this node's kernel is its container host's: CUDA and a GPU container would reach the host's GPUs, "
    "not this node's",
    "container": True,
}


# A GPU that hangs CUDA, or a container runtime that hangs, must not hang the read: each run gets this long
# (coreutils timeout: exit 124 when it ran out).
PROGRAM_SECONDS = 120
CONTAINER_SECONDS = 600


def time_limit(module, seconds):
    """The argv prefix that stops a command after seconds (then kills it 10 s later), where timeout is installed."""
    path = module.get_bin_path("timeout")
    return (path, "--kill-after=10", str(seconds)) if path else ()


def run_limited(collector, seconds, argv):
    """A command item of argv run under time_limit (its cmd starts with timeout's); where argv[0] is not installed,
    Collector.run's missing item for it (timeout would only fail to start it)."""
    if not ToolRunner(collector.module, argv[0], required=False).available:
        return collector.run(argv[0], argv[1:])
    limit = time_limit(collector.module, seconds)
    return collector.run("timeout", [*limit[1:], *argv]) if limit else collector.run(argv[0], argv[1:])


def dcgm_diag(collector, level, seconds):
    """dcgmi diag at the level under time_limit (levels 3 and 4 run for hours on a bad GPU), where DCGM is installed."""
    if not level:
        return {"skipped": "dcgm_level is 0"}
    return run_limited(collector, seconds, ["dcgmi", "diag", "-r", str(level), "-j"])


def cuda_check(collector, root, source):
    """The CUDA check program compiled with root's nvcc and run: the run's item, or the step that failed."""
    if not source:
        return {"skipped": "no cuda_source given"}

    def run_command(argv, cwd):
        return collector.module.run_command(argv, environ_update=C_LOCALE, cwd=cwd, errors="replace")

    try:
        result = cuda_program.compile_and_run(run_command, root, source, run=True, inspect=False,
                                              run_prefix=time_limit(collector.module, PROGRAM_SECONDS))  # fmt: skip
    except cuda_program.StepFailed as failed:
        # The program's own exit status and output are the evidence, not a failure of this module.
        out, cut_out = collector.cap(failed.stdout)
        err, cut_err = collector.cap(failed.stderr)
        return {"cmd": failed.argv, "rc": failed.rc, "stdout": out, "stderr": err, "truncated": cut_out or cut_err,
                "step": failed.step, "message": failed.message}  # fmt: skip
    out, cut = collector.cap(result["output"])
    return {"cmd": ["cuda_check"], "rc": 0, "stdout": out, "stderr": "", "truncated": cut, "step": None,
            "nvcc": result["nvcc"]}  # fmt: skip


CONTAINER_NAMESPACE = "gpuops"
CONTAINER_NAME = "gpuops-acceptance-gpus"


def container_gpus(collector, image):
    """nvidia-smi -L in a container started through containerd's nvidia runtime (runc with
    nvidia-container-runtime as its binary), the image pulled first where containerd lacks it."""
    if not image:
        return {"skipped": "no container_image given"}
    ctr = ("ctr", "-n", CONTAINER_NAMESPACE)
    present = collector.run(ctr[0], [*ctr[1:], "image", "check", f"name=={image}"])
    if present.get("missing"):
        return present
    if image not in (present.get("stdout") or ""):
        if collector.module.check_mode:
            return {"skipped": f"check mode: {image} is not in containerd's {CONTAINER_NAMESPACE} namespace, and is "
                    "not pulled"}  # fmt: skip
        pulled = collector.run(ctr[0], [*ctr[1:], "image", "pull", image], keep_end=True)
        if pulled.get("rc") != 0:
            return {**pulled, "step": "pull"}
    # The image's CUDA requirement is not what is checked here, so it is waived.
    run = [*ctr, "run", "--rm", "--runc-binary", "/usr/bin/nvidia-container-runtime", "--env",
           "NVIDIA_VISIBLE_DEVICES=all", "--env", "NVIDIA_DISABLE_REQUIRE=1", image, CONTAINER_NAME, "nvidia-smi",
           "-L"]  # fmt: skip
    ran = run_limited(collector, CONTAINER_SECONDS, run)
    return {**ran, "step": "run"}


def gather(module):
    collector = Collector(module)
    evidence = {}
    query = collector.run("nvidia-smi", ["-q", "-x"])
    evidence["nvidia-smi-query.xml"] = query
    for name, args in (("nvidia-smi-topo.txt", ["topo", "-m"]), ("nvidia-smi-nvlink.txt", ["nvlink", "-s"])):
        evidence[name] = collector.run("nvidia-smi", args) if query.get("rc") == 0 else {"skipped": "no GPU query"}
    evidence["lspci.txt"] = collector.run("lspci", ["-Dnn"])
    if evidence["lspci.txt"].get("missing"):
        evidence["sysfs-pci.json"] = collector.snapshot(pci_snapshot())
    evidence["ibstat.txt"] = collector.run("ibstat", [])
    snapshot, sysfs_devices = infiniband_snapshot()
    evidence["sysfs-infiniband.json"] = collector.snapshot(snapshot)
    ports, roce_ports = counter_ports(sysfs_devices, evidence["ibstat.txt"], module.params["link_layer"])
    netdevs, links = roce_netdevs(collector, roce_ports)
    if links is not None:
        evidence["rdma-link.txt"] = links
    first = port_counters(collector, ports)
    first_interfaces, started = interface_counters(collector, netdevs), time.monotonic()
    evidence["kernel-log.txt"] = collector.kernel_log(module.params["since_boot"])
    evidence["dkms-status.txt"] = collector.run("dkms", ["status"])
    files = {
        "proc_version": collector.file("/proc/driver/nvidia/version").get("stdout"),
        "sys_version": collector.file("/sys/module/nvidia/version").get("stdout"),
        "nvml_libraries": nvml_libraries(collector),
    }
    evidence["driver-files.json"] = collector.snapshot(files)
    evidence["systemd-units.txt"] = collector.run(
        "systemctl", ["show", osinfo.SYSTEMCTL_PROPERTIES, "--", *acceptance_evidence.UNITS]
    )
    evidence["packages.txt"] = packages(collector)
    evidence["dmidecode.txt"] = collector.run("dmidecode", ["-t", "system", "-t", "bios"])
    evidence["nccl-tests-results.json"] = collector.file(acceptance_evidence.NCCL_RESULTS)
    evidence["rdma-fabric-state.json"] = collector.file(acceptance_evidence.RDMA_FABRIC_STATE)
    evidence["dcgm-diag.json"] = dcgm_diag(collector, module.params["dcgm_level"], module.params["dcgm_timeout"])
    live = own_kernel()
    p = module.params
    evidence["cuda-check.txt"] = cuda_check(collector, p["cuda_root"], p["cuda_source"]) if live else IN_CONTAINER
    evidence["container-gpus.txt"] = container_gpus(collector, p["container_image"]) if live else IN_CONTAINER
    # Nothing to wait for where neither perfquery nor ethtool read a port.
    if any("rc" in item for item in [*first.values(), *first_interfaces.values()]):
        time.sleep(max(0.0, module.params["counter_interval"] - (time.monotonic() - started)))
    second, interval = port_counters(collector, ports), time.monotonic() - started
    evidence["perfquery.json"] = collector.snapshot({"interval_s": round(interval, 3), "samples": [first, second]})
    if netdevs:
        second_interfaces, interval = interface_counters(collector, netdevs), time.monotonic() - started
        evidence["ethtool.json"] = collector.snapshot(
            {"interval_s": round(interval, 3), "samples": [first_interfaces, second_interfaces]}
        )
    return evidence


def main():
    module = AnsibleModule(
        argument_spec={
            "since_boot": {"type": "bool", "default": True},
            "max_bytes": {"type": "int", "default": 16 * 1024 * 1024},
            "counter_interval": {"type": "int", "default": 10},
            "link_layer": {"type": "str", "default": "", "choices": ["", "InfiniBand", "Ethernet"]},
            "dcgm_level": {"type": "int", "default": 1, "choices": [0, 1, 2, 3, 4]},
            "dcgm_timeout": {"type": "int", "default": 7200},
            "cuda_source": {"type": "str", "default": ""},
            "cuda_root": {"type": "path", "default": "/usr/local/cuda"},
            "container_image": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    if module.params["max_bytes"] < 4096:
        module.fail_json(msg=f"max_bytes must be 4096 or more, got {module.params['max_bytes']}")
    if not 1 <= module.params["counter_interval"] <= 600:
        module.fail_json(msg=f"counter_interval must be 1 to 600 seconds, got {module.params['counter_interval']}")
    if not 60 <= module.params["dcgm_timeout"] <= 86400:
        module.fail_json(msg=f"dcgm_timeout must be 60 to 86400 seconds, got {module.params['dcgm_timeout']}")
    module.exit_json(changed=False, evidence=gather(module), simulated=simulation.simulated())


if __name__ == "__main__":
    main()
