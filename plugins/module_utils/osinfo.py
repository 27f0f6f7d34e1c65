# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for the OS state that os_facts reads: text in, data out, no I/O."""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing, rpm

# The initial PID namespace has this fixed inode (PROC_PID_INIT_INO in
# include/linux/proc_ns.h); any container lives in another one.
PROC_PID_INIT_INO = 0xEFFFFFFC

# Linux capability bits (include/uapi/linux/capability.h).
CAP_SYS_MODULE = 16
CAP_SYS_ADMIN = 21
CAP_SYS_RESOURCE = 24
CAP_SYS_TIME = 25

_FAMILIES = {
    "debian": "Debian",
    "ubuntu": "Debian",
    "rhel": "RedHat",
    "rocky": "RedHat",
    "almalinux": "RedHat",
    "centos": "RedHat",
    "fedora": "RedHat",
}
_PACKAGE_ARCH = {
    "Debian": {"x86_64": "amd64", "aarch64": "arm64"},
    "RedHat": {"x86_64": "x86_64", "aarch64": "aarch64"},
}


_OS_RELEASE_ESCAPE = re.compile(r"\\([\\$\"'`])")


def parse_os_release(text):
    """Parse os-release(5): KEY=value lines, values optionally in double or single quotes, where a backslash
    escapes \\ $ " ' and ` (the shell subset the format allows; shlex was slow and took more)."""
    data = {}
    for line in parsing.bounded(text, 1024 * 1024)[0].splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _sep, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
            value = _OS_RELEASE_ESCAPE.sub(r"\1", value[1:-1])
        else:
            value = value.strip("\"'")
        data[key.strip()] = value
    return data


def os_identity(release, machine):
    """The OS identity the roles key their variables on, from parsed os-release and uname -m."""
    os_id = release.get("ID", "").lower()
    id_like = release.get("ID_LIKE", "").lower().split()
    family = _FAMILIES.get(os_id)
    if family is None:
        family = next((_FAMILIES[x] for x in id_like if x in _FAMILIES), "unknown")
    version_id = release.get("VERSION_ID", "")
    return {
        "id": os_id,
        "id_like": id_like,
        "name": release.get("PRETTY_NAME") or release.get("NAME", ""),
        "version_id": version_id,
        "major": version_id.split(".")[0] if version_id else "",
        "codename": release.get("VERSION_CODENAME", "") or release.get("UBUNTU_CODENAME", ""),
        "family": family,
        "arch": machine,
        "package_arch": _PACKAGE_ARCH.get(family, {}).get(machine, machine),
        "package_manager": {"Debian": "apt", "RedHat": "dnf"}.get(family, "unknown"),
    }


def in_initial_pid_namespace(link):
    """Whether readlink(/proc/self/ns/pid), e.g. "pid:[4026531836]", names the host's own PID namespace."""
    match = re.fullmatch(r"pid:\[([0-9]{1,20})\]", link or "")
    return bool(match) and int(match.group(1)) == PROC_PID_INIT_INO


_CMDLINE_ARG = re.compile(r'(?:[^\s"]|"[^"]*"?)+')


def parse_cmdline(text):
    """Split /proc/cmdline into arguments as the kernel does: at blanks outside double quotes, which are dropped
    (foo="a b" is the one argument foo=a b); a quote left open runs to the end."""
    return [arg.replace('"', "") for arg in _CMDLINE_ARG.findall(parsing.bounded(text)[0].strip())]


def version_key(version):
    """Sort key that orders kernel versions numerically: 6.1.0-9 < 6.1.0-50 < 6.12.1."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"[0-9]{1,20}|[A-Za-z]+", version)]


def kernel_order(family):
    """The sort key for the OS family's kernel releases: rpm's order on RedHat, where a number sorts after letters
    (5.14.0-503.11.1.el9_5 is newer than 5.14.0-503.el9, as 4.18.0-553.5.1.el8_10 is than 4.18.0-553.el8_10), else
    version_key."""
    return rpm.version_key if family == "RedHat" else version_key


# Bounded runs: an unbounded \d+ searched through a long run of digits retried from every one of them (quadratic).
_VERSIONED = re.compile(r"[0-9]{1,9}\.[0-9]{1,9}\.[0-9]")
_DEB_KERNEL_PREFIXES = (
    "linux-image-unsigned-",
    "linux-signed-image-",
    "linux-image-",
    "linux-headers-",
    "linux-modules-extra-",
    "linux-modules-",
)
# Ubuntu's flavour meta-packages (linux-generic, linux-generic-hwe-24.04, ...).
_DEB_META_FLAVOURS = re.compile(r"^linux-(generic|virtual|lowlatency|nvidia|oem|kvm)(-hwe-[\d.]+(-edge)?)?$")
_RPM_KERNEL = re.compile(r"^kernel(-(core|modules|modules-core|modules-extra|devel|headers))?$")


def classify_kernel_packages(installed, running, family):
    """Split installed kernel packages into those of the running kernel and the meta-packages.

    installed maps package name to its version (Debian) or to the list of its
    installed "version-release.arch" (RPM). Holding both lists keeps an unattended upgrade from installing or
    switching to a kernel DKMS has not built for. RPM has no meta-packages:
    the versionlock on the running NEVRAs does that work.
    """
    running_pkgs, meta = [], []
    if family == "Debian":
        for name in sorted(installed):
            prefix = next((p for p in _DEB_KERNEL_PREFIXES if name.startswith(p)), None)
            if prefix is None:
                if _DEB_META_FLAVOURS.match(name):
                    meta.append(name)
                continue
            if not _VERSIONED.search(name):
                meta.append(name)
                continue
            version = name[len(prefix) :]
            if version == running or running.startswith(version + "-"):
                running_pkgs.append(name)
    elif family == "RedHat":
        for name in sorted(installed):
            if _RPM_KERNEL.match(name) and running in installed[name]:
                running_pkgs.append(name)
    return {"running": running_pkgs, "meta": meta}


def parse_dpkg_query(text):
    """Parse `dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\t${db:Status-Want}\\n'`."""
    packages = {}
    for line in parsing.bounded(text)[0].splitlines():
        fields = line.split("\t")
        if len(fields) != 4:
            continue
        name, version, abbrev, want = fields
        packages[name] = {
            "version": version,
            # Status-Abbrev's second letter is the current state: installed
            # (possibly with triggers pending), or half-installed, unpacked or
            # half-configured, which is what a failed maintainer script leaves.
            "installed": len(abbrev) > 1 and abbrev[1] in "iWt",
            "held": want == "hold",
            "broken": len(abbrev) > 1 and abbrev[1] in "HUF",
        }
    return packages


def unheld(names, packages):
    """The names a package_hold task still has to hold, in their order: each one package_info (packages: its
    packages, {name: {held, ...}}) or os_facts (packages: the list of held names) did not find installed and held.
    Empty: holding them changes nothing, and the task need not run."""
    held = (
        {name for name, entry in packages.items() if (entry or {}).get("held")}
        if isinstance(packages, dict)
        else set(packages)
    )
    return [name for name in names if name not in held]


def parse_rpm_query(text):
    """Parse `rpm -qa --qf '%{NAME}\\t%{VERSION}-%{RELEASE}.%{ARCH}\\n'` into name -> versions, oldest first.

    Kernels are install-only packages: several versions of one name sit side
    by side, and the running one is not always the newest.
    """
    packages = {}
    for line in parsing.bounded(text)[0].splitlines():
        name, sep, evr = line.partition("\t")
        if sep:
            packages.setdefault(name, {})[evr] = None
    return {
        name: sorted(versions, key=rpm.version_key) if len(versions) > 1 else list(versions)
        for name, versions in packages.items()
    }


def parse_swaps(text):
    """Active swap areas from /proc/swaps."""
    active = []
    for line in parsing.bounded(text)[0].splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 3:
            active.append({"device": fields[0], "type": fields[1], "size_kib": parsing.to_int(fields[2]) or 0})
    return active


def fstab_swap_entries(text):
    """Uncommented fstab lines whose type is swap."""
    entries = []
    for line in parsing.bounded(text)[0].splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#") and len(fields) >= 3 and fields[2] == "swap":
            entries.append(line.strip())
    return entries


def parse_limit(text, label):
    """Soft and hard values of one limit from /proc/PID/limits; "unlimited", an int, or None when unreadable."""
    for line in parsing.bounded(text)[0].splitlines():
        if line.startswith(label):
            fields = line[len(label) :].split()
            if len(fields) >= 2:
                return {
                    key: (value if value == "unlimited" else parsing.to_int(value))
                    for key, value in zip(("soft", "hard"), fields[:2])
                }
    return None


def effective_caps(status_text):
    """CapEff of /proc/self/status as an int bit mask; 0 (no capability) when absent or unreadable."""
    for line in parsing.bounded(status_text)[0].splitlines():
        if line.startswith("CapEff:"):
            return parsing.to_int(line[len("CapEff:") :], 16) or 0
    return 0


def has_cap(mask, bit):
    return bool(mask >> bit & 1)


# The queries os_facts and the acceptance stage's evidence read the node with; parse_systemctl_show,
# parse_dpkg_query and parse_rpm_query read their output.
SYSTEMCTL_PROPERTIES = "--property=Id,LoadState,ActiveState,UnitFileState"
DPKG_QUERY_ARGS = ("-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\t${db:Status-Want}\n")
RPM_QUERY_ARGS = ("-qa", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}.%{ARCH}\n")


def unit_state(props):
    """{exists, active, enabled, failed} of one unit's systemctl show properties ({} for a unit systemctl did not
    show); failed as `systemctl is-failed` says it."""
    return {
        "exists": props.get("LoadState") == "loaded",
        "active": props.get("ActiveState") == "active",
        "failed": props.get("ActiveState") == "failed",
        "enabled": props.get("UnitFileState") in ("enabled", "enabled-runtime", "static", "alias"),
    }


def parse_systemctl_show(text):
    """Parse `systemctl show -p Id,... unit...`: blank-line-separated blocks of KEY=value."""
    units = {}
    for block in parsing.bounded(text)[0].strip().split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if "Id" in props:
            units[props["Id"]] = props
    return units


def normalize_sysctl(value):
    """Sysctl values compare equal whatever their whitespace: tcp_rmem reads back tab-separated."""
    return " ".join(str(value).split())
