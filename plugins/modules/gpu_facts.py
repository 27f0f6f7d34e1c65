#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Read a node's NVIDIA GPUs, their topology and their health from nvidia-smi
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -q -x), and where they answer C(nvidia-smi topo -m) and C(nvidia-smi nvlink -s), and returns
    what they say about every GPU, the links between GPUs and NICs, and the health problems found.
  - When nvidia-smi runs but cannot reach the driver (C(couldn't communicate with the NVIDIA driver)), reports a
    driver/library version mismatch or finds no device, the module succeeds with a GPU count of 0 and a finding
    saying so. A missing nvidia-smi, or any other failure of C(nvidia-smi -q -x), fails the task with the command,
    its return code and both output streams.
  - Changes nothing. Returns only C(ansible_facts.gpu).
author: gpuops.bringup developers (@gpuops)
options:
  expected_count:
    description:
      - The number of GPUs this node should have. Fewer seen adds the error finding C(gpu_count_low).
    type: int
  expected_model:
    description:
      - The product name every GPU should report, as nvidia-smi prints it (C(NVIDIA H100 80GB HBM3)). Another name
        adds the error finding C(gpu_model_mismatch) for that GPU.
    type: str
  topology:
    description:
      - Run C(nvidia-smi topo -m) for the GPU-pair link types and NIC affinity. Omitted from the facts when the
        command fails (older drivers).
    type: bool
    default: true
  nvlink:
    description:
      - Run C(nvidia-smi nvlink -s) for the NVLink state of every GPU. Omitted from the facts when the command fails
        (GPUs without NVLink).
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
  - gpuops.bringup.attributes.facts
notes:
  - Commands run with C(LANG=C). Architecture comes from the XML (C(product_architecture)) when the driver prints it,
    else from the collection's GPU catalog by PCI device id, then by product name; the compute capability from the
    XML when present (C(compute_cap)), else from the catalog.
  - A PCIe generation below the maximum is only C(info) (C(pcie_gen_below_max)), since idle GPUs lower their link
    speed to save power; a link narrower than its maximum width is a C(warning) (C(pcie_link_degraded)).
seealso:
  - name: nvidia-smi documentation
    description: What each field of the query means.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Read the GPUs of an 8-GPU node
  gpuops.bringup.gpu_facts:
    expected_count: 8

- name: Stop on any error-level GPU finding
  ansible.builtin.assert:
    that: ansible_facts.gpu.findings | selectattr('severity', 'equalto', 'error') | list | length == 0
    fail_msg: "{{ ansible_facts.gpu.findings | selectattr('severity', 'equalto', 'error') | map(attribute='message') }}"

- name: Read only the query (no topology or NVLink commands)
  gpuops.bringup.gpu_facts:
    topology: false
    nvlink: false
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(gpu).
  returned: always
  type: dict
  contains:
    gpu:
      description: Everything read.
      type: dict
      contains:
        simulated:
          description: >-
            False on real hardware; on the collection's simulated-hardware bench, the marker's content
            (C(profile), C(captures)), so reports can say their data was replayed.
          type: raw
          sample: false
        driver_version:
          description: Driver version nvidia-smi reports; null when the driver is unreachable.
          type: str
          sample: 535.54.03
        cuda_version:
          description: Highest CUDA version the driver supports; null when unknown.
          type: str
          sample: "12.2"
        count:
          description: Number of GPUs listed in the query (0 when the driver is unreachable).
          type: int
          sample: 8
        devices:
          description: One entry per GPU, in nvidia-smi's index order.
          type: list
          elements: dict
          contains:
            index:
              description: nvidia-smi index (position in the query).
              type: int
            name:
              description: Product name.
              type: str
              sample: NVIDIA H100 80GB HBM3
            uuid:
              description: GPU UUID.
              type: str
            serial:
              description: Board serial number; null when the board has none.
              type: str
            pci_bus_id:
              description: PCI bus id (domain:bus:device.function).
              type: str
              sample: "00000000:18:00.0"
            pci_device_id:
              description: PCI device and vendor id as nvidia-smi prints it.
              type: str
              sample: 233010DE
            minor_number:
              description: Minor number of the /dev/nvidiaN device node.
              type: int
            architecture:
              description: Architecture, lower case, first word only (C(hopper), C(ampere), C(ada)); null when unknown.
              type: str
            compute_capability:
              description: CUDA compute capability; null when neither the XML nor the catalog knows it.
              type: str
              sample: "9.0"
            vbios_version:
              description: VBIOS version.
              type: str
            memory_total_mib:
              description: Frame buffer size in MiB.
              type: int
            pcie:
              description: >-
                Link C(gen_current), C(gen_max), C(width_current), C(width_max) (lanes) and C(replays) (replays since
                reset), integers or null.
              type: dict
            persistence_mode:
              description: Persistence mode on; null when not reported.
              type: bool
            mig_mode:
              description: MIG mode C(current) and C(pending) (Enabled, Disabled), null on GPUs without MIG.
              type: dict
            mig_devices:
              description: >-
                MIG devices: C(index), C(gpu_instance_id), C(compute_instance_id), C(multiprocessor_count),
                C(memory_total_mib).
              type: list
              elements: dict
            ecc:
              description: >-
                C(mode) and C(mode_pending) (Enabled, Disabled), and C(volatile) (since the driver loaded) and
                C(aggregate) (lifetime) counts, each C(correctable) and C(uncorrectable) (integers, SRAM and DRAM
                summed; null when not reported).
              type: dict
            retired_pages:
              description: >-
                Dynamic page retirement (before Ampere): C(single_bit) and C(double_bit) retired page counts,
                C(pending) (a retirement waits for a reset); nulls on GPUs that remap rows instead.
              type: dict
            remapped_rows:
              description: >-
                Row remapping (Ampere and later): C(correctable), C(uncorrectable) (rows remapped for each kind of
                error), C(pending) (a remap waits for a reset), C(failure) (a remap failed); nulls when not reported.
              type: dict
            power:
              description: C(draw_w), C(limit_w) (enforced limit), C(default_limit_w), C(max_limit_w), in watts.
              type: dict
            temperature:
              description: >-
                C(gpu_c) and C(memory_c), and the thresholds where the driver slows the GPU down
                (C(slowdown_c)) and shuts it down (C(shutdown_c)); degrees Celsius, null where not reported.
              type: dict
            clock_event_reasons:
              description: >-
                Active clock event (throttle) reasons, as named in the XML without their prefix (C(gpu_idle),
                C(sw_power_cap), C(hw_thermal_slowdown)...).
              type: list
              elements: str
            reset_required:
              description: The GPU reports that it needs a reset; null on drivers that do not say.
              type: bool
            recovery_action:
              description: Recovery action the driver asks for; null when none.
              type: str
            fabric:
              description: >-
                NVSwitch fabric registration, for GPUs that report one: C(state) (Completed, In Progress, Not Started),
                C(status), C(clique_id), C(cluster_uuid); null otherwise.
              type: dict
            nvlink:
              description: C(active) and C(inactive) NVLink counts from C(nvidia-smi nvlink -s); absent without it.
              type: dict
        topology:
          description: >-
            From C(nvidia-smi topo -m): C(gpus), C(nics) (NIC column to device name, from the NIC legend),
            C(pairs) (C(GPU0-GPU1) to the link type C(NV#), C(PIX), C(PXB), C(PHB), C(NODE), C(SYS)), C(nic_affinity)
            (per GPU, device name to link type), C(cpu_affinity) and C(numa_affinity) (per GPU). Null when the
            command failed, was not run, or printed no matrix.
          type: dict
        nvlink:
          description: >-
            From C(nvidia-smi nvlink -s), per GPU: C(index), C(name), C(uuid), C(links) (C(link), C(speed_gbps),
            C(active)), C(active), C(inactive). Null when the command failed or was not run.
          type: list
          elements: dict
        findings:
          description: >-
            Health problems, errors first, each C(severity) (error, warning, info), C(device) (the GPU's PCI bus id, or
            C(node)), C(code) and C(message). Codes - C(driver_unreachable), C(driver_library_mismatch), C(no_devices),
            C(gpus_not_listed) (nvidia-smi counts more attached GPUs than it describes),
            C(gpu_count_low), C(gpu_model_mismatch), C(pcie_link_degraded), C(pcie_gen_below_max), C(remap_pending),
            C(remap_failure),
            C(retired_pages_pending), C(ecc_uncorrectable), C(ecc_disabled), C(ecc_mode_pending), C(mig_mode_pending),
            C(fabric_not_completed), C(fabric_status_error), C(nvlink_down), C(clock_slowdown), C(gpu_reset_required),
            C(gpu_recovery_action), C(topology_unparsed), C(nvlink_unparsed).
          type: list
          elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import nvidia_smi, simulation


def gather(smi, params, simulated=False):
    """Run the commands through smi (an nvidia_smi.NvidiaSmi) and return the gpu facts."""
    text, failure = smi.query()
    query = None
    if text is not None:
        try:
            query = nvidia_smi.parse_query_xml(text)
        except nvidia_smi.NvidiaSmiParseError as exc:
            smi.module.fail_json(
                msg=str(exc),
                cmd=[smi.tool.path, *nvidia_smi.QUERY_ARGS],
                rc=0,
                stdout=text[-4000:],
                stderr="",
            )
    devices = query["devices"] if query else []
    notes = []
    topology = None
    nvlink = None
    if query and devices:
        if params["topology"]:
            topology, note = _optional(smi, nvidia_smi.TOPOLOGY_ARGS, nvidia_smi.parse_topology, "topology_unparsed")
            notes.extend(note)
        if params["nvlink"]:
            nvlink, note = _optional(smi, nvidia_smi.NVLINK_ARGS, nvidia_smi.parse_nvlink_status, "nvlink_unparsed")
            notes.extend(note)
    for gpu in nvlink or []:
        if gpu["index"] < len(devices):
            devices[gpu["index"]]["nvlink"] = {"active": gpu["active"], "inactive": gpu["inactive"]}
    found = nvidia_smi.findings(query, failure, nvlink, params["expected_count"], params["expected_model"])
    return {
        "simulated": simulated,
        "driver_version": (query or {}).get("driver_version"),
        "cuda_version": (query or {}).get("cuda_version"),
        "count": len(devices),
        "devices": devices,
        "topology": topology,
        "nvlink": nvlink,
        "findings": found + notes,
    }


def _optional(smi, args, parse, code):
    """(parsed, []) for a command that answered, (None, []) for one that failed, (None, [info finding]) for
    output the parser does not recognise."""
    text = smi.optional(args)
    if text is None:
        return None, []
    try:
        return parse(text), []
    except nvidia_smi.NvidiaSmiParseError as exc:
        return None, [{"severity": "info", "device": "node", "code": code, "message": str(exc)}]


def main():
    module = AnsibleModule(
        argument_spec={
            "expected_count": {"type": "int"},
            "expected_model": {"type": "str"},
            "topology": {"type": "bool", "default": True},
            "nvlink": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    facts = gather(nvidia_smi.NvidiaSmi(module), module.params, simulation.simulated())
    module.exit_json(changed=False, ansible_facts={"gpu": facts})


if __name__ == "__main__":
    main()
