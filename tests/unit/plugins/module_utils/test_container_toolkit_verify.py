"""The container toolkit's verification verdict (module_utils container_toolkit_verify). The messages of the cases the
role's former Jinja verdict could render are that verdict's own, rendered by ansible-core 2.19 when the verdict moved
to Python; a failed runtime check (no nvidia runtime, another binary, another default, a stopped unit) made that
Jinja fail to render ("can only concatenate list") instead of failing the node, and now fails it with the message."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit_verify

VERSION = "1.17.8-1"
RUNTIME = "/usr/bin/nvidia-container-runtime"
PACKAGES = {
    name: {"installed": VERSION, "held": True}
    for name in ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
                 "libnvidia-container1")
}  # fmt: skip
UUIDS = ["GPU-aaaa", "GPU-bbbb"]
# container_toolkit_facts' container_toolkit of a node converged with containerd (and Docker, CRI-O configured).
CTK = {
    "version": "1.17.8",
    "errors": [],
    "runtimes": {
        "containerd": {"default": "runc", "runtimes": {"nvidia": {"binary": RUNTIME}}},
        "docker": {"default": "nvidia", "runtimes": {"nvidia": {"binary": RUNTIME}}},
        "crio": {"default": "crun", "runtimes": {"nvidia": {"binary": RUNTIME}}},
    },
    "cdi_devices": [f"nvidia.com/gpu={uuid}" for uuid in UUIDS] + ["nvidia.com/gpu=all"],
}
UNITS = {"containerd.service": {"active": True}, "docker.service": {"active": True}, "crio.service": {"active": True}}
BASE = {
    "settings": {"version": VERSION, "runtimes": ["containerd"], "default_for": [], "cdi": True,
                 "smoke_image": "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"},
    "judged": {"runtime_path": RUNTIME,
               "units": {"containerd": "containerd.service", "docker": "docker.service", "crio": "crio.service"},
               "own_kernel": False, "gpu": {"devices": [{"uuid": uuid} for uuid in UUIDS],
                                            "simulated": {"profile": "pcie_l40s_4gpu"}},
               "gpus_answer": True, "live": False, "smoke_runtime": "containerd"},
    "reads": {"packages": PACKAGES, "ctk": CTK, "units": UNITS, "smoke": None},
}  # fmt: skip
CONTAINER = (
    "a GPU container (this node's kernel belongs to its container host: its containers reach the host's GPUs, not this "
    "install's; nvidia-smi replays another machine's capture)"
)
HEAD = "n1 passed nvidia_container_toolkit verification: 4 packages held at 1.17.8-1 (nvidia-ctk 1.17.8), "
SMOKE = ["GPU 0: NVIDIA L40S (UUID: GPU-aaaa)", "GPU 1: NVIDIA L40S (UUID: GPU-bbbb)"]


def verdict(**changes):
    """BASE with changes given as part__key=value (settings, judged, reads)."""
    given = copy.deepcopy(BASE)
    for path, value in changes.items():
        part, key = path.split("__", 1)
        given[part][key] = value
    return container_toolkit_verify.verify(host="n1", **given)


def ctk(**changes):
    return {**copy.deepcopy(CTK), **changes}


def test_a_container_node_passes_with_what_it_cannot_show():
    found = verdict()
    assert (found["failures"], found["not_applicable"]) == ([], [CONTAINER])
    assert found["passed"] == (
        HEAD + "the nvidia runtime in containerd, CDI spec with 2 GPU(s) [SIMULATED pcie_l40s_4gpu] (not applicable: "
        f"{CONTAINER})"
    )


@pytest.mark.parametrize(
    ("changes", "not_applicable", "passed"),
    [
        (
            {"judged__gpu": {"devices": [{"uuid": uuid} for uuid in UUIDS], "simulated": None}},
            ["a GPU container (this node's kernel belongs to its container host: its containers reach the host's "
             "GPUs, not this install's)"],
            "the nvidia runtime in containerd, CDI spec with 2 GPU(s) (not applicable: a GPU container (this node's "
            "kernel belongs to its container host: its containers reach the host's GPUs, not this install's))",
        ),
        (
            {"judged__gpus_answer": False, "judged__gpu": {}},
            ["the CDI spec (no NVIDIA driver answers on this node, whose kernel belongs to its container host)",
             "a GPU container (this node's kernel belongs to its container host: its containers reach the host's "
             "GPUs, not this install's)"],
            "the nvidia runtime in containerd (not applicable: the CDI spec (no NVIDIA driver answers on this node, "
            "whose kernel belongs to its container host); a GPU container (this node's kernel belongs to its "
            "container host: its containers reach the host's GPUs, not this install's))",
        ),
        (
            {"judged__gpus_answer": False, "judged__gpu": {}, "settings__cdi": False},
            ["a GPU container (this node's kernel belongs to its container host: its containers reach the host's "
             "GPUs, not this install's)"],
            "the nvidia runtime in containerd (not applicable: a GPU container (this node's kernel belongs to its "
            "container host: its containers reach the host's GPUs, not this install's))",
        ),
        (
            {"judged__own_kernel": True, "judged__live": True, "reads__smoke": SMOKE},
            [],
            "the nvidia runtime in containerd, CDI spec with 2 GPU(s) [SIMULATED pcie_l40s_4gpu], a container saw 2 "
            "GPU(s)",
        ),
        (
            {"judged__own_kernel": True, "judged__live": False},
            ["a GPU container (the NVIDIA driver is not loaded)"],
            "the nvidia runtime in containerd, CDI spec with 2 GPU(s) [SIMULATED pcie_l40s_4gpu] (not applicable: a "
            "GPU container (the NVIDIA driver is not loaded))",
        ),
        (
            {"judged__own_kernel": True, "judged__live": True, "settings__smoke_image": ""},
            ["a GPU container (nvidia_container_toolkit_smoke_image is empty)"],
            "the nvidia runtime in containerd, CDI spec with 2 GPU(s) [SIMULATED pcie_l40s_4gpu] (not applicable: a "
            "GPU container (nvidia_container_toolkit_smoke_image is empty))",
        ),
        (
            {"judged__own_kernel": True, "judged__live": True, "judged__smoke_runtime": "",
             "settings__runtimes": ["crio"]},
            ["a GPU container (CRI-O runs pods only: run one with crictl)"],
            "the nvidia runtime in crio, CDI spec with 2 GPU(s) [SIMULATED pcie_l40s_4gpu] (not applicable: a GPU "
            "container (CRI-O runs pods only: run one with crictl))",
        ),
        (
            {"settings__runtimes": ["containerd", "docker"], "settings__default_for": ["docker"]},
            [CONTAINER],
            "the nvidia runtime in containerd, docker (the default in docker), CDI spec with 2 GPU(s) [SIMULATED "
            f"pcie_l40s_4gpu] (not applicable: {CONTAINER})",
        ),
    ],
    ids=["not_simulated", "no_answer", "no_answer_no_cdi", "live_container_ran", "own_kernel_driver_not_loaded",
         "no_smoke_image", "crio_only", "default_in_docker"],
)  # fmt: skip
def test_passed_nodes(changes, not_applicable, passed):
    found = verdict(**changes)
    assert (found["failures"], found["not_applicable"], found["passed"]) == ([], not_applicable, HEAD + passed)


@pytest.mark.parametrize(
    ("changes", "failures"),
    [
        (
            {"judged__own_kernel": True, "judged__live": True, "reads__smoke": [SMOKE[0], "noise"]},
            ["a container through the nvidia runtime saw 1 GPU(s), the driver reports 2"],
        ),
        (
            {"reads__packages": {**PACKAGES, "libnvidia-container1": {"installed": "1.17.7-1", "held": False},
                                 "nvidia-container-toolkit": {"installed": None, "held": False}}},
            ["nvidia-container-toolkit is not at 1.17.8-1", "libnvidia-container1 is not at 1.17.8-1",
             "nvidia-container-toolkit is not held", "libnvidia-container1 is not held"],
        ),
        (
            {"reads__ctk": ctk(errors=["containerd: config unreadable"], version=None)},
            ["containerd: config unreadable", "nvidia-ctk --version says nothing, not 1.17.8"],
        ),
        ({"reads__ctk": ctk(version="1.16.2")}, ["nvidia-ctk --version says 1.16.2, not 1.17.8"]),
        # container_toolkit_facts could not read the configuration: its error says why, nothing more here.
        ({"reads__ctk": ctk(runtimes={"containerd": None})}, []),
        (
            {"reads__ctk": ctk(cdi_devices=["nvidia.com/gpu=GPU-aaaa"])},
            ["nvidia-ctk cdi list lacks nvidia.com/gpu=GPU-bbbb, nvidia.com/gpu=all"],
        ),
        # Where the former Jinja verdict failed to render.
        (
            {"reads__ctk": ctk(runtimes={"containerd": {"default": "runc", "runtimes": {}}})},
            ["containerd's effective configuration has no nvidia runtime"],
        ),
        (
            {"reads__ctk": ctk(runtimes={"containerd": {"default": "nvidia",
                                                        "runtimes": {"nvidia": {"binary": "/opt/x"}}}})},
            ["containerd's nvidia runtime runs /opt/x, not /usr/bin/nvidia-container-runtime",
             "containerd's default runtime is nvidia"],
        ),
        ({"settings__default_for": ["containerd"]}, ["containerd's default runtime is runc, not nvidia"]),
        ({"reads__units": {**UNITS, "containerd.service": {"active": False}}}, ["containerd.service is not active"]),
        (
            {"judged__own_kernel": True, "judged__live": True, "settings__runtimes": ["containerd", "docker"],
             "settings__default_for": ["containerd"], "reads__smoke": [],
             "reads__ctk": ctk(version="1.0", errors=["e1", "e2"], cdi_devices=[]),
             "reads__units": {"containerd.service": {"active": False}, "docker.service": {"active": False}},
             "reads__packages": {"nvidia-container-toolkit": {"installed": "1", "held": False}}},
            ["nvidia-container-toolkit is not at 1.17.8-1", "nvidia-container-toolkit is not held", "e1", "e2",
             "nvidia-ctk --version says 1.0, not 1.17.8", "containerd's default runtime is runc, not nvidia",
             "containerd.service is not active", "docker's default runtime is nvidia", "docker.service is not active",
             "nvidia-ctk cdi list lacks nvidia.com/gpu=GPU-aaaa, nvidia.com/gpu=GPU-bbbb, nvidia.com/gpu=all",
             "a container through the nvidia runtime saw 0 GPU(s), the driver reports 2"],
        ),
    ],
    ids=["container_saw_fewer", "packages", "ctk_errors", "ctk_version", "runtime_unread", "cdi_missing",
         "no_nvidia_runtime", "other_binary", "not_default", "unit_stopped", "everything"],
)  # fmt: skip
def test_failures(changes, failures):
    assert verdict(**changes)["failures"] == failures


def test_the_cdi_spec_is_not_judged_where_nvidia_smi_does_not_answer():
    found = verdict(judged__gpus_answer=False, judged__gpu={}, reads__ctk=ctk(cdi_devices=[]))
    assert found["failures"] == []
