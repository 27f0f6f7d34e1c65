"""The driver role's decisions on real inputs: pci_facts over lspci captures (tests/fixtures/pci), apt-cache policy
captured in the bench's Debian 12 and 13 containers (tests/fixtures/apt), and the role's own package tables.

Cases that need GPUs the bench has no simulated node for (a GPU mix no single flavour drives, a GPU the catalog does
not know) are decided here, on edited copies of real lspci lines.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, driver_plan, pci

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
VARS = ROOT / "roles" / "nvidia_driver" / "vars"
TRIXIE = yaml.safe_load((VARS / "Debian-13.yml").read_text())["__nvidia_driver_distribution"]
BOOKWORM = yaml.safe_load((VARS / "Debian-12.yml").read_text())["__nvidia_driver_distribution"]
TESLA_13 = "535.274.02-1~deb13u1"
PERSISTENCED = ["nvidia-persistenced"]


def gpus(*captures, edit=None):
    text = "".join((FIXTURES / "pci" / c).read_text() for c in captures)
    if edit:
        text = edit(text)
    return pci.inventory(pci.parse_lspci_nn(text))


L40S = gpus("pcie-l40s-x4.derived.txt")
V100S = gpus("satishdotpatel-v100s-x2.lspci-nn-nvidia.txt")
B200 = gpus("nvidia-b200-x8-cx7.derived.txt")
H100 = gpus("hgx-h100-x8-cx7.derived.txt")
NONE = pci.inventory([])


def info(policy, installed=True, **changes):
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
    for name, values in changes.items():
        table.setdefault(name.replace("_", "-"), {}).update(values)
    return table


TRIXIE_FRESH = info("trixie-tesla-535-installed.policy.txt", installed=False)
BOOKWORM_FRESH = info("bookworm-fresh.policy.txt")


def flavor(pci_facts, requested="auto", branch="535", source=TRIXIE):
    return driver_plan.choose_flavor(pci_facts, requested, branch, source["branches"], source["where"])


def one_line(text):
    return " ".join(text.split())


# --- flavour -----------------------------------------------------------------------------------------------------


def test_l40s_on_branch_535_take_the_proprietary_modules_nvidia_defaults_to_before_r560():
    result = flavor(L40S)
    assert (result["flavor"], result["problem"]) == ("proprietary", None)
    assert "4x NVIDIA L40S (ada) at 0000:21:00.0, 0000:41:00.0, 0000:a1:00.0, 0000:c1:00.0" in result["reason"]
    assert "NVIDIA's default for branch 535 is proprietary (open from R560 on)" in result["reason"]


def test_gpus_that_take_either_flavour_get_open_from_r560():
    table = {"580": {"default_flavor": "open", "tracks": [{"name": "t", "kernel_modules": {"open": {}}}]}}
    result = driver_plan.choose_flavor(H100, "auto", "580", table, "a source")
    assert result["flavor"] == "open"


def test_volta_takes_the_proprietary_modules():
    assert flavor(V100S)["flavor"] == "proprietary"


def test_open_modules_on_a_pre_turing_gpu_is_refused_naming_the_gpus():
    result = flavor(V100S, "open", "550")
    assert result["flavor"] is None
    assert result["problem"] == (
        "nvidia_driver_flavor is open but 2x Tesla V100S-PCIE-32GB (volta) at 0000:5e:00.0, 0000:d8:00.0 cannot use "
        "NVIDIA's open kernel modules (Volta and older GPUs need the proprietary ones). "
        "Fix: nvidia_driver_flavor: proprietary (or auto, which picks it)."
    )


def test_blackwell_needs_open_modules_which_debian_13s_535_branch_lacks():
    result = flavor(B200)
    assert result["flavor"] is None
    assert one_line(result["problem"]) == (
        "nvidia_driver_flavor is auto and picks the open kernel modules (8x NVIDIA B200 (blackwell) at 0000:1b:00.0, "
        "0000:43:00.0, 0000:52:00.0, 0000:61:00.0, 0000:9d:00.0, 0000:c3:00.0, 0000:d1:00.0, 0000:df:00.0 run only "
        "on the open kernel modules), but Debian 13's own packages have no open kernel modules for branch 535 "
        '(nvidia_driver_branch: "535" offers proprietary). Fix: nvidia_driver_branch: "550" (which has them), or '
        "nvidia_driver_source: cuda_repo for NVIDIA's own packages (Debian 12, Ubuntu)."
    )
    assert flavor(B200, branch="550")["flavor"] == "open"


def test_proprietary_modules_on_blackwell_is_refused():
    result = flavor(B200, "proprietary", "550")
    assert "nvidia_driver_flavor is proprietary but 8x NVIDIA B200 (blackwell)" in result["problem"]
    assert "Fix: nvidia_driver_flavor: open (or auto, which picks it)." in result["problem"]


def test_open_modules_where_the_branch_has_none():
    result = flavor(L40S, "open")
    assert result["problem"] == (
        "nvidia_driver_flavor is open but Debian 13's own packages have no open kernel modules for branch 535 "
        '(nvidia_driver_branch: "535" offers proprietary). Fix: nvidia_driver_branch: "550" (which has them), or '
        "nvidia_driver_source: cuda_repo for NVIDIA's own packages (Debian 12, Ubuntu), or "
        "nvidia_driver_flavor: auto."
    )
    assert flavor(L40S, "open", source=BOOKWORM)["flavor"] == "open"


def test_a_gpu_mix_no_flavour_drives_is_refused():
    mixed = gpus("nvidia-b200-x8-cx7.derived.txt", "satishdotpatel-v100s-x2.lspci-nn-nvidia.txt")
    assert mixed["open_modules"] == "mixed"
    result = flavor(mixed, branch="550")
    assert "no kernel module flavour drives every GPU of this node: 8x NVIDIA B200 (blackwell)" in result["problem"]
    assert "and 2x Tesla V100S-PCIE-32GB (volta) at 0000:5e:00.0, 0000:d8:00.0 cannot use them" in result["problem"]


def test_a_gpu_the_catalog_does_not_know_is_refused_with_auto_and_accepted_when_named():
    # An edited copy: one L40S line's device id changed to one the catalog does not list.
    unknown = gpus("pcie-l40s-x4.derived.txt", edit=lambda t: t.replace("[10de:26b9]", "[10de:26ff]", 1))
    assert unknown["open_modules"] == "unknown"
    result = flavor(unknown)
    assert "the GPUs 1x AD102GL [L40S] (0x26ff, not in the GPU catalog) at 0000:21:00.0" in result["problem"]
    assert "Fix: set nvidia_driver_flavor: open or proprietary for this host" in result["problem"]
    assert flavor(unknown, "proprietary")["flavor"] == "proprietary"


def test_no_gpu_takes_the_branch_default():
    result = flavor(NONE)
    assert (result["flavor"], result["reason"]) == ("proprietary", "no NVIDIA GPU on the PCI bus: branch 535's default")


def test_a_branch_past_a_gpus_last_one_is_refused():
    table = {"590": {"default_flavor": "open", "tracks": []}}
    result = driver_plan.choose_flavor(V100S, "auto", "590", table, "a source")
    assert result["problem"] == (
        'nvidia_driver_branch is "590" but 2x Tesla V100S-PCIE-32GB (volta) at 0000:5e:00.0, 0000:d8:00.0 are '
        'supported only up to driver branch 580. Fix: nvidia_driver_branch: "580" or older.'
    )


# --- packages ----------------------------------------------------------------------------------------------------


def plan(source, branch, flavour, table, pin="", companions=None):
    companions = PERSISTENCED if companions is None else companions
    return driver_plan.choose_packages(
        source["branches"][branch], flavour, pin, table, companions, source["where"], branch
    )


def test_debian_13_branch_535_resolves_to_the_tesla_packages_pinned_and_persistenced_apart():
    result = plan(TRIXIE, "535", "proprietary", TRIXIE_FRESH)
    assert result["problem"] is None
    assert (result["track"], result["version"], result["package_version"]) == (
        "nvidia-graphics-drivers-tesla-535",
        "535.274.02",
        TESLA_13,
    )
    assert (result["kmod_package"], result["dkms_module"]) == ("nvidia-tesla-535-kernel-dkms", "nvidia-tesla-535")
    assert result["steps"] == {
        "kernel_modules": [f"nvidia-tesla-535-kernel-dkms={TESLA_13}", f"firmware-nvidia-tesla-535-gsp={TESLA_13}"],
        "userland": [
            f"nvidia-tesla-535-smi={TESLA_13}",
            f"libnvidia-tesla-535-cuda1={TESLA_13}",
            f"libnvidia-tesla-535-cfg1={TESLA_13}",
            f"libnvidia-tesla-535-ml1={TESLA_13}",
            "nvidia-persistenced=550.163.01-1",
        ],
    }
    # Never the X/GLX metapackage.
    assert not [p for p in result["packages"] if p.endswith("-driver")]


def test_an_exact_version_pin_must_be_carried():
    assert plan(TRIXIE, "535", "proprietary", TRIXIE_FRESH, pin="535.274.02")["package_version"] == TESLA_13
    result = plan(TRIXIE, "535", "proprietary", TRIXIE_FRESH, pin="535.288.01")
    assert result["problem"] == (
        "nvidia_driver_version is 535.288.01, which Debian 13's own packages do not carry for branch 535 with the "
        "proprietary kernel modules (they carry 535.274.02 (nvidia-graphics-drivers-tesla-535)). Fix: one of those, "
        'or nvidia_driver_version: "" for the newest.'
    )


def test_debian_12_without_a_pin_takes_the_newest_535_of_both_package_sets():
    result = plan(BOOKWORM, "535", "proprietary", BOOKWORM_FRESH)
    assert (result["track"], result["package_version"]) == ("nvidia-graphics-drivers", "535.309.01-0+deb12u1")
    assert result["packages"]["nvidia-smi"] == "535.309.01-0+deb12u1"
    assert result["packages"]["nvidia-persistenced"] == "535.171.04-1~deb12u1"


def test_debian_12_pin_picks_the_package_set_that_carries_it():
    result = plan(BOOKWORM, "535", "proprietary", BOOKWORM_FRESH, pin="535.216.03")
    assert result["track"] == "nvidia-graphics-drivers-tesla-535"
    assert result["kmod_package"] == "nvidia-tesla-535-kernel-dkms"
    older = plan(BOOKWORM, "535", "proprietary", BOOKWORM_FRESH, pin="535.261.03")
    assert (older["track"], older["package_version"]) == ("nvidia-graphics-drivers", "535.261.03-1")


def test_debian_12_open_modules_pin_the_userland_to_the_open_packages_version():
    result = plan(BOOKWORM, "535", "open", BOOKWORM_FRESH)
    assert (result["kmod_package"], result["dkms_module"]) == ("nvidia-open-kernel-dkms", "nvidia-current-open")
    # nvidia-smi 535.309.01 is the candidate, but the open modules exist only at 535.261.03.
    assert result["packages"]["nvidia-smi"] == "535.261.03-1"
    assert result["packages"]["firmware-nvidia-gsp"] == "535.261.03-1"


def test_the_installed_version_stays_without_a_pin_once_resolved():
    table = copy.deepcopy(BOOKWORM_FRESH)
    for name in ["nvidia-tesla-535-kernel-dkms", "firmware-nvidia-tesla-535-gsp", "nvidia-tesla-535-smi",
                 "libnvidia-tesla-535-cuda1", "libnvidia-tesla-535-cfg1", "libnvidia-tesla-535-ml1"]:  # fmt: skip
        table[name]["installed"] = "535.216.03-3~deb12u1"
    result = plan(BOOKWORM, "535", "proprietary", table)
    assert (result["track"], result["version"]) == ("nvidia-graphics-drivers-tesla-535", "535.216.03")


def test_sources_without_non_free_carry_nothing():
    result = plan(TRIXIE, "535", "proprietary", {})
    assert result["problem"].startswith(
        "Debian 13's own packages carry no version of nvidia-tesla-535-kernel-dkms (nor of 5 more packages of the "
        "set) (branch 535, proprietary kernel modules): the OS sources lack Debian's contrib, non-free and "
        "non-free-firmware components"
    )


def test_a_missing_persistenced_is_a_problem_unless_turned_off():
    table = {k: v for k, v in TRIXIE_FRESH.items() if k != "nvidia-persistenced"}
    assert "set nvidia_driver_persistenced: false" in plan(TRIXIE, "535", "proprietary", table)["problem"]
    assert plan(TRIXIE, "535", "proprietary", table, companions=[])["problem"] is None


def test_sources_half_synced_have_no_common_version():
    table = info("trixie-tesla-535-installed.policy.txt", installed=False)
    table["nvidia-tesla-535-smi"]["available"] = ["535.288.01-1~deb13u1"]
    assert (
        "carry no version common to every package of branch 535" in plan(TRIXIE, "535", "proprietary", table)["problem"]
    )


# --- kernels -----------------------------------------------------------------------------------------------------

CONTAINER = {
    "kernel": {
        "running": "6.18.44-fc-v509",
        "installed": ["6.12.117+deb13-amd64"],
        "newest": "6.12.117+deb13-amd64",
        "packages": {"running": [], "meta": ["linux-image-amd64"]},
    }
}


def test_a_container_builds_for_its_image_kernel_and_reports_the_hosts_kernel():
    table = info("trixie-tesla-535-installed.policy.txt", installed=False)
    table["linux-image-amd64"]["installed"] = "6.12.117-1"
    result = driver_plan.kernel_targets(CONTAINER, table, {})
    assert result["targets"] == ["6.12.117+deb13-amd64"]
    # The headers meta-package follows the held image meta-package (6.12.117-1), not the newer candidate 6.12.118-1.
    assert result["headers"] == ["linux-headers-6.12.117+deb13-amd64", "linux-headers-amd64=6.12.117-1"]
    assert [s["kernel"] for s in result["skipped"]] == ["6.18.44-fc-v509"]
    assert result["skipped"][0]["note"].startswith("a DKMS build for kernel 6.18.44-fc-v509 (the running kernel")
    assert result["problem"] is None


def test_a_hand_built_running_kernel_with_its_build_tree_is_a_target():
    kernels = {"6.18.44-fc-v509": {"headers": True}}
    result = driver_plan.kernel_targets(CONTAINER, TRIXIE_FRESH, kernels)
    assert result["targets"] == ["6.12.117+deb13-amd64", "6.18.44-fc-v509"]
    assert result["skipped"] == []


def test_the_kernel_booted_next_without_headers_is_refused():
    state = copy.deepcopy(CONTAINER)
    state["kernel"]["installed"].append("6.12.119+deb13-amd64")
    state["kernel"]["newest"] = "6.12.119+deb13-amd64"
    result = driver_plan.kernel_targets(state, TRIXIE_FRESH, {})
    assert result["problem"].startswith(
        "kernel 6.12.119+deb13-amd64, the one this node boots next, has no headers in the configured sources "
        "(linux-headers-6.12.119+deb13-amd64)"
    )


def test_a_node_without_a_kernel_to_build_for_is_refused():
    state = copy.deepcopy(CONTAINER)
    state["kernel"].update(installed=[], newest="")
    result = driver_plan.kernel_targets(state, TRIXIE_FRESH, {})
    assert result["targets"] == []
    assert result["problem"].startswith("this node has no kernel DKMS can build the driver for (installed: none;")


# --- what stands in the way --------------------------------------------------------------------------------------


def obstacles(table, broken=(), runfile=False):
    result = plan(TRIXIE, "535", "proprietary", TRIXIE_FRESH)
    return driver_plan.install_problems(TRIXIE["branches"], table, result, list(broken), PERSISTENCED, runfile)


def test_a_half_configured_driver_package_left_by_a_failed_run_is_purged_first():
    table = info("trixie-tesla-535-installed.policy.txt", installed=False)
    table["nvidia-open-kernel-dkms"].update(installed="550.163.01-2", broken=True)
    result = obstacles(table, broken=["nvidia-open-kernel-dkms"])
    assert result == {"purge": ["nvidia-open-kernel-dkms"], "upgrade": None, "problem": None}


def test_another_broken_package_must_be_repaired_by_hand():
    result = obstacles(TRIXIE_FRESH, broken=["libc-bin"])
    assert result["problem"].startswith("dpkg has left libc-bin half-installed or half-configured")


def test_a_run_file_driver_is_refused():
    assert "NVIDIA's .run installer" in obstacles(TRIXIE_FRESH, runfile=True)["problem"]


def test_another_installed_driver_is_the_upgrade_path():
    table = info("trixie-tesla-535-installed.policy.txt", installed=False)
    for name in ("nvidia-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "libcuda1", "nvidia-persistenced"):
        table[name]["installed"] = "550.163.01-2"
    result = obstacles(table)
    assert result["problem"] is None
    # Another track: its packages go (they conflict with the plan's); the companion stays, re-pinned by the plan.
    assert result["upgrade"] == {
        "from": "nvidia-kernel-dkms 550.163.01-2 (driver 550.163.01)",
        "remove": ["firmware-nvidia-gsp", "libcuda1", "nvidia-kernel-dkms", "nvidia-smi"],
    }


def test_another_version_of_the_planned_packages_is_an_upgrade_that_removes_nothing():
    table = info("trixie-tesla-535-installed.policy.txt")
    table["nvidia-tesla-535-kernel-dkms"]["installed"] = "535.261.03-1~deb13u1"
    result = obstacles(table)
    assert result["upgrade"] == {
        "from": "nvidia-tesla-535-kernel-dkms 535.261.03-1~deb13u1 (driver 535.261.03)",
        "remove": [],
    }


def test_the_planned_driver_installed_is_no_upgrade():
    assert obstacles(info("trixie-tesla-535-installed.policy.txt")) == {"purge": [], "upgrade": None, "problem": None}


def test_package_problems():
    table = info("trixie-tesla-535-installed.policy.txt")
    table["nvidia-tesla-535-kernel-dkms"]["held"] = True
    wanted = {"nvidia-tesla-535-kernel-dkms": TESLA_13, "nvidia-tesla-535-smi": TESLA_13, "nvidia-smi": "550.163.01-2"}
    assert driver_plan.package_problems(wanted, table) == [
        "nvidia-tesla-535-smi is not held",
        "nvidia-smi is not installed, not 550.163.01-2",
    ]


@pytest.mark.parametrize("source", [TRIXIE, BOOKWORM], ids=["debian13", "debian12"])
def test_every_table_package_is_in_the_captured_sources(source):
    """The role's package names are real: each is in the captured apt-cache policy of its release."""
    table = TRIXIE_FRESH if source is TRIXIE else BOOKWORM_FRESH
    _kmods, names = driver_plan.table_packages(source["branches"])
    assert [n for n in names if not table.get(n, {}).get("available")] == []


# --- NVIDIA's CUDA repository (cuda_repo) ----------------------------------------------------------------------------

CUDA_DEBIAN12 = yaml.safe_load((VARS / "Debian-12.yml").read_text())["__nvidia_driver_cuda_repo"]
CUDA_UBUNTU = yaml.safe_load((VARS / "Ubuntu.yml").read_text())["__nvidia_driver_cuda_repo"]
# Synthetic: what repository_index reads from the bench's stand-in of NVIDIA's debian12 repository
# (tests/standins/cuda-repo-debian12-driver/repo.json), two 550 versions and one 580, NVIDIA's "-1" revisions.
NVIDIA_VERSIONS = ["550.144.03-1", "550.163.01-1", "580.95.05-1"]
DEBIAN12_SET = ["nvidia-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "libcuda1", "libnvidia-cfg1",
                "libnvidia-ml1", "nvidia-persistenced"]  # fmt: skip
CUDA_INDEX = {name: list(NVIDIA_VERSIONS) for name in DEBIAN12_SET}


def repo_plan(table, branch, flavour, pin="", index=None, base=None):
    merged = driver_plan.repository_info(
        BOOKWORM_FRESH if base is None else base, CUDA_INDEX if index is None else index
    )
    return driver_plan.choose_packages(table["branches"][branch], flavour, pin, merged, [], table["where"], branch)


def test_the_repository_plan_takes_nvidias_versions_of_the_branch_only():
    result = repo_plan(CUDA_DEBIAN12, "550", "proprietary")
    assert result["problem"] is None
    # The newest of branch 550, not the repository's 580, and never Debian 12's 535 of the same names.
    assert (result["version"], result["package_version"]) == ("550.163.01", "550.163.01-1")
    assert (result["kmod_package"], result["dkms_module"]) == ("nvidia-kernel-dkms", "nvidia-current")
    assert result["steps"]["kernel_modules"] == ["nvidia-kernel-dkms=550.163.01-1", "firmware-nvidia-gsp=550.163.01-1"]
    # nvidia-persistenced is of the set, at the driver's version (NVIDIA versions it with the driver).
    assert "nvidia-persistenced=550.163.01-1" in result["steps"]["userland"]
    assert set(result["packages"].values()) == {"550.163.01-1"}


def test_repository_info_gives_the_repositorys_versions_only():
    # Synthetic: Debian 12's nvidia-smi installed and available, the repository's two 550 versions.
    info = {"nvidia-smi": {"installed": "535.261.03-1", "available": ["535.261.03-1"], "held": True}}
    merged = driver_plan.repository_info(info, {"nvidia-smi": ["550.144.03-1", "550.163.01-1"]})
    assert merged["nvidia-smi"] == {
        "installed": "535.261.03-1",
        "available": ["550.144.03-1", "550.163.01-1"],
        "candidate": "550.163.01-1",
        "held": True,
        "installed_elsewhere": True,
    }
    assert info["nvidia-smi"]["available"] == ["535.261.03-1"], "the input is not changed"


def test_a_repository_pin_picks_the_older_version():
    assert repo_plan(CUDA_DEBIAN12, "550", "proprietary", pin="550.144.03")["package_version"] == "550.144.03-1"


def test_an_installed_distribution_driver_is_never_a_repository_candidate():
    # Debian 12's nvidia-kernel-dkms installed (535.261.03-1, real capture) while the repository carries 535 too:
    # the plan takes NVIDIA's 535, the installed Debian version stays what is installed (the upgrade path's).
    index = {name: [*NVIDIA_VERSIONS, "535.274.02-1"] for name in DEBIAN12_SET}
    base = copy.deepcopy(BOOKWORM_FRESH)
    debian = base["nvidia-kernel-dkms"]["available"][0]
    for name in DEBIAN12_SET:
        base.setdefault(name, {})["installed"] = debian
    merged = driver_plan.repository_info(base, index)
    assert merged["nvidia-kernel-dkms"]["installed"] == debian
    assert merged["nvidia-kernel-dkms"]["installed_elsewhere"] is True
    result = repo_plan(CUDA_DEBIAN12, "535", "proprietary", index=index, base=base)
    assert result["package_version"] == "535.274.02-1"


def test_a_branch_the_repository_lacks_names_the_branches_it_carries():
    result = repo_plan(CUDA_DEBIAN12, "535", "open")
    assert result["problem"] == (
        "NVIDIA's CUDA repository packages for Debian 12 carry no version of nvidia-kernel-open-dkms of branch 535 "
        "(open kernel modules). Fix: bring branch 535 into NVIDIA's debian12 repository (nvidia_driver_cuda_repo_url) "
        "(an offline mirror: copy it from NVIDIA's repository), and run again."
    )
    result = repo_plan(CUDA_DEBIAN12, "535", "proprietary")
    assert 'Fix: nvidia_driver_branch: "580" (it carries 550, 580), or bring branch 535' in result["problem"]


def test_ubuntu_sets_have_no_firmware_entry_and_a_per_branch_userland():
    # Synthetic index in NVIDIA's Ubuntu naming ("-0ubuntu1" revisions).
    entry = CUDA_UBUNTU["branches"]["550"]
    names = ["nvidia-dkms-550-open", *entry["tracks"][0]["userland"]]
    index = {name: ["550.163.01-0ubuntu1"] for name in names}
    merged = driver_plan.repository_info({}, index)
    result = driver_plan.choose_packages(entry, "open", "", merged, [], CUDA_UBUNTU["where"], "550")
    assert result["problem"] is None
    assert result["steps"]["kernel_modules"] == ["nvidia-dkms-550-open=550.163.01-0ubuntu1"]
    assert result["dkms_module"] == "nvidia"
    assert "nvidia-compute-utils-550=550.163.01-0ubuntu1" in result["steps"]["userland"]
    kmods, all_names = driver_plan.table_packages(CUDA_UBUNTU["branches"])
    assert "nvidia-dkms-580-open" in kmods
    assert None not in all_names


def test_debians_tesla_driver_is_the_upgrade_path_to_nvidias_repository():
    # The role reads every source's tables on the OS (<source>/<branch>): a Debian 12 node with Debian's Tesla set
    # installed (the real bookworm policy capture, its 535 Tesla version marked installed) moving to cuda_repo.
    known = {f"distribution/{b}": e for b, e in BOOKWORM["branches"].items()}
    known.update({f"cuda_repo/{b}": e for b, e in CUDA_DEBIAN12["branches"].items()})
    base = copy.deepcopy(BOOKWORM_FRESH)
    tesla = base["nvidia-tesla-535-kernel-dkms"]["available"][0]
    for name in ("nvidia-tesla-535-kernel-dkms", "nvidia-tesla-535-smi", "libnvidia-tesla-535-cuda1"):
        base[name]["installed"] = tesla
    plan_ = repo_plan(CUDA_DEBIAN12, "550", "proprietary", base=base)
    result = driver_plan.install_problems(known, base, plan_, [], [], False)
    assert result["upgrade"] == {
        "from": f"nvidia-tesla-535-kernel-dkms {tesla} (driver {apt.upstream_version(tesla)})",
        "remove": ["libnvidia-tesla-535-cuda1", "nvidia-tesla-535-kernel-dkms", "nvidia-tesla-535-smi"],
    }


# --- reboot contract ---------------------------------------------------------------------------------------------

OWN = {
    "capabilities": {"own_kernel": True, "modules_loadable": True},
    "kernel": {"running": "6.12.117+deb13-amd64"},
    "kernel_modules": {"nvidia": "absent", "nouveau": "absent"},
}
PLAN = {"version": "535.274.02"}
TARGETS = ["6.12.117+deb13-amd64"]
NOT_LOADED = {"version": None, "flavor": None, "modules": []}


def reboot(os_state=None, pci_facts=None, loaded=None):
    return driver_plan.reboot_plan(
        os_state or OWN, pci_facts or L40S, loaded or NOT_LOADED, PLAN, "proprietary", TARGETS
    )


def test_a_node_with_its_own_kernel_and_gpus_loads_the_new_driver_live():
    assert reboot() == {"live": True, "required": False, "reasons": [], "unload": None}


def test_the_same_driver_loaded_already_needs_nothing():
    loaded = {"version": "535.274.02", "flavor": "proprietary", "modules": ["nvidia"]}
    assert reboot(loaded=loaded) == {"live": True, "required": False, "reasons": [], "unload": None}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"kernel_modules": {"nouveau": "loaded"}}, "nouveau is loaded and holds the GPUs"),
        ({"kernel": {"running": "6.12.110+deb13-amd64"}},
         "the running kernel 6.12.110+deb13-amd64 is not one DKMS builds for (6.12.117+deb13-amd64)"),
        ({"capabilities": {"own_kernel": True, "modules_loadable": False}},
         "this node may not load kernel modules now (no CAP_SYS_MODULE)"),
    ],
)  # fmt: skip
def test_what_only_a_reboot_can_fix(change, reason):
    result = reboot(os_state={**OWN, **change})
    assert result == {"live": False, "required": True, "reasons": [reason], "unload": None}


@pytest.mark.parametrize(
    ("loaded", "unload"),
    [
        ({"version": "535.261.03", "flavor": "proprietary"}, "535.261.03 (proprietary)"),
        ({"version": "535.274.02", "flavor": "open"}, "535.274.02 (open)"),
    ],
)  # fmt: skip
def test_another_loaded_nvidia_module_is_unloaded_first(loaded, unload):
    assert reboot(loaded=loaded) == {"live": True, "required": False, "reasons": [], "unload": unload}


def test_another_loaded_module_on_a_node_that_may_not_load_modules_needs_a_reboot():
    state = {**OWN, "capabilities": {"own_kernel": True, "modules_loadable": False}}
    result = reboot(os_state=state, loaded={"version": "535.261.03", "flavor": "proprietary"})
    assert result["required"] is True
    assert result["reasons"] == ["this node may not load kernel modules now (no CAP_SYS_MODULE)"]
    # The planned driver loaded already: nothing to load, so no capability needed.
    assert reboot(os_state=state, loaded={"version": "535.274.02", "flavor": "proprietary"})["required"] is False


def test_a_container_or_a_node_without_gpus_never_reboots_for_the_driver():
    container = {**OWN, "capabilities": {"own_kernel": False, "modules_loadable": False}}
    assert reboot(os_state=container) == {"live": False, "required": False, "reasons": [], "unload": None}
    assert reboot(pci_facts=NONE, os_state={**OWN, "kernel_modules": {"nouveau": "loaded"}}) == {
        "live": False,
        "required": False,
        "reasons": [],
        "unload": None,
    }


@pytest.mark.parametrize(
    ("rc", "stderr", "outcome"),
    [
        (0, "", "unloaded"),
        (1, "modprobe: FATAL: Module nvidia is in use.\n", "in_use"),
        (1, "rmmod: ERROR: Module nvidia is in use by: nvidia_uvm nvidia_modeset\n", "in_use"),
        (1, "modprobe: ERROR: could not remove 'nvidia': Resource temporarily unavailable\n", "in_use"),
        (1, "rmmod: ERROR: could not remove module nvidia: Device or resource busy\n", "in_use"),
        (1, "modprobe: ERROR: could not remove 'nvidia_uvm': Device or resource busy\n", "in_use"),
        # No reboot mends these: they stop the upgrade with modprobe's words.
        (1, "modprobe: FATAL: Module nvidia_peermem not found.\n", "error"),
        (1, "modprobe: FATAL: Module nvidia is builtin.\n", "error"),
        (1, "modprobe: ERROR: could not remove 'nvidia': Operation not permitted\n", "error"),
        (127, "", "error"),
        (None, "", None),
    ],
)
def test_unload_outcome(rc, stderr, outcome):
    assert driver_plan.unload_outcome(rc, stderr) == outcome


# packages_pending: whether install.yml's package steps have anything to do (a no-op run skips them as one include).
PENDING_PLAN = {
    "version": "535.274.02",
    "dkms_module": "nvidia-current",
    "steps": {
        "kernel_modules": [f"nvidia-tesla-535-kernel-dkms={TESLA_13}"],
        "userland": [f"nvidia-tesla-535-smi={TESLA_13}", "nvidia-persistenced=550.163.01-1"],
        "dcgm": ["datacenter-gpu-manager-4-core=1:4.4.1-1"],
    },
}
PENDING_KERNELS = {"targets": ["6.12.117+deb13-amd64", "6.12.119+deb13-amd64"],
                   "headers": ["linux-headers-6.12.119+deb13-amd64"]}  # fmt: skip


def pending_info(**installed):
    """package_info's packages with every spec of PENDING_PLAN and the headers installed, then the changes given."""
    specs = PENDING_KERNELS["headers"] + [spec for step in PENDING_PLAN["steps"].values() for spec in step]
    info = {}
    for spec in specs:
        name, _sep, version = spec.partition("=")
        info[name] = {"installed": version or "6.12.119-1", "broken": False, "held": True}
    for name, version in installed.items():
        info[name.replace("_", "-")] = {**info[name.replace("_", "-")], "installed": version}
    return info


def dkms_installed(*kernels, state="installed", version="535.274.02", module="nvidia-current"):
    return [{"module": module, "version": version, "kernel": k, "arch": "x86_64", "state": state, "note": ""}
            for k in kernels]  # fmt: skip


BOTH = PENDING_KERNELS["targets"]


def test_a_converged_node_has_nothing_pending():
    assert driver_plan.packages_pending(PENDING_PLAN, PENDING_KERNELS, pending_info(), dkms_installed(*BOTH)) is False


def test_a_weak_dkms_install_counts_as_installed():
    records = dkms_installed(BOTH[0]) + dkms_installed(BOTH[1], state="installed-weak")
    assert driver_plan.packages_pending(PENDING_PLAN, PENDING_KERNELS, pending_info(), records) is False


@pytest.mark.parametrize(
    "change",
    [
        {"nvidia_persistenced": "550.163.01-2"},  # another version of a userland package
        {"datacenter_gpu_manager_4_core": None},  # DCGM's step, joined to the plan
        {"nvidia_tesla_535_kernel_dkms": None},  # the kernel module package
        {"linux_headers_6.12.119+deb13_amd64": None},  # a target kernel's headers
    ],
    ids=["userland_version", "dcgm_missing", "kmod_missing", "headers_missing"],
)
def test_a_package_not_at_its_planned_version_is_pending(change):
    info = pending_info(**change)
    assert driver_plan.packages_pending(PENDING_PLAN, PENDING_KERNELS, info, dkms_installed(*BOTH)) is True


def test_a_broken_package_is_pending():
    info = pending_info()
    info["nvidia-tesla-535-smi"]["broken"] = True
    assert driver_plan.packages_pending(PENDING_PLAN, PENDING_KERNELS, info, dkms_installed(*BOTH)) is True


@pytest.mark.parametrize(
    "records",
    [
        dkms_installed(BOTH[0]),  # the second target kernel not built for
        dkms_installed(BOTH[0]) + dkms_installed(BOTH[1], state="built"),  # built, not installed
        dkms_installed(BOTH[0]) + dkms_installed(BOTH[1], version="535.261.03"),  # another version
        dkms_installed(BOTH[0]) + dkms_installed(BOTH[1], module="nvidia-tesla-535"),  # another module
    ],
    ids=["not_built", "built_only", "other_version", "other_module"],
)
def test_a_target_kernel_without_the_plans_module_installed_is_pending(records):
    assert driver_plan.packages_pending(PENDING_PLAN, PENDING_KERNELS, pending_info(), records) is True


def test_a_reinstall_or_dnf_always_runs_the_steps():
    records = dkms_installed(*BOTH)
    assert driver_plan.packages_pending(PENDING_PLAN, PENDING_KERNELS, pending_info(), records, reinstall=True)
    assert driver_plan.packages_pending(PENDING_PLAN, PENDING_KERNELS, pending_info(), records, manager="dnf")


# The driver's daemons as os_facts reads their units.
PERSISTENCED_UNIT = "nvidia-persistenced.service"
FABRICMANAGER_UNIT = "nvidia-fabricmanager.service"


def unit_read(exists=True, enabled=True, active=False, failed=False):
    return {"exists": exists, "enabled": enabled, "active": active, "failed": failed}


def test_converged_daemons_of_a_node_without_a_live_driver_need_nothing():
    units = {PERSISTENCED_UNIT: unit_read(), FABRICMANAGER_UNIT: unit_read()}
    steps = driver_plan.daemon_steps(units, [PERSISTENCED_UNIT, FABRICMANAGER_UNIT], PERSISTENCED_UNIT, False, False)
    assert steps == {"enable": [], "reset_failed": [], "disable_persistenced": False, "act": False}


@pytest.mark.parametrize(
    ("state", "live", "enable"),
    [
        (unit_read(enabled=False), False, [FABRICMANAGER_UNIT]),
        (unit_read(enabled=True, active=False), True, [FABRICMANAGER_UNIT]),
        (unit_read(enabled=True, active=True), True, []),
        (unit_read(enabled=True, active=False), False, []),
        (unit_read(exists=False, enabled=False), False, [FABRICMANAGER_UNIT]),
        (None, False, [FABRICMANAGER_UNIT]),
    ],
)
def test_a_daemon_is_enabled_where_it_is_not_and_started_where_the_driver_is_live(state, live, enable):
    units = {PERSISTENCED_UNIT: unit_read(active=live)} | ({FABRICMANAGER_UNIT: state} if state is not None else {})
    steps = driver_plan.daemon_steps(units, [PERSISTENCED_UNIT, FABRICMANAGER_UNIT], PERSISTENCED_UNIT, live, False)
    assert steps["enable"] == enable
    assert steps["act"] is (enable != [])


@pytest.mark.parametrize(("live", "reset"), [(False, [FABRICMANAGER_UNIT]), (True, [])])
def test_a_failed_daemon_is_reset_only_where_the_driver_cannot_run_it(live, reset):
    units = {PERSISTENCED_UNIT: unit_read(active=live), FABRICMANAGER_UNIT: unit_read(failed=True)}
    steps = driver_plan.daemon_steps(units, [PERSISTENCED_UNIT, FABRICMANAGER_UNIT], PERSISTENCED_UNIT, live, False)
    assert steps["reset_failed"] == reset
    # Either way there is a step: the reset, or where the driver is live starting the failed unit.
    assert steps["act"] is True
    assert steps["enable"] == ([FABRICMANAGER_UNIT] if live else [])


def test_after_an_install_every_daemon_is_put_right_and_read_again():
    """The packages' maintainer scripts may add, enable, start or fail units after preflight's read."""
    units = {PERSISTENCED_UNIT: unit_read(), FABRICMANAGER_UNIT: unit_read(failed=True)}
    steps = driver_plan.daemon_steps(units, [PERSISTENCED_UNIT, FABRICMANAGER_UNIT], PERSISTENCED_UNIT, False, True)
    assert steps == {
        "enable": [PERSISTENCED_UNIT, FABRICMANAGER_UNIT],
        "reset_failed": None,
        "disable_persistenced": False,
        "act": True,
    }


@pytest.mark.parametrize(
    ("state", "reread", "disable"),
    [
        (unit_read(enabled=True), False, True),
        (unit_read(enabled=False, active=True), False, True),
        (unit_read(enabled=False, active=False), False, False),
        (unit_read(enabled=False, active=False), True, True),
        (unit_read(exists=False, enabled=False), True, False),
    ],
)
def test_an_unwanted_persistenced_is_disabled_where_it_runs_or_starts_at_boot(state, reread, disable):
    units = {PERSISTENCED_UNIT: state, FABRICMANAGER_UNIT: unit_read()}
    steps = driver_plan.daemon_steps(units, [FABRICMANAGER_UNIT], PERSISTENCED_UNIT, False, reread)
    assert steps["disable_persistenced"] is disable
    # Fabric manager is converged: the disable is the only step, but after an install every step runs.
    assert steps["act"] is (disable or reread)


def test_a_wanted_persistenced_is_never_disabled():
    steps = driver_plan.daemon_steps(
        {PERSISTENCED_UNIT: unit_read(enabled=True)}, [PERSISTENCED_UNIT], PERSISTENCED_UNIT, False, True
    )
    assert steps["disable_persistenced"] is False
