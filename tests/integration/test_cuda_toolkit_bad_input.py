"""cuda_toolkit's bad input fails in preflight, before any change, with a message naming the variable, the value and
the fix.

Variable-only cases run against the machine running the tests. Cases that need an OS, package sources or an installed
driver run against bench nodes (Debian 13 through the bench mirror): one with the Tesla 535 userland installed (the
driver Debian 13's 12.4 toolkit does not accept: its libraries depend on libcuda1 >= 550, and apt would install the
550 userland beside 535), one with the 550 userland, one without any driver, one without Debian's non-free component,
one with Ubuntu's os-release, one with Pop!_OS's (an OS NVIDIA's CUDA repository does not serve). The cuda_repo cases
run on a Debian 12 node with Debian's 535 userland, reading the bench's stand-in of NVIDIA's repository through the
mirror (cuda-toolkit-11-8 11.8.0-1, cuda-toolkit-12-2 12.2.0-1 and 12.2.2-1). Their preflight reads the node and
checks, in check mode, and changes nothing.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from preflight_harness import MIRROR, ROOT, CaseRun, bench_nodes, local_case_tests, node_cases

PLAYBOOK = Path(__file__).with_name("cuda_toolkit_preflight.yml")
TAG = "cuda_toolkit_preflight"
GROUP = "cuda-preflight"

LOCAL_CASES = {
    "cuda_newer_than_the_driver_branch": (
        {"nvidia_driver_branch": "535", "cuda_toolkit_versions": ["12.4"]},
        [
            "cuda_toolkit_versions 12.4 needs driver >= 550.54.14; nvidia_driver_branch is 535. Fix: "
            'nvidia_driver_branch: "550" or later, or a CUDA version driver branch 535 runs (the newest: 12.2).'
        ],
    ),
    "version_malformed": (
        {"cuda_toolkit_versions": ["12"]},
        ['cuda_toolkit_versions names "12", not a CUDA version. Fix: major.minor ("12.4",'],
    ),
    "version_nvidia_never_released": (
        {"cuda_toolkit_versions": ["12.7"]},
        [
            "cuda_toolkit_versions names \"12.7\": CUDA '12.7' is not in NVIDIA's table of toolkit driver versions",
            "Fix: a CUDA release NVIDIA has published.",
        ],
    ),
    "same_minor_twice": (
        {"cuda_toolkit_versions": ["12.4", "12.4.1"]},
        ["cuda_toolkit_versions names CUDA 12.4 more than once (12.4, 12.4.1): one CUDA root per minor version."],
    ),
    "default_not_among_the_versions": (
        {"cuda_toolkit_versions": ["12.4"], "cuda_toolkit_default": "12.8"},
        [
            'cuda_toolkit_default is "12.8", which is not among cuda_toolkit_versions (12.4): /usr/local/cuda can '
            'only point at an installed toolkit. Fix: cuda_toolkit_default: "12.4"'
        ],
    ),
    "default_without_versions": (
        {"cuda_toolkit_default": "12.4"},
        ['cuda_toolkit_default is "12.4" but cuda_toolkit_versions is empty', 'Fix: cuda_toolkit_versions: ["12.4"]'],
    ),
    "driver_branch_malformed": (
        {"nvidia_driver_branch": "R550"},
        ['nvidia_driver_branch is "R550", not a driver branch. Fix: the branch number as a string'],
    ),
    "source_unknown": (
        {"cuda_toolkit_source": "runfile"},
        ["value of cuda_toolkit_source must be one of: distribution, cuda_repo, got: runfile"],
    ),
    "cuda_repo_without_versions": (
        {"cuda_toolkit_source": "cuda_repo"},
        ["cuda_toolkit_source is cuda_repo but cuda_toolkit_versions is empty", 'Fix: cuda_toolkit_versions: ["12.4"]'],
    ),
    "cuda_repo_same_minor_twice": (
        {"cuda_toolkit_source": "cuda_repo", "cuda_toolkit_versions": ["11.8", "12.2", "12.2.2"]},
        ["cuda_toolkit_versions names CUDA 12.2 more than once (11.8, 12.2, 12.2.2): one CUDA root per minor "
         "version. Fix: name each minor version once."],
    ),
    "cuda_repo_default_not_among_the_versions": (
        {"cuda_toolkit_source": "cuda_repo", "cuda_toolkit_versions": ["11.8", "12.2"], "cuda_toolkit_default": "12.4"},
        ['cuda_toolkit_default is "12.4", which is not among cuda_toolkit_versions (11.8, 12.2): /usr/local/cuda can '
         'only point at an installed toolkit. Fix: cuda_toolkit_default: "12.2"'],
    ),
    "cuda_repo_newer_than_the_driver_branch": (
        {"cuda_toolkit_source": "cuda_repo", "cuda_toolkit_versions": ["11.8", "12.4"], "nvidia_driver_branch": "535"},
        ["cuda_toolkit_versions 12.4 needs driver >= 550.54.14; nvidia_driver_branch is 535. Fix: "
         'nvidia_driver_branch: "550" or later, or a CUDA version driver branch 535 runs (the newest: 12.2).'],
    ),
    # The machine running the tests is Debian 12: the pin is checked before NVIDIA's repository is read.
    "cuda_repo_key_not_pinned": (
        {"cuda_toolkit_source": "cuda_repo", "cuda_toolkit_versions": ["12.2"],
         "cuda_toolkit_cuda_repo_key_fingerprint": ""},
        ["cuda_toolkit_source is cuda_repo, but NVIDIA's CUDA repository's key_url "
         "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub needs its pin",
         "Fix: cuda_toolkit_cuda_repo_key_fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC"],
    ),
}  # fmt: skip

# node -> (image, packages installed from the image's Debian archive, trixie or bookworm; None: keep the image's
# main-only sources).
NODES = {
    "tesla535": ("debian13", ["libnvidia-tesla-535-cuda1", "libnvidia-tesla-535-ml1"]),
    "driver550": ("debian13", ["libcuda1", "libnvidia-ml1"]),
    "nodriver": ("debian13", []),
    "bare": ("debian13", None),
    "ubuntu": ("debian12", None),
    "pop": ("debian12", None),
    "bookworm": ("debian12", ["libcuda1", "libnvidia-ml1"]),
}
# NVIDIA's repository through the bench's mirror (whose stand-in is signed by the bench's key: bench_key() is added
# where a case reads it).
CUDA_REPO = {"cuda_toolkit_source": "cuda_repo", "gpuops_mirror_url": MIRROR}
# The role's default pin: the fingerprint of NVIDIA's CUDA repository key.
NVIDIA_KEY = "EB693B3035CD5710E231E123A4B469963BF863CC"
STANDIN = "the mirror's copy of NVIDIA's CUDA repository (" + MIRROR + (
    "/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/)")  # fmt: skip

NODE_CASES = {
    "toolkit_needs_a_newer_driver_than_installed": (
        "tesla535",
        {},
        [
            "{host}: cuda_toolkit_versions 12.4 (CUDA 12.4.1) needs driver >= 550.54.15; the installed driver is "
            "535.274.02 (libnvidia-tesla-535-cuda1 535.274.02-1~deb13u1), and installing it would put ",
            "libcuda1 550.163.01-2",
            "libnvidia-ml1 550.163.01-2",
            # Several of the toolkit's libraries (nvidia-cuda-dev, libcuinj64-12.4...) carry the same requirement.
            "depends on libcuda1 (>= 550) | libcuda.so.1 (>= 550) | libcuda-12.4-1): two driver userlands on one "
            "node is a driver/library version mismatch",
            'Nothing was changed. Fix: nvidia_driver_branch: "550" or later (playbooks/nvidia_driver.yml), or a CUDA '
            "version driver 535.274.02 runs (the newest: 12.2).",
        ],
    ),
    "no_driver_installed": (
        "nodriver",
        {},
        [
            "{host} has no NVIDIA driver userland installed (no package provides libcuda.so.1), and installing "
            "CUDA 12.4.1 (nvidia-cuda-toolkit 12.4.131~12.4.1-2) would pull one in: ",
            "libcuda1 550.163.01-2",
            "Fix: run playbooks/nvidia_driver.yml first (a driver branch that runs driver >= 550.54.15), then run "
            "again.",
        ],
    ),
    "version_the_source_does_not_carry": (
        "nodriver",
        {"cuda_toolkit_versions": ["12.6"]},
        [
            '{host}: cuda_toolkit_versions names "12.6", which Debian 13\'s own packages do not carry: they carry '
            "CUDA 12.4.1 (nvidia-cuda-toolkit 12.4.131~12.4.1-2).",
            'Fix: cuda_toolkit_versions: ["12.4"], or cuda_toolkit_source: cuda_repo',
        ],
    ),
    "several_versions_from_the_distribution": (
        "nodriver",
        {"cuda_toolkit_versions": ["11.8", "12.4"]},
        [
            "{host}: cuda_toolkit_versions is 11.8, 12.4, but Debian 13's own packages carry one CUDA toolkit at a "
            "time (CUDA 12.4.1 (nvidia-cuda-toolkit 12.4.131~12.4.1-2)).",
            "or cuda_toolkit_source: cuda_repo for several side by side",
        ],
    ),
    "sources_without_non_free": (
        "bare",
        {},
        [
            "{host}: Debian 13's own packages carry no version of nvidia-cuda-toolkit: the OS sources lack Debian's "
            "non-free component",
        ],
    ),
    "unsupported_os": (
        "ubuntu",
        {},
        [
            "cuda_toolkit_source is distribution (the OS's own packages), which this collection supports on Debian "
            "12 and 13 (their non-free nvidia-cuda-toolkit); {host} runs Ubuntu 24.04",
            "Fix: a supported release, or cuda_toolkit_source: cuda_repo",
        ],
    ),
    "cuda_repo_version_the_repository_does_not_carry": (
        "bookworm",
        dict(CUDA_REPO, cuda_toolkit_versions=["11.8", "12.2.1"]),
        [
            f'{{host}}: cuda_toolkit_versions names "12.2.1", but {STANDIN} carries 12.2.0-1, 12.2.2-1 of '
            'cuda-toolkit-12-2. Nothing was changed. Fix: a version it carries (cuda_toolkit_versions: ["12.2"], the '
            "newest it carries), or a mirror that holds it (gpuops_mirror_url).",
        ],
    ),
    "cuda_repo_minor_the_repository_does_not_carry": (
        "bookworm",
        dict(CUDA_REPO, cuda_toolkit_versions=["12.4"]),
        [f'{{host}}: cuda_toolkit_versions names "12.4", but {STANDIN} carries no version of cuda-toolkit-12-4.'],
    ),
    # The mirror serves the bench's key where NVIDIA's should be: with the role's default pin (NVIDIA's key), the
    # repository is refused before any change, as a tampered or mistaken mirror would be.
    "cuda_repo_signed_by_another_key": (
        "bookworm",
        dict(CUDA_REPO, cuda_toolkit_versions=["12.2"], cuda_toolkit_cuda_repo_key_fingerprint=NVIDIA_KEY),
        [
            "{host}: the signing key http://gpuops-mirror:8080/developer.download.nvidia.com/compute/cuda/repos/"
            "debian12/x86_64/3bf863cc.pub holds ",
            f"but cuda_toolkit_cuda_repo_key_fingerprint is {NVIDIA_KEY}: refusing to trust it. Nothing was changed. "
            "Fix: point gpuops_mirror_url at a mirror holding NVIDIA's key, or correct the pins.",
        ],
    ),
    "cuda_repo_on_an_os_nvidia_does_not_serve": (
        "pop",
        dict(CUDA_REPO, cuda_toolkit_versions=["12.2"]),
        [
            "cuda_toolkit_source is cuda_repo (NVIDIA's CUDA repository), which this collection knows for Debian 12, "
            "Ubuntu 22.04 and 24.04, Rocky Linux and RHEL 8 and 9 (NVIDIA's debian12, ubuntu2204, ubuntu2404, rhel8 "
            "and rhel9 repositories); {host} runs Pop!_OS 22.04 LTS (ID=pop, VERSION_ID=22.04).",
            "Fix: one of those releases, or cuda_toolkit_source: distribution",
        ],
    ),
    # The variables' problems and the node's OS release in one failure, so one round of fixes clears the node.
    "every_problem_at_once": (
        "pop",
        dict(CUDA_REPO, cuda_toolkit_versions=["12.2", "12.2.2"], cuda_toolkit_default="12.8"),
        [
            "cuda_toolkit_versions names CUDA 12.2 more than once (12.2, 12.2.2): one CUDA root per minor version.",
            ' | cuda_toolkit_default is "12.8", which is not among cuda_toolkit_versions (12.2, 12.2.2)',
            " | cuda_toolkit_source is cuda_repo (NVIDIA's CUDA repository), which this collection knows for Debian "
            "12,",
            "{host} runs Pop!_OS 22.04 LTS (ID=pop, VERSION_ID=22.04).",
        ],
    ),
}


def bench_key(variables: dict) -> dict:
    """The variables with the bench key's fingerprint pinned where they read NVIDIA's repository from the mirror,
    unless the case pins a key itself."""
    if variables.get("gpuops_mirror_url") != MIRROR:
        return variables
    mirror = json.loads((ROOT / ".bench" / "mirror" / "mirror.json").read_text())
    return {"cuda_toolkit_cuda_repo_key_fingerprint": mirror["local_repo_key_fingerprint"], **variables}


case_run, test_bad_input_fails_in_preflight = local_case_tests(PLAYBOOK, TAG, LOCAL_CASES)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """Bench nodes for the cases that need an OS, package sources or a driver; yields the inventory file."""
    specs = [{"name": name, "image": image} for name, (image, _packages) in NODES.items()]
    with bench_nodes(tmp_path_factory, GROUP, specs) as started:

        def prepare(node: str) -> None:
            image, packages = NODES[node]
            # What stage 1 leaves behind, then the driver userland alone, as the driver role leaves it.
            started.debian_sources(node, "trixie" if image == "debian13" else "bookworm")
            if packages:
                started.sh(node, "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
                                 + " ".join(packages))  # fmt: skip

        # All at once: on a fresh machine the downloads through the mirror wait on the network, not on the CPU.
        with ThreadPoolExecutor() as pool:
            list(pool.map(prepare, [node for node, (_image, packages) in NODES.items() if packages is not None]))
        started.ubuntu("ubuntu")
        started.os_release("pop", "pop-22.04")
        yield started.inventory


@pytest.fixture(scope="module")
def node_run(tmp_path_factory, nodes: Path) -> CaseRun:
    """Every node case and the two controls in one run."""
    cases = {case: (node, bench_key(variables)) for case, (node, variables, _expected) in NODE_CASES.items()}
    controls = {
        "control": ("driver550", {"cuda_toolkit_versions": ["12.4"]}),
        "control_cuda_repo": (
            "bookworm",
            bench_key(dict(CUDA_REPO, cuda_toolkit_versions=["11.8", "12.2"], cuda_toolkit_default="11.8")),
        ),
    }
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("nodes"), node_cases(nodes, {**cases, **controls}))


@pytest.mark.parametrize("case", sorted(NODE_CASES))
def test_bad_input_on_a_node_fails_in_preflight(node_run: CaseRun, case: str) -> None:
    node_run.assert_fails_with(case, NODE_CASES[case][2])


def test_valid_input_passes_preflight_and_changes_nothing(node_run: CaseRun) -> None:
    """The control: CUDA 12.4 on the node with the 550 userland passes, so the failures above come from the input."""
    output = node_run.assert_passes_unchanged("control")
    assert (
        "control: CUDA 12.4.1 (nvcc 12.4.131, nvidia-cuda-toolkit 12.4.131~12.4.1-2) under "
        "/usr/local/lib/gpuops/cuda-12.4; /usr/local/cuda -> /usr/local/lib/gpuops/cuda-12.4; driver 550.163.01 "
        "(needs >= 550.54.15)." in output
    ), output[-3000:]


def test_valid_cuda_repo_input_passes_preflight_and_changes_nothing(node_run: CaseRun) -> None:
    """The control of the cuda_repo cases: two versions side by side from the stand-in repository pass on the node
    with Debian 12's 535 userland, without the repository being added."""
    output = node_run.assert_passes_unchanged("control_cuda_repo")
    assert (
        "control_cuda_repo: CUDA 11.8.0 (cuda-toolkit-11-8 11.8.0-1) under /usr/local/cuda-11.8; CUDA 12.2.2 "
        "(cuda-toolkit-12-2 12.2.2-1) under /usr/local/cuda-12.2; /usr/local/cuda -> /usr/local/cuda-11.8; "
        "driver 535." in output
    ), output[-3000:]
