"""cuda_toolkit's parsers and decisions, on outputs captured in the bench's Debian 12 and 13 containers
(2026-11-29: trixie with the Tesla 535 or the 550 userland, bookworm fresh) and nvcc 12.4.131 there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import cuda_toolkit

TRIXIE = "12.4.131~12.4.1-2"
BOOKWORM = "11.8.89~11.8.0-5~deb12u1"
LAYOUT = {
    "where": "Debian 13's own packages",
    "package": "nvidia-cuda-toolkit",
    "held": ["nvidia-cuda-toolkit", "nvidia-cuda-dev"],
    "root": "/usr/local/lib/gpuops/cuda-{version}",
    "nvcc": "/usr/lib/nvidia-cuda-toolkit/bin/nvcc",
    "executables_of": ["nvidia-cuda-toolkit"],
    "links": {"include": "/usr/include", "lib64": "/usr/lib/{multiarch}"},
    "multiarch": "x86_64-linux-gnu",
}
NVCC = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Thu_Mar_28_02:18:24_PDT_2024
Cuda compilation tools, release 12.4, V12.4.131
Build cuda_12.4.r12.4/compiler.34097967_0
"""
# apt-get --simulate --no-install-recommends install nvidia-cuda-toolkit=12.4.131~12.4.1-2 on trixie with
# libnvidia-tesla-535-cuda1 and -ml1 installed and held (excerpt: the driver packages and two of the toolkit's).
SIMULATION_ON_535 = """NOTE: This is only a simulation!
      apt-get needs root privileges for real execution.
Reading package lists...
Inst pci.ids (0.0~2025.06.09-1 Debian:13.8/stable [all])
Inst nvidia-alternative (550.163.01-2 Debian:13.8/stable [amd64])
Inst libcuda1 (550.163.01-2 Debian:13.8/stable [amd64])
Inst libcudart12 (12.4.127~12.4.1-2 Debian:13.8/stable [amd64])
Inst libnvidia-ml1 (550.163.01-2 Debian:13.8/stable [amd64])
Inst nvidia-cuda-dev (12.4.127~12.4.1-2 Debian:13.8/stable [amd64])
Inst libfoo:amd64 [1.0-1] (1.1-1 Debian:13.8/stable [amd64])
Remv libbar [2.0-1]
Conf libcuda1 (550.163.01-2 Debian:13.8/stable [amd64])
"""
# apt-cache show of two of them, the long Provides and Depends fields cut to their relevant part.
SHOW = """Package: libcuda1
Source: nvidia-graphics-drivers
Version: 550.163.01-2
Provides: libcuda-12.4-1, libcuda.so.1 (= 550.163.01), libcuda1-any
Depends: nvidia-support, nvidia-alternative (= 550.163.01-2)

Package: nvidia-cuda-dev
Source: nvidia-cuda-toolkit (12.4.1-2)
Version: 12.4.127~12.4.1-2
Depends: libcudart12 (= 12.4.127~12.4.1-2), libnvidia-ml-dev (= 12.4.127~12.4.1-2),
 libcuda1 (>= 550) | libcuda.so.1 (>= 550) | libcuda-12.4-1
Description: NVIDIA CUDA development files

Package: libnvidia-ml-dev
Version: 12.4.127~12.4.1-2
Source: nvidia-cuda-toolkit (12.4.1-2)
Depends: libnvidia-ml1 (>= 550) | libnvidia-ml.so.1 (>= 550)
"""


def info(*available, installed=None):
    candidate = available[0] if available else None
    return {
        "nvidia-cuda-toolkit": {
            "installed": installed, "held": False, "broken": False, "candidate": candidate, "available": list(available)
        }
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12.4", {"text": "12.4", "major_minor": "12.4", "release": None}),
        ("12.4.1", {"text": "12.4.1", "major_minor": "12.4", "release": "12.4.1"}),
        # The item becomes a package name as it is: blanks are refused, not stripped.
        (" 11.8 ", None),
        ("11.8\n", None),
        (11.8, None),
        ("12", None),
        ("12.4 Update 1", None),
        ("latest", None),
    ],
)
def test_requested_versions(text, expected):
    assert cuda_toolkit.parse_requested(text) == expected


def test_nvcc_version():
    assert cuda_toolkit.parse_nvcc_version(NVCC) == {"release": "12.4", "version": "12.4.131"}
    assert cuda_toolkit.parse_nvcc_version("sh: 1: nvcc: not found") is None


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (TRIXIE, {"nvcc": "12.4.131", "release": "12.4.1", "major_minor": "12.4"}),
        (BOOKWORM, {"nvcc": "11.8.89", "release": "11.8.0", "major_minor": "11.8"}),
        ("550.163.01-2", None),
    ],
)
def test_debian_toolkit_versions(version, expected):
    assert cuda_toolkit.debian_toolkit_version(version) == expected


def test_simulation_lists_installs_upgrades_and_removals():
    planned = cuda_toolkit.parse_simulation(SIMULATION_ON_535)
    assert [p["name"] for p in planned["install"]] == [
        "pci.ids", "nvidia-alternative", "libcuda1", "libcudart12", "libnvidia-ml1", "nvidia-cuda-dev", "libfoo",
    ]  # fmt: skip
    assert planned["install"][2] == {"name": "libcuda1", "version": "550.163.01-2", "upgrade_from": None}
    assert planned["install"][-1] == {"name": "libfoo", "version": "1.1-1", "upgrade_from": "1.0-1"}
    assert planned["remove"] == [{"name": "libbar", "version": "2.0-1"}]


def test_control_stanzas_and_the_driver_packages_among_them():
    stanzas = cuda_toolkit.parse_control(SHOW)
    assert [s["Package"] for s in stanzas] == ["libcuda1", "nvidia-cuda-dev", "libnvidia-ml-dev"]
    assert stanzas[1]["Depends"].endswith("libcuda1 (>= 550) | libcuda.so.1 (>= 550) | libcuda-12.4-1")
    assert [cuda_toolkit.source_name(s) for s in stanzas] == ["nvidia-graphics-drivers", "nvidia-cuda-toolkit",
                                                              "nvidia-cuda-toolkit"]  # fmt: skip
    assert [cuda_toolkit.is_driver_package(s) for s in stanzas] == [True, False, False]
    assert cuda_toolkit.provided_driver_version(stanzas[0]) == "550.163.01"
    assert cuda_toolkit.provided_driver_version(stanzas[1]) is None
    tesla = {"Package": "libnvidia-tesla-535-cuda1", "Source": "nvidia-graphics-drivers-tesla-535"}
    assert cuda_toolkit.is_driver_package(tesla)


def test_the_driver_the_toolkit_libraries_require():
    assert cuda_toolkit.driver_library_minimum(cuda_toolkit.parse_control(SHOW)) == {
        "version": "550",
        "package": "nvidia-cuda-dev",
        "relation": "libcuda1 (>= 550) | libcuda.so.1 (>= 550) | libcuda-12.4-1",
    }
    assert cuda_toolkit.driver_library_minimum([{"Package": "x", "Depends": "libc6 (>= 2.34)"}]) is None


def test_alternatives_query():
    text = (
        "Name: cuda\nLink: /usr/local/cuda\nStatus: manual\nBest: /usr/local/cuda-12.8\n"
        "Value: /usr/local/lib/gpuops/cuda-12.4\n\n"
        "Alternative: /usr/local/cuda-12.8\nPriority: 128\n\n"
        "Alternative: /usr/local/lib/gpuops/cuda-12.4\nPriority: 124\n"
    )
    assert cuda_toolkit.parse_alternatives(text) == {
        "link": "/usr/local/cuda",
        "status": "manual",
        "value": "/usr/local/lib/gpuops/cuda-12.4",
        "choices": {"/usr/local/cuda-12.8": 128, "/usr/local/lib/gpuops/cuda-12.4": 124},
    }
    assert cuda_toolkit.parse_alternatives("")["choices"] == {}


def test_ldd_and_readelf():
    ldd = (
        "\tlinux-vdso.so.1 (0x00007f04b0245000)\n"
        "\tlibcudart.so.12 => /lib/x86_64-linux-gnu/libcudart.so.12 (0x00007f04afe00000)\n"
        "\tlibmissing.so.1 => not found\n"
    )
    assert cuda_toolkit.parse_ldd(ldd) == {
        "libcudart.so.12": "/lib/x86_64-linux-gnu/libcudart.so.12",
        "libmissing.so.1": None,
    }
    readelf = (
        " 0x0000000000000001 (NEEDED)             Shared library: [libcudart.so.12]\n"
        " 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n"
        " 0x000000000000000c (INIT)               0x1000\n"
    )
    assert cuda_toolkit.parse_needed(readelf) == ["libcudart.so.12", "libc.so.6"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("distribution", ["12.4"], "", ""), []),
        (("distribution", [], "", "550"), []),
        (("distribution", ["12.4"], "12.4", "550"), []),
        (("runfile", [], "", ""), ["cuda_toolkit_source is 'runfile', which this collection does not know."]),
        (("cuda_repo", ["11.8", "12.2"], "12.2", "535"), []),
        (("cuda_repo", [], "", ""), ["cuda_toolkit_source is cuda_repo but cuda_toolkit_versions is empty"]),
        (("cuda_repo", ["12.2", "12.2.2"], "", ""), ["names CUDA 12.2 more than once"]),
        (("distribution", "12.4", "", ""), ["cuda_toolkit_versions is '12.4', not a list."]),
        (("distribution", ["12"], "", ""), ['cuda_toolkit_versions names "12", not a CUDA version.']),
        # YAML's unquoted 12.10 is the float 12.1: installing CUDA 12.1 instead would be silent.
        (("cuda_repo", [12.10], "", ""), ["cuda_toolkit_versions names 12.1, not a CUDA version (quoted: YAML reads"]),
        # Into the package name as it is (cuda-toolkit-12-4\n) before.
        (("cuda_repo", ["12.4\n"], "", ""), ['cuda_toolkit_versions names "12.4\\n", not a CUDA version.']),
        (("distribution", ["12.7"], "", ""), ["CUDA '12.7' is not in NVIDIA's table"]),
        (("distribution", ["12.4", "12.4.1"], "", ""), ["names CUDA 12.4 more than once"]),
        (("distribution", ["12.4"], "12.6", ""), ['cuda_toolkit_default is "12.6", which is not among']),
        (("distribution", [], "12.4", ""), ['cuda_toolkit_default is "12.4" but cuda_toolkit_versions is empty']),
        (("distribution", [], "", "R550"), ['nvidia_driver_branch is "R550", not a driver branch.']),
        (
            ("distribution", ["12.4", "12.8"], "", "550"),
            ['cuda_toolkit_versions 12.8 needs driver >= 570.26; nvidia_driver_branch is 550. Fix: '
             'nvidia_driver_branch: "570" or later, or a CUDA version driver branch 550 runs (the newest: 12.4).'],
        ),
        (("distribution", ["12.4.1"], "", "535"), ["cuda_toolkit_versions 12.4.1 needs driver >= 550.54.15"]),
    ],
)  # fmt: skip
def test_input_problems(args, expected):
    problems = cuda_toolkit.input_problems(*args)
    assert len(problems) == len(expected), problems
    for problem, text in zip(problems, expected, strict=True):
        assert text in problem


SUPPORTED = {"distribution": {"debian": ["12", "13"]}, "cuda_repo": {"debian": ["12"], "ubuntu": ["22", "24"]}}
DEBIAN_13 = {"os": {"id": "debian", "major": "13", "name": "Debian GNU/Linux", "version_id": "13"}}
CLEAN = {"cuda_toolkit_source": "distribution", "cuda_toolkit_versions": ["12.4"], "cuda_toolkit_default": "",
         "nvidia_driver_branch": ""}  # fmt: skip


def test_preflight_of_a_clean_node_finds_nothing():
    assert cuda_toolkit.preflight(host="n1", node=DEBIAN_13, variables=CLEAN, supported=SUPPORTED) == {"problems": []}


@pytest.mark.parametrize(
    ("source", "release", "refused"),
    [
        ("distribution", {"id": "debian", "major": "13"}, False),
        ("distribution", {"id": "debian", "major": "11"}, True),
        ("cuda_repo", {"id": "debian", "major": "13"}, True),
        ("cuda_repo", {"id": "ubuntu", "major": "24"}, False),
        # An os-release ID that names a dict method is no release of any source.
        ("cuda_repo", {"id": "items", "major": "1"}, True),
        ("distribution", {}, True),
    ],
)
def test_preflight_holds_the_os_release_to_the_source(source, release, refused):
    variables = {**CLEAN, "cuda_toolkit_source": source}
    problems = cuda_toolkit.preflight(host="n1", node={"os": release}, variables=variables, supported=SUPPORTED)
    assert len(problems["problems"]) == int(refused), problems
    if refused:
        assert f"cuda_toolkit_source is {source} (" in problems["problems"][0]
        # The test's releases have no name: the message says so.
        assert f"n1 runs an unknown OS (ID={release.get('id')}," in problems["problems"][0]


def test_preflight_reports_the_variables_and_the_os_release_at_once():
    variables = {**CLEAN, "cuda_toolkit_versions": ["12"], "cuda_toolkit_default": "12.8"}
    node = {"os": {"id": "ubuntu", "major": "24", "name": "Ubuntu 24.04.2 LTS", "version_id": "24.04"}}
    problems = cuda_toolkit.preflight(host="n1", node=node, variables=variables, supported=SUPPORTED)["problems"]
    assert problems == [
        'cuda_toolkit_versions names "12", not a CUDA version. Fix: major.minor ("12.4", the newest release of 12.4 '
        'the source carries) or major.minor.update ("12.4.1", CUDA 12.4 Update 1).',
        'cuda_toolkit_default is "12.8", which is not among cuda_toolkit_versions (12): /usr/local/cuda can only '
        'point at an installed toolkit. Fix: cuda_toolkit_default: "12" (one of them), or "" for the newest.',
        "cuda_toolkit_source is distribution (the OS's own packages), which this collection supports on Debian 12 and "
        "13 (their non-free nvidia-cuda-toolkit); n1 runs Ubuntu 24.04.2 LTS (ID=ubuntu, VERSION_ID=24.04). Fix: a "
        "supported release, or cuda_toolkit_source: cuda_repo (NVIDIA's CUDA repository).",
    ]


def test_preflight_of_an_unknown_source_names_the_source_only():
    variables = {**CLEAN, "cuda_toolkit_source": "runfile"}
    problems = cuda_toolkit.preflight(host="n1", node=DEBIAN_13, variables=variables, supported=SUPPORTED)["problems"]
    assert problems == [
        "cuda_toolkit_source is 'runfile', which this collection does not know. Fix: cuda_toolkit_source: "
        "distribution (the OS's own packages) or cuda_repo (NVIDIA's CUDA repository)."
    ]


@pytest.mark.parametrize(("branch", "newest"), [("535", "12.2"), ("550", "12.4"), ("570", "12.8"), ("450", "11.0")])
def test_newest_cuda_a_branch_runs(branch, newest):
    assert cuda_toolkit.newest_cuda_for_branch(branch) == newest


def test_distribution_plan_resolves_the_carried_release():
    plan = cuda_toolkit.distribution_plan(info(TRIXIE), ["12.4"], "", LAYOUT, "n1")
    assert plan["problems"] == []
    assert plan["default"] == "/usr/local/lib/gpuops/cuda-12.4"
    assert plan["toolkits"] == [
        {
            "version": "12.4",
            "major_minor": "12.4",
            "release": "12.4.1",
            "nvcc": "12.4.131",
            "package_version": TRIXIE,
            "package": "nvidia-cuda-toolkit",
            "held": ["nvidia-cuda-toolkit", "nvidia-cuda-dev"],
            "root": "/usr/local/lib/gpuops/cuda-12.4",
            "links": [
                {"name": "include", "target": "/usr/include"},
                {"name": "lib64", "target": "/usr/lib/x86_64-linux-gnu"},
            ],
            "executables_of": ["nvidia-cuda-toolkit"],
            "nvcc_binary": "/usr/lib/nvidia-cuda-toolkit/bin/nvcc",
            "priority": 124,
            "min_driver": "550.54.15",
        }
    ]


def test_distribution_plan_keeps_the_installed_version_and_defaults_to_the_one_carried():
    newer = "12.4.131~12.4.1-3"
    plan = cuda_toolkit.distribution_plan(info(newer, TRIXIE, installed=TRIXIE), [], "", LAYOUT, "n1")
    assert plan["toolkits"][0]["package_version"] == TRIXIE
    assert plan["toolkits"][0]["version"] == "12.4"
    fresh = cuda_toolkit.distribution_plan(info(newer, TRIXIE), ["12.4.1"], "12.4.1", LAYOUT, "n1")
    assert fresh["toolkits"][0]["package_version"] == newer


@pytest.mark.parametrize(
    ("packages", "versions", "expected"),
    [
        (info(), [], "n1: Debian 13's own packages carry no version of nvidia-cuda-toolkit: the OS sources lack"),
        (
            info(TRIXIE),
            ["12.6"],
            "n1: cuda_toolkit_versions names \"12.6\", which Debian 13's own packages do not carry: they carry CUDA "
            "12.4.1 (nvidia-cuda-toolkit 12.4.131~12.4.1-2). Fix: cuda_toolkit_versions: [\"12.4\"]",
        ),
        (info(TRIXIE), ["12.4.0"], 'cuda_toolkit_versions names "12.4.0", which Debian 13'),
        (info(TRIXIE), ["11.8", "12.4"], "n1: cuda_toolkit_versions is 11.8, 12.4, but Debian 13's own packages carry "
                                         "one CUDA toolkit at a time"),
    ],
)  # fmt: skip
def test_distribution_plan_problems(packages, versions, expected):
    plan = cuda_toolkit.distribution_plan(packages, versions, "", LAYOUT, "n1")
    (problem,) = plan["problems"]
    assert expected in problem
    assert plan["toolkits"] == []


def facts(version=None, provider=None, install=(), remove=(), requirement=None):
    return {
        "driver": {"version": version, "provider": provider, "packages": [provider] if provider else []},
        "simulation": {"ok": True, "error": None, "install": list(install), "remove": list(remove),
                       "driver_requirement": requirement},
        "alternatives": {"link": None, "status": None, "value": None, "choices": {}, "exists": False},
        "executables": [],
    }  # fmt: skip


PLAN = cuda_toolkit.distribution_plan(info(TRIXIE), ["12.4"], "", LAYOUT, "n1")
TESLA = {"name": "libnvidia-tesla-535-cuda1", "version": "535.274.02-1~deb13u1"}
CURRENT = {"name": "libcuda1", "version": "550.163.01-2"}
PULLED = [
    {"name": "libcuda1", "version": "550.163.01-2", "upgrade_from": None, "source": "nvidia-graphics-drivers",
     "driver": True},
    {"name": "nvidia-cuda-dev", "version": "12.4.127~12.4.1-2", "upgrade_from": None, "source": "nvidia-cuda-toolkit",
     "driver": False},
]  # fmt: skip
REQUIREMENT = {"version": "550", "package": "nvidia-cuda-dev", "relation": "libcuda1 (>= 550) | libcuda.so.1 (>= 550)"}


def test_a_driver_that_runs_the_toolkit_and_stays_alone_is_no_problem():
    assert cuda_toolkit.driver_problem(PLAN, facts("550.163.01", CURRENT, PULLED[1:], (), REQUIREMENT), "n1") is None


def test_an_older_driver_names_both_versions_the_pull_and_the_fix():
    problem = cuda_toolkit.driver_problem(PLAN, facts("535.274.02", TESLA, PULLED, (), REQUIREMENT), "n1")
    assert problem.startswith(
        "n1: cuda_toolkit_versions 12.4 (CUDA 12.4.1) needs driver >= 550.54.15; the installed driver is 535.274.02 "
        "(libnvidia-tesla-535-cuda1 535.274.02-1~deb13u1), and installing it would put libcuda1 550.163.01-2 beside "
        "the installed driver (nvidia-cuda-dev depends on libcuda1 (>= 550) | libcuda.so.1 (>= 550))"
    )
    assert problem.endswith(
        'Nothing was changed. Fix: nvidia_driver_branch: "550" or later (playbooks/nvidia_driver.yml), or a CUDA '
        "version driver 535.274.02 runs (the newest: 12.2)."
    )


def test_a_driver_new_enough_that_the_install_would_still_duplicate_is_refused():
    """A 550 driver from elsewhere (say NVIDIA's repository) that Debian's packages do not count as libcuda1."""
    other = {"name": "libnvidia-compute-550", "version": "550.54.15-1"}
    problem = cuda_toolkit.driver_problem(PLAN, facts("550.54.15", other, PULLED, (), REQUIREMENT), "n1")
    assert problem.startswith(
        "n1: the installed driver 550.54.15 (libnvidia-compute-550 550.54.15-1) runs CUDA 12.4.1 (nvidia-cuda-toolkit "
        "12.4.131~12.4.1-2), but installing it would put libcuda1 550.163.01-2 beside the installed driver"
    )
    assert 'Fix: nvidia_driver_branch: "550" or later (playbooks/nvidia_driver.yml)' in problem


def test_no_driver_and_removals_are_refused():
    problem = cuda_toolkit.driver_problem(PLAN, facts(None, None, PULLED, (), REQUIREMENT), "n1")
    assert problem.startswith("n1 has no NVIDIA driver userland installed (no package provides libcuda.so.1)")
    assert "would pull one in: libcuda1 550.163.01-2" in problem
    assert "Fix: run playbooks/nvidia_driver.yml first (a driver branch that runs driver >= 550.54.15)" in problem
    removing = facts("550.163.01", CURRENT, (), [{"name": "libbar", "version": "2.0-1"}])
    assert "would remove libbar 2.0-1. Nothing was changed." in cuda_toolkit.driver_problem(PLAN, removing, "n1")


def test_default_root():
    toolkits = [{"version": "12.4", "release": "12.4.1", "root": "/a"}, {"version": "12.8", "release": "12.8.0",
                                                                         "root": "/b"}]  # fmt: skip
    assert cuda_toolkit.default_root(toolkits, "") == "/b"
    assert cuda_toolkit.default_root(toolkits, "12.4") == "/a"


def reads(output="", **changes):
    """Verify's reads of a converged Debian 13 node with the distribution's CUDA 12.4 (output: what the program
    printed, where it ran)."""
    base = {
        "packages": {"nvidia-cuda-toolkit": {"installed": TRIXIE, "held": True},
                     "nvidia-cuda-dev": {"installed": "12.4.127~12.4.1-2", "held": True}},
        "facts": dict(facts("550.163.01", CURRENT), alternatives={"value": "/usr/local/lib/gpuops/cuda-12.4"}),
        "profile": ["/usr/local/cuda", "/usr/local/cuda/bin/nvcc"],
        "compiled": [
            {"item": root, "nvcc": {"release": "12.4", "version": "12.4.131"}, "output": output,
             "libraries": {"needed": ["libcudart.so.12", "libc.so.6"],
                           "resolved": {"libcudart.so.12": "/lib/x86_64-linux-gnu/libcudart.so.12"}}}
            for root in ("/usr/local/lib/gpuops/cuda-12.4", "/usr/local/cuda")
        ],
    }  # fmt: skip
    return {**base, **changes}


def verified(**changes):
    base = reads(**changes)
    return cuda_toolkit.verify_problems(PLAN, base["packages"], base["facts"], base["profile"], base["compiled"],
                                        "/usr/local/cuda")  # fmt: skip


def test_a_converged_node_has_no_verify_problem():
    assert verified() == []


CONTAINER_RUN = {"live": False, "why_not": "this node's kernel belongs to its container host"}


def verdict(run=None, **changes):
    run = run or CONTAINER_RUN
    output = "Device 0: NVIDIA L40S, compute capability 8.9\n" if run["live"] else ""
    return cuda_toolkit.verify(host="l40s", plan=PLAN, link="/usr/local/cuda", profile_path="/etc/profile.d/cuda.sh",
                               run=run, **reads(output, **changes))  # fmt: skip


def test_the_passed_line_of_a_container_node():
    """The line the role's Jinja verdict printed for this node in Molecule cuda_toolkit (tests/output) before the
    verdict moved to Python."""
    found = verdict()
    assert found == {
        "failures": [],
        "passed": "l40s passed cuda_toolkit verification: CUDA 12.4.1 (nvcc 12.4.131) under "
        "/usr/local/lib/gpuops/cuda-12.4; /usr/local/cuda -> /usr/local/lib/gpuops/cuda-12.4; CUDA_HOME and PATH from "
        "/etc/profile.d/cuda.sh; 2 packages held at their versions; a CUDA program compiled and linked against "
        "/lib/x86_64-linux-gnu/libcudart.so.12 (not applicable: running it, this node's kernel belongs to its "
        "container host)",
    }


def test_the_passed_line_where_the_program_ran_says_its_output_once():
    found = verdict(run={"live": True, "why_not": "no NVIDIA driver is loaded"})
    assert found["passed"].endswith(
        "linked against /lib/x86_64-linux-gnu/libcudart.so.12 and ran: Device 0: NVIDIA L40S, compute capability 8.9"
    )


def test_verify_fails_with_verify_problems():
    found = verdict(profile=[])
    assert found["failures"] == [
        "a login shell gets CUDA_HOME= and nvcc not on PATH, not /usr/local/cuda and /usr/local/cuda/bin/nvcc"
    ]


@pytest.mark.parametrize(
    ("node", "run"),
    [
        ({"capabilities": {"own_kernel": True}, "kernel_modules": {"nvidia": "loaded"}},
         {"live": True, "why_not": "no NVIDIA driver is loaded"}),
        ({"capabilities": {"own_kernel": True}, "kernel_modules": {"nvidia": "absent"}},
         {"live": False, "why_not": "no NVIDIA driver is loaded"}),
        # A container reads its host's modules: loaded there says nothing of this node.
        ({"capabilities": {"own_kernel": False}, "kernel_modules": {"nvidia": "loaded"}},
         {"live": False, "why_not": "this node's kernel belongs to its container host"}),
        ({}, {"live": False, "why_not": "this node's kernel belongs to its container host"}),
    ],
)  # fmt: skip
def test_run_check(node, run):
    assert cuda_toolkit.run_check(node) == run


def test_verify_problems_name_what_is_off():
    assert verified(packages={"nvidia-cuda-toolkit": {"installed": "12.4.131~12.4.1-3", "held": False}}) == [
        "nvidia-cuda-toolkit is installed at 12.4.131~12.4.1-3, not 12.4.131~12.4.1-2",
        "nvidia-cuda-dev is not held",
        "nvidia-cuda-toolkit is not held",
    ]
    assert verified(facts=dict(facts(), alternatives={"value": None})) == [
        "no NVIDIA driver userland is installed any more",
        "/usr/local/cuda points at nothing, not /usr/local/lib/gpuops/cuda-12.4",
    ]
    assert verified(profile=["/usr"]) == [
        "a login shell gets CUDA_HOME=/usr and nvcc not on PATH, not /usr/local/cuda and /usr/local/cuda/bin/nvcc"
    ]
    bad = [{"item": "/usr/local/cuda", "nvcc": {"release": "12.4", "version": "12.4.99"},
            "libraries": {"needed": ["libcudart.so.12"], "resolved": {"libcudart.so.12": None}}},
           {"item": "/usr/local/lib/gpuops/cuda-12.4", "nvcc": {"release": "12.4", "version": "12.4.131"},
            "libraries": {"needed": ["libc.so.6"], "resolved": {}}}]  # fmt: skip
    assert verified(compiled=bad) == [
        "/usr/local/cuda/bin/nvcc reports 12.4.99, not 12.4.131",
        "libcudart.so.12 (needed by the program compiled with /usr/local/cuda) is not found",
        "the program compiled with /usr/local/lib/gpuops/cuda-12.4 does not link against libcudart",
    ]


# NVIDIA's CUDA repository as repository_index reads it (the bench's stand-in carries these versions; the real
# debian12 repository carries 11.8.0-1, and 12.2.0-1 to 12.2.2-1, under the same names).
INDEX = {"cuda-toolkit-11-8": ["11.8.0-1"], "cuda-toolkit-12-2": ["12.2.2-1", "12.2.0-1"]}
REPO = {"where": "NVIDIA's CUDA repository (debian12)", "root": "/usr/local/cuda-{version}"}


def test_repository_plan_installs_each_minor_under_its_own_root():
    plan = cuda_toolkit.repository_plan(INDEX, {}, ["11.8", "12.2"], "11.8", REPO, "n1")
    assert plan["problems"] == []
    assert [(t["package"], t["package_version"], t["release"], t["root"], t["priority"], t["min_driver"], t["held"])
            for t in plan["toolkits"]] == [
        ("cuda-toolkit-11-8", "11.8.0-1", "11.8.0", "/usr/local/cuda-11.8", 118, "520.61.05", ["cuda-toolkit-11-8"]),
        ("cuda-toolkit-12-2", "12.2.2-1", "12.2.2", "/usr/local/cuda-12.2", 122, "535.104.05", ["cuda-toolkit-12-2"]),
    ]  # fmt: skip
    assert plan["default"] == "/usr/local/cuda-11.8"
    assert all(t["nvcc"] is None and t["links"] == [] and t["nvcc_binary"] is None for t in plan["toolkits"])


def test_repository_plan_pins_an_update_and_keeps_the_installed_version():
    exact = cuda_toolkit.repository_plan(INDEX, {}, ["12.2.0"], "", REPO, "n1")
    assert exact["toolkits"][0]["package_version"] == "12.2.0-1"
    assert exact["toolkits"][0]["min_driver"] == "535.54.03"
    kept = cuda_toolkit.repository_plan(INDEX, {"cuda-toolkit-12-2": {"installed": "12.2.0-1"}}, ["12.2"], "", REPO,
                                        "n1")  # fmt: skip
    assert kept["toolkits"][0]["package_version"] == "12.2.0-1"
    assert kept["default"] == "/usr/local/cuda-12.2"


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        (["12.4"], 'n1: cuda_toolkit_versions names "12.4", but NVIDIA\'s CUDA repository (debian12) carries no '
                   "version of cuda-toolkit-12-4. Nothing was changed. Fix: a version it carries, or a mirror that "
                   "holds it (gpuops_mirror_url)."),
        (["11.8", "12.2.1"], 'n1: cuda_toolkit_versions names "12.2.1", but NVIDIA\'s CUDA repository (debian12) '
                             "carries 12.2.0-1, 12.2.2-1 of cuda-toolkit-12-2. Nothing was changed. Fix: a version it "
                             'carries (cuda_toolkit_versions: ["12.2"], the newest it carries), or a mirror'),
    ],
)  # fmt: skip
def test_repository_plan_problems(versions, expected):
    plan = cuda_toolkit.repository_plan(INDEX, {}, versions, "", REPO, "n1")
    assert plan["toolkits"] == []
    (problem,) = plan["problems"]
    assert expected in problem


def test_verify_checks_an_nvidia_toolkit_by_the_release_its_nvcc_reports():
    plan = cuda_toolkit.repository_plan(INDEX, {}, ["11.8", "12.2"], "12.2", REPO, "n1")
    packages = {
        "cuda-toolkit-11-8": {"installed": "11.8.0-1", "held": True},
        "cuda-toolkit-12-2": {"installed": "12.2.2-1", "held": True},
    }
    facts_ = dict(facts("535.216.03", CURRENT), alternatives={"value": "/usr/local/cuda-12.2"})
    compiled = [
        {"item": root, "nvcc": {"release": release, "version": version},
         "libraries": {"needed": ["libcudart.so.11.0"],
                       "resolved": {"libcudart.so.11.0": "/lib/x86_64-linux-gnu/libcudart.so.11.0"}}}
        for root, release, version in (("/usr/local/cuda-11.8", "11.8", "11.8.89"),
                                       ("/usr/local/cuda-12.2", "12.2", "12.2.140"),
                                       ("/usr/local/cuda", "11.8", "11.8.89"))
    ]  # fmt: skip
    profile = ["/usr/local/cuda", "/usr/local/cuda/bin/nvcc"]
    assert cuda_toolkit.verify_problems(plan, packages, facts_, profile, compiled, "/usr/local/cuda") == [
        "/usr/local/cuda/bin/nvcc reports 11.8, not 12.2"
    ]


def test_repository_plan_orders_an_rpm_repository_s_versions_as_rpm_does():
    # "^" sorts before "." for rpm (a snapshot before the next release) and after it for dpkg (ASCII).
    index = {"cuda-toolkit-12-4": ["12.4.1-1^1", "12.4.1-1.1"]}
    rhel = dict(REPO, manager="dnf")
    assert cuda_toolkit.repository_plan(index, {}, ["12.4"], "", rhel, "n1")["toolkits"][0]["package_version"] == (
        "12.4.1-1.1"
    )
    assert cuda_toolkit.repository_plan(index, {}, ["12.4"], "", REPO, "n1")["toolkits"][0]["package_version"] == (
        "12.4.1-1^1"
    )


FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
DISPLAY = FIXTURES / "alternatives"


@pytest.mark.parametrize(
    ("capture", "expected"),
    [
        # Debian 12's update-alternatives 1.21.23 on the bench, before and after --set.
        ("debian12-display-auto.stdout", {
            "link": "/usr/local/cuda", "status": "auto", "value": "/usr/local/cuda-12.2",
            "choices": {"/usr/local/cuda-11.8": 118, "/usr/local/cuda-12.2": 122}}),
        ("debian12-display-manual.stdout", {
            "link": "/usr/local/cuda", "status": "manual", "value": "/usr/local/cuda-11.8",
            "choices": {"/usr/local/cuda-11.8": 118, "/usr/local/cuda-12.2": 122}}),
        # RHEL's alternatives (Red Hat's insights-core test data): followers and the best version are not choices.
        ("rhel-display-mta.stdout", {
            "link": None, "status": "auto", "value": "/usr/sbin/sendmail.postfix",
            "choices": {"/usr/sbin/sendmail.postfix": 30}}),
        ("rhel-display-java.stdout", {
            "link": None, "status": "auto", "value": "/usr/lib/jvm/jre-1.6.0-ibm.x86_64/bin/java",
            "choices": {"/usr/lib/jvm/jre-1.6.0-ibm.x86_64/bin/java": 16091,
                        "/usr/lib/jvm/jre-1.4.2-gcj/bin/java": 1420}}),
    ],
)  # fmt: skip
def test_alternatives_display_reads_debian_and_rhel(capture, expected):
    assert cuda_toolkit.parse_alternatives_display((DISPLAY / capture).read_text()) == expected


def test_alternatives_display_reads_a_family_and_manual_status():
    # RHEL's line for an alternative with a family, as fedora-sysv/chkconfig's alternatives.c prints it (derived, not a
    # capture), and its manual status line.
    text = (
        "cuda - status is manual.\n"
        " link currently points to /usr/local/cuda-12.2\n"
        "/usr/local/cuda-12.2 - family cuda-12 priority 122\n"
        "Current `best' version is /usr/local/cuda-12.2.\n"
    )
    parsed = cuda_toolkit.parse_alternatives_display(text)
    assert parsed["status"] == "manual"
    assert parsed["choices"] == {"/usr/local/cuda-12.2": 122}


def test_alternatives_display_of_nothing_is_empty():
    assert cuda_toolkit.parse_alternatives_display("") == {"link": None, "status": None, "value": None, "choices": {}}


@pytest.mark.parametrize(
    ("package", "driver"),
    [
        ({"name": "nvidia-driver-cuda-libs", "sourcerpm": "nvidia-driver-550.163.01-1.el9.src.rpm"}, True),
        ({"name": "libnvidia-ml", "sourcerpm": "nvidia-driver-580.65.06-1.el9.src.rpm"}, True),
        ({"name": "cuda-drivers", "sourcerpm": "cuda-drivers-560.35.03-1.src.rpm"}, True),
        ({"name": "kmod-nvidia-open-dkms", "sourcerpm": "kmod-nvidia-open-dkms-595.45.04-1.el9.src.rpm"}, True),
        ({"name": "nvidia-kmod-common", "sourcerpm": "nvidia-kmod-common-595.45.04-1.el9.src.rpm"}, True),
        # Another build of the library, known by rpm's automatic soname provide.
        ({"name": "libcuda-other", "sourcerpm": "other-1-1.src.rpm", "provides": ["libcuda.so.1()(64bit)"]}, True),
        ({"name": "cuda-compat-12-4", "sourcerpm": "cuda-compat-12-4-550.54.15-1.src.rpm",
          "provides": ["libcuda.so.1()(64bit)"]}, False),
        ({"name": "cuda-toolkit-12-2", "sourcerpm": "cuda-toolkit-12-2-12.2.2-1.src.rpm"}, False),
    ],
)  # fmt: skip
def test_rpm_driver_userland(package, driver):
    assert cuda_toolkit.rpm_is_driver(package) is driver


def test_dnf_simulation_from_dnf_s_resolution():
    transaction = json.loads((FIXTURES / "dnf" / "resolve-obsoletes.json").read_text())
    simulation = cuda_toolkit.dnf_simulation(transaction)
    assert simulation["ok"] is True
    assert simulation["remove"] == [{"name": "gpuops-bench-base", "version": "1-1"}]
    assert simulation["install"] == [{"name": "gpuops-bench-base-next", "version": "2-1", "upgrade_from": None,
                                      "source": "gpuops-bench-base-next", "driver": False}]  # fmt: skip
    assert simulation["driver_requirement"] is None


def test_rpm_driver_requirement_takes_the_newest_and_drops_epoch_and_release():
    packages = [
        {"name": "a", "requires": ["cuda-drivers >= 535.104.05", "libcuda.so.1()(64bit)"]},
        {"name": "b", "requires": ["nvidia-driver-cuda-libs >= 3:560.35.03-1.el9", "cuda-cccl-12-6 >= 12.6"]},
    ]
    assert cuda_toolkit.rpm_driver_requirement(packages) == {
        "version": "560.35.03",
        "package": "b",
        "relation": "nvidia-driver-cuda-libs >= 3:560.35.03-1.el9",
    }


@pytest.mark.parametrize(
    ("capture", "errors"),
    [
        ("devicequery-35-insufficient-driver.txt", ["CUDA driver version is insufficient for CUDA runtime version"]),
        ("bandwidthtest-802-system-not-initialized.txt", ["system not yet initialized", "cudaErrorSystemNotReady"]),
        ("cuda-check-803-unsupported-driver.txt", ["system has unsupported display driver / cuda driver combination"]),
        ("matrixmul-100-no-device.txt", ["cudaErrorNoDevice"]),
        ("devicequery-999-unknown-error.txt", ["unknown error"]),
    ],
)
def test_check_output_of_failing_cuda_programs(capture, errors):
    found = cuda_toolkit.parse_check_output((FIXTURES / "cuda" / capture).read_text())
    assert (found["errors"], found["devices"], found["ok"], found["failed"]) == (errors, None, [], [])


def test_check_output_of_the_program_on_eight_gpus():
    found = cuda_toolkit.parse_check_output((FIXTURES / "cuda" / "cuda-check-h100-x8.derived.txt").read_text())
    assert (found["devices"], found["runtime"], found["driver"], found["errors"]) == (8, 12040, 12070, [])
    assert found["ok"][3] == {"device": 3, "pci": "0000:5d:00", "name": "NVIDIA H100 80GB HBM3"}


def test_check_output_names_a_failed_device():
    found = cuda_toolkit.parse_check_output(
        "device 0 0000:00:00 failed: all CUDA-capable devices are busy or unavailable, last value -1\n"
        "devices 1 runtime 12040 driver 12040 failed 1\n"
    )
    assert found["failed"] == [{"device": 0, "pci": "0000:00:00", "error": "all CUDA-capable devices are busy or "
                                "unavailable"}]  # fmt: skip
    assert (found["devices"], found["ok"]) == (1, [])


# bin/nvcc as nvcc.j2 wrote it before root_paths, read from a bench node converged by it (Debian 13's toolkit):
# a converged node keeps its file.
NVCC_WRAPPER = """#!/bin/sh
# Managed by gpuops.bringup (cuda_toolkit): CUDA 12.4.1's nvcc (nvidia-cuda-toolkit 12.4.131~12.4.1-2).
# Its directory first on PATH: nvcc runs the host compiler as gcc/g++, and
# there Debian's wrappers pick a version this nvcc supports.
PATH="/usr/lib/nvidia-cuda-toolkit/bin:${PATH}"
export PATH
exec /usr/lib/nvidia-cuda-toolkit/bin/nvcc "$@"
"""


def test_root_paths_lay_out_a_distribution_toolkit():
    executables = ["/usr/bin/bin2c", "/usr/lib/nvidia-cuda-toolkit/bin/nvcc", "/usr/bin/cuobjdump"]
    root = "/usr/local/lib/gpuops/cuda-12.4"
    assert cuda_toolkit.root_paths(PLAN, executables) == [
        {"path": root, "state": "directory", "mode": "0755"},
        {"path": f"{root}/bin", "state": "directory", "mode": "0755"},
        {"path": f"{root}/nvvm", "state": "directory", "mode": "0755"},
        {"path": f"{root}/bin/nvcc", "state": "file", "mode": "0755", "content": NVCC_WRAPPER},
        {"path": f"{root}/bin/bin2c", "state": "link", "src": "/usr/bin/bin2c"},
        {"path": f"{root}/bin/cuobjdump", "state": "link", "src": "/usr/bin/cuobjdump"},
        {"path": f"{root}/include", "state": "link", "src": "/usr/include"},
        {"path": f"{root}/lib64", "state": "link", "src": "/usr/lib/x86_64-linux-gnu"},
    ]


def test_root_paths_leave_nvidias_own_roots_alone():
    plan = {"toolkits": [{"root": "/usr/local/cuda-12.6", "nvcc_binary": None, "links": []}]}
    assert cuda_toolkit.root_paths(plan, ["/usr/local/cuda-12.6/bin/nvcc"]) == []


# /etc/profile.d/cuda.sh as the role's template (cuda.sh.j2) wrote it before configuration_paths: the same text,
# compared with Ansible's template module's output on these values, so a converged node keeps its file.
PROFILE = """# Managed by gpuops.bringup (cuda_toolkit): edit the inventory, not this file.
# The default CUDA toolkit is the one behind /usr/local/cuda
# (update-alternatives --display cuda). The libraries need no LD_LIBRARY_PATH: the
# dynamic linker finds them where the packages put them.
export CUDA_HOME=/usr/local/cuda
case ":${PATH}:" in
  *:/usr/local/cuda/bin:*) ;;
  *) export PATH=/usr/local/cuda/bin:${PATH} ;;
esac
"""
SETTINGS = {"link": "/usr/local/cuda", "alternative": "cuda"}


def test_configuration_paths_are_the_roots_then_the_login_profile():
    executables = ["/usr/bin/bin2c", "/usr/lib/nvidia-cuda-toolkit/bin/nvcc"]
    entries = cuda_toolkit.configuration_paths(PLAN, executables, profile="/etc/profile.d/cuda.sh", **SETTINGS)
    assert entries[:-1] == cuda_toolkit.root_paths(PLAN, executables)
    assert entries[-1] == {"path": "/etc/profile.d/cuda.sh", "state": "file", "mode": "0644", "content": PROFILE}


OWN = "/usr/local/lib/gpuops/"
ROOT_124 = "/usr/local/lib/gpuops/cuda-12.4"


def steps(choices, value=ROOT_124, status="manual", plan=None):
    alternatives = {"status": status, "value": value, "choices": choices}
    return cuda_toolkit.alternatives_steps(plan or PLAN, alternatives, own_roots=OWN, **SETTINGS)


def test_alternatives_as_planned_need_nothing():
    assert PLAN["default"] == ROOT_124
    assert steps({ROOT_124: 124}) == {"commands": [], "stale": []}


def test_a_fresh_node_registers_and_chooses_the_default():
    assert steps({}, value=None, status=None) == {
        "commands": [
            ["update-alternatives", "--install", "/usr/local/cuda", "cuda", ROOT_124, "124"],
            ["update-alternatives", "--set", "cuda", ROOT_124],
        ],
        "stale": [],
    }


def test_a_root_at_another_priority_is_registered_again():
    assert steps({ROOT_124: 120})["commands"] == [
        ["update-alternatives", "--install", "/usr/local/cuda", "cuda", ROOT_124, "124"]
    ]


@pytest.mark.parametrize(("value", "status"), [(ROOT_124, "auto"), ("/usr/local/cuda-12.6", "manual")])
def test_the_default_is_set_unless_it_is_the_manual_choice(value, status):
    assert steps({ROOT_124: 124}, value=value, status=status)["commands"] == [
        ["update-alternatives", "--set", "cuda", ROOT_124]
    ]


def test_only_the_roles_own_roots_no_longer_planned_are_stale():
    choices = {ROOT_124: 124, "/usr/local/lib/gpuops/cuda-12.2": 122, "/usr/local/cuda-12.6": 126}
    found = steps(choices)
    assert found == {
        "commands": [["update-alternatives", "--remove", "cuda", "/usr/local/lib/gpuops/cuda-12.2"]],
        "stale": ["/usr/local/lib/gpuops/cuda-12.2"],
    }
