# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CUDA toolkit role's decisions: its variables, the toolkits and their CUDA roots, whether the driver runs them."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import cuda_toolkit
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import fields, mapping, plain


def cuda_toolkit_preflight(node, host, variables, supported):
    """{problems}: cuda_toolkit's variables (and nvidia_driver_branch) and the node's OS release, all at once."""
    return cuda_toolkit.preflight(
        host=str(host),
        node=plain(mapping(node, "os_facts' gpuops_os", "cuda_toolkit_preflight")),
        variables=plain(mapping(variables, "the role's variables", "cuda_toolkit_preflight")),
        supported=plain(mapping(supported, "the supported releases", "cuda_toolkit_preflight")),
    )


def cuda_toolkit_plan(packages, versions, default, table, host):
    """{problems, toolkits, default}: the toolkits the source installs, at which versions, under which CUDA roots."""
    return cuda_toolkit.distribution_plan(
        mapping(packages, "package_info's packages", "cuda_toolkit_plan"),
        plain(versions),
        plain(default),
        mapping(table, "the source's table", "cuda_toolkit_plan"),
        str(host),
    )


def cuda_toolkit_repository_plan(index, packages, versions, default, table, host):
    """{problems, toolkits, default}: the cuda-toolkit-X-Y packages NVIDIA's CUDA repository installs, at which
    versions, under which /usr/local/cuda-X.Y."""
    return cuda_toolkit.repository_plan(
        mapping(index, "repository_index's packages", "cuda_toolkit_repository_plan"),
        mapping(packages, "package_info's packages", "cuda_toolkit_repository_plan"),
        plain(versions),
        plain(default),
        mapping(table, "the source's table", "cuda_toolkit_repository_plan"),
        str(host),
    )


def cuda_toolkit_driver_problem(plan, facts, host):
    """The problem (both versions and the fix) when the node's driver cannot run the plan, or installing it would
    bring another driver userland; None when neither."""
    return cuda_toolkit.driver_problem(
        mapping(plan, "cuda_toolkit_plan's result", "cuda_toolkit_driver_problem"),
        mapping(facts, "cuda_toolkit_facts' cuda_toolkit", "cuda_toolkit_driver_problem"),
        str(host),
    )


def cuda_toolkit_paths(plan, executables, settings):
    """gpuops.bringup.managed_paths entries: the CUDA roots' directories, nvcc wrappers and links, and the login
    shells' profile. settings: {link, alternative, profile}."""
    settings = fields(settings, "the role's settings", "cuda_toolkit_paths", ("link", "alternative", "profile"))
    return cuda_toolkit.configuration_paths(
        mapping(plan, "cuda_toolkit_plan's result", "cuda_toolkit_paths"),
        [str(path) for path in executables],
        link=str(settings["link"]),
        alternative=str(settings["alternative"]),
        profile=str(settings["profile"]),
    )


def cuda_toolkit_alternatives_steps(alternatives, plan, settings):
    """{commands, stale}: the update-alternatives commands the plan needs on the node as read, and the role's own
    CUDA roots no longer planned. settings: {link, alternative, own_roots}."""
    settings = fields(
        settings, "the role's settings", "cuda_toolkit_alternatives_steps", ("link", "alternative", "own_roots")
    )
    return cuda_toolkit.alternatives_steps(
        plain(mapping(plan, "cuda_toolkit_plan's result", "cuda_toolkit_alternatives_steps")),
        plain(mapping(alternatives, "cuda_toolkit_facts' alternatives", "cuda_toolkit_alternatives_steps")),
        alternative=str(settings["alternative"]),
        link=str(settings["link"]),
        own_roots=str(settings["own_roots"]),
    )


def cuda_toolkit_verify_problems(plan, packages, facts, profile, compiled, link):
    """What the node, read again after converge, lacks of the plan; [] when nothing."""
    return cuda_toolkit.verify_problems(
        mapping(plan, "cuda_toolkit_plan's result", "cuda_toolkit_verify_problems"),
        mapping(packages, "package_info's packages", "cuda_toolkit_verify_problems"),
        mapping(facts, "cuda_toolkit_facts' cuda_toolkit", "cuda_toolkit_verify_problems"),
        [str(line) for line in profile],
        list(compiled),
        str(link),
    )


def cuda_toolkit_run_check(node):
    """{live, why_not}: whether verify's CUDA program can run on this node, and why not (module_utils cuda_toolkit)."""
    return cuda_toolkit.run_check(plain(mapping(node, "os_facts' gpuops_os", "cuda_toolkit_run_check")))


def cuda_toolkit_verify(reads, host, judged):
    """{failures, passed}: the node read again after converge against the plan (module_utils cuda_toolkit)."""
    name = "cuda_toolkit_verify"
    reads = fields(reads, "verify's reads", name, ("packages", "facts", "profile", "compiled"))
    judged = fields(judged, "the plan and its paths", name, ("plan", "link", "profile_path", "run"))
    return cuda_toolkit.verify(
        host=str(host),
        plan=mapping(judged["plan"], "cuda_toolkit_plan's result", name),
        packages=mapping(reads["packages"], "package_info's packages", name),
        facts=mapping(reads["facts"], "cuda_toolkit_facts' cuda_toolkit", name),
        profile=[str(line) for line in reads["profile"]],
        compiled=list(reads["compiled"]),
        link=str(judged["link"]),
        profile_path=str(judged["profile_path"]),
        run=fields(judged["run"], "cuda_toolkit_run_check's result", name, ("live", "why_not")),
    )


class FilterModule:
    def filters(self):
        return {
            "cuda_toolkit_run_check": cuda_toolkit_run_check,
            "cuda_toolkit_verify": cuda_toolkit_verify,
            "cuda_toolkit_preflight": cuda_toolkit_preflight,
            "cuda_toolkit_plan": cuda_toolkit_plan,
            "cuda_toolkit_repository_plan": cuda_toolkit_repository_plan,
            "cuda_toolkit_driver_problem": cuda_toolkit_driver_problem,
            "cuda_toolkit_paths": cuda_toolkit_paths,
            "cuda_toolkit_alternatives_steps": cuda_toolkit_alternatives_steps,
            "cuda_toolkit_verify_problems": cuda_toolkit_verify_problems,
        }
