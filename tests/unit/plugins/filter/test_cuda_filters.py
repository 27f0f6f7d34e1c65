"""The cuda_* filters through Ansible's own templating, as the role calls them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import cuda

LAYOUT = {
    "where": "Debian 13's own packages",
    "package": "nvidia-cuda-toolkit",
    "held": ["nvidia-cuda-toolkit", "nvidia-cuda-dev"],
    "root": "/usr/local/lib/gpuops/cuda-{version}",
    "nvcc": "/usr/lib/nvidia-cuda-toolkit/bin/nvcc",
    "executables_of": ["nvidia-cuda-toolkit"],
    "links": {"include": "/usr/include"},
    "multiarch": "x86_64-linux-gnu",
}
PACKAGES = {"nvidia-cuda-toolkit": {"installed": None, "available": ["12.4.131~12.4.1-2"]}}


def test_the_filters_are_registered():
    assert sorted(cuda.FilterModule().filters()) == [
        "cuda_toolkit_alternatives_steps",
        "cuda_toolkit_driver_problem",
        "cuda_toolkit_paths",
        "cuda_toolkit_plan",
        "cuda_toolkit_preflight",
        "cuda_toolkit_repository_plan",
        "cuda_toolkit_run_check",
        "cuda_toolkit_verify",
        "cuda_toolkit_verify_problems",
    ]


SETTINGS = {"link": "/usr/local/cuda", "alternative": "cuda", "profile": "/etc/profile.d/cuda.sh"}


def test_paths_of_a_planned_toolkit():
    plan = cuda.cuda_toolkit_plan(PACKAGES, ["12.4"], "", LAYOUT, "n1")
    entries = cuda.cuda_toolkit_paths(plan, ["/usr/bin/bin2c"], SETTINGS)
    assert [(e["path"], e["state"]) for e in entries][-3:] == [
        ("/usr/local/lib/gpuops/cuda-12.4/bin/bin2c", "link"),
        ("/usr/local/lib/gpuops/cuda-12.4/include", "link"),
        ("/etc/profile.d/cuda.sh", "file"),
    ]
    with pytest.raises(AnsibleFilterError, match="cuda_toolkit_paths"):
        cuda.cuda_toolkit_paths("not a plan", [], SETTINGS)
    with pytest.raises(AnsibleFilterError, match="cuda_toolkit_paths"):
        cuda.cuda_toolkit_paths(plan, [], "not settings")
    with pytest.raises(AnsibleFilterError, match="cuda_toolkit_paths needs the role's settings with profile"):
        cuda.cuda_toolkit_paths(plan, [], {"link": "/usr/local/cuda", "alternative": "cuda"})


def test_alternatives_steps_of_a_planned_toolkit():
    plan = cuda.cuda_toolkit_plan(PACKAGES, ["12.4"], "", LAYOUT, "n1")
    settings = {"link": "/usr/local/cuda", "alternative": "cuda", "own_roots": "/usr/local/lib/gpuops/"}
    read = {"status": "manual", "value": "/usr/local/lib/gpuops/cuda-12.4", "choices": {plan["default"]: 124}}
    assert cuda.cuda_toolkit_alternatives_steps(read, plan, settings) == {"commands": [], "stale": []}
    no_roots = {"link": "/usr/local/cuda", "alternative": "cuda"}
    with pytest.raises(AnsibleFilterError, match="alternatives_steps needs the role's settings with own_roots"):
        cuda.cuda_toolkit_alternatives_steps(read, plan, no_roots)
    for bad in (("not read", plan, settings), (read, "not a plan", settings), (read, plan, "not settings")):
        with pytest.raises(AnsibleFilterError, match="cuda_toolkit_alternatives_steps"):
            cuda.cuda_toolkit_alternatives_steps(*bad)


def test_input_problems_and_plan():
    node = {"os": {"id": "debian", "major": "13"}}
    variables = {"cuda_toolkit_source": "distribution", "cuda_toolkit_versions": ["12.4"], "cuda_toolkit_default": ""}
    supported = {"distribution": {"debian": ["13"]}}
    assert cuda.cuda_toolkit_preflight(node, "n1", {**variables, "nvidia_driver_branch": "550"}, supported) == {
        "problems": []
    }
    assert (
        len(
            cuda.cuda_toolkit_preflight(node, "n1", {**variables, "nvidia_driver_branch": "535"}, supported)["problems"]
        )
        == 1
    )
    plan = cuda.cuda_toolkit_plan(PACKAGES, ["12.4"], "", LAYOUT, "n1")
    assert plan["default"] == "/usr/local/lib/gpuops/cuda-12.4"
    facts = {"driver": {"version": "550.163.01", "provider": {"name": "libcuda1", "version": "550.163.01-2"},
                        "packages": []},
             "simulation": {"install": [], "remove": [], "driver_requirement": None}}  # fmt: skip
    assert cuda.cuda_toolkit_driver_problem(plan, facts, "n1") is None
    repo = cuda.cuda_toolkit_repository_plan({"cuda-toolkit-12-2": ["12.2.2-1"]}, {}, ["12.2"], "", LAYOUT, "n1")
    assert repo["default"] == "/usr/local/lib/gpuops/cuda-12.2"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cuda.cuda_toolkit_plan([], [], "", LAYOUT, "n1"), "cuda_toolkit_plan needs package_info's packages"),
        (lambda: cuda.cuda_toolkit_driver_problem({}, None, "n1"), "needs cuda_toolkit_facts' cuda_toolkit"),
        (lambda: cuda.cuda_toolkit_repository_plan([], {}, ["12.2"], "", LAYOUT, "n1"), "repository_index's"),
        (lambda: cuda.cuda_toolkit_verify_problems(None, {}, {}, [], [], "/usr/local/cuda"), "cuda_toolkit_plan's"),
    ],
)
def test_wrong_arguments_are_filter_errors(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


def test_cuda_toolkit_verify_names_a_missing_argument():
    verify = cuda.FilterModule().filters()["cuda_toolkit_verify"]
    with pytest.raises(AnsibleFilterError, match=r"gpuops.bringup.cuda_toolkit_verify needs verify's reads with facts"):
        verify({"packages": {}, "profile": [], "compiled": []}, "n1", {})
    with pytest.raises(AnsibleFilterError, match=r"needs cuda_toolkit_run_check's result with why_not"):
        verify({"packages": {}, "facts": {}, "profile": [], "compiled": []}, "n1",
               {"plan": {}, "link": "/usr/local/cuda", "profile_path": "/p", "run": {"live": False}})  # fmt: skip


def test_cuda_toolkit_run_check_needs_the_os_facts():
    with pytest.raises(AnsibleFilterError, match=r"gpuops.bringup.cuda_toolkit_run_check needs os_facts' gpuops_os"):
        cuda.FilterModule().filters()["cuda_toolkit_run_check"](None)
