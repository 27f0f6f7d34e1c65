"""The container toolkit's preflight: every problem of a node at once, with the role's own tables."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit_preflight

ROLE_VARS = yaml.safe_load(
    (Path(__file__).resolve().parents[4] / "roles" / "nvidia_container_toolkit" / "vars" / "main.yml").read_text()
)
TABLES = {
    "supported": ROLE_VARS["__nvidia_container_toolkit_supported"],
    "architectures": ROLE_VARS["__nvidia_container_toolkit_architectures"],
    "units": ROLE_VARS["__nvidia_container_toolkit_units"],
    "tomli": ROLE_VARS["__nvidia_container_toolkit_tomli"],
}
# os_facts' gpuops_os of a Debian 13 node that owns its kernel, with containerd installed.
NODE = {
    "os": {"id": "debian", "major": "13", "version_id": "13", "name": "Debian GNU/Linux 13 (trixie)",
           "package_arch": "amd64"},
    "capabilities": {"own_kernel": True},
    "units": {"containerd.service": {"exists": True}, "docker.service": {"exists": False},
              "crio.service": {"exists": False}},
}  # fmt: skip
VARIABLES = {
    "nvidia_container_toolkit_version": "1.17.8-1",
    "nvidia_container_toolkit_runtimes": ["containerd"],
    "nvidia_container_toolkit_default_for": [],
    "nvidia_container_toolkit_cdi": True,
    "nvidia_container_toolkit_repo_url": "https://nvidia.github.io/libnvidia-container/stable/deb",
    "nvidia_container_toolkit_key_url": "https://nvidia.github.io/libnvidia-container/gpgkey",
    "nvidia_container_toolkit_key_fingerprint": "C95B321B61E88C1809C4F759DDCAE044F796ECB0",
    "nvidia_container_toolkit_key_sha256": "",
}
GPU = {"devices": [{"uuid": "GPU-1"}], "driver_version": "570.172.08", "simulated": False, "findings": []}
CONTAINERD_OK = {"item": {"key": "containerd", "value": "containerd.service"}, "changed": False, "failed": False}
NO_SMI = {"failed": False, "msg": "nvidia-smi was not found on the node"}
VERSION_1 = (
    "/etc/containerd/config.toml is a version 1 containerd configuration; the nvidia runtime is written for version 2 "
    "(containerd 1.5 to 1.7, plugin io.containerd.grpc.v1.cri) and version 3 (containerd 2.x, plugin "
    "io.containerd.cri.v1.runtime). Fix: convert it to version 2 or 3 (`containerd config default` shows the layout), "
    "then run again"
)
NO_TOMLLIB = (
    "configuring containerd or CRI-O reads TOML: the node's Python 3.10.12 has no tomllib (3.11 and later) and no "
    "tomli. Fix: install python3-tomli (the nvidia_container_toolkit role does on Ubuntu 22.04), or run the module "
    "with Python 3.11 or later (ansible_python_interpreter)"
)


def node(**changes):
    """NODE with changes given as section__key=value."""
    state = copy.deepcopy(NODE)
    for path, value in changes.items():
        section, key = path.split("__", 1)
        state[section][key] = value
    return state


def checked(runtime, problem=None, msg=""):
    """container_toolkit_runtime's registered result for one runtime: passed, or failed for the node's state."""
    result = {"item": {"key": runtime, "value": f"{runtime}.service"}, "changed": False, "failed": False}
    return {**result, "problem": problem, "msg": msg} if problem else result


def preflight(state=None, runtime_checks=None, gpu_read=None, **variables):
    return container_toolkit_preflight.preflight(
        host="n1",
        node=state or NODE,
        variables={**VARIABLES, **variables},
        runtime_checks=[CONTAINERD_OK] if runtime_checks is None else runtime_checks,
        gpu_read={"ansible_facts": {"gpu": GPU}} if gpu_read is None else gpu_read,
        **TABLES,
    )


def problems(*args, **kwargs):
    return preflight(*args, **kwargs)["problems"]


def test_a_node_as_wanted_has_no_problem_and_its_gpus_answer():
    assert preflight() == {"problems": [], "gpu": GPU, "gpus_answer": True}


def test_every_problem_at_once_each_with_its_fix():
    state = node(os__id="rocky", os__major="9", os__version_id="9.3", os__name="Rocky Linux 9.3 (Blue Onyx)",
                 os__package_arch="x86_64")  # fmt: skip
    found = problems(
        state,
        [checked("containerd", "config", VERSION_1)],
        NO_SMI,
        nvidia_container_toolkit_version="1.17.8",
        nvidia_container_toolkit_runtimes=["containerd", "docker", "podman"],
        nvidia_container_toolkit_default_for=["crio"],
        nvidia_container_toolkit_key_fingerprint="F796ECB0",
    )  # fmt: skip
    assert found == [
        'nvidia_container_toolkit_version is "1.17.8", not an exact package version. Fix: the full Debian version of '
        'NVIDIA\'s toolkit packages, revision included, e.g. nvidia_container_toolkit_version: "1.17.8-1".',
        'nvidia_container_toolkit_runtimes is ["containerd", "docker", "podman"]: podman is not a runtime this role '
        "configures (containerd, docker, crio). Fix: name only those, e.g. nvidia_container_toolkit_runtimes: "
        "[containerd]; Podman reads the CDI spec (--device nvidia.com/gpu=all) and needs no runtime entry.",
        'nvidia_container_toolkit_default_for is ["crio"], but crio is not in nvidia_container_toolkit_runtimes '
        '(["containerd", "docker", "podman"]): the default runtime must be one the runtime has. Fix: add crio to '
        "nvidia_container_toolkit_runtimes, or remove it from nvidia_container_toolkit_default_for.",
        "The container toolkit repository's key_fingerprint 'F796ECB0' is not an OpenPGP fingerprint (40 hex digits, "
        "or 64 for a v6 key); gpg --show-keys on the key from https://nvidia.github.io/libnvidia-container/gpgkey "
        "prints it. Fix: the fingerprint NVIDIA publishes in nvidia_container_toolkit_key_fingerprint (the "
        'role\'s default), and nvidia_container_toolkit_key_sha256 the sha256sum of the key file, or "".',
        "nvidia_container_toolkit supports Debian 12 and 13 and Ubuntu 22.04 and 24.04 on amd64 and arm64; n1 runs "
        "Rocky Linux 9.3 (Blue Onyx) (ID=rocky, VERSION_ID=9.3) on x86_64. Fix: a supported release, or leave this "
        "node out of the container toolkit stage.",
        'nvidia_container_toolkit_runtimes is ["containerd", "docker", "podman"], but n1 has no docker.service: docker '
        "is not installed. Fix: install docker first (the Kubernetes stage installs containerd), or remove it from "
        "nvidia_container_toolkit_runtimes.",
        f"{VERSION_1}.",
        "nvidia_container_toolkit_cdi is true but no NVIDIA driver answers on n1 (nvidia-smi: nvidia-smi was not "
        "found on the node), so there is no GPU to write a CDI spec for. Fix: run the driver stage "
        "(playbooks/nvidia_driver.yml) first and load the driver, or nvidia_container_toolkit_cdi: false on a node "
        "without GPUs.",
    ]


# Neither a trailing newline (a $ would accept it) nor an Arabic-Indic digit (a Unicode \d would) passes.
@pytest.mark.parametrize(
    ("version", "exact"),
    [("1.17.8-1", True), ("1.18.0~rc.1-1", True), ("10.0.12-34", True), ("1.17.8", False), ("latest", False),
     ("1.17-1", False), ("1.17.8-1\n", False), ("1.17.8~rc1-1", False), ("v1.17.8-1", False), ("", False),
     (None, False), (1.17, False), ("1.17.8-\u0661", False)],
)  # fmt: skip
def test_the_version_is_an_exact_package_version(version, exact):
    found = problems(nvidia_container_toolkit_version=version)
    assert (found == []) is exact
    if not exact:
        assert found == [
            f'nvidia_container_toolkit_version is "{version}", not an exact package version. Fix: the full Debian '
            "version of NVIDIA's toolkit packages, revision included, e.g. nvidia_container_toolkit_version: "
            '"1.17.8-1".'
        ]


def test_unknown_runtimes_are_named_once_each_in_their_order():
    (found,) = problems(nvidia_container_toolkit_runtimes=["podman", "containerd", "cri-o", "podman"])
    assert found.startswith(
        'nvidia_container_toolkit_runtimes is ["podman", "containerd", "cri-o", "podman"]: podman, cri-o are not '
        "runtimes this role configures (containerd, docker, crio)."
    )


def test_no_runtime_at_all_is_allowed():
    """The CDI spec alone, for Podman."""
    assert problems(runtime_checks=[], nvidia_container_toolkit_runtimes=[]) == []


@pytest.mark.parametrize(
    ("default_for", "named"),
    [(["docker"], "docker is not"), (["docker", "crio", "docker"], "docker, crio are not"), (["containerd"], None)],
)
def test_the_default_runtime_must_be_configured(default_for, named):
    found = problems(nvidia_container_toolkit_default_for=default_for)
    assert (found == []) is (named is None)
    if named:
        assert f'but {named} in nvidia_container_toolkit_runtimes (["containerd"])' in found[0]


@pytest.mark.parametrize("name", ["nvidia_container_toolkit_runtimes", "nvidia_container_toolkit_default_for"])
def test_a_runtime_list_given_as_a_string_is_named_not_read_letter_by_letter(name):
    found = problems(**{name: "containerd"})
    assert found[0].startswith(f'{name} is "containerd", not a list. Fix: a YAML list, e.g. {name}: [')
    assert not any("c, o, n" in problem for problem in found)


@pytest.mark.parametrize(
    ("pins", "said"),
    [
        ({"nvidia_container_toolkit_key_fingerprint": ""},
         "key_url https://nvidia.github.io/libnvidia-container/gpgkey needs its pin"),
        ({"nvidia_container_toolkit_key_sha256": "C95B321B61E88C1809C4F759DDCAE044F796ECB0"}, "key_sha256 "
         "'C95B321B61E88C1809C4F759DDCAE044F796ECB0' is not a SHA-256 hex digest"),
        ({"nvidia_container_toolkit_repo_url": "https://example.com/a b"}, "uris ['https://example.com/a b'] must be"),
    ],
)  # fmt: skip
def test_the_repository_and_its_key_pin(pins, said):
    (found,) = problems(**pins)
    assert found.startswith(f"The container toolkit repository's {said}")
    assert found.endswith('the sha256sum of the key file, or "".')


def test_a_key_file_pinned_by_its_checksum_too_passes():
    assert problems(nvidia_container_toolkit_key_sha256="ab" * 32) == []


@pytest.mark.parametrize(
    ("os_id", "major", "arch", "supported"),
    [("debian", "12", "amd64", True), ("debian", "13", "arm64", True), ("ubuntu", "22", "amd64", True),
     ("ubuntu", "24", "arm64", True), ("debian", "11", "amd64", False), ("ubuntu", "20", "amd64", False),
     ("debian", "13", "ppc64el", False), ("rhel", "9", "x86_64", False), ("pop", "22", "amd64", False),
     (None, None, None, False)],
)  # fmt: skip
def test_the_supported_releases_and_architectures(os_id, major, arch, supported):
    found = problems(node(os__id=os_id, os__major=major, os__package_arch=arch))
    assert (found == []) is supported
    if not supported:
        assert found[0].startswith("nvidia_container_toolkit supports Debian 12 and 13 and Ubuntu 22.04 and 24.04 on ")


def test_an_unknown_os_is_named_as_such():
    (found,) = problems(node(os__name="", os__id=None, os__version_id=None))
    assert "; n1 runs an unknown OS (ID=None, VERSION_ID=None) on amd64." in found


def test_runtimes_not_installed_are_named_by_their_units():
    (found,) = problems(runtime_checks=[], nvidia_container_toolkit_runtimes=["crio", "docker"])
    assert found == (
        'nvidia_container_toolkit_runtimes is ["crio", "docker"], but n1 has no docker.service, crio.service: docker, '
        "crio are not installed. Fix: install docker, crio first (the Kubernetes stage installs containerd), or remove "
        "them from nvidia_container_toolkit_runtimes."
    )


def test_a_runtime_the_read_did_not_cover_counts_as_not_installed():
    state = copy.deepcopy(NODE)
    del state["units"]["containerd.service"]
    assert "n1 has no containerd.service: containerd is not installed." in problems(state)[0]


def test_a_configuration_the_nvidia_runtime_cannot_join_is_a_problem():
    (found,) = problems(runtime_checks=[checked("containerd", "config", VERSION_1)])
    assert found == f"{VERSION_1}."


@pytest.mark.parametrize(
    ("os_id", "major", "reported"),
    [
        # install.yml installs python3-tomli before configure.yml checks the configuration again.
        ("ubuntu", "22", False),
        # A supported release whose Python predates tomllib and that the table gives no tomli: the node's fix.
        ("debian", "12", True),
        # Refused for its release already: what its Python lacks is beside the point.
        ("rhel", "9", False),
    ],
)
def test_a_python_without_tomllib(os_id, major, reported):
    found = problems(node(os__id=os_id, os__major=major), [checked("containerd", "tomllib", NO_TOMLLIB)])
    assert (f"{NO_TOMLLIB}." in found) is reported


@pytest.mark.parametrize(
    ("gpu_read", "own_kernel", "cdi", "said"),
    [
        (NO_SMI, True, True, "nvidia-smi was not found on the node"),
        ({"ansible_facts": {"gpu": {**GPU, "devices": [], "findings": [{"message": "No devices were found"}]}}},
         True, True, "No devices were found"),
        ({"ansible_facts": {"gpu": {**GPU, "driver_version": None, "findings": [{"message": "a"}, {"message": "b"}]}}},
         True, True, "a; b"),
        # A container's GPUs belong to its host.
        (NO_SMI, False, True, None),
        # Skipped: no CDI spec wanted.
        ({"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}, True, False, None),
    ],
)  # fmt: skip
def test_the_driver_must_answer_where_the_cdi_spec_is_wanted(gpu_read, own_kernel, cdi, said):
    state = node(capabilities__own_kernel=own_kernel)
    result = preflight(state, gpu_read=gpu_read, nvidia_container_toolkit_cdi=cdi)
    assert result["gpus_answer"] is False
    if said is None:
        assert result["problems"] == []
    else:
        (found,) = result["problems"]
        assert (
            f"nvidia_container_toolkit_cdi is true but no NVIDIA driver answers on n1 (nvidia-smi: {said}), " in found
        )


def test_what_was_not_read_says_why():
    skipped = {"changed": False, "skipped": True}
    gpu = preflight(gpu_read=skipped, nvidia_container_toolkit_cdi=False)["gpu"]
    assert gpu == {
        "devices": [],
        "driver_version": None,
        "simulated": False,
        "findings": [{"message": "not read: nvidia_container_toolkit_cdi is false"}],
    }
    assert preflight(gpu_read=NO_SMI)["gpu"]["findings"] == [{"message": "nvidia-smi was not found on the node"}]


@pytest.mark.parametrize(("length", "cut"), [(300, False), (305, False), (306, True)])
def test_a_long_complaint_of_nvidia_smi_is_cut_at_a_word(length, cut):
    said = ("word " * 100)[:length]
    read = {"failed": False, "msg": said}
    (found,) = problems(gpu_read=read)
    quoted = found.split("(nvidia-smi: ", 1)[1].split("), so there", 1)[0]
    assert quoted == (("word " * 60)[:297].rsplit(" ", 1)[0] + "..." if cut else said)
