"""The driver role's two preflight judgments (module_utils driver_preflight): each problem alone, its boundaries, no
problem that only follows from another, every problem of a node at once, and a clean node's [] with what the later
phases install by.

Inputs: the role's own defaults and vars files (loaded as the role loads them for an OS), pci_facts over lspci
captures (tests/fixtures/pci), apt-cache policy captured in the bench's Debian 13 container (tests/fixtures/apt).
"""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, driver_plan, driver_preflight, pci

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
ROLE = ROOT / "roles" / "nvidia_driver"
MAIN = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
# The defaults as the role sees them: nvidia_driver_kubernetes_node_name's is the inventory name.
VALUES = {**{k: v for k, v in DEFAULTS.items() if k.startswith("nvidia_driver_")}, "gpuops_hardware": {},
          "nvidia_driver_kubernetes_node_name": "n1"}  # fmt: skip
# _common/tasks/os_vars.yml's map of os-release IDs to vars file names, from the file itself.
DISTRO_NAMES = ast.literal_eval(
    re.search(r"\{\{ (\{.*?\})\.get", (ROOT / "roles" / "_common" / "tasks" / "os_vars.yml").read_text()).group(1)
)
FAMILIES = {"debian": "Debian", "ubuntu": "Debian", "rocky": "RedHat", "rhel": "RedHat"}
NAMES = {"debian": "Debian GNU/Linux", "ubuntu": "Ubuntu", "rocky": "Rocky Linux", "rhel": "Red Hat Enterprise Linux"}
DEBIAN_KEY = "EB693B3035CD5710E231E123A4B469963BF863CC"
RHEL_KEY = "610C7B14E068A878070DA4E99CD0A493D42D0685"
KERNEL = "6.12.117+deb13-amd64"
TESLA_13 = "535.274.02-1~deb13u1"


def gpus(capture):
    return pci.inventory(pci.parse_lspci_nn((FIXTURES / "pci" / capture).read_text()))


L40S = gpus("pcie-l40s-x4.derived.txt")
V100S = gpus("satishdotpatel-v100s-x2.lspci-nn-nvidia.txt")
B200 = gpus("nvidia-b200-x8-cx7.derived.txt")
H100 = gpus("hgx-h100-x8-cx7.derived.txt")
NONE = pci.inventory([])


def role_data(os_id, major):
    """The role's data for an OS, from its vars files loaded general to specific (preflight.yml's include_vars)."""
    family = FAMILIES.get(os_id, "unknown")
    distro = DISTRO_NAMES.get(os_id, family)
    loaded = {}
    for name in dict.fromkeys([family, f"{family}-{major}", distro, f"{distro}-{major}"]):
        path = ROLE / "vars" / f"{name}.yml"
        if path.is_file():
            loaded.update(yaml.safe_load(path.read_text()))
    return {
        "supported": MAIN["__nvidia_driver_supported"],
        "tables": {
            "distribution": loaded.get("__nvidia_driver_distribution", {}),
            "cuda_repo": loaded.get("__nvidia_driver_cuda_repo", {}),
        },
        "cuda_repo_os": loaded.get("__nvidia_driver_cuda_repo_os", ""),
        "cuda_repo_key": loaded.get("__nvidia_driver_cuda_repo_key", {}),
        "persistenced_package": loaded.get("__nvidia_driver_persistenced_package"),
    }


def release(os_id="debian", major="13"):
    manager = {"Debian": "apt", "RedHat": "dnf"}.get(FAMILIES.get(os_id), "unknown")
    return {"id": os_id, "major": major, "version_id": major, "name": f"{NAMES.get(os_id, os_id)} {major}",
            "family": FAMILIES.get(os_id, "unknown"), "package_manager": manager}  # fmt: skip


def judge(pci_facts=None, os_id="debian", major="13", controller=None, **values):
    return driver_preflight.preflight(
        host="n1",
        node={"os": release(os_id, major)},
        pci=L40S if pci_facts is None else pci_facts,
        values={**VALUES, **values},
        controller=controller or {"hook_files": [], "kubeconfig_problem": None},
        data=role_data(os_id, major),
    )


def problems(**kwargs):
    return judge(**kwargs)["problems"]


def one_line(text):
    return " ".join(text.split())


# --- before the package sources are read ------------------------------------------------------------------------


def test_a_clean_node_has_no_problem_and_gets_what_the_later_phases_install_by():
    result = judge()
    assert result["problems"] == []
    assert (result["manager"], result["branch"], result["where"]) == ("apt", "535", "Debian 13's own packages")
    assert sorted(result["table"]) == ["535", "550"]
    assert sorted(result["known"]) == ["distribution/535", "distribution/550"]
    assert (result["flavor"]["flavor"], result["flavor"]["problem"]) == ("proprietary", None)
    # DCGM (on by default) from NVIDIA's debian12 repository, which Debian 13 nodes read; no NVSwitch here.
    assert (result["fabricmanager_needed"], result["dcgm_needed"], result["cuda_repo_needed"]) == (False, True, True)
    url = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
    assert result["repository"] == {"url": url, "key_url": f"{url}3bf863cc.pub", "pins": "nvidia_driver_cuda_repo_key",
                                    "fingerprint": DEBIAN_KEY, "sha256": ""}  # fmt: skip
    assert result["fabricmanager_names"] == ["nvidia-fabricmanager-535", "nvidia-fabricmanager"]


@pytest.mark.parametrize(
    ("branch", "version", "expected"),
    [
        ("", "", []),
        ("535", "", []),
        # What the role's argument spec lets through as a string: the branch of an integer is its digits.
        (535, "535.274.02", []),
        ("535", "535.274", []),
        ("R535", "", ['nvidia_driver_branch is "R535", not a driver branch. Fix: the branch number as a string, e.g. '
                      'nvidia_driver_branch: "535", or "" for the source\'s default.']),
        ("5350", "", ['nvidia_driver_branch is "5350", not a driver branch.']),
        ("535", "latest", ['nvidia_driver_version is "latest", not an NVIDIA driver version. Fix: the full version, '
                           'e.g. nvidia_driver_version: "535.274.02", or "" for the newest of the branch.']),
        ("535", "535", ['nvidia_driver_version is "535", not an NVIDIA driver version.']),
        ("535", "535.274.02.1", ['nvidia_driver_version is "535.274.02.1", not an NVIDIA driver version.']),
        ("535", "535.274.02\n", ['nvidia_driver_version is "535.274.02\n", not an NVIDIA driver version.']),
        ("", "535.274.02", ['nvidia_driver_version is "535.274.02" but nvidia_driver_branch is empty: a version pin '
                            'needs its branch, so that both are reviewed together. Fix: nvidia_driver_branch: "535" '
                            'with nvidia_driver_version: "535.274.02".']),
        ("535", "550.163.01", ['nvidia_driver_version 550.163.01 is not of branch 535 (nvidia_driver_branch: "535"). '
                               'Fix: nvidia_driver_branch: "550" for that version, or a 535 version '
                               '(nvidia_driver_version: "" for the newest).']),
        # A malformed version is no pin to hold to a branch, nor a malformed branch a branch to hold a version to.
        ("", "latest", ['nvidia_driver_version is "latest", not an NVIDIA driver version.']),
        ("R535", "550.163.01", ['nvidia_driver_branch is "R535", not a driver branch.']),
    ],
)  # fmt: skip
def test_the_branch_and_the_version_pin(branch, version, expected):
    found = problems(nvidia_driver_branch=branch, nvidia_driver_version=version)
    assert len(found) == len(expected), found
    for problem, start in zip(found, expected, strict=True):
        assert problem.startswith(start), problem


def test_a_malformed_branch_is_not_looked_up_in_the_table():
    assert problems(nvidia_driver_branch="R535", nvidia_driver_flavor="open") == [
        'nvidia_driver_branch is "R535", not a driver branch. Fix: the branch number as a string, e.g. '
        'nvidia_driver_branch: "535", or "" for the source\'s default.'
    ]


def test_a_hook_drain_needs_its_hook_and_hooks_must_be_task_files_on_the_controller():
    assert problems(nvidia_driver_drain="hook") == [
        "nvidia_driver_drain is hook but nvidia_driver_drain_hook is empty. Fix: nvidia_driver_drain_hook: the path of "
        "a task file on the controller that takes the node out of service (and nvidia_driver_undrain_hook: the one "
        "that returns it), or nvidia_driver_drain: auto."
    ]
    controller = {"hook_files": ["/srv/hooks/drain.yml"], "kubeconfig_problem": None}
    hooks = {"nvidia_driver_drain_hook": "/srv/hooks/drain.yml", "nvidia_driver_undrain_hook": "hooks/undrain.yml"}
    assert problems(controller=controller, nvidia_driver_drain="hook", **hooks) == [
        'nvidia_driver_undrain_hook is "hooks/undrain.yml", which is no task file on the controller (an absolute path '
        'is needed). Fix: the absolute path of a task file, e.g. nvidia_driver_undrain_hook: "{{ playbook_dir '
        '}}/hooks/drain.yml", or "" for none.'
    ]


def test_the_kubeconfig_problem_is_reported_as_kubeconfig_check_said_it():
    controller = {"hook_files": [], "kubeconfig_problem": 'nvidia_driver_kubeconfig is "/x", which is not a file.'}
    assert problems(controller=controller) == ['nvidia_driver_kubeconfig is "/x", which is not a file.']


@pytest.mark.parametrize(
    ("source", "os_id", "major", "served"),
    [
        ("distribution", "debian", "12", True),
        ("distribution", "debian", "13", True),
        ("distribution", "debian", "11", False),
        ("distribution", "ubuntu", "24", False),
        ("cuda_repo", "debian", "12", True),
        ("cuda_repo", "debian", "13", False),
        ("cuda_repo", "ubuntu", "22", True),
        ("cuda_repo", "ubuntu", "20", False),
        ("cuda_repo", "rocky", "8", True),
        ("cuda_repo", "rhel", "9", True),
        ("cuda_repo", "rhel", "10", False),
        # An os-release ID the role has no vars for, and one that names a dict method.
        ("cuda_repo", "pop", "22", False),
        ("distribution", "items", "1", False),
    ],
)
def test_the_os_release_is_held_to_the_source(source, os_id, major, served):
    found = [p for p in problems(os_id=os_id, major=major, nvidia_driver_source=source)
             if p.startswith("nvidia_driver_source is")]  # fmt: skip
    assert len(found) == int(not served), found
    if found:
        assert f"; n1 runs {NAMES.get(os_id, os_id)} {major} (ID={os_id}, VERSION_ID={major}). " in found[0]


def test_an_unsupported_release_says_what_the_source_serves_and_a_note_replaces_the_fix():
    assert problems(os_id="ubuntu", major="24") == [
        "nvidia_driver_source is distribution: the OS's own packages, which this collection supports on Debian 12 and "
        "13 (their non-free NVIDIA packages); n1 runs Ubuntu 24 (ID=ubuntu, VERSION_ID=24). Fix: a supported release, "
        "or nvidia_driver_source: cuda_repo (NVIDIA's CUDA repository, for Debian 12, Ubuntu 22.04/24.04, Rocky Linux "
        "and RHEL 8/9)."
    ]
    (found,) = problems(nvidia_driver_source="cuda_repo")
    assert found.endswith(
        "n1 runs Debian GNU/Linux 13 (ID=debian, VERSION_ID=13). NVIDIA's debian13 repository carries driver branches "
        "580 and later only, signed by another key (8793F200) that this collection does not pin yet. Fix: "
        "nvidia_driver_source: distribution (Debian 13's 535 and 550 packages, fabric manager from NVIDIA's debian12 "
        "repository)."
    )


def test_an_unnamed_release_is_an_unknown_os():
    result = driver_preflight.preflight(host="n1", node={"os": {"id": "x"}}, pci=L40S, values=VALUES,
                                        controller={}, data=role_data("x", None))  # fmt: skip
    assert result["problems"] == [
        "nvidia_driver_source is distribution: the OS's own packages, which this collection supports on Debian 12 and "
        "13 (their non-free NVIDIA packages); n1 runs an unknown OS (ID=x, VERSION_ID=None). Fix: a supported "
        "release, or nvidia_driver_source: cuda_repo (NVIDIA's CUDA repository, for Debian 12, Ubuntu 22.04/24.04, "
        "Rocky Linux and RHEL 8/9)."
    ]


def test_on_an_unsupported_release_neither_the_branch_the_flavour_nor_the_key_is_judged():
    found = problems(os_id="ubuntu", major="20", nvidia_driver_source="cuda_repo", nvidia_driver_branch="470",
                     nvidia_driver_flavor="open", nvidia_driver_cuda_repo_key_fingerprint="")  # fmt: skip
    assert [p.split(":")[0] for p in found] == ["nvidia_driver_source is cuda_repo"]


def test_a_branch_the_source_does_not_carry_names_those_it_does():
    assert problems(nvidia_driver_branch="470") == [
        'nvidia_driver_branch is "470", which Debian 13\'s own packages (nvidia_driver_source: distribution) do not '
        'carry: they carry branches 535, 550. Fix: nvidia_driver_branch: "550" (or "" for the default), or '
        "nvidia_driver_source: cuda_repo for NVIDIA's other branches (Debian 12, Ubuntu, Rocky Linux, RHEL)."
    ]
    assert "they carry branch 535. Fix:" in problems(major="12", nvidia_driver_branch="550")[0]
    assert problems(major="12", nvidia_driver_source="cuda_repo", nvidia_driver_branch="470") == [
        'nvidia_driver_branch is "470", which NVIDIA\'s CUDA repository packages for Debian 12 (nvidia_driver_source: '
        "cuda_repo) do not carry: they carry branches 535, 550, 560, 565, 570, 575, 580. Fix: nvidia_driver_branch: "
        '"580" (or "" for the default).'
    ]


def test_the_default_branch_is_the_sources():
    assert judge(os_id="rhel", major="9", nvidia_driver_source="cuda_repo")["branch"] == "580"


def test_a_flavour_no_gpu_of_the_node_takes_is_named_with_the_host():
    found = problems(pci_facts=V100S, nvidia_driver_branch="550", nvidia_driver_flavor="open")
    assert found == [
        "n1: nvidia_driver_flavor is open but 2x Tesla V100S-PCIE-32GB (volta) at 0000:5e:00.0, 0000:d8:00.0 cannot "
        "use NVIDIA's open kernel modules (Volta and older GPUs need the proprietary ones). Fix: nvidia_driver_flavor: "
        "proprietary (or auto, which picks it)."
    ]
    assert problems(pci_facts=B200)[0].startswith("n1: nvidia_driver_flavor is auto and picks the open kernel modules")


@pytest.mark.parametrize(
    ("pci_facts", "hardware", "requested", "refused", "needed"),
    [
        (L40S, {}, True, True, False),
        (L40S, {}, "yes", True, False),
        (L40S, {}, False, False, False),
        (L40S, {}, "auto", False, False),
        (H100, {}, "auto", False, True),
        (H100, {}, False, False, False),
        (NONE, {"profile": "hgx_b200_8gpu", "gpu": {"nvswitch": True}}, "auto", False, True),
        (NONE, {"profile": "pcie_l40s_4gpu", "gpu": {"nvswitch": False}}, True, True, False),
        # HGX B200 boards hide their NVSwitches from the PCI bus: a forced fabric manager is taken at its word.
        (B200, {}, True, False, True),
        (B200, {}, "auto", False, False),
    ],
)  # fmt: skip
def test_fabric_manager_where_the_node_has_nvswitches(pci_facts, hardware, requested, refused, needed):
    # Branch 550 has the open modules a B200 needs.
    flavor = "open" if pci_facts is B200 else "auto"
    result = judge(pci_facts=pci_facts, gpuops_hardware=hardware, nvidia_driver_fabricmanager=requested,
                   nvidia_driver_branch="550", nvidia_driver_flavor=flavor)  # fmt: skip
    found = [p for p in result["problems"] if p.startswith("nvidia_driver_fabricmanager is true")]
    assert len(found) == int(refused), result["problems"]
    assert result["fabricmanager_needed"] is needed


def test_fabric_manager_forced_on_a_pcie_node_names_the_gpus_and_the_profile():
    assert problems(nvidia_driver_fabricmanager=True) == [
        "nvidia_driver_fabricmanager is true but n1 has no NVSwitch: none on its PCI bus (4 NVIDIA GPU(s): NVIDIA "
        "L40S), and no hardware profile (gpuops_hardware) says otherwise. Fabric manager serves NVSwitch systems only "
        "(HGX, DGX); on a PCIe node its service fails to start. Fix: nvidia_driver_fabricmanager: auto (or false)."
    ]
    hardware = {"profile": "pcie_l40s_4gpu", "gpu": {"nvswitch": False}}
    (found,) = problems(pci_facts=NONE, gpuops_hardware=hardware, nvidia_driver_fabricmanager=True)
    assert "none on its PCI bus (no NVIDIA GPU either), and its hardware profile pcie_l40s_4gpu says " in found


@pytest.mark.parametrize(
    ("values", "pci_facts", "why", "instead"),
    [
        ({"nvidia_driver_source": "cuda_repo"}, H100, "the driver: nvidia_driver_source is cuda_repo", ""),
        ({}, H100, "fabric manager: nvidia_driver_fabricmanager is auto, 4 NVSwitch(es) on the PCI bus",
         "; or nvidia_driver_fabricmanager: false to install the driver alone on purpose"),
        ({"gpuops_hardware": {"profile": "hgx_b200_8gpu", "gpu": {"nvswitch": True}}}, NONE,
         "fabric manager: nvidia_driver_fabricmanager is auto, hardware profile hgx_b200_8gpu with gpu.nvswitch: true",
         "; or nvidia_driver_fabricmanager: false to install the driver alone on purpose"),
        ({}, L40S, "DCGM: nvidia_driver_dcgm is true", "; or nvidia_driver_dcgm: false"),
    ],
)  # fmt: skip
def test_nvidias_repository_needs_its_key_pinned_and_the_message_says_what_needs_it(values, pci_facts, why, instead):
    found = problems(pci_facts=pci_facts, major="12", nvidia_driver_cuda_repo_key_fingerprint="", **values)
    assert found == [
        f"n1 needs NVIDIA's CUDA repository ({why}), but its key_url https://developer.download.nvidia.com/compute/"
        "cuda/repos/debian12/x86_64/3bf863cc.pub needs its pin: key_fingerprint (as the vendor publishes it) or "
        "key_sha256 (sha256sum of the file): no repository is trusted without its key pinned. Fix: "
        f"nvidia_driver_cuda_repo_key_fingerprint: {DEBIAN_KEY} (NVIDIA's key 3bf863cc, the role's default), with "
        f'nvidia_driver_cuda_repo_key_sha256 the sha256sum of the key file or ""{instead}.'
    ]


def test_a_node_that_needs_nothing_of_nvidias_repository_needs_no_pin():
    result = judge(nvidia_driver_dcgm=False, nvidia_driver_cuda_repo_key_fingerprint="")
    assert (result["problems"], result["cuda_repo_needed"]) == ([], False)


def test_rhel_reads_nvidias_rhel_repository_under_its_own_pins():
    result = judge(os_id="rocky", major="8", nvidia_driver_source="cuda_repo", nvidia_driver_cuda_repo_url="",
                   nvidia_driver_cuda_repo_rpm_key_fingerprint="")  # fmt: skip
    (found,) = result["problems"]
    assert "rhel8/x86_64/D42D0685.pub needs its pin" in found
    assert f"Fix: nvidia_driver_cuda_repo_rpm_key_fingerprint: {RHEL_KEY} (NVIDIA's key D42D0685, " in found
    assert judge(os_id="rhel", major="9", nvidia_driver_source="cuda_repo")["fabricmanager_names"] == [
        "nvidia-fabric-manager",
        "nvidia-fabricmanager",
    ]


def test_the_repositorys_url_and_key_url_as_the_inventory_sets_them():
    result = judge(nvidia_driver_cuda_repo_url="http://mirror.example/cuda/", nvidia_driver_cuda_repo_key_url="",
                   nvidia_driver_cuda_repo_key_sha256="a" * 64)  # fmt: skip
    assert result["repository"]["key_url"] == "http://mirror.example/cuda/3bf863cc.pub"
    assert result["repository"]["sha256"] == "a" * 64


def test_a_refused_fabric_manager_is_no_reason_to_need_nvidias_repository():
    # Without DCGM nothing else needs the repository: its missing pin is no problem of its own.
    found = problems(
        nvidia_driver_fabricmanager=True, nvidia_driver_dcgm=False, nvidia_driver_cuda_repo_key_fingerprint=""
    )
    assert [p.split(" but ")[0] for p in found] == ["nvidia_driver_fabricmanager is true"]


def test_every_problem_known_before_the_package_sources_are_read_at_once():
    controller = {"hook_files": [], "kubeconfig_problem": "nvidia_driver_kubeconfig is bad."}
    found = problems(
        controller=controller,
        nvidia_driver_branch="470",
        nvidia_driver_version="latest",
        nvidia_driver_drain="hook",
        nvidia_driver_undrain_hook="/nonexistent/undrain.yml",
        nvidia_driver_fabricmanager=True,
        nvidia_driver_cuda_repo_key_fingerprint="",
    )
    assert [one_line(p)[:60] for p in found] == [
        'nvidia_driver_version is "latest", not an NVIDIA driver vers',
        "nvidia_driver_drain is hook but nvidia_driver_drain_hook is ",
        'nvidia_driver_undrain_hook is "/nonexistent/undrain.yml", wh',
        "nvidia_driver_kubeconfig is bad.",
        'nvidia_driver_branch is "470", which Debian 13\'s own package',
        "nvidia_driver_fabricmanager is true but n1 has no NVSwitch: ",
        "n1 needs NVIDIA's CUDA repository (DCGM: nvidia_driver_dcgm ",
    ]


@pytest.mark.parametrize(
    ("source", "os_id", "major"),
    [
        (s, os_id, m)
        for s, by_os in MAIN["__nvidia_driver_supported"].items()
        for os_id, ms in by_os.items()
        for m in ms
    ],
)
def test_every_supported_release_has_the_data_preflight_reads(source, os_id, major):
    """What preflight() takes for granted on a release it serves: the source's table with its default branch, the
    name of NVIDIA's repository for the OS and its key, nvidia-persistenced's package."""
    data = role_data(os_id, major)
    table = data["tables"][source]
    assert table["default_branch"] in table["branches"] and table["where"]
    assert data["cuda_repo_os"] and data["cuda_repo_key"]["file"] and data["cuda_repo_key"]["fingerprint"]
    assert data["persistenced_package"]
    assert set(driver_preflight.SOURCES) == set(MAIN["__nvidia_driver_supported"])


# --- what the package sources carry, what is installed and loaded ------------------------------------------------

URL = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
DCGM = ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary", "datacenter-gpu-manager-4-cuda12",
        "datacenter-gpu-manager-4-proprietary-cuda12"]  # fmt: skip
INDEX = {
    "key_url": f"{URL}3bf863cc.pub",
    "key_fingerprints": [DEBIAN_KEY],
    "key_sha256": "0" * 64,
    "key_problem": None,
    "packages": {name: ["1:4.4.1-1"] for name in DCGM},
}
NODE = {
    "os": release(),
    "capabilities": {"own_kernel": True, "modules_loadable": True},
    "kernel": {
        "running": KERNEL,
        "installed": [KERNEL],
        "newest": KERNEL,
        "packages": {"running": [], "meta": ["linux-image-amd64"]},
    },
    "kernel_modules": {"nvidia": "absent", "nouveau": "absent"},
    "packages": {"broken": []},
    "units": {"kubelet.service": {"exists": False}},
}
DRIVER = {"kernels": {}, "loaded": {"version": None, "flavor": None, "modules": []}, "runfile": {"installed": False}}
DATA = {
    "persistenced_package": "nvidia-persistenced",
    "kubelet_unit": "kubelet.service",
    "persistenced_unit": "nvidia-persistenced.service",
    "daemon_units": ["nvidia-persistenced.service"],
}


def captured(policy="trixie-tesla-535-installed.policy.txt", installed=False):
    """package_info's packages from a captured apt-cache policy; installed=False forgets what was installed."""
    table = {}
    for name, entry in apt.parse_apt_policy((FIXTURES / "apt" / policy).read_text()).items():
        table[name] = {
            "installed": entry["installed"] if installed else None,
            "held": False,
            "broken": False,
            "candidate": entry["candidate"],
            "available": [v["version"] for v in entry["versions"] if v["downloadable"]],
        }
    return table


FRESH = captured()


def judge_packages(packages=None, index=None, node=None, driver=None, pci_facts=None, os_id="debian", major="13",
                   **values):  # fmt: skip
    """packages_preflight() on a node preflight() judged clean with the same values."""
    pci_facts = L40S if pci_facts is None else pci_facts
    resolved = judge(pci_facts=pci_facts, os_id=os_id, major=major, **values)
    assert resolved["problems"] == []
    return driver_preflight.packages_preflight(
        host="n1",
        node=node or NODE,
        pci=pci_facts,
        driver=driver or DRIVER,
        packages=FRESH if packages is None else packages,
        index=INDEX if index is None else index,
        resolved=resolved,
        values={**VALUES, "gpuops_mirror_url": "", **values},
        data=DATA,
    )


def test_a_clean_node_plans_the_driver_and_dcgm_and_loads_them_live():
    result = judge_packages()
    assert result["problems"] == []
    plan = result["plan"]
    assert (plan["version"], plan["package_version"], plan["kmod_package"]) == (
        "535.274.02",
        TESLA_13,
        "nvidia-tesla-535-kernel-dkms",
    )
    # nvidia-persistenced versioned apart (Debian's), DCGM from NVIDIA's repository for the driver's CUDA 12.
    assert plan["packages"]["nvidia-persistenced"] == "550.163.01-1"
    assert plan["steps"]["dcgm"] == [f"{name}=1:4.4.1-1" for name in DCGM]
    assert result["dcgm"]["cuda"] == [12]
    assert result["fabricmanager"] is None
    assert result["kernels"]["targets"] == [KERNEL]
    assert result["obstacles"] == {"purge": [], "upgrade": None, "problem": None}
    assert result["reboot"] == {"live": True, "required": False, "reasons": [], "unload": None}
    assert (result["upgrade"], result["drain_mode"]) == (None, "none")


def test_without_dcgm_nothing_of_nvidias_repository_is_read_or_planned():
    result = judge_packages(index={"skipped": True}, nvidia_driver_dcgm=False)
    assert result["problems"] == []
    assert "dcgm" not in result["plan"]["steps"]


def test_persistenced_turned_off_is_not_planned():
    result = judge_packages(nvidia_driver_persistenced=False)
    assert "nvidia-persistenced" not in result["plan"]["packages"]


def test_another_key_is_refused_and_nothing_the_index_says_is_judged():
    index = {**INDEX, "key_fingerprints": ["0" * 40], "packages": {}}
    result = judge_packages(index=index)
    assert result["problems"] == [
        f"n1: the signing key {URL}3bf863cc.pub holds {'0' * 40} with SHA-256 {'0' * 64}, but "
        f"nvidia_driver_cuda_repo_key_fingerprint is {DEBIAN_KEY}: refusing to trust it. Nothing was changed. Fix: "
        "point nvidia_driver_cuda_repo_key_url (gpuops_mirror_url for a mirror) at NVIDIA's key, or correct the pins."
    ]
    # Debian's driver is planned all the same; DCGM, which would come from the untrusted index, is not judged.
    assert result["plan"]["version"] == "535.274.02" and result["dcgm"] is None


def test_a_version_the_source_does_not_carry():
    result = judge_packages(nvidia_driver_branch="535", nvidia_driver_version="535.288.01")
    assert result["problems"] == [
        "n1: nvidia_driver_version is 535.288.01, which Debian 13's own packages do not carry for branch 535 with the "
        "proprietary kernel modules (they carry 535.274.02 (nvidia-graphics-drivers-tesla-535)). Fix: one of those, "
        'or nvidia_driver_version: "" for the newest.'
    ]
    # No plan: nothing to reboot for, no upgrade to it, no DCGM to match its CUDA version.
    assert (result["plan"], result["reboot"], result["upgrade"], result["dcgm"]) == (None, None, None, None)


def test_dcgm_at_a_version_the_repository_lacks():
    (found,) = judge_packages(nvidia_driver_dcgm_version="4.3.0")["problems"]
    assert found.startswith(
        "n1: nvidia_driver_dcgm_version is 4.3.0, for driver 535.274.02 (CUDA 12 plugins), but NVIDIA's CUDA "
        f"repository ({URL}) carries datacenter-gpu-manager-4-core, "
    )


BOOKWORM = {**NODE, "os": release(major="12"),
            "kernel": {"running": "6.1.0-50-amd64", "installed": ["6.1.0-50-amd64"], "newest": "6.1.0-50-amd64",
                       "packages": {"running": [], "meta": []}}}  # fmt: skip
MIRROR = "http://mirror.example"


def judge_fabricmanager(versions):
    """Debian 12's driver (535.309.01 in the captured sources) on an HGX H100, its NVSwitches on the PCI bus: fabric
    manager from NVIDIA's debian12 repository, through the mirror, which carries it at versions."""
    index = {**INDEX, "packages": {**INDEX["packages"], "nvidia-fabricmanager-535": versions}}
    return judge_packages(packages=captured("bookworm-fresh.policy.txt"), node=BOOKWORM, index=index, pci_facts=H100,
                          major="12", nvidia_driver_dcgm=False, gpuops_mirror_url=MIRROR)  # fmt: skip


def test_fabric_manager_joins_the_plan_at_the_drivers_version():
    result = judge_fabricmanager(["535.274.02-1", "535.309.01-1"])
    assert result["problems"] == []
    assert result["fabricmanager"] == {
        "package": "nvidia-fabricmanager-535",
        "version": "535.309.01-1",
        "problem": None,
    }
    assert result["plan"]["steps"]["fabricmanager"] == ["nvidia-fabricmanager-535=535.309.01-1"]
    assert result["plan"]["packages"]["nvidia-fabricmanager-535"] == "535.309.01-1"


def test_fabric_manager_at_another_version_than_the_drivers_is_refused():
    (found,) = judge_fabricmanager(["535.261.03-1", "535.274.02-1"])["problems"]
    assert found.startswith(
        "n1: fabric manager must run at exactly the driver's version, 535.309.01 (nvidia-kernel-dkms "
        f"535.309.01-0+deb12u1), but the mirror's copy of NVIDIA's CUDA repository ({MIRROR}/"
        "developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/) carries nvidia-fabricmanager-535 only at "
        "535.261.03, 535.274.02: "
    )


def test_a_node_without_a_kernel_to_build_for():
    node = copy.deepcopy(NODE)
    node["kernel"].update(installed=[], newest="", running="6.18.44-fc-v509")
    (found,) = judge_packages(node=node)["problems"]
    assert found.startswith("n1: this node has no kernel DKMS can build the driver for (installed: none;")


@pytest.mark.parametrize(
    ("broken", "runfile", "start"),
    [
        (["libc-bin"], False, "n1: dpkg has left libc-bin half-installed or half-configured"),
        ([], True, "n1: a driver installed with NVIDIA's .run installer is on this node"),
    ],
)
def test_what_stands_in_the_way(broken, runfile, start):
    node = {**NODE, "packages": {"broken": broken}}
    (found,) = judge_packages(node=node, driver={**DRIVER, "runfile": {"installed": runfile}})["problems"]
    assert found.startswith(start)


def test_what_stands_in_the_way_is_told_without_a_plan_too():
    result = driver_plan.install_problems({}, {}, None, ["libc-bin"], [], False)
    assert result["problem"].startswith("dpkg has left libc-bin")
    assert driver_plan.install_problems({}, {}, None, [], [], False) == {"purge": [], "upgrade": None, "problem": None}


def upgrade_node(kubelet):
    node = copy.deepcopy(NODE)
    node["units"]["kubelet.service"]["exists"] = kubelet
    return node


def installed_tesla(version):
    packages = copy.deepcopy(FRESH)
    packages["nvidia-tesla-535-kernel-dkms"]["installed"] = version
    return packages


def test_another_installed_driver_is_an_upgrade_and_a_kubelet_drains_through_kubernetes():
    result = judge_packages(packages=installed_tesla("535.261.03-1~deb13u1"), node=upgrade_node(True))
    assert result["problems"] == []
    assert result["upgrade"] == {
        "from": "nvidia-tesla-535-kernel-dkms 535.261.03-1~deb13u1 (driver 535.261.03)",
        "to": f"535.274.02 (nvidia-tesla-535-kernel-dkms {TESLA_13})",
    }
    assert result["drain_mode"] == "kubernetes"


def test_a_loaded_module_of_another_driver_is_part_of_the_upgrade():
    driver = {**DRIVER, "loaded": {"version": "535.261.03", "flavor": "proprietary", "modules": ["nvidia"]}}
    result = judge_packages(packages=installed_tesla("535.261.03-1~deb13u1"), driver=driver)
    assert result["upgrade"]["from"] == (
        "nvidia-tesla-535-kernel-dkms 535.261.03-1~deb13u1 (driver 535.261.03); module 535.261.03 (proprietary) loaded"
    )
    assert result["reboot"]["unload"] == "535.261.03 (proprietary)"


@pytest.mark.parametrize(
    ("drain", "hook", "kubelet", "mode"),
    [
        ("auto", "", True, "kubernetes"),
        ("auto", "/srv/drain.yml", False, "hook"),
        ("auto", "", False, "none"),
        ("none", "", True, "none"),
        ("hook", "/srv/drain.yml", True, "hook"),
    ],
)
def test_how_an_upgrade_drains_the_node(drain, hook, kubelet, mode):
    resolved = judge()
    result = driver_preflight.packages_preflight(
        host="n1", node=upgrade_node(kubelet), pci=L40S, driver=DRIVER, packages=FRESH, index=INDEX,
        resolved=resolved, values={**VALUES, "gpuops_mirror_url": "", "nvidia_driver_drain": drain,
                                   "nvidia_driver_drain_hook": hook}, data=DATA,
    )  # fmt: skip
    assert result["drain_mode"] == mode


@pytest.mark.parametrize(
    ("name", "kubelet", "installed", "refused"),
    [
        ("gpu_node_01", True, "535.261.03-1~deb13u1", True),
        ("gpu-node-01", True, "535.261.03-1~deb13u1", False),
        # Checked only where an upgrade drains through Kubernetes.
        ("gpu_node_01", False, "535.261.03-1~deb13u1", False),
        ("gpu_node_01", True, None, False),
    ],
)
def test_the_node_name_a_kubernetes_drain_uses(name, kubelet, installed, refused):
    result = judge_packages(packages=installed_tesla(installed), node=upgrade_node(kubelet),
                            nvidia_driver_kubernetes_node_name=name)  # fmt: skip
    found = [p for p in result["problems"] if "nvidia_driver_kubernetes_node_name" in p]
    assert len(found) == int(refused), result["problems"]
    if refused:
        assert found[0].startswith('n1: nvidia_driver_kubernetes_node_name is "gpu_node_01": not a Kubernetes node')


RHEL_NODE = {**NODE, "os": release("rocky", "9"), "kernel": {"running": "5.14.0-503.11.1.el9_5.x86_64",
             "installed": ["5.14.0-503.11.1.el9_5.x86_64"], "newest": "5.14.0-503.11.1.el9_5.x86_64"}}  # fmt: skip
RHEL_VERSION = "3:580.95.05-1.el9"
RHEL_NAMES = ["kmod-nvidia-open-dkms", "nvidia-kmod-common", "nvidia-driver-cuda", "nvidia-driver-cuda-libs",
              "nvidia-persistenced"]  # fmt: skip
RHEL_INDEX = {**INDEX, "key_fingerprints": [RHEL_KEY], "packages": {name: [RHEL_VERSION] for name in RHEL_NAMES}}
RHEL_PACKAGES = {"kernel-devel": {"available": ["5.14.0-503.11.1.el9_5"]}, "dkms": {"candidate": "3.0.10-8.el9"}}


def judge_rhel(packages, index=RHEL_INDEX, **values):
    return judge_packages(packages=packages, index=index, node=RHEL_NODE, pci_facts=L40S, os_id="rocky", major="9",
                          nvidia_driver_source="cuda_repo", nvidia_driver_dcgm=False, **values)  # fmt: skip


def test_rhel_plans_nvidias_rpms_where_the_node_can_get_dkms():
    result = judge_rhel(RHEL_PACKAGES)
    assert result["problems"] == []
    assert result["plan"]["steps"]["kernel_modules"] == [f"kmod-nvidia-open-dkms-{RHEL_VERSION}",
                                                         f"nvidia-kmod-common-{RHEL_VERSION}"]  # fmt: skip
    assert result["kernels"]["headers"] == ["kernel-devel-5.14.0-503.11.1.el9_5.x86_64"]


def test_rhel_without_dkms_in_its_repositories_is_refused_with_the_plans_other_problems():
    packages = {**RHEL_PACKAGES, "dkms": {"installed": None, "candidate": None}}
    found = judge_rhel(packages, nvidia_driver_branch="570")["problems"]
    assert [one_line(p)[:60] for p in found] == [
        "n1: NVIDIA's CUDA repository packages for RHEL (https://deve",
        "n1: NVIDIA's kmod-nvidia-open-dkms requires dkms, which is n",
    ]
    assert found[1].endswith(
        "(RHEL and Rocky Linux do not: EPEL does). Fix: add EPEL (os_baseline_package_repositories in stage 1, pinned "
        "with its key, or the offline mirror's copy), or install dkms; then run again."
    )


def test_every_problem_found_in_the_package_sources_and_on_the_node_at_once():
    node = copy.deepcopy(upgrade_node(True))
    node["kernel"]["newest"] = "6.12.119+deb13-amd64"
    node["kernel"]["installed"].append("6.12.119+deb13-amd64")
    node["packages"]["broken"] = ["libc-bin"]
    found = judge_packages(node=node, nvidia_driver_dcgm_version="4.3.0")["problems"]
    assert [one_line(p)[:70] for p in found] == [
        "n1: nvidia_driver_dcgm_version is 4.3.0, for driver 535.274.02 (CUDA 1",
        "n1: kernel 6.12.119+deb13-amd64, the one this node boots next, has no ",
        "n1: dpkg has left libc-bin half-installed or half-configured, and apt ",
    ]


def converged_packages():
    """The captured node with the plan's driver installed (apt-cache policy after the install) and DCGM from NVIDIA's
    repository at its pin."""
    packages = captured(installed=True)
    for name in DCGM:
        packages[name] = {"installed": "1:4.4.1-1", "held": True, "broken": False, "candidate": None, "available": []}
    return packages


CONVERGED_DKMS = [{"module": "nvidia-tesla-535", "version": "535.274.02", "kernel": KERNEL, "arch": "x86_64",
                   "state": "installed", "note": ""}]  # fmt: skip


def test_a_converged_node_has_no_package_step_to_run_and_a_fresh_one_has():
    converged = judge_packages(packages=converged_packages(), driver={**DRIVER, "dkms": CONVERGED_DKMS})
    assert (converged["problems"], converged["upgrade"], converged["packages_pending"]) == ([], None, False)
    assert judge_packages()["packages_pending"] is True
    # The module not installed for the kernel DKMS builds for: the steps run (and build it).
    unbuilt = [{**CONVERGED_DKMS[0], "state": "built"}]
    assert judge_packages(packages=converged_packages(), driver={**DRIVER, "dkms": unbuilt})["packages_pending"] is True


def test_an_upgrade_runs_every_package_step_even_with_the_plans_packages_installed():
    # Another driver's module still loaded: the upgrade path purges and unloads, so nothing read counts.
    loaded = {"version": "535.261.03", "flavor": "proprietary", "modules": ["nvidia"]}
    result = judge_packages(packages=converged_packages(), driver={**DRIVER, "dkms": CONVERGED_DKMS, "loaded": loaded})
    assert result["upgrade"] is not None
    assert result["packages_pending"] is True
