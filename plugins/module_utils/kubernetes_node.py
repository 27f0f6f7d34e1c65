# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_node role's decisions as pure functions: its preflight (every problem of a node at once), its variables,
the version skew, kubeadm's join command, the node's labels and taints, and the patch that brings a Node object to
them.

Formats are Kubernetes': bootstrap tokens `[a-z0-9]{6}.[a-z0-9]{16}` (kubeadm's BootstrapTokenPattern), CA hashes
`sha256:<64 hex>` (kubeadm's pubkeypin), label keys and values as apimachinery's validation (IsQualifiedName,
IsValidLabelValue), taint effects NoSchedule, PreferNoSchedule, NoExecute.
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing
from ansible_collections.gpuops.bringup.plugins.module_utils.repositories import repository_problems

# \Z, not $: "$" also matches before a trailing newline, which would then reach kubeadm's YAML and apt.
TOKEN = re.compile(r"^[a-z0-9]{6}\.[a-z0-9]{16}\Z")
CA_HASH = re.compile(r"^sha256:[0-9a-f]{64}\Z")
PACKAGE_VERSION = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)-[0-9]+(\.[0-9]+)?\Z")
KUBE_VERSION = re.compile(r"^v?([0-9]+)\.([0-9]+)\.([0-9]+)([-+][0-9A-Za-z.+-]*)?\Z")
REPO_MINOR = re.compile(r"/core:/stable:/v([0-9]+)\.([0-9]+)/deb/?$")
ENDPOINT = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?\Z|^\[[0-9A-Fa-f:]+\](:[0-9]{1,5})?\Z")
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_INVALID_VALUE_CHARS = re.compile(r"[^-A-Za-z0-9_.]+")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# kubeadm joins a control plane of its own minor version or the next: kubeadm's skew policy is stricter than
# kubelet's (which may be up to three minors older than the API server), and kubeadm ships with kubelet.
MAX_MINORS_OLDER = 1
# Kubernetes 1.35 is the last minor whose kubelet supports containerd 1.x (SIG Node's notice in the 1.35 release);
# the role installs the distribution's containerd and writes its version 2 configuration, and every release the role
# supports ships containerd 1.x (Debian 12: 1.6, Debian 13 and Ubuntu 22.04/24.04: 1.7).
CONTAINERD_1_LAST_MINOR = (1, 35)


def label_key_problem(key):
    """Why key is not a valid label (or taint) key, or None. Kubernetes: an optional DNS subdomain prefix (at most 253
    characters) and '/', then a name of at most 63 characters, alphanumeric at both ends, '-', '_' and '.' inside."""
    if not isinstance(key, str) or not key:
        return "a label key must be a non-empty string"
    prefix, _slash, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return f"its prefix {prefix!r} is not a DNS subdomain (lower case alphanumerics, '-' and '.')"
    if len(name) > 63 or not _NAME.match(name):
        return (
            f"its name {name!r} must be at most 63 characters, alphanumeric at both ends, with only '-', '_', '.' "
            "and alphanumerics inside"
        )
    return None


def label_value_problem(value):
    """Why value is not a valid label value, or None (empty, or at most 63 characters as a label name)."""
    if not isinstance(value, str):
        return f"label values are strings, got {type(value).__name__} (quote it)"
    if value and (len(value) > 63 or not _NAME.match(value)):
        return (
            "a value must be empty or at most 63 characters, alphanumeric at both ends, with only '-', '_', '.' "
            "and alphanumerics inside"
        )
    return None


def label_value(text):
    """A value read from the node (a GPU product name, a driver version) made a valid label value."""
    value = _INVALID_VALUE_CHARS.sub("-", str(text)).strip("-_.")[:63]
    return value.rstrip("-_.")


def package_minor(version):
    """(major, minor) of a Kubernetes package version (1.31.4-1.1), or None when it is not one."""
    match = PACKAGE_VERSION.match(version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


STRINGS = (
    "k8s_node_kubernetes_version", "k8s_node_repo_url", "k8s_node_join_token", "k8s_node_control_plane_host",
    "k8s_node_ca_cert_hash", "k8s_node_api_endpoint", "k8s_node_control_plane_version", "k8s_node_label_prefix",
)  # fmt: skip


def input_problems(v):
    """Problems with the role's variables (a mapping of them), each naming the variable, the value and the fix."""
    problems = []
    v = dict(v)
    mistyped = set()
    for name in STRINGS:
        value = v.get(name)
        if isinstance(value, str):
            continue
        mistyped.add(name)
        v[name] = ""
        if name == "k8s_node_join_token":
            problems.append(f"{name} is not a string (the value is not shown). Fix: the token as a quoted string")
        else:
            # YAML reads 1.31 unquoted as a number (and 1.30 as 1.3): versions must be quoted.
            problems.append(
                f'{name} is {value!r}, a {type(value).__name__}, not a string. Fix: quote it, e.g. {name}: "{value}"'
            )
    version = v["k8s_node_kubernetes_version"]
    minor = package_minor(version)
    if minor is None and "k8s_node_kubernetes_version" not in mistyped:
        problems.append(
            f'k8s_node_kubernetes_version is "{version}", not an exact package version of the Kubernetes project\'s '
            "repository. Fix: the full Debian version, revision included, e.g. "
            'k8s_node_kubernetes_version: "1.35.9-1.1"'
        )
    if minor and minor > CONTAINERD_1_LAST_MINOR:
        problems.append(
            f"k8s_node_kubernetes_version is {version} (v{minor[0]}.{minor[1]}), but Kubernetes after 1.35 needs "
            "containerd 2.x, and this role installs the distribution's containerd, 1.x on every release it supports. "
            'Fix: a 1.35 version or older, e.g. k8s_node_kubernetes_version: "1.35.9-1.1" with its repository '
            "(k8s_node_repo_url and k8s_node_key_url of /core:/stable:/v1.35/deb)"
        )
    repo = REPO_MINOR.search(v["k8s_node_repo_url"] or "")
    if minor and repo and (int(repo.group(1)), int(repo.group(2))) != minor:
        problems.append(
            f"k8s_node_repo_url is {v['k8s_node_repo_url']}, the repository of Kubernetes v{repo.group(1)}."
            f"{repo.group(2)}, but k8s_node_kubernetes_version is {version} (v{minor[0]}.{minor[1]}): each "
            f"repository carries one minor version. Fix: k8s_node_repo_url and k8s_node_key_url with "
            f"/core:/stable:/v{minor[0]}.{minor[1]}/deb"
        )
    token, cp, ca_hash = v["k8s_node_join_token"], v["k8s_node_control_plane_host"], v["k8s_node_ca_cert_hash"]
    if not cp and not token:
        problems.append(
            "k8s_node_control_plane_host is empty and no k8s_node_join_token is given: nothing can create or supply "
            "the bootstrap token to join with. Fix: k8s_node_control_plane_host: <an inventory host of the control "
            "plane> (the role runs kubeadm token create there, with a short TTL), or k8s_node_join_token and "
            "k8s_node_ca_cert_hash from your vault"
        )
    if token and not TOKEN.match(token):
        # The token's value never appears in a message: it is a secret even when malformed.
        problems.append(
            "k8s_node_join_token is not a bootstrap token (six and sixteen characters of [a-z0-9] joined by a dot; "
            "the value is not shown). Fix: the token `kubeadm token create` printed, e.g. from your vault"
        )
    if token and not ca_hash:
        problems.append(
            "k8s_node_join_token is given but k8s_node_ca_cert_hash is empty: a join must pin the cluster CA. Fix: "
            "k8s_node_ca_cert_hash: sha256:<hex> (the --discovery-token-ca-cert-hash kubeadm printed)"
        )
    if ca_hash and not CA_HASH.match(ca_hash):
        problems.append(
            f'k8s_node_ca_cert_hash is "{ca_hash}", not "sha256:" and the 64 lower-case hex digits of the SHA-256 of '
            "the cluster CA's public key. Fix: the --discovery-token-ca-cert-hash value kubeadm prints, or "
            "openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum"
        )
    if token and not v["k8s_node_api_endpoint"]:
        problems.append(
            "k8s_node_join_token is given but k8s_node_api_endpoint is empty: the join needs the API server's "
            "address. Fix: k8s_node_api_endpoint: <host>:6443 (the control plane endpoint)"
        )
    endpoint = v["k8s_node_api_endpoint"]
    if endpoint and not ENDPOINT.match(endpoint):
        problems.append(
            f'k8s_node_api_endpoint is "{endpoint}", not host:port. Fix: e.g. k8s_node_api_endpoint: cp.example:6443 '
            "(no scheme, no path)"
        )
    cp_version = v["k8s_node_control_plane_version"]
    if cp_version and not KUBE_VERSION.match(cp_version):
        problems.append(
            f'k8s_node_control_plane_version is "{cp_version}", not a Kubernetes version. Fix: e.g. "v1.31.4", or "" '
            "to read it from the API server"
        )
    labels = v["k8s_node_labels"]
    if not isinstance(labels, dict):
        problems.append(f"k8s_node_labels is {labels!r}, not a mapping. Fix: e.g. {{example.com/pool: training}}")
        labels = {}
    for key, value in labels.items():
        why = label_key_problem(key) or label_value_problem(value)
        if why:
            problems.append(
                f"k8s_node_labels has {key!r}: {value!r}, not a valid Kubernetes label: {why}. Fix: e.g. "
                "example.com/pool: training"
            )
    prefix = v["k8s_node_label_prefix"]
    if label_key_problem(f"{prefix}/x"):
        problems.append(
            f'k8s_node_label_prefix is "{prefix}", not a DNS subdomain. Fix: e.g. k8s_node_label_prefix: gpuops.io'
        )
    taints = v["k8s_node_taints"]
    for taint in taints if isinstance(taints, list) else [taints]:
        why = None
        if not isinstance(taint, dict) or "key" not in taint or taint.get("effect") not in EFFECTS:
            why = f"each taint needs key and an effect of {', '.join(EFFECTS)}"
        else:
            why = label_key_problem(taint["key"]) or label_value_problem(taint.get("value", ""))
        if why:
            problems.append(
                f"k8s_node_taints has {taint!r}: {why}. Fix: e.g. {{key: nvidia.com/gpu, value: present, "
                "effect: NoSchedule}"
            )
    return problems


def skew_problem(package_version, control_plane_version, where):
    """The problem when kubeadm and kubelet at package_version may not join a control plane at control_plane_version
    (its gitVersion, v1.31.4); None when they may."""
    node = package_minor(package_version)
    match = KUBE_VERSION.match(control_plane_version or "")
    if node is None or match is None:
        return f"cannot compare k8s_node_kubernetes_version {package_version} with {where}'s {control_plane_version!r}"
    cp = (int(match.group(1)), int(match.group(2)))
    upstream = package_version.rsplit("-", 1)[0]
    if node > cp:
        return (
            f"k8s_node_kubernetes_version is {package_version} (v{upstream}), newer than the control plane's "
            f"{control_plane_version} ({where}): a kubelet must not be newer than the API server. Fix: "
            f"k8s_node_kubernetes_version of v{cp[0]}.{cp[1]} (and its repository), or upgrade the control plane first"
        )
    if node[0] != cp[0] or cp[1] - node[1] > MAX_MINORS_OLDER:
        return (
            f"k8s_node_kubernetes_version is {package_version} (v{upstream}), {cp[1] - node[1]} minor versions older "
            f"than the control plane's {control_plane_version} ({where}): kubeadm joins a control plane of its own "
            f"minor version or the next one only. Fix: k8s_node_kubernetes_version of v{cp[0]}.{cp[1]} or "
            f"v{cp[0]}.{cp[1] - 1} (and its repository)"
        )
    return None


# The releases of vars/main.yml's __k8s_node_supported, in words.
SUPPORTED_TEXT = "Debian 12 and 13 and Ubuntu 22.04 and 24.04"
# The API client's error is shown up to this many characters: enough for the cause, not a page of traceback.
API_ERROR_CHARS = 600


def _sentence(text):
    """text ending with a full stop: the problems are joined into one message, each its own sentence."""
    return text if text.endswith(".") else f"{text}."


def _skew(variables, control_plane):
    """The version skew problem against the version given (k8s_node_control_plane_version) or, when it is "", the
    API server's; None when the versions may join, or when there is nothing to compare: a malformed version is
    input_problems' (fixing it comes first), an API not read is the kubeconfig's or the API's problem."""
    version = variables.get("k8s_node_kubernetes_version")
    given = variables.get("k8s_node_control_plane_version")
    if not isinstance(version, str) or package_minor(version) is None or not isinstance(given, str):
        return None
    if given:
        return skew_problem(version, given, "k8s_node_control_plane_version") if KUBE_VERSION.match(given) else None
    if control_plane and control_plane.get("version") is not None:
        return skew_problem(version, control_plane["version"], "the API server")
    return None


def _api_problem(kubeconfig, control_plane):
    """The problem when the controller read the Kubernetes API and got an error instead of its version."""
    if not control_plane or control_plane.get("version") is not None:
        return None
    used = (
        f"k8s_node_kubeconfig {kubeconfig}"
        if kubeconfig
        else "the client default kubeconfig (k8s_node_kubeconfig is empty)"
    )
    error = parsing.truncated(str(control_plane.get("error") or ""), API_ERROR_CHARS)
    # The client's sentence ends the clause: its own full stop is not doubled ("..." where it was cut stays).
    if error.endswith(".") and not error.endswith("..."):
        error = error[:-1]
    return (
        f"The Kubernetes API could not be read from the controller with {used}: {error}. Fix: a kubeconfig on this "
        "machine whose API server it reaches, with the rights to read and patch Nodes (the control plane's admin.conf)."
    )


def _control_plane_host_problem(cp_host, inventory_hosts):
    """The problem when the host the token is created on (delegated to) is not in the inventory."""
    if not isinstance(cp_host, str) or not cp_host or cp_host in inventory_hosts:
        return None
    return (
        f'k8s_node_control_plane_host is "{cp_host}", not an inventory host: the role runs kubeadm token create '
        "there. Fix: the inventory name of a control-plane host (with kubeadm and /etc/kubernetes/admin.conf)."
    )


def _repository_problem(variables):
    """The Kubernetes repository's definition as the package_repository task gets it, checked for apt."""
    found = repository_problems(
        {
            "name": "kubernetes",
            "uris": [variables.get("k8s_node_repo_url")],
            "suites": ["/"],
            "key_url": variables.get("k8s_node_key_url"),
            "key_fingerprint": variables.get("k8s_node_key_fingerprint"),
            "key_sha256": variables.get("k8s_node_key_sha256"),
        },
        "apt",
    )
    if not found:
        return None
    return (
        f"The Kubernetes repository's {'; '.join(found)}. Fix: the fingerprint the Kubernetes project publishes in "
        "k8s_node_key_fingerprint (the role's default), and k8s_node_key_sha256 the sha256sum of the key file, "
        'or "".'
    )


def _release_problem(host, release, supported):
    """The problem when the node's OS release (os_facts' os) is not one of supported's."""
    if release.get("major") in (supported.get(release.get("id")) or ()):
        return None
    return (
        f"k8s_node supports {SUPPORTED_TEXT}; {host} runs {release.get('name') or 'an unknown OS'} "
        f"(ID={release.get('id')}, VERSION_ID={release.get('version_id')}). Fix: a supported release, or leave this "
        "node out of the Kubernetes stage."
    )


def _kubelet_problem(host, node, join, kernel_modules, sysctl):
    """What stage 1 (os_baseline with gpuops_kubernetes_join: true) prepares for kubelet and the node lacks. Only a
    node running its own kernel is read: a container's kernel, modules and swap belong to its host (verify says so)."""
    missing = [] if join else ["gpuops_kubernetes_join is false"]
    if (node.get("capabilities") or {}).get("own_kernel"):
        modules = node.get("kernel_modules") or {}
        missing += [f"{module} is not loaded" for module in kernel_modules if modules.get(module) == "absent"]
        live = node.get("sysctl") or {}
        missing += [
            f"{key} is {'unset' if live.get(key) is None else live[key]}, not {value}"
            for key, value in sysctl.items()
            if live.get(key) is None or str(live[key]) != str(value)
        ]
        swaps = (node.get("swap") or {}).get("active") or []
        if swaps:
            missing.append(f"swap is on ({', '.join(str(area.get('device')) for area in swaps)})")
    if not missing:
        return None
    return (
        f"{host} is not ready for kubelet: {'; '.join(missing)}. Fix: run stage 1 (playbooks/os_baseline.yml) with "
        "gpuops_kubernetes_join: true, which loads the modules at boot, sets the sysctls and turns swap off"
        f"{'' if join else ' (gpuops_kubernetes_join is false now)'}."
    )


def preflight(
    *, host, node, variables, supported, kernel_modules, sysctl, inventory_hosts, kubeconfig_problem, control_plane
):
    """{problems} of one node before any change, each a sentence naming the value and the fix; [] when none.

    variables: the role's k8s_node_* and gpuops_kubernetes_join (a boolean). supported ({os-release ID: [majors]}),
    kernel_modules and sysctl ({key: value}, what stage 1 prepares for kubelet): the role's tables (vars/main.yml).
    node: os_facts' gpuops_os. inventory_hosts: every inventory host (where the token may be created).
    kubeconfig_problem: the kubeconfig_check action's (None when the kubeconfig is usable). control_plane: the read of
    the Kubernetes API, {version: its gitVersion, or None when the read failed, error: the client's message}, or
    None when it was not read (the kubeconfig is not there, which its own problem says)."""
    found = [
        _skew(variables, control_plane),
        _control_plane_host_problem(variables.get("k8s_node_control_plane_host"), inventory_hosts),
        kubeconfig_problem,
        _api_problem(variables.get("k8s_node_kubeconfig"), control_plane),
        _repository_problem(variables),
        _release_problem(host, node.get("os") or {}, supported),
        _kubelet_problem(host, node, bool(variables.get("gpuops_kubernetes_join")), kernel_modules, sysctl),
    ]
    return {"problems": [_sentence(problem) for problem in input_problems(variables) + [p for p in found if p]]}


def join_command(text):
    """{endpoint, token, ca_cert_hash, problem} from `kubeadm token create --print-join-command`'s output, which
    names the endpoint after --token (kubeadm 1.9, the first with the flag) or before the flags (later kubeadm).
    problem is None, or why the output cannot be used, without the output itself: it holds the token."""
    line = next((ln for ln in parsing.bounded(text)[0].splitlines() if ln.strip().startswith("kubeadm join ")), "")
    words = line.split()[2:]
    found = {"endpoint": None, "token": None, "ca_cert_hash": None, "problem": None}
    flags = {"--token": "token", "--discovery-token-ca-cert-hash": "ca_cert_hash"}
    i = 0
    while i < len(words):
        if words[i] in flags and i + 1 < len(words):
            found[flags[words[i]]] = words[i + 1]
            i += 2
            continue
        if not words[i].startswith("-") and found["endpoint"] is None:
            found["endpoint"] = words[i]
        i += 1
    if not line:
        found["problem"] = "it printed no `kubeadm join` line"
    elif None in (found["endpoint"], found["token"], found["ca_cert_hash"]):
        missing = [k for k in ("endpoint", "token", "ca_cert_hash") if found[k] is None]
        found["problem"] = f"its `kubeadm join` line lacks the {', '.join(missing)}"
    elif not TOKEN.match(found["token"]):
        found["problem"] = "its token is not a bootstrap token"
    elif not CA_HASH.match(found["ca_cert_hash"]):
        found["problem"] = f"its CA hash {found['ca_cert_hash']} is not sha256:<64 hex>"
    return found


def node_labels(gpu, hardware, rack, prefix, extra):
    """The labels the node gets: from gpu_facts (product, count, driver, CUDA, simulated), the inventory (rack,
    hardware profile) and extra (the user's, which win). A fact that is absent gives no label."""
    labels = {}
    devices = (gpu or {}).get("devices") or []
    if devices:
        labels[f"{prefix}/gpu.product"] = label_value(devices[0].get("name") or "")
        labels[f"{prefix}/gpu.count"] = str(len(devices))
    for key, fact in (("gpu.driver", "driver_version"), ("gpu.cuda", "cuda_version")):
        if (gpu or {}).get(fact):
            labels[f"{prefix}/{key}"] = label_value(gpu[fact])
    if (gpu or {}).get("simulated"):
        labels[f"{prefix}/gpu.simulated"] = "true"
    if rack:
        labels[f"{prefix}/rack"] = label_value(rack)
    profile = (hardware or {}).get("profile")
    if profile:
        labels[f"{prefix}/hardware-profile"] = label_value(profile)
    labels.update({str(k): str(v) for k, v in (extra or {}).items()})
    return {k: v for k, v in labels.items() if v != "" or k in (extra or {})}


def node_patch(node, labels, taints, prefix):
    """The merge patch that brings the Node object to labels and taints, or {} when it already has them.

    Labels under prefix that the node no longer earns (a GPU removed) are deleted; other labels are never touched.
    The taints are the role's list: other taints (the node controller's, an operator's) are kept."""
    current = (node or {}).get("metadata", {}).get("labels") or {}
    patch_labels = {k: v for k, v in labels.items() if current.get(k) != v}
    patch_labels.update({k: None for k in current if k.startswith(f"{prefix}/") and k not in labels})
    patch = {}
    if patch_labels:
        patch["metadata"] = {"labels": patch_labels}
    have = (node or {}).get("spec", {}).get("taints") or []
    want = [{"key": t["key"], "value": t.get("value", ""), "effect": t["effect"]} for t in taints]
    mine = {(t["key"], t["effect"]) for t in want}
    kept = [t for t in have if (t.get("key"), t.get("effect")) not in mine]
    if sorted(map(taint_words, kept + want)) != sorted(map(taint_words, have)):
        patch["spec"] = {"taints": kept + want}
    return patch


def taint_words(taint):
    """A taint as (key, value, effect) strings, for comparing lists of taints whatever their order."""
    return tuple(str(taint.get(k, "")) for k in ("key", "value", "effect"))


def ready(node, what="ready"):
    """Whether the Node's Ready condition is True (what=ready), or why not (what=reason)."""
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    condition = next((c for c in conditions if c.get("type") == "Ready"), None)
    if what == "ready":
        return bool(condition) and condition.get("status") == "True"
    if condition is None:
        return "it reports no Ready condition yet (kubelet has not posted its status)"
    return f"Ready is {condition.get('status')} ({condition.get('reason', '')}: {condition.get('message', '')})"


def _sections(text):
    """The verify read's output: '== name' lines start sections."""
    sections, name = {}, None
    for line in (text or "").splitlines():
        if line.startswith("== "):
            name = line[3:].strip()
            sections[name] = []
        elif name:
            sections[name].append(line)
    return sections


def verify_problems(read, node, version, packages, sandbox_image, nvidia, labels, taints, prefix):
    """What the node, read again, lacks of the role's settings: one sentence each; [] when nothing."""
    s = _sections(read)
    problems = []
    installed = dict(line.split(" ", 1) for line in s.get("packages", []) if " " in line)
    held = set(s.get("held", []))
    for package in packages:
        if installed.get(package) != version:
            problems.append(f"{package} is at {installed.get(package) or 'no version'}, not {version}")
        if package not in held:
            problems.append(f"{package} is not held")
    for line in s.get("units", []):
        unit, *state = line.split()
        if state != ["enabled", "active"]:
            problems.append(f"{unit}.service is {' and '.join(state) or 'unknown'}, not enabled and active")
    if s.get("ctr") != ["answers"]:
        problems.append("ctr version gets no answer from containerd")
    files = s.get("files", [])
    if "/etc/kubernetes/kubelet.conf" not in files:
        problems.append("/etc/kubernetes/kubelet.conf is missing")
    # The files section lists kubelet.conf and the JoinConfiguration where they exist.
    for left in (f for f in files if f != "/etc/kubernetes/kubelet.conf"):
        problems.append(f"{left} (it holds the bootstrap token) was not removed")
    problems += _containerd_problems("\n".join(s.get("config", [])), sandbox_image, nvidia)
    if not ready(node):
        problems.append(f"the Node is not Ready: {ready(node, 'reason')}")
    kubelet = ((node or {}).get("status") or {}).get("nodeInfo", {}).get("kubeletVersion", "")
    if kubelet.lstrip("v") != version.rsplit("-", 1)[0]:
        problems.append(f"the Node reports kubelet {kubelet or 'of no version'}, not v{version.rsplit('-', 1)[0]}")
    if node_patch(node, labels, taints, prefix):
        problems.append(
            f"the Node's labels or taints differ from the role's: {node_patch(node, labels, taints, prefix)}"
        )
    return problems


def _containerd_problems(dump, sandbox_image, nvidia):
    try:
        import tomllib
    except ImportError:  # Python < 3.11 on the controller
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        config = tomllib.loads(dump)
    except tomllib.TOMLDecodeError as exc:
        return [f"containerd config dump is not TOML ({exc})"]
    cri = (config.get("plugins") or {}).get("io.containerd.grpc.v1.cri") or {}
    runtimes = (cri.get("containerd") or {}).get("runtimes") or {}
    problems = []
    if cri.get("sandbox_image") != sandbox_image:
        problems.append(f"containerd's sandbox image is {cri.get('sandbox_image')}, not {sandbox_image}")
    if ((runtimes.get("runc") or {}).get("options") or {}).get("SystemdCgroup") is not True:
        problems.append("containerd's runc runtime does not use the systemd cgroup driver (SystemdCgroup)")
    if nvidia and "nvidia" not in runtimes:
        problems.append(
            "containerd has no nvidia runtime (k8s_node_nvidia_runtime is true: run the container toolkit stage)"
        )
    return problems


def drain_leftovers(pods):
    """The pods a drain should have moved off a node and did not, as namespace/name (pods: the node's, as the API
    lists them after the drain). DaemonSet pods stay by design (kubectl drain --ignore-daemonsets), mirror pods are
    the kubelet's own, finished pods hold nothing; a pod being deleted still runs until it is gone, so it counts."""
    left = []
    for pod in pods or []:
        meta = pod.get("metadata") or {}
        if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if any(owner.get("kind") == "DaemonSet" for owner in meta.get("ownerReferences") or []):
            continue
        left.append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return sorted(left)


def kubeconfig_findings(variable, path, stat, uid):
    """(error, warnings) for the kubeconfig the controller reaches the API with. path: as given ("" for the client's
    default); stat: os.stat_result of the file it names, or None when there is none; uid: the controller user's.

    A missing file is an error (when one is named); one that others may read or write is a warning: it holds the
    cluster's credentials."""
    if stat is None:
        if not path:
            return None, []
        return (
            f'{variable} is "{path}", which is not a file on the controller: the role reaches the Kubernetes API (the '
            "Node, its labels, Ready, cordon and drain) from here. Fix: the path of the cluster's kubeconfig on this "
            "machine (with the rights in the role's README, Kubernetes API rights), or \"\" for the client's default "
            "($K8S_AUTH_KUBECONFIG, else ~/.kube/config)"
        ), []
    warnings = []
    mode = stat.st_mode & 0o777
    shown = path or "the client's default kubeconfig"
    if mode & 0o077:
        warnings.append(
            f"{variable} ({shown}) is mode {mode:04o}: its credentials to the cluster are open to "
            f"{'others' if mode & 0o007 else 'its group'} on the controller. Fix: chmod 600 it"
        )
    if stat.st_uid != uid:
        warnings.append(
            f"{variable} ({shown}) belongs to uid {stat.st_uid}, not to the user running Ansible (uid {uid}), who "
            "cannot keep others from changing it. Fix: a copy owned by this user, mode 600"
        )
    return None, warnings


def verify(*, host, read, node, settings, gpu, own_kernel):
    """{failures, passed} of the node read again after converge (verify_problems' failures).

    read: verify's sectioned read of the node; node: the Node object ({} where the API has none); settings: the role's
    version, packages, sandbox_image, nvidia, labels, taints, prefix and node_name; gpu: gpu_facts' gpu where the
    role read the GPUs for their labels ({} where not); own_kernel: os_facts' capability."""
    keys = ("version", "packages", "sandbox_image", "nvidia", "labels", "taints", "prefix")
    failures = verify_problems(read, node, *(settings[key] for key in keys))
    kubelet = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion") or "?"
    runtime = ", nvidia runtime" if settings["nvidia"] else ""
    passed = (
        f"{host} passed k8s_node verification: kubeadm, kubelet, kubectl held at {settings['version']}; containerd "
        f"active (systemd cgroups, sandbox {settings['sandbox_image']}{runtime}); Node {settings['node_name']} Ready "
        f"(kubelet {kubelet}) with {len(settings['labels'])} labels"
    )
    if settings["taints"]:
        passed += f" and {len(settings['taints'])} taints"
    if gpu.get("simulated"):
        passed += f" [GPU labels from SIMULATED {gpu['simulated'].get('profile')}]"
    if not own_kernel:
        passed += " (not applicable in a container, whose kernel belongs to its host: kernel modules, sysctls, swap)"
    return {"failures": failures, "passed": passed}
