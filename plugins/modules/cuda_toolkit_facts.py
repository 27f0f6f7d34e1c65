#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_toolkit_facts
short_description: What a CUDA toolkit install would do to a node, and the driver and /usr/local/cuda it finds
version_added: 0.1.0
description:
  - The NVIDIA driver userland installed (the packages of Debian's C(nvidia-graphics-drivers*) sources, and the
    driver version the one providing C(libcuda.so.1) carries).
  - With O(install), what C(apt-get --simulate install) would install and remove for those exact package versions,
    which of those packages are NVIDIA driver userland, and the newest driver the new packages' dependencies
    require of C(libcuda.so.1) or C(libnvidia-ml.so.1). Nothing is installed.
  - The C(update-alternatives) state of O(alternative) (C(/usr/local/cuda) for NVIDIA's and this collection's CUDA
    roots), and the C(/usr/bin) executables of O(executables_of).
  - apt (Debian, Ubuntu). dnf (RHEL, Rocky Linux) - the driver from C(rpm -q --whatprovides) of
    C(libcuda.so.1()(64bit)) (its package's version is the driver's), the install resolved by dnf's own resolver
    (as M(gpuops.bringup.dnf_install) resolves it), the alternatives from C(update-alternatives --display) (RHEL's
    alternatives has no C(--query)); no O(executables_of).
author: gpuops.bringup developers (@gpuops)
options:
  install:
    description: Package specs (C(name=version), also on dnf) whose install is simulated; empty - no simulation.
    type: list
    elements: str
    default: []
  alternative:
    description: The alternatives name to read.
    type: str
    default: cuda
  executables_of:
    description: Installed packages whose files under C(/usr/bin) are listed; names dpkg does not know list none.
    type: list
    elements: str
    default: []
  manager:
    description: The node's package manager, as the role read it (C(gpuops_os.os.package_manager) of
      M(gpuops.bringup.os_facts)).
    type: str
    choices: [apt, dnf]
    default: apt
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
notes:
  - Commands run with C(LANG=C). The simulation reads the package index as it is; refreshing it is the caller's
    business.
"""

EXAMPLES = r"""
- name: What installing Debian's CUDA toolkit would pull in
  gpuops.bringup.cuda_toolkit_facts:
    install: [nvidia-cuda-toolkit=12.4.131~12.4.1-2]

- name: Refuse a toolkit that would bring a second driver userland
  ansible.builtin.assert:
    that: ansible_facts.cuda_toolkit.simulation.install | selectattr('driver') | list == []
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(cuda_toolkit).
  returned: always
  type: dict
  contains:
    cuda_toolkit:
      description: Everything read.
      type: dict
      contains:
        driver:
          description: >-
            The NVIDIA driver userland installed - C(version) (what the package providing C(libcuda.so.1) provides
            it at, null when none does), C(provider) (that package's C(name) and C(version), or null) and
            C(packages) (C(name), C(version) of every installed package of an C(nvidia-graphics-drivers*) source; dnf -
            every package providing C(libcuda.so.1()(64bit))).
          type: dict
          sample: {"version": "535.274.02", "provider": {"name": "libnvidia-tesla-535-cuda1",
                   "version": "535.274.02-1~deb13u1"}, "packages": [{"name": "libnvidia-tesla-535-cuda1",
                   "version": "535.274.02-1~deb13u1"}]}
        simulation:
          description: >-
            With O(install) - C(ok) (apt or dnf found a solution), C(error) (its message when not), C(install)
            (C(name), C(version), C(upgrade_from), C(source), C(driver) - the package is NVIDIA driver userland),
            C(remove) (C(name), C(version)), C(driver_requirement) (C(version), C(package), C(relation): the newest
            driver the new packages require of the driver libraries - dnf, of a driver package -, or null). Without
            O(install), empty lists and nulls.
          type: dict
        alternatives:
          description: >-
            C(update-alternatives --query) of O(alternative) (dnf - C(--display)) - C(link) (null on RHEL, whose
            C(--display) does not name it), C(status) (auto, manual), C(value) (the current target), C(choices) (path
            to priority); C(exists) false when there is no such alternative.
          type: dict
        executables:
          description: The C(/usr/bin) files of O(executables_of), sorted.
          type: list
          elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import cuda_toolkit, dnf, rpm
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner

INSTALLED_FORMAT = "${Package}\t${Version}\t${source:Package}\t${Provides}\t${db:Status-Abbrev}\n"


def installed_driver(query):
    """The driver userland dpkg has installed."""
    _rc, out, _err = query(["-W", "-f", INSTALLED_FORMAT])
    packages, version, provider = [], None, None
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) < 5 or fields[4][1:2] != "i":
            continue
        stanza = {"Package": fields[0], "Version": fields[1], "Source": fields[2], "Provides": fields[3]}
        if cuda_toolkit.is_driver_package(stanza):
            packages.append({"name": fields[0], "version": fields[1]})
            if cuda_toolkit.provided_driver_version(stanza):
                version, provider = cuda_toolkit.provided_driver_version(stanza), packages[-1]
    return {"version": version, "provider": provider, "packages": sorted(packages, key=lambda p: p["name"])}


# What every libcuda.so.1 package provides on RHEL (rpm's automatic soname provide): NVIDIA's
# nvidia-driver-cuda-libs, and the same-named package of other rpm driver builds.
RPM_LIBCUDA = "libcuda.so.1()(64bit)"


def installed_rpm_driver(query):
    """The driver userland rpm has installed: the package providing libcuda.so.1, its version the driver's."""
    # Exit 1 with "no package provides ..." when none does.
    _rc, out, _err = query(["-q", "--whatprovides", RPM_LIBCUDA, "--qf", rpm.RPM_QUERY_FORMAT], ok_rc=(0, 1))
    installed = rpm.parse_installed(out)
    if not installed:
        return {"version": None, "provider": None, "packages": []}
    packages = [{"name": name, "version": installed[name]} for name in sorted(installed)]
    # NVIDIA's cuda-compat-X-Y (forward-compatibility libraries under /usr/local/cuda-X.Y/compat) may provide it
    # too, at another driver's version: the node's driver is the other provider.
    provider = min(packages, key=lambda p: (p["name"].startswith("cuda-compat"), p["name"]))
    return {"version": rpm.split_evr(provider["version"])[1], "provider": provider, "packages": packages}


def no_simulation():
    """The simulation's result when nothing is simulated."""
    return {"ok": True, "error": None, "install": [], "remove": [], "driver_requirement": None}


def simulate(apt_get, cache, specs):
    result = no_simulation()
    if not specs:
        return result
    rc, out, err = apt_get(
        ["--simulate", "--quiet", "--no-install-recommends", "install", "--", *specs], ok_rc=(0, 100)
    )
    if rc != 0:
        result.update(ok=False, error=(err or out).strip()[-1500:])
        return result
    planned = cuda_toolkit.parse_simulation(out)
    stanzas = {}
    if planned["install"]:
        _rc, shown, _err = cache(
            ["show", "--no-all-versions", "--", *(f"{p['name']}={p['version']}" for p in planned["install"])]
        )
        stanzas = {(s.get("Package"), s.get("Version")): s for s in cuda_toolkit.parse_control(shown)}
    for package in planned["install"]:
        stanza = stanzas.get((package["name"], package["version"]), {"Package": package["name"]})
        result["install"].append(
            dict(package, source=cuda_toolkit.source_name(stanza), driver=cuda_toolkit.is_driver_package(stanza))
        )
    result["remove"] = planned["remove"]
    result["driver_requirement"] = cuda_toolkit.driver_library_minimum(list(stanzas.values()))
    return result


def alternatives(update_alternatives, name):
    # Exit 2 with "no alternatives for NAME" when none is registered yet.
    rc, out, _err = update_alternatives(["--query", name], ok_rc=(0, 2))
    parsed = cuda_toolkit.parse_alternatives(out if rc == 0 else "")
    return dict(parsed, exists=rc == 0)


def alternatives_display(update_alternatives, name):
    # RHEL's alternatives (update-alternatives is a link to it) has no --query. Without such an alternative
    # Debian's exits 2 ("no alternatives for NAME"); RHEL's fails too, and prints no status line either way.
    rc, out, _err = update_alternatives(["--display", name], ok_rc=(0, 1, 2))
    parsed = cuda_toolkit.parse_alternatives_display(out if rc == 0 else "")
    return dict(parsed, exists=parsed["status"] is not None)


def executables(query, packages):
    if not packages:
        return []
    # Exit 1 when some package is not installed; the others are still listed.
    _rc, out, _err = query(["-L", "--", *packages], ok_rc=(0, 1))
    return sorted({line for line in out.splitlines() if line.startswith("/usr/bin/") and line != "/usr/bin/"})


def main():
    module = AnsibleModule(
        argument_spec={
            "install": {"type": "list", "elements": "str", "default": []},
            "alternative": {"type": "str", "default": "cuda"},
            "executables_of": {"type": "list", "elements": "str", "default": []},
            "manager": {"type": "str", "choices": ["apt", "dnf"], "default": "apt"},
        },
        supports_check_mode=True,
    )
    if module.params["manager"] == "dnf":
        if module.params["executables_of"]:
            module.fail_json(msg="on dnf, cuda_toolkit_facts lists no executables (executables_of is for apt)")
        # The role names versions as apt does (name=version); dnf takes name-version.
        specs = [spec.replace("=", "-", 1) for spec in module.params["install"]]
        facts = {
            "driver": installed_rpm_driver(ToolRunner(module, "rpm")),
            "simulation": cuda_toolkit.dnf_simulation(dnf.resolve(module, specs)) if specs else no_simulation(),
            "alternatives": alternatives_display(
                ToolRunner(module, "update-alternatives"), module.params["alternative"]
            ),
            "executables": [],
        }
        module.exit_json(changed=False, ansible_facts={"cuda_toolkit": facts})
    query = ToolRunner(module, "dpkg-query")
    facts = {
        "driver": installed_driver(query),
        "simulation": simulate(
            ToolRunner(module, "apt-get"), ToolRunner(module, "apt-cache"), module.params["install"]
        ),
        "alternatives": alternatives(ToolRunner(module, "update-alternatives"), module.params["alternative"]),
        "executables": executables(query, module.params["executables_of"]),
    }
    module.exit_json(changed=False, ansible_facts={"cuda_toolkit": facts})


if __name__ == "__main__":
    main()
