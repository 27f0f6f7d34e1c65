"""nvidia_container_toolkit's bad input fails in preflight, before any change, with a message naming the variable,
the value and the fix.

Preflight reports every problem of a node at once. Cases of the variables run against the machine running the tests
(their messages come with what the machine lacks: containerd, a driver). Cases that need a node (its OS, its container
runtimes, their configurations) run against bench nodes, in check mode: preflight reads and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_harness import CaseRun, bench_nodes, local_case_tests, node_cases

PLAYBOOK = Path(__file__).with_name("nvidia_container_toolkit_preflight.yml")
TAG = "nvidia_container_toolkit_preflight"
GROUP = "ctk-preflight"

LOCAL_CASES = {
    "version_without_revision": (
        {"nvidia_container_toolkit_version": "1.17.8"},
        [
            'nvidia_container_toolkit_version is "1.17.8", not an exact package version.',
            "Fix: the full Debian version of NVIDIA's toolkit packages, revision included, e.g. "
            'nvidia_container_toolkit_version: "1.17.8-1".',
        ],
    ),
    "version_latest": (
        {"nvidia_container_toolkit_version": "latest"},
        ['nvidia_container_toolkit_version is "latest", not an exact package version.'],
    ),
    "default_for_a_runtime_not_configured": (
        {"nvidia_container_toolkit_default_for": ["docker"]},
        [
            'nvidia_container_toolkit_default_for is ["docker"], but docker is not in '
            'nvidia_container_toolkit_runtimes (["containerd"]): the default runtime must be one the runtime has.',
            "Fix: add docker to nvidia_container_toolkit_runtimes, or remove it from "
            "nvidia_container_toolkit_default_for.",
        ],
    ),
    "unknown_runtime": (
        {"nvidia_container_toolkit_runtimes": ["containerd", "podman"]},
        [
            'nvidia_container_toolkit_runtimes is ["containerd", "podman"]: podman is not a runtime this role '
            "configures (containerd, docker, crio). Fix: name only those, e.g. nvidia_container_toolkit_runtimes: "
            "[containerd]; Podman reads the CDI spec (--device nvidia.com/gpu=all) and needs no runtime entry.",
        ],
    ),
    "key_checksum_malformed": (
        {"nvidia_container_toolkit_key_sha256": "C95B321B61E88C1809C4F759DDCAE044F796ECB0"},
        [
            "The container toolkit repository's key_sha256 'C95B321B61E88C1809C4F759DDCAE044F796ECB0' is not a SHA-256 "
            "hex digest; compute it with sha256sum on the key from https://nvidia.github.io/libnvidia-container/gpgkey"
            ". Fix: the fingerprint NVIDIA publishes",
        ],
    ),
    "key_fingerprint_malformed": (
        {"nvidia_container_toolkit_key_fingerprint": "F796ECB0"},
        [
            "The container toolkit repository's key_fingerprint 'F796ECB0' is not an OpenPGP fingerprint (40 hex "
            "digits, or 64 for a v6 key)",
        ],
    ),
    "key_without_any_pin": (
        {"nvidia_container_toolkit_key_fingerprint": ""},
        [
            "The container toolkit repository's key_url https://nvidia.github.io/libnvidia-container/gpgkey needs its "
            "pin"
        ],
    ),
    # Every problem of the variables in one failure, each after the one before it.
    "every_problem_at_once": (
        {
            "nvidia_container_toolkit_version": "latest",
            "nvidia_container_toolkit_runtimes": ["containerd", "podman"],
            "nvidia_container_toolkit_default_for": ["docker"],
            "nvidia_container_toolkit_key_fingerprint": "F796ECB0",
        },
        [
            'nvidia_container_toolkit_version is "latest", not an exact package version.',
            '| nvidia_container_toolkit_runtimes is ["containerd", "podman"]: podman is not a runtime this role '
            "configures",
            '| nvidia_container_toolkit_default_for is ["docker"], but docker is not in '
            'nvidia_container_toolkit_runtimes (["containerd", "podman"])',
            "| The container toolkit repository's key_fingerprint 'F796ECB0' is not an OpenPGP fingerprint",
        ],
    ),
}

# node -> image; each case names its node.
NODES = {"bare": "debian13", "runtimes": "debian13", "ubuntu": "debian12", "rocky": "debian12"}

NODE_CASES = {
    "runtime_not_installed": (
        "bare",
        {},
        [
            'nvidia_container_toolkit_runtimes is ["containerd"], but {host} has no containerd.service: containerd is '
            "not installed. Fix: install containerd first (the Kubernetes stage installs containerd), or remove it "
            "from nvidia_container_toolkit_runtimes.",
        ],
    ),
    "two_runtimes_not_installed": (
        "bare",
        {"nvidia_container_toolkit_runtimes": ["docker", "crio"]},
        ["{host} has no docker.service, crio.service: docker, crio are not installed."],
    ),
    "docker_config_broken": (
        "runtimes",
        {"nvidia_container_toolkit_runtimes": ["docker"]},
        [
            "/etc/docker/daemon.json is not valid JSON (Expecting ',' delimiter: line 1 column 27 (char 26)). "
            "Fix: repair it (dockerd cannot start with it)",
        ],
    ),
    "containerd_config_version_1": (
        "runtimes",
        {"nvidia_container_toolkit_runtimes": ["crio", "containerd"]},
        [
            "/etc/containerd/config.toml is a version 1 containerd configuration; the nvidia runtime is written for "
            "version 2",
            "Fix: convert it to version 2",
        ],
    ),
    "unsupported_os": (
        "rocky",
        {},
        [
            "nvidia_container_toolkit supports Debian 12 and 13 and Ubuntu 22.04 and 24.04 on amd64 and arm64; {host} "
            "runs Rocky Linux 9.3 (Blue Onyx) (ID=rocky, VERSION_ID=9.3) on x86_64.",
            "Fix: a supported release, or leave this node out of the container toolkit stage.",
        ],
    ),
    # The variables' problems with the node's, in one failure.
    "every_problem_at_once_on_a_node": (
        "rocky",
        {"nvidia_container_toolkit_version": "1.17.8", "nvidia_container_toolkit_runtimes": ["docker"]},
        [
            'nvidia_container_toolkit_version is "1.17.8", not an exact package version.',
            "| nvidia_container_toolkit supports Debian 12 and 13 and Ubuntu 22.04 and 24.04 on amd64 and arm64; "
            "{host} runs Rocky Linux 9.3 (Blue Onyx)",
            '| nvidia_container_toolkit_runtimes is ["docker"], but {host} has no docker.service: docker is not '
            "installed.",
        ],
    ),
}


case_run, test_bad_input_fails_in_preflight = local_case_tests(PLAYBOOK, TAG, LOCAL_CASES)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """Bench nodes for the cases that need a node; yields the inventory file."""
    specs = [{"name": name, "image": image} for name, image in NODES.items()]
    with bench_nodes(tmp_path_factory, GROUP, specs) as started:
        # runtimes: units named as the runtimes' packages name them (only their presence is read in preflight), and
        # the configurations other tools left: a daemon.json with a typo, a containerd config of the version 1 era.
        started.sh(
            "ubuntu",
            "printf '[Service]\\nExecStart=/bin/true\\n' > /etc/systemd/system/crio.service; systemctl daemon-reload",
        )
        started.sh(
            "runtimes",
            "for u in containerd docker crio; do printf '[Service]\\nExecStart=/bin/true\\n' "
            "> /etc/systemd/system/$u.service; done; systemctl daemon-reload; mkdir -p /etc/docker /etc/containerd; "
            """echo '{"log-driver": "journald" "debug": true}' > /etc/docker/daemon.json; """
            """printf '[plugins.cri]\\n  sandbox_image = "registry.example/pause:3.2"\\n' """
            "> /etc/containerd/config.toml",
        )
        started.ubuntu("ubuntu")
        started.os_release("rocky", "rocky-9.3")
        yield started.inventory


@pytest.fixture(scope="module")
def node_run(tmp_path_factory, nodes: Path) -> CaseRun:
    """Every node case, and the control, in one run."""
    cases = {case: (node, variables) for case, (node, variables, _expected) in NODE_CASES.items()}
    crio = {"nvidia_container_toolkit_runtimes": ["crio"]}
    control = {"control": ("runtimes", crio), "control_ubuntu": ("ubuntu", crio)}
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("nodes"), node_cases(nodes, {**cases, **control}))


@pytest.mark.parametrize("case", sorted(NODE_CASES))
def test_bad_input_on_a_node_fails_in_preflight(node_run: CaseRun, case: str) -> None:
    node_run.assert_fails_with(case, NODE_CASES[case][2])


@pytest.mark.parametrize("control", ["control", "control_ubuntu"])
def test_valid_input_passes_preflight_and_changes_nothing(node_run: CaseRun, control: str) -> None:
    """The control: CRI-O (whose drop-in directory is the role's alone) on the node with the runtimes passes, and on
    a node with Ubuntu 24.04's os-release, which NVIDIA's one deb repository serves as it does Debian."""
    node_run.assert_passes_unchanged(control)
