# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container toolkit stage's preflight: every problem of a node at once.

From the role's variables, its tables (vars/main.yml) and the reads of the node: os_facts' gpuops_os, the runtime
module's check of each installed runtime's configuration (check mode) and gpu_facts. A node with problems is refused
with all of them in one message, so one round of fixes clears it. Controller side: the node's modules
(container_toolkit) do not carry it.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing
from ansible_collections.gpuops.bringup.plugins.module_utils.repositories import repository_problems

# NVIDIA's toolkit package version: upstream version, an optional release candidate, the Debian revision.
_VERSION = re.compile(r"[0-9]+[.][0-9]+[.][0-9]+(~rc[.][0-9]+)?-[0-9]+")
# os-release ID -> the OS's name and how its releases are written; Ubuntu's supported ones are LTS (<major>.04).
_RELEASE_NAMES = {"debian": ("Debian", "{}"), "ubuntu": ("Ubuntu", "{}.04")}
# How much of nvidia-smi's complaint a message quotes.
_QUOTED = 300


def _releases_text(supported):
    """{"debian": ["12", "13"], "ubuntu": ["22"]} -> "Debian 12 and 13 and Ubuntu 22.04"."""
    parts = []
    for os_id, majors in supported.items():
        name, form = _RELEASE_NAMES.get(os_id, (os_id, "{}"))
        parts.append(f"{name} {' and '.join(form.format(major) for major in majors)}")
    return " and ".join(parts)


def _shown(value):
    """A variable's value as the messages quote it: JSON, as Ansible's to_json writes it."""
    return json.dumps(value, default=str)


def _not_in(values, allowed):
    """The values not in allowed, once each, in their order, as text (Jinja's difference): a list, not a set, as a
    value may be unhashable (a mapping given by mistake)."""
    found = []
    for value in values:
        if value not in allowed and str(value) not in found:
            found.append(str(value))
    return found


def _names(variables, name, example):
    """(the list, None) when the variable is a list; otherwise ([], its problem): a string would be read a character
    at a time."""
    value = variables.get(name)
    if isinstance(value, list):
        return value, None
    return [], f"{name} is {_shown(value)}, not a list. Fix: a YAML list, e.g. {name}: {example}."


def _variable_problems(variables, known):
    problems = []
    version = variables.get("nvidia_container_toolkit_version")
    if not (isinstance(version, str) and _VERSION.fullmatch(version)):
        problems.append(
            f'nvidia_container_toolkit_version is "{version}", not an exact package version. Fix: the full Debian '
            "version of NVIDIA's toolkit packages, revision included, e.g. "
            'nvidia_container_toolkit_version: "1.17.8-1".'
        )
    runtimes, problem = _names(variables, "nvidia_container_toolkit_runtimes", "[containerd]")
    problems += [problem] if problem else []
    default_for, problem = _names(variables, "nvidia_container_toolkit_default_for", "[]")
    problems += [problem] if problem else []
    unknown = _not_in(runtimes, known)
    if unknown:
        problems.append(
            f"nvidia_container_toolkit_runtimes is {_shown(runtimes)}: {', '.join(unknown)} "
            f"{'is not a runtime' if len(unknown) == 1 else 'are not runtimes'} this role configures "
            f"({', '.join(known)}). Fix: name only those, e.g. nvidia_container_toolkit_runtimes: [containerd]; "
            "Podman reads the CDI spec (--device nvidia.com/gpu=all) and needs no runtime entry."
        )
    extra = _not_in(default_for, runtimes)
    if extra:
        problems.append(
            f"nvidia_container_toolkit_default_for is {_shown(default_for)}, but {', '.join(extra)} "
            f"{'is' if len(extra) == 1 else 'are'} not in nvidia_container_toolkit_runtimes ({_shown(runtimes)}): "
            f"the default runtime must be one the runtime has. Fix: add {', '.join(extra)} to "
            "nvidia_container_toolkit_runtimes, or remove it from nvidia_container_toolkit_default_for."
        )
    repository = {
        "name": "nvidia-container-toolkit",
        "uris": [variables.get("nvidia_container_toolkit_repo_url")],
        "suites": ["/"],
        "key_url": variables.get("nvidia_container_toolkit_key_url"),
        "key_fingerprint": variables.get("nvidia_container_toolkit_key_fingerprint"),
        "key_sha256": variables.get("nvidia_container_toolkit_key_sha256"),
    }
    found = repository_problems(repository, "apt")
    if found:
        problems.append(
            f"The container toolkit repository's {'; '.join(found)}. Fix: the fingerprint NVIDIA publishes in "
            "nvidia_container_toolkit_key_fingerprint (the role's default), and nvidia_container_toolkit_key_sha256 "
            'the sha256sum of the key file, or "".'
        )
    return problems, runtimes


def _gpu(gpu_read):
    """What the driver reported, or, where it could not be read, no GPU and why (the reader's message)."""
    gpu = (gpu_read.get("ansible_facts") or {}).get("gpu")
    if gpu is not None:
        return gpu
    why = gpu_read.get("msg", "not read: nvidia_container_toolkit_cdi is false")
    return {"devices": [], "driver_version": None, "simulated": False, "findings": [{"message": why}]}


def preflight(*, host, node, variables, supported, architectures, units, tomli, runtime_checks, gpu_read):
    """{problems, gpu, gpus_answer} of one node.

    node is os_facts' gpuops_os; variables the role's nvidia_container_toolkit_* (cdi a boolean); supported,
    architectures, units and tomli the role's tables (vars/main.yml); runtime_checks the results of
    container_toolkit_runtime in check mode, one per runtime (skipped where it is not to be configured or not
    installed), failed with its `problem` where the configuration cannot take the nvidia runtime; gpu_read
    gpu_facts' result, failed where nvidia-smi was not found, skipped where the CDI spec is not wanted. gpu is what
    the driver reported (no devices, and why, where it was not read), gpus_answer whether it reported GPUs.
    """
    known = list(units)
    problems, runtimes = _variable_problems(variables, known)
    release = node.get("os") or {}
    release_supported = release.get("major") in supported.get(release.get("id"), ())
    if not release_supported or release.get("package_arch") not in architectures:
        problems.append(
            f"nvidia_container_toolkit supports {_releases_text(supported)} on {' and '.join(architectures)}; {host} "
            f"runs {release.get('name') or 'an unknown OS'} (ID={release.get('id')}, "
            f"VERSION_ID={release.get('version_id')}) on {release.get('package_arch')}. Fix: a supported release, or "
            "leave this node out of the container toolkit stage."
        )
    # In the units table's order, as the runtimes' units are named.
    present = node.get("units") or {}
    missing = [name for name in known if name in runtimes and not (present.get(units[name]) or {}).get("exists")]
    if missing:
        one = len(missing) == 1
        problems.append(
            f"nvidia_container_toolkit_runtimes is {_shown(runtimes)}, but {host} has no "
            f"{', '.join(units[name] for name in missing)}: {', '.join(missing)} {'is' if one else 'are'} not "
            f"installed. Fix: install {', '.join(missing)} first (the Kubernetes stage installs containerd), or "
            f"remove {'it' if one else 'them'} from nvidia_container_toolkit_runtimes."
        )
    # install.yml installs tomli where the release's Python needs it, before configure.yml checks the configurations
    # again; a release the table does not name has no such package (an unsupported one is refused above).
    tomli_coming = f"{release.get('id')}-{release.get('major')}" in tomli
    for check in runtime_checks:
        kind = check.get("problem")
        if kind == "config" or (kind == "tomllib" and release_supported and not tomli_coming):
            problems.append(f"{check.get('msg')}.")
    gpu = _gpu(gpu_read)
    gpus_answer = bool(gpu.get("devices")) and gpu.get("driver_version") is not None
    # The CDI spec is generated from what the driver reports; a container's GPUs belong to its host.
    own_kernel = (node.get("capabilities") or {}).get("own_kernel")
    if variables.get("nvidia_container_toolkit_cdi") and not gpus_answer and own_kernel:
        said = "; ".join(str(finding.get("message")) for finding in gpu.get("findings") or [])
        # Cut as the Jinja message this replaced cut it (truncate, 5 characters of leeway).
        said = parsing.truncated(said, _QUOTED, leeway=5)
        problems.append(
            f"nvidia_container_toolkit_cdi is true but no NVIDIA driver answers on {host} (nvidia-smi: "
            f"{said}), so there is no GPU to write a CDI spec for. Fix: run the driver stage "
            "(playbooks/nvidia_driver.yml) first and load the driver, or nvidia_container_toolkit_cdi: false on a node "
            "without GPUs."
        )
    return {"problems": problems, "gpu": gpu, "gpus_answer": gpus_answer}
