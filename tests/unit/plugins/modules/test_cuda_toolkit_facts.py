"""cuda_toolkit_facts' main() with dpkg-query, apt-get --simulate, apt-cache show and update-alternatives outputs
captured in the bench's Debian 13 container with the Tesla 535 userland (2026-11-29), cut to what matters."""

from __future__ import annotations

import json
from pathlib import Path

from ansible_collections.gpuops.bringup.plugins.module_utils import dnf
from ansible_collections.gpuops.bringup.plugins.modules import cuda_toolkit_facts

TOOLS = {
    "dpkg-query": "/usr/bin/dpkg-query",
    "apt-get": "/usr/bin/apt-get",
    "apt-cache": "/usr/bin/apt-cache",
    "update-alternatives": "/usr/bin/update-alternatives",
}
SPEC = "nvidia-cuda-toolkit=12.4.131~12.4.1-2"
INSTALLED = (
    "libnvidia-tesla-535-cfg1\t\t\t\tun \n"
    "libnvidia-tesla-535-cuda1\t535.274.02-1~deb13u1\tnvidia-graphics-drivers-tesla-535\tlibcuda-12.2-1, "
    "libcuda.so.1 (= 535.274.02), libcuda1-any\thi \n"
    "libnvidia-tesla-535-ml1\t535.274.02-1~deb13u1\tnvidia-graphics-drivers-tesla-535\tlibnvidia-ml.so.1 "
    "(= 535.274.02)\thi \n"
    "libc6\t2.41-12\tglibc\t\tii \n"
)
SIMULATION = (
    "Reading package lists...\n"
    "Inst libcuda1 (550.163.01-2 Debian:13.8/stable [amd64])\n"
    "Inst nvidia-cuda-dev (12.4.127~12.4.1-2 Debian:13.8/stable [amd64])\n"
    "Conf libcuda1 (550.163.01-2 Debian:13.8/stable [amd64])\n"
)
SHOW = (
    "Package: libcuda1\nSource: nvidia-graphics-drivers\nVersion: 550.163.01-2\n"
    "Provides: libcuda.so.1 (= 550.163.01)\n\n"
    "Package: nvidia-cuda-dev\nSource: nvidia-cuda-toolkit (12.4.1-2)\nVersion: 12.4.127~12.4.1-2\n"
    "Depends: libcudart12 (= 12.4.127~12.4.1-2), libcuda1 (>= 550) | libcuda.so.1 (>= 550) | libcuda-12.4-1\n"
)
FILES = "/.\n/usr/bin\n/usr/bin/nvcc\n/etc/nvcc.profile\n"
NO_CUDA = (2, "", "update-alternatives: error: no alternatives for cuda\n")
QUERY = ("/usr/bin/dpkg-query", "-W", "-f", cuda_toolkit_facts.INSTALLED_FORMAT)
SIMULATE = ("/usr/bin/apt-get", "--simulate", "--quiet", "--no-install-recommends", "install", "--", SPEC)
ALTERNATIVES = ("/usr/bin/update-alternatives", "--query", "cuda")


def test_a_535_node_would_get_the_550_userland(run_module, command_table):
    table = command_table(
        TOOLS,
        {
            QUERY: (0, INSTALLED, ""),
            SIMULATE: (0, SIMULATION, ""),
            ("/usr/bin/apt-cache", "show", "--no-all-versions", "--", "libcuda1=550.163.01-2",
             "nvidia-cuda-dev=12.4.127~12.4.1-2"): (0, SHOW, ""),
            ALTERNATIVES: NO_CUDA,
        },
    )  # fmt: skip
    result, failed = run_module(cuda_toolkit_facts.main, {"install": [SPEC]}, table, check_mode=True)
    assert not failed
    assert result["changed"] is False
    facts = result["ansible_facts"]["cuda_toolkit"]
    tesla = {"name": "libnvidia-tesla-535-cuda1", "version": "535.274.02-1~deb13u1"}
    assert facts["driver"] == {
        "version": "535.274.02",
        "provider": tesla,
        "packages": [tesla, {"name": "libnvidia-tesla-535-ml1", "version": "535.274.02-1~deb13u1"}],
    }
    simulation = facts["simulation"]
    assert simulation["ok"] and simulation["remove"] == []
    assert [(p["name"], p["source"], p["driver"]) for p in simulation["install"]] == [
        ("libcuda1", "nvidia-graphics-drivers", True),
        ("nvidia-cuda-dev", "nvidia-cuda-toolkit", False),
    ]
    assert simulation["driver_requirement"]["version"] == "550"
    assert facts["alternatives"]["exists"] is False and facts["alternatives"]["choices"] == {}
    assert facts["executables"] == []


def test_apt_refusing_the_install_is_reported_not_raised(run_module, command_table):
    table = command_table(
        TOOLS,
        {
            QUERY: (0, "", ""),
            SIMULATE: (100, "", "E: Unable to correct problems, you have held broken packages.\n"),
            ALTERNATIVES: (0, "Name: cuda\nLink: /usr/local/cuda\nStatus: auto\nValue: /usr/local/cuda-12.4\n\n"
                              "Alternative: /usr/local/cuda-12.4\nPriority: 124\n", ""),
            ("/usr/bin/dpkg-query", "-L", "--", "nvidia-cuda-toolkit"): (0, FILES, ""),
        },
    )  # fmt: skip
    args = {"install": [SPEC], "executables_of": ["nvidia-cuda-toolkit"]}
    result, failed = run_module(cuda_toolkit_facts.main, args, table)
    assert not failed
    facts = result["ansible_facts"]["cuda_toolkit"]
    assert facts["driver"] == {"version": None, "provider": None, "packages": []}
    assert facts["simulation"]["ok"] is False
    assert facts["simulation"]["error"] == "E: Unable to correct problems, you have held broken packages."
    assert facts["alternatives"]["value"] == "/usr/local/cuda-12.4"
    assert facts["alternatives"]["choices"] == {"/usr/local/cuda-12.4": 124}
    assert facts["executables"] == ["/usr/bin/nvcc"]


def test_a_failing_dpkg_query_fails_the_task(run_module, command_table):
    table = command_table(TOOLS, {QUERY: (2, "", "dpkg-query: error: cannot read /var/lib/dpkg/status\n"),
                                  ALTERNATIVES: NO_CUDA})  # fmt: skip
    result, failed = run_module(cuda_toolkit_facts.main, {}, table)
    assert failed
    assert result["msg"] == "dpkg-query failed with return code 2: dpkg-query: error: cannot read /var/lib/dpkg/status"


DNF = Path(__file__).resolve().parents[3] / "fixtures" / "dnf"
ALTERNATIVES_CAPTURES = DNF.parent / "alternatives"
WHATPROVIDES = ("/usr/bin/rpm", "-q", "--whatprovides", "libcuda.so.1()(64bit)", "--qf",
                "%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\n")  # fmt: skip
DISPLAY = ("/usr/bin/update-alternatives", "--display", "cuda")
DNF_TOOLS = {
    "rpm": "/usr/bin/rpm",
    "update-alternatives": "/usr/bin/update-alternatives",
    "python3": "/usr/bin/python3",
}
NO_DISPLAY = (2, "", (ALTERNATIVES_CAPTURES / "debian12-display-none.stderr").read_text())
LIBCUDA = (0, (DNF / "rpm-whatprovides-libcuda.stdout").read_text(), "")


def resolve_call(*specs):
    request = json.dumps({"specs": list(specs), "install_weak_deps": False})
    return ("/usr/bin/python3", "-c", dnf.RESOLVE_SCRIPT, request)


def test_dnf_the_driver_is_the_version_of_the_package_providing_libcuda(run_module, command_table):
    """rpm 4.18's answer on the bench for a package providing libcuda.so.1 as NVIDIA's nvidia-driver-cuda-libs does."""
    table = command_table(DNF_TOOLS, {WHATPROVIDES: LIBCUDA, DISPLAY: NO_DISPLAY})
    result, failed = run_module(cuda_toolkit_facts.main, {"manager": "dnf"}, table, check_mode=True)
    assert not failed, result
    provider = {"name": "nvidia-driver-cuda-libs", "version": "3:550.163.01-1.el9"}
    facts = result["ansible_facts"]["cuda_toolkit"]
    assert facts["driver"] == {"version": "550.163.01", "provider": provider, "packages": [provider]}
    assert facts["alternatives"] == {"link": None, "status": None, "value": None, "choices": {}, "exists": False}
    assert facts["simulation"]["ok"] and facts["simulation"]["install"] == []


def test_dnf_a_cuda_compat_package_providing_libcuda_too_is_not_the_driver(run_module, command_table):
    # rpm's answer in the captured format, one line per provider; the cuda-compat line is made up.
    answer = "cuda-compat-12-4\t(none):550.54.15-1\n" + LIBCUDA[1]
    table = command_table(DNF_TOOLS, {WHATPROVIDES: (0, answer, ""), DISPLAY: NO_DISPLAY})
    result, failed = run_module(cuda_toolkit_facts.main, {"manager": "dnf"}, table)
    assert not failed, result
    driver = result["ansible_facts"]["cuda_toolkit"]["driver"]
    assert driver["version"] == "550.163.01"
    assert driver["provider"] == {"name": "nvidia-driver-cuda-libs", "version": "3:550.163.01-1.el9"}
    assert [p["name"] for p in driver["packages"]] == ["cuda-compat-12-4", "nvidia-driver-cuda-libs"]


def test_dnf_no_package_providing_libcuda_is_no_driver(run_module, command_table):
    table = command_table(
        DNF_TOOLS, {WHATPROVIDES: (1, (DNF / "rpm-whatprovides-none.stdout").read_text(), ""), DISPLAY: NO_DISPLAY}
    )
    result, failed = run_module(cuda_toolkit_facts.main, {"manager": "dnf"}, table)
    assert not failed, result
    assert result["ansible_facts"]["cuda_toolkit"]["driver"] == {"version": None, "provider": None, "packages": []}


def test_dnf_a_toolkit_that_would_upgrade_the_driver_is_seen_through_dnf(run_module, command_table):
    """dnf's resolution (captured with bench-built rpms) of a package requiring cuda-drivers >= 560.35.03 on a node
    with the 550 nvidia-driver-cuda-libs: cuda-drivers comes, and the driver library is upgraded."""
    spec = "cuda-demo-suite-12-6=12.6.68-1"
    table = command_table(
        DNF_TOOLS,
        {
            WHATPROVIDES: LIBCUDA,
            DISPLAY: (0, (ALTERNATIVES_CAPTURES / "debian12-display-manual.stdout").read_text(), ""),
            resolve_call("cuda-demo-suite-12-6-12.6.68-1"): (
                0,
                dnf.RESULT_PREFIX + (DNF / "resolve-driver-upgrade.json").read_text(),
                "",
            ),
        },
    )
    result, failed = run_module(cuda_toolkit_facts.main, {"manager": "dnf", "install": [spec]}, table)
    assert not failed, result
    facts = result["ansible_facts"]["cuda_toolkit"]
    simulation = facts["simulation"]
    assert simulation["ok"] and simulation["remove"] == []
    assert [(p["name"], p["driver"], p["upgrade_from"]) for p in simulation["install"]] == [
        ("cuda-demo-suite-12-6", False, None),
        ("cuda-drivers", True, None),
        ("nvidia-driver-cuda-libs", True, "3:550.163.01-1.el9"),
    ]
    assert simulation["driver_requirement"] == {
        "version": "560.35.03",
        "package": "cuda-demo-suite-12-6",
        "relation": "cuda-drivers >= 560.35.03",
    }
    assert facts["alternatives"]["value"] == "/usr/local/cuda-11.8"
    assert facts["alternatives"]["status"] == "manual"


def test_dnf_a_version_no_repository_carries_is_dnf_s_error(run_module, command_table):
    table = command_table(
        DNF_TOOLS,
        {
            WHATPROVIDES: LIBCUDA,
            DISPLAY: NO_DISPLAY,
            resolve_call("cuda-toolkit-12-2-12.2.9-1"): (
                0,
                dnf.RESULT_PREFIX + (DNF / "resolve-no-match.json").read_text(),
                "",
            ),
        },
    )
    result, failed = run_module(
        cuda_toolkit_facts.main, {"manager": "dnf", "install": ["cuda-toolkit-12-2=12.2.9-1"]}, table
    )
    assert not failed, result
    simulation = result["ansible_facts"]["cuda_toolkit"]["simulation"]
    assert simulation["ok"] is False
    assert simulation["error"] == "No match for argument: cuda-toolkit-12-2-12.2.9-1"


def test_dnf_lists_no_executables(run_module, command_table):
    result, failed = run_module(
        cuda_toolkit_facts.main, {"manager": "dnf", "executables_of": ["cuda-toolkit-12-2"]}, command_table({}, {})
    )
    assert failed
    assert "executables_of is for apt" in result["msg"]
