# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container toolkit role's preflight and verification verdict (module_utils container_toolkit_preflight and
container_toolkit_verify) as filters."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    container_toolkit_preflight,
    container_toolkit_verify,
)
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import fields, mapping, plain

NAME = "nvidia_container_toolkit_preflight"


def nvidia_container_toolkit_preflight(node, host, variables, tables, reads):
    """The container toolkit's preflight of one node: {problems, gpu, gpus_answer}."""
    tables = fields(tables, "the role's tables", NAME, ("supported", "architectures", "units", "tomli"))
    reads = fields(reads, "the node's reads", NAME, ("runtimes", "gpu"))
    if not isinstance(reads["runtimes"], list):
        raise AnsibleFilterError(f"gpuops.bringup.{NAME} needs the runtime checks' results (a list)")
    return container_toolkit_preflight.preflight(
        host=str(host),
        node=plain(mapping(node, "os_facts' gpuops_os", NAME)),
        variables=plain(mapping(variables, "the role's variables", NAME)),
        runtime_checks=reads["runtimes"],
        gpu_read=mapping(reads["gpu"], "gpu_facts' registered result", NAME),
        **tables,
    )


VERIFY = "nvidia_container_toolkit_verify"


def nvidia_container_toolkit_verify(reads, host, settings, judged):
    """{failures, not_applicable, passed}: the node read again after converge against the role's settings and what
    preflight judged."""
    reads = fields(reads, "verify's reads", VERIFY, ("packages", "ctk", "units", "smoke"))
    settings = fields(
        settings, "the role's settings", VERIFY, ("version", "runtimes", "default_for", "cdi", "smoke_image")
    )
    judged_keys = ("runtime_path", "units", "own_kernel", "gpu", "gpus_answer", "live", "smoke_runtime")
    judged = fields(judged, "what preflight judged", VERIFY, judged_keys)
    return container_toolkit_verify.verify(
        host=str(host),
        settings={
            "version": str(settings["version"]),
            "runtimes": [str(name) for name in settings["runtimes"] or []],
            "default_for": [str(name) for name in settings["default_for"] or []],
            "cdi": boolean(settings["cdi"], strict=False),
            "smoke_image": str(settings["smoke_image"] or ""),
        },
        judged={
            **judged,
            "own_kernel": bool(judged["own_kernel"]),
            "gpu": mapping(judged["gpu"] or {}, "gpu_facts' gpu", VERIFY),
            "gpus_answer": bool(judged["gpus_answer"]),
            "live": bool(judged["live"]),
            "units": mapping(judged["units"], "the runtimes' units", VERIFY),
            "smoke_runtime": str(judged["smoke_runtime"] or ""),
        },
        reads={
            "packages": mapping(reads["packages"], "package_info's packages", VERIFY),
            "ctk": mapping(reads["ctk"], "container_toolkit_facts' container_toolkit", VERIFY),
            "units": mapping(reads["units"], "os_facts' units", VERIFY),
            "smoke": None if reads["smoke"] is None else [str(line) for line in reads["smoke"]],
        },
    )


class FilterModule:
    def filters(self):
        return {NAME: nvidia_container_toolkit_preflight, VERIFY: nvidia_container_toolkit_verify}
