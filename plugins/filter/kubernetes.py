# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_node role's decisions: its preflight (variables, version skew, the node), kubeadm's join command, labels,
Ready."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpuops.bringup.plugins.module_utils import kubernetes_node
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import fields, mapping, plain

PREFLIGHT = "k8s_node_preflight"


def k8s_node_preflight(node, host, variables, tables, reads):
    """k8s_node's preflight of one node: {problems}, every one at once (module_utils kubernetes_node)."""
    return kubernetes_node.preflight(
        host=str(host),
        node=plain(mapping(node, "os_facts' gpuops_os", PREFLIGHT)),
        variables=plain(mapping(variables, "the role's variables", PREFLIGHT)),
        **fields(tables, "the role's tables", PREFLIGHT, ("supported", "kernel_modules", "sysctl")),
        **fields(reads, "the reads", PREFLIGHT, ("inventory_hosts", "kubeconfig_problem", "control_plane")),
    )


def kubernetes_drain_leftovers(pods):
    """namespace/name of the pods a drain left on its node (DaemonSet, mirror and finished pods aside)."""
    if not isinstance(pods, list):
        raise AnsibleFilterError(f"gpuops.bringup.kubernetes_drain_leftovers needs a list of pods, got {pods!r}")
    return kubernetes_node.drain_leftovers(plain(pods))


def k8s_node_join_command(text):
    """{endpoint, token, ca_cert_hash, problem} from kubeadm's --print-join-command output."""
    return kubernetes_node.join_command(str(text))


def k8s_node_labels(gpu, hardware, rack, prefix, extra):
    """The node's labels from gpu_facts, the hardware profile, the rack and the user's labels."""
    return kubernetes_node.node_labels(plain(gpu), plain(hardware), str(rack), str(prefix), plain(extra))


def k8s_node_patch(node, labels, taints, prefix):
    """The merge patch that brings the Node to the labels and taints; {} when it has them."""
    return kubernetes_node.node_patch(
        plain(mapping(node, "the Node object", "k8s_node_patch")), plain(labels), plain(taints), str(prefix)
    )


def k8s_node_ready(node, what="ready"):
    """Whether the Node is Ready, or (what=reason) why not."""
    return kubernetes_node.ready(plain(mapping(node, "the Node object", "k8s_node_ready")), str(what))


def k8s_node_verify_problems(read, node, version, packages, sandbox_image, nvidia, labels, taints, prefix):
    """What the node, read again, lacks of the role's settings; [] when nothing."""
    return kubernetes_node.verify_problems(
        str(read), plain(mapping(node, "the Node object", "k8s_node_verify_problems")), str(version),
        plain(packages), str(sandbox_image), bool(nvidia), plain(labels), plain(taints), str(prefix),
    )  # fmt: skip


def k8s_node_verify(read, host, node, settings, gpu, own_kernel):
    """{failures, passed}: the node read again after converge against the role's settings (module_utils
    kubernetes_node.verify)."""
    name = "k8s_node_verify"
    keys = ("version", "packages", "sandbox_image", "nvidia", "labels", "taints", "prefix", "node_name")
    settings = fields(settings, "the role's settings", name, keys)
    return kubernetes_node.verify(
        host=str(host),
        read=str(read),
        node=plain(mapping(node, "the Node object", name)),
        settings={**settings, "nvidia": boolean(settings["nvidia"], strict=False), "version": str(settings["version"]),
                  "sandbox_image": str(settings["sandbox_image"]), "node_name": str(settings["node_name"]),
                  "prefix": str(settings["prefix"]), "labels": settings["labels"] or {},
                  "taints": settings["taints"] or []},
        gpu=plain(mapping(gpu, "gpu_facts' gpu", name)),
        own_kernel=bool(own_kernel),
    )  # fmt: skip


class FilterModule:
    def filters(self):
        return {
            "k8s_node_verify": k8s_node_verify,
            PREFLIGHT: k8s_node_preflight,
            "kubernetes_drain_leftovers": kubernetes_drain_leftovers,
            "k8s_node_join_command": k8s_node_join_command,
            "k8s_node_labels": k8s_node_labels,
            "k8s_node_patch": k8s_node_patch,
            "k8s_node_ready": k8s_node_ready,
            "k8s_node_verify_problems": k8s_node_verify_problems,
        }
