# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The grammar of every public variable whose value is written into a file or a command line, or bounds a wait.

A value goes into chrony.conf, a deb822 stanza, containerd's TOML, kubeadm's YAML, a GRUB assignment, modprobe's
argv or a Kubernetes call as it is: a newline, a quote or a leading '-' there rewrites the configuration (a newline in
an apt component adds "Trusted: yes"; in an NTP server, "allow all"). So each is checked for the shape its target
takes before anything changes, with a message naming the variable, the value and the fix. Types too: a boolean given
on the command line (-e x=true) is a string, which Ansible 2.19 refuses in a condition; the roles read every boolean
through `| bool`, and this check accepts only what that filter reads as meant (true/false, yes/no, on/off, 1/0).

VARIABLES maps each name to its Rule; variable_problems() checks a mapping of names to values and returns the
sentences. Variables with a structure of their own (repositories, interfaces, labels, gates) are checked by their
role's own function and named in STRUCTURED.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import repositories

TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")

# Host name labels; '_' too, which DNS names avoid but /etc/hosts and inventories use (gpu_node_01).
_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
# distribution/reference's grammar (the OCI image references containerd, docker and ctr take).
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_PORT = re.compile(r"[0-9]{1,5}")
_DURATION_PART = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,9})?)(ns|us|\u00b5s|ms|s|m|h)")
_DURATION_SECONDS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_KERNEL_ARG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,:/+-]*(=[A-Za-z0-9_.,:/+=@-]*)?")
_MODULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,55}")
_SYSCTL_KEY = re.compile(r"[a-z0-9_-]+(?:[.][A-Za-z0-9_-]+)+")
# One line of printable ASCII, no blank at either end (sysctl.d strips them; ip_local_port_range has one inside).
_SYSCTL_TEXT = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?")
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/-]{0,99}")
_DEB_VERSION = re.compile(r"(?:[0-9]{1,9}:)?[0-9][A-Za-z0-9.+~-]{0,99}")
# DCGM 4's upstream version (its packages are datacenter-gpu-manager-4-*).
_DCGM_VERSION = re.compile(r"4\.[0-9]{1,3}\.[0-9]{1,3}")
_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_GROUP = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_PATH = re.compile(r"/[A-Za-z0-9._/+@-]{0,4095}")
# A directory on the controller (a report directory): any absolute path of one line; the default goes through
# playbook_dir/.., so ".." is allowed there.
_CONTROLLER_PATH = re.compile(r"/[^\x00-\x1f\x7f]{0,4095}")
_ARG = re.compile(r"[^\x00-\x1f\x7f]{0,4096}")
_NETDEV = re.compile(r"[A-Za-z0-9_.:-]{1,15}")
_FINGERPRINT = re.compile(r"(?:0[xX])?[0-9A-Fa-f ]{40,80}")
_SHA256 = re.compile(r"(?:[0-9a-fA-F]{64})?")
# The acceptance stage's run ids name a directory (module_utils acceptance.RUN_ID).
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# A site's name as people write it (any script), shown in the acceptance reports: no control character, no blank at
# either end.
_SITE = re.compile(r"[^\x00-\x20\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]{0,126}[^\x00-\x20\x7f-\x9f])?")
# Open MPI MCA parameters that name a program to run on every node: the launcher's ssh, set by the role.
MPI_LAUNCH_PARAMETERS = ("plm_rsh_agent", "plm_ssh_agent", "plm_rsh_args", "plm_ssh_args", "orte_launch_agent",
                         "prte_launch_agent", "plm_rsh_no_tree_spawn")  # fmt: skip


class Rule:
    """check(value) -> None when fine, else why (a sentence fragment); fix: what to set instead."""

    def __init__(self, check, fix):
        self.check = check
        self.fix = fix


def shown(value):
    """A value as the message shows it: JSON, as YAML and the command line spell it."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


# --- scalars --------------------------------------------------------------------------------------------------------


def boolean(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return None
    return "not a boolean (true or false; yes/no, on/off and 1/0 are read the same, anything else is not)"


def integer(low, high):
    def check(value):
        if isinstance(value, str) and value.isascii() and value.strip().isdigit() and len(value.strip()) < 12:
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int):
            return f"not a whole number from {low} to {high}"
        if not low <= value <= high:
            return f"out of range: from {low} to {high}"
        return None

    return check


def number(low, high, low_open=False):
    def check(value):
        if isinstance(value, str):
            try:
                value = float(value) if value.isascii() else None
            except ValueError:
                value = None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"not a number {'over' if low_open else 'from'} {low} {'and up' if low_open else ''} to {high}"
        if value < low or (low_open and value == low) or value > high:
            return f"out of range: {'more than' if low_open else 'from'} {low} to {high}"
        return None

    return check


def text(pattern, what, empty=False):
    def check(value):
        if not isinstance(value, str):
            return f"a {type(value).__name__}, not a string (quote it)"
        if value == "" and empty:
            return None
        if not pattern.fullmatch(value):
            return what
        return None

    return check


def host(value, empty=False):
    """A host name (RFC 1123 labels) or an IPv4/IPv6 address: what chrony, ssh, mpirun and known_hosts take."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}, not a string"
    if value == "" and empty:
        return None
    try:
        ipaddress.ip_address(value[1:-1] if value.startswith("[") and value.endswith("]") else value)
        return None
    except ValueError:
        pass
    labels = value[:-1].split(".") if value.endswith(".") else value.split(".")
    if len(value) > 253 or not all(_LABEL.fullmatch(label) for label in labels) or labels[-1].isdigit():
        return "not a host name or an IP address (letters, digits, '-' and '_' between dots; no spaces or newlines)"
    return None


def dns_subdomain(value):
    """A Kubernetes object name (RFC 1123 subdomain): lower case, at most 253 characters."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}, not a string"
    if len(value) > 253 or not all(_DNS_LABEL.fullmatch(label) for label in value.split(".")):
        return (
            "not a Kubernetes node name (lower-case letters, digits, '-' and '.', at most 253; an inventory name in "
            "upper case needs its lower-case form here)"
        )
    return None


def verdict_label_prefix(value):
    """A label prefix that the acceptance verdict's own domain, acceptance.<prefix>, extends."""
    return dns_subdomain(value) or (
        "too long for the verdict's label acceptance.<prefix>/verdict (253 characters at most)"
        if dns_subdomain(f"acceptance.{value}")
        else None
    )


def registry(value):
    """host[:port][/path] of a registry, without a scheme (containerd's and Kubernetes' form)."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}, not a string"
    if value == "":
        return None
    if "://" in value:
        return "a registry host, not a URL (no http:// or https://)"
    name, _slash, path = value.partition("/")
    address, _colon, port = name.rpartition(":") if name.count(":") == 1 else (name, "", "")
    if host(address) or (port and not (_PORT.fullmatch(port) and 1 <= int(port) <= 65535)):
        return "not a registry host[:port][/path]"
    if path and not all(_PATH_COMPONENT.fullmatch(part) for part in path.split("/")):
        return "its path is not a registry path (lower-case components between '/')"
    return None


def image(value):
    """An OCI image reference: [registry[:port]/]path[:tag][@sha256:digest]."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}, not a string"
    why = "not an image reference such as registry.k8s.io/pause:3.10 (no spaces, quotes or leading '-')"
    if not value or len(value) > 512:
        return why
    name, _at, digest = value.partition("@")
    if digest and not _DIGEST.fullmatch(digest):
        return why
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = name.rsplit(":", 1)
        if not _TAG.fullmatch(tag):
            return why
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        if registry(parts[0]):
            return why
        parts = parts[1:]
    if not parts or not all(_PATH_COMPONENT.fullmatch(part) for part in parts):
        return why
    return None


def duration(low_seconds, high_seconds):
    """A Go duration (kubeadm's --ttl): 15m, 1h30m, 90s, within the bounds."""

    def check(value):
        if not isinstance(value, str):
            return f"a {type(value).__name__}, not a duration such as 15m"
        parts = _DURATION_PART.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            return "not a duration such as 15m or 1h (a number and a unit: s, m or h)"
        seconds = sum(float(n) * _DURATION_SECONDS[u] for n, u in parts)
        if not low_seconds <= seconds <= high_seconds:
            return f"{seconds:g} seconds: out of range, from {low_seconds} seconds to {high_seconds // 3600} hours"
        return None

    return check


def url(value, empty=False):
    if value == "" and empty:
        return None
    return repositories.url_problem(value)


def fingerprint(value):
    """An OpenPGP fingerprint as vendors print it, or "" (the key pinned by its checksum alone: whether one of the two
    is given is the repository check's to say, with the vendor's value in its fix)."""
    if value == "":
        return None
    if not isinstance(value, str) or not _FINGERPRINT.fullmatch(value):
        return "not an OpenPGP fingerprint (40 hex digits, or 64 for a v6 key; spaces allowed)"
    digits = re.sub(r"\s+", "", value)[2:] if value[:2] in ("0x", "0X") else re.sub(r"\s+", "", value)
    if len(digits) not in (40, 64):
        return "not an OpenPGP fingerprint (40 hex digits, or 64 for a v6 key; spaces allowed)"
    return None


def absolute_path(value, empty=False):
    if not isinstance(value, str):
        return f"a {type(value).__name__}, not a path"
    if value == "" and empty:
        return None
    if not _PATH.fullmatch(value) or value == "/" or "/../" in value + "/" or "//" in value:
        return "not an absolute path of letters, digits and ._+@- (no spaces, quotes, '$', '..' or '/')"
    return None


def controller_dir(value):
    if not isinstance(value, str) or not _CONTROLLER_PATH.fullmatch(value):
        return "not an absolute path of one line"
    return None


def unix_user(value):
    if not isinstance(value, str) or not _USER.fullmatch(value):
        return "not a user name (lower-case letters, digits, '_' and '-', at most 32)"
    if value == "root":
        return "root: the launcher's key must never open root's account on every node of the group"
    return None


# --- containers -----------------------------------------------------------------------------------------------------


def items(check, why):
    """A list whose every item passes check; a string is refused (YAML turns "a b" into one item, not two)."""

    def run(value):
        if isinstance(value, str) or not isinstance(value, list):
            return f"not a list (got {type(value).__name__})", None
        bad = [item for item in value if check(item)]
        return (why, bad) if bad else (None, None)

    return run


def entries(key_check, value_check, why):
    def run(value):
        if not isinstance(value, dict):
            return f"not a mapping (got {type(value).__name__})", None
        bad = [key for key, item in value.items() if key_check(key) or value_check(item)]
        return (why, bad) if bad else (None, None)

    return run


def sysctl_value(value):
    if isinstance(value, bool):
        return "a boolean is written as True"
    if isinstance(value, (int, float)):
        return None if math.isfinite(value) else "not finite"
    if isinstance(value, str) and _SYSCTL_TEXT.fullmatch(value):
        return None
    return "not a number or one line of text"


def env_value(value):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return "not a string or number"
    return None if _ARG.fullmatch(str(value)) and "\n" not in str(value) else "holds a control character"


def mpirun_arg(value):
    if not isinstance(value, str) or not _ARG.fullmatch(value):
        return "not one line of text"
    if any(parameter in value for parameter in MPI_LAUNCH_PARAMETERS):
        return "sets how mpirun starts processes on the other nodes, which the role sets itself"
    return None


def benchmark_arg(value):
    if not isinstance(value, str) or not _ARG.fullmatch(value):
        return "not one line of text"
    return None


def kernel_arg(value):
    if not isinstance(value, str) or not _KERNEL_ARG.fullmatch(value):
        return "not one kernel argument"
    return None


# --- the table --------------------------------------------------------------------------------------------------------


def _scalar(check, why_prefix=""):
    def run(value):
        why = check(value)
        return (why_prefix + why, None) if why else (None, None)

    return run


BOOL_FIX = "true or false (unquoted; from the command line -e name=true works too)"


def mirror_url(value):
    # An empty mirror is the documented way to use upstream sources.
    if not isinstance(value, str):
        return "not a URL (a string)"
    return None if value == "" else repositories.mirror_url_problem(value)


VARIABLES = {
    # _common
    "gpuops_mirror_url": Rule(
        _scalar(mirror_url),
        'set it to the mirror\'s base URL, e.g. http://mirror.example.com:8080 (or file:///srv/mirror), or to "" for '
        "upstream sources",
    ),
    "gpuops_kubernetes_join": Rule(_scalar(boolean), BOOL_FIX),
    "gpuops_nccl_tests": Rule(_scalar(boolean), BOOL_FIX),
    "gpuops_max_fail_percentage": Rule(
        _scalar(integer(0, 100)), "the percentage of a batch that may fail before the rollout stops, 0 to 100"
    ),
    "gpuops_long_step_timeout": Rule(
        _scalar(integer(60, 86400)),
        "the seconds a DKMS build or another long step may run (3600, the default; 60 to 86400)",
    ),
    "gpuops_package_lock_timeout": Rule(
        _scalar(integer(0, 3600)),
        "the seconds to wait for another apt or dpkg to release its locks (300, the default), or 0 to fail at once",
    ),
    # os_baseline
    "os_baseline_kernel_cmdline": Rule(
        items(kernel_arg, "each item must be one argument (name or name=value, no spaces or quotes)"),
        "split it, e.g. [iommu=pt, pci=realloc=off]; one kernel argument per list item",
    ),
    "os_baseline_blacklist_nouveau": Rule(_scalar(boolean), BOOL_FIX),
    "os_baseline_kernel_modules": Rule(
        items(text(_MODULE, "no module name"), "not kernel module names"), "names as lsmod prints them, e.g. rdma_ucm"
    ),
    "os_baseline_sysctl": Rule(
        entries(
            text(_SYSCTL_KEY, "no sysctl name"),
            sysctl_value,
            "keys must be dotted sysctl names and values numbers or one line of text",
        ),
        "e.g. net.ipv4.ip_forward: 1",
    ),
    "os_baseline_memlock_unlimited": Rule(_scalar(boolean), BOOL_FIX),
    "os_baseline_disable_swap": Rule(_scalar(boolean), BOOL_FIX),
    "os_baseline_time_sync": Rule(_scalar(boolean), BOOL_FIX),
    "os_baseline_ntp_servers": Rule(
        items(host, "not host names or addresses (chrony reads the rest of the line as options)"),
        "one server name or address per item, e.g. [ntp1.example.com, 10.0.0.1]",
    ),
    "os_baseline_ntp_pools": Rule(
        items(host, "not host names (chrony reads the rest of the line as options)"),
        "one pool name per item, e.g. [2.debian.pool.ntp.org]",
    ),
    "os_baseline_kernel_hold": Rule(_scalar(boolean), BOOL_FIX),
    "os_baseline_manage_os_sources": Rule(_scalar(boolean), BOOL_FIX),
    "os_baseline_apt_components": Rule(
        items(
            text(_COMPONENT, "no component"), "not archive component names (a newline would add fields to the source)"
        ),
        "component names, e.g. [main, contrib, non-free, non-free-firmware]",
    ),
    "os_baseline_reboot_ok": Rule(_scalar(boolean), BOOL_FIX),
    "os_baseline_reboot_timeout": Rule(
        _scalar(integer(60, 7200)), "the seconds a node may take to come back from a reboot, e.g. 1200"
    ),
    # acceptance
    "acceptance_since_boot": Rule(_scalar(boolean), BOOL_FIX),
    "acceptance_fail_unaccepted": Rule(_scalar(boolean), BOOL_FIX),
    "acceptance_dcgm_level": Rule(
        _scalar(lambda v: None if v == "" else integer(0, 4)(v)),
        'the DCGM diagnostic level, 0 (none) to 4 (3 for a delivery acceptance), or "" for the profile\'s',
    ),
    "acceptance_dcgm_timeout": Rule(
        _scalar(integer(60, 86400)), "the seconds dcgmi diag may run, 60 to 86400, e.g. 7200"
    ),
    "acceptance_counter_interval": Rule(
        _scalar(integer(1, 600)), "the seconds between the two reads of the port counters, 1 to 600, e.g. 10"
    ),
    "acceptance_bandwidth": Rule(_scalar(boolean), BOOL_FIX),
    "acceptance_bandwidth_duration": Rule(_scalar(integer(1, 300)), "seconds of ib_write_bw traffic, 1 to 300, e.g. 5"),
    "acceptance_bandwidth_passes": Rule(
        _scalar(integer(1, 5)), "the passes of pair tests, 1 (no isolation) to 5, e.g. 3"
    ),
    "acceptance_label_prefix": Rule(
        _scalar(verdict_label_prefix),
        "a DNS subdomain such as gpuops.io (k8s_node_label_prefix)",
    ),
    "acceptance_kubernetes_mark": Rule(_scalar(boolean), BOOL_FIX),
    "acceptance_cuda_root": Rule(
        _scalar(absolute_path), "the CUDA root whose bin/nvcc builds the check, e.g. /usr/local/cuda"
    ),
    "acceptance_container_image": Rule(
        _scalar(lambda v: None if v == "" else image(v)),
        'an image with nvidia-smi, e.g. nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04, or "" not to run the container',
    ),
    "acceptance_results_dir": Rule(
        _scalar(lambda v: None if v == "" else controller_dir(v)),
        'an absolute directory on the controller, e.g. /srv/gpuops/reports, or "" for reports/ beside the inventory',
    ),
    "acceptance_site": Rule(
        _scalar(
            text(
                _SITE, "not a site name (1 to 128 characters, no control character, no blank at either end)", empty=True
            )
        ),
        'the site\'s name for the reports, e.g. "Frankfurt DC2 hall 3", or "" for none',
    ),
    "acceptance_run_id": Rule(
        _scalar(text(_RUN_ID, "not a run id (letters, digits, '.', '_', '-'; at most 64)", empty=True)),
        'an earlier run\'s id (its directory name) to add to it, or "" for a new run',
    ),
    # cuda_toolkit
    "cuda_toolkit_cuda_repo_key_fingerprint": Rule(_scalar(fingerprint), "the fingerprint NVIDIA publishes"),
    "cuda_toolkit_cuda_repo_key_sha256": Rule(
        _scalar(text(_SHA256, "not a SHA-256 hex digest")), 'the sha256sum of the key file, or ""'
    ),
    "cuda_toolkit_cuda_repo_rpm_key_fingerprint": Rule(_scalar(fingerprint), "the fingerprint NVIDIA publishes"),
    "cuda_toolkit_cuda_repo_rpm_key_sha256": Rule(
        _scalar(text(_SHA256, "not a SHA-256 hex digest")), 'the sha256sum of the key file, or ""'
    ),
    # k8s_node
    "k8s_node_repo_url": Rule(_scalar(url), "the Kubernetes project's repository URL of the minor version"),
    "k8s_node_key_url": Rule(_scalar(url), "the repository's Release.key URL"),
    "k8s_node_key_fingerprint": Rule(_scalar(fingerprint), "the fingerprint the Kubernetes project publishes"),
    "k8s_node_key_sha256": Rule(
        _scalar(text(_SHA256, "not a SHA-256 hex digest")), 'the sha256sum of the key file, or ""'
    ),
    "k8s_node_sandbox_image": Rule(
        _scalar(image), "an image reference, e.g. registry.k8s.io/pause:3.10 (written into containerd's TOML)"
    ),
    "k8s_node_registry_mirror": Rule(
        _scalar(registry), 'the mirror\'s host[:port][/path], e.g. registry.example.com:5000, or ""'
    ),
    "k8s_node_nvidia_runtime": Rule(_scalar(boolean), BOOL_FIX),
    "k8s_node_token_ttl": Rule(
        _scalar(duration(60, 86400)),
        "a short lifetime such as 15m (the default); 0 makes a token that never expires",
    ),
    "k8s_node_node_name": Rule(_scalar(dns_subdomain), "the node's name in lower case, e.g. gpu-node-01"),
    "k8s_node_ready_timeout": Rule(_scalar(integer(1, 3600)), "the seconds to wait for Ready, e.g. 300"),
    "k8s_node_drain_timeout": Rule(
        _scalar(integer(1, 86400)), "the seconds a drain may take, e.g. 600 (0 would wait forever)"
    ),
    # nccl_tests
    "nccl_tests_nccl_version": Rule(
        _scalar(text(_DEB_VERSION, "not a package version", empty=True)), 'the exact version, e.g. "2.22.3-1", or ""'
    ),
    "nccl_tests_openmpi_version": Rule(
        _scalar(text(_DEB_VERSION, "not a package version", empty=True)), 'the exact version, e.g. "5.0.7-1", or ""'
    ),
    "nccl_tests_cuda_repo_key_fingerprint": Rule(_scalar(fingerprint), "the fingerprint NVIDIA publishes"),
    "nccl_tests_cuda_repo_key_sha256": Rule(
        _scalar(text(_SHA256, "not a SHA-256 hex digest")), 'the sha256sum of the key file, or ""'
    ),
    "nccl_tests_source_url": Rule(_scalar(url), "the nccl-tests release tarball or git repository URL"),
    "nccl_tests_dir": Rule(_scalar(absolute_path), "an absolute directory on the node, e.g. /opt/nccl-tests"),
    "nccl_tests_cuda_home": Rule(
        _scalar(absolute_path), "the CUDA root, e.g. /usr/local/cuda (make expands $(...) in it)"
    ),
    "nccl_tests_args": Rule(
        items(benchmark_arg, "not one argument each (one line of text)"), "one argument per item, e.g. [-b, 8, -e, 8G]"
    ),
    "nccl_tests_fail_on_gate": Rule(_scalar(boolean), BOOL_FIX),
    "nccl_tests_multinode_group": Rule(
        _scalar(text(_GROUP, "not an inventory group name (letters, digits, '_' and '-')", empty=True)),
        'the inventory group whose hosts run the benchmark together, or ""',
    ),
    "nccl_tests_node_address": Rule(
        _scalar(host), "the address the group's other nodes reach this one at (host name or IP address)"
    ),
    "nccl_tests_mpirun_extra_args": Rule(
        items(mpirun_arg, "not one mpirun argument each, or one that changes how it reaches the other nodes"),
        "one argument per item, e.g. [--mca, btl_tcp_if_include, eth0]; the role sets mpirun's ssh itself",
    ),
    "nccl_tests_user": Rule(
        _scalar(unix_user), "a user of its own for the launcher, e.g. gpuops-nccl (the role creates it)"
    ),
    "nccl_tests_env": Rule(
        entries(
            text(_ENV_NAME, "no variable name"), env_value, "names must be environment variable names, values one line"
        ),
        "e.g. {NCCL_DEBUG: INFO}",
    ),
    "nccl_tests_rerun": Rule(_scalar(boolean), BOOL_FIX),
    "nccl_tests_pairs": Rule(_scalar(boolean), BOOL_FIX),
    "nccl_tests_pair_passes": Rule(_scalar(integer(1, 5)), "the passes of pair runs, 1 (no isolation) to 5, e.g. 3"),
    "nccl_tests_timeout": Rule(
        _scalar(integer(1, 86400)), "the seconds one benchmark may run, e.g. 1800 (0 would mean no limit)"
    ),
    "nccl_tests_report_dir": Rule(
        _scalar(controller_dir), "an absolute directory on the controller, e.g. /srv/reports/nccl"
    ),
    # nvidia_container_toolkit
    "nvidia_container_toolkit_cdi": Rule(_scalar(boolean), BOOL_FIX),
    "nvidia_container_toolkit_repo_url": Rule(_scalar(url), "NVIDIA's libnvidia-container repository URL"),
    "nvidia_container_toolkit_key_url": Rule(_scalar(url), "the repository's gpgkey URL"),
    "nvidia_container_toolkit_smoke_image": Rule(
        _scalar(image), "an image reference, e.g. nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"
    ),
    # nvidia_driver
    "nvidia_driver_persistenced": Rule(_scalar(boolean), BOOL_FIX),
    "nvidia_driver_dcgm": Rule(_scalar(boolean), BOOL_FIX),
    "nvidia_driver_dcgm_version": Rule(
        _scalar(text(_DCGM_VERSION, "not DCGM 4's version (DCGM 3 is no longer installed)")),
        "DCGM 4's version as NVIDIA's repository names it, quoted, e.g. \"4.4.1\"",
    ),
    "nvidia_driver_cuda_repo_url": Rule(_scalar(lambda v: url(v, empty=True)), 'NVIDIA\'s repository URL, or ""'),
    "nvidia_driver_cuda_repo_key_url": Rule(_scalar(lambda v: url(v, empty=True)), 'the key\'s URL, or ""'),
    "nvidia_driver_cuda_repo_key_sha256": Rule(
        _scalar(text(_SHA256, "not a SHA-256 hex digest")), 'the sha256sum of the key file, or ""'
    ),
    "nvidia_driver_cuda_repo_rpm_key_sha256": Rule(
        _scalar(text(_SHA256, "not a SHA-256 hex digest")), 'the sha256sum of the key file, or ""'
    ),
    "nvidia_driver_reboot_ok": Rule(_scalar(boolean), BOOL_FIX),
    "nvidia_driver_reboot_timeout": Rule(
        _scalar(integer(60, 7200)), "the seconds a node may take to come back from a reboot, e.g. 1800"
    ),
    "nvidia_driver_drain_timeout": Rule(
        _scalar(integer(1, 86400)), "the seconds a drain may take, e.g. 900 (0 would wait forever)"
    ),
    # rdma_fabric
    "rdma_fabric_doca_key_sha256": Rule(
        _scalar(text(_SHA256, "not a SHA-256 hex digest")), 'the sha256sum of the key file, or ""'
    ),
    "rdma_fabric_reboot_ok": Rule(_scalar(boolean), BOOL_FIX),
    "rdma_fabric_peermem": Rule(_scalar(boolean), BOOL_FIX),
    "rdma_fabric_ipoib_mtu": Rule(_scalar(integer(1280, 65520)), "an IPoIB MTU from 1280 to 65520, e.g. 4092"),
    "rdma_fabric_roce_mtu": Rule(_scalar(integer(1280, 9216)), "an Ethernet MTU from 1280 to 9216, e.g. 9000"),
    "rdma_fabric_roce_qos": Rule(_scalar(boolean), BOOL_FIX),
    "rdma_fabric_roce_dscp": Rule(_scalar(integer(0, 63)), "a DSCP value from 0 to 63, e.g. 26"),
    "rdma_fabric_roce_priority": Rule(_scalar(integer(0, 7)), "a priority from 0 to 7, e.g. 3"),
    "rdma_fabric_roce_ecn": Rule(_scalar(boolean), BOOL_FIX),
    "rdma_fabric_socket_ifname": Rule(
        _scalar(
            text(
                re.compile(r"[=^]?[A-Za-z0-9_.:-]{1,15}(?:,[A-Za-z0-9_.:-]{1,15})*"),
                "not NCCL_SOCKET_IFNAME's form (interface names or prefixes, comma-separated)",
                empty=True,
            )
        ),
        'e.g. eth0, or "" for NCCL\'s choice',
    ),
    "rdma_fabric_verify_ports": Rule(_scalar(boolean), BOOL_FIX),
    "rdma_fabric_perftest_duration": Rule(_scalar(integer(1, 300)), "the seconds of traffic, e.g. 5"),
}

# Optional ones: null (the default) means unset.
OPTIONAL = {
    "rdma_fabric_gid_index": Rule(_scalar(integer(0, 255)), "the RoCE GID index, 0 to 255, or null to find it"),
    "rdma_fabric_perftest_min_gbps": Rule(
        _scalar(number(0, 3200, low_open=True)), "the lowest acceptable Gb/s, e.g. 360 (0 would pass any rate)"
    ),
}
VARIABLES.update(OPTIONAL)

# Checked only where the value is used, when the caller asks (where_used=True): a node that never drains may keep an
# inventory name Kubernetes would refuse (nvidia_driver preflight checks it where an upgrade drains through
# Kubernetes).
WHERE_USED = {
    "nvidia_driver_kubernetes_node_name": Rule(_scalar(dns_subdomain), "the node's name in the cluster, in lower case"),
    "acceptance_node_name": Rule(_scalar(dns_subdomain), "the node's name in the cluster, in lower case"),
}

# Checked by their role's own function (a structure of their own), or a closed set of choices the argument
# specification already holds: each name here says where.
STRUCTURED = {
    "gpuops_hardware_profiles": "inventory_schema.check_hardware, on the profile each host gets (inventory_check)",
    "gpuops_hardware_overrides": "inventory_schema.check_hardware, on the profile each host gets (inventory_check)",
    "os_baseline_package_repositories": "repositories.repository_problems",
    "rdma_fabric_interfaces": "rdma_fabric preflight",
    "k8s_node_labels": "kubernetes_node.input_problems",
    "k8s_node_taints": "kubernetes_node.input_problems",
    "k8s_node_label_prefix": "kubernetes_node.input_problems",
    "k8s_node_kubernetes_version": "kubernetes_node.input_problems",
    "k8s_node_join_token": "kubernetes_node.input_problems",
    "k8s_node_ca_cert_hash": "kubernetes_node.input_problems",
    "k8s_node_api_endpoint": "kubernetes_node.input_problems",
    "k8s_node_control_plane_version": "kubernetes_node.input_problems",
    "k8s_node_control_plane_host": "kubernetes_node.input_problems",
    "k8s_node_kubeconfig": "_common kubeconfig_check",
    "acceptance_kubeconfig": "_common kubeconfig_check (acceptance preflight, where the nodes join Kubernetes)",
    "acceptance_required": "acceptance.input_problems (check ids)",
    "acceptance_optional": "acceptance.input_problems (check ids)",
    "cuda_toolkit_versions": "cuda_toolkit.input_problems",
    "cuda_toolkit_default": "cuda_toolkit.input_problems",
    "nccl_tests_gates": "nccl_tests_plan.input_problems",
    "nccl_tests_benchmarks": "nccl_tests_plan.input_problems",
    "nccl_tests_source_checksum": "nccl_tests_plan.input_problems",
    "nccl_tests_source_commit": "nccl_tests_plan.input_problems",
    "nvidia_driver_branch": "nvidia_driver preflight",
    "nvidia_driver_version": "nvidia_driver preflight",
    "nvidia_driver_cuda_repo_key_fingerprint": "nvidia_driver preflight (repository_problems)",
    "nvidia_driver_cuda_repo_rpm_key_fingerprint": "nvidia_driver preflight (repository_problems)",
    "nvidia_driver_fabricmanager": "nvidia_driver preflight (auto, true or false)",
    "nvidia_driver_drain_hook": "nvidia_driver preflight (an absolute path to a file)",
    "nvidia_driver_undrain_hook": "nvidia_driver preflight (an absolute path to a file)",
    "nvidia_driver_kubeconfig": "_common kubeconfig_check",
    "nvidia_driver_kubernetes_node_name": "WHERE_USED: nvidia_driver preflight, where an upgrade drains",
    "nvidia_container_toolkit_version": "nvidia_container_toolkit preflight",
    "nvidia_container_toolkit_runtimes": "nvidia_container_toolkit preflight",
    "nvidia_container_toolkit_default_for": "nvidia_container_toolkit preflight",
    "nvidia_container_toolkit_key_fingerprint": "nvidia_container_toolkit preflight (repository_problems)",
    "nvidia_container_toolkit_key_sha256": "nvidia_container_toolkit preflight (repository_problems)",
    "rdma_fabric_doca_version": "rdma_fabric preflight (a release the role's table holds)",
    "rdma_fabric_doca_key_fingerprint": "rdma_fabric preflight",
    "rdma_fabric_perftest_peer": "rdma_fabric preflight (a host of the play)",
}


def variable_problems(values, where_used=False):
    """Problems with the variables in values (a mapping name -> value), each naming the variable, the value (never a
    secret's) and the fix; [] when none. Names without a rule are left alone, and those of WHERE_USED unless
    where_used."""
    problems = []
    rules = {**VARIABLES, **WHERE_USED} if where_used else VARIABLES
    for name in sorted(values):
        rule = rules.get(name)
        value = values[name]
        if rule is None or (name in OPTIONAL and value is None):
            continue
        why, bad = rule.check(value)
        if why is None:
            continue
        what = shown(bad if bad is not None else value)
        verb = "has" if bad is not None else "is"
        problems.append(f"{name} {verb} {what}: {why}. Fix: {rule.fix}.")
    return problems
